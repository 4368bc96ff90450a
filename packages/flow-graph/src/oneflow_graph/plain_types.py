"""Plain forms of layout objects (placements, sbps, global tensors) in a runtime state.

A runtime state holds plain data only (see runtime_state.py), so ``flow.load`` never runs code a file names. A
type whose values belong in it anyway (a plugin's placement, say) opts in with two methods:

- ``obj.__flow_plain__()`` returns ``obj`` as plain data: ints, floats, strings, dtypes, devices, local tensors
  and lists, tuples and dicts of them, and values of other registered types (encoded in turn);
- ``cls.__flow_from_plain__(data)`` (a classmethod) rebuilds the value from that data.

and registers under a name, either with :func:`register` or, for an installed plugin, with an entry point of the
group ``oneflow_graph.plain_types`` (``name = "module:Class"``; flow-dist registers its placement, sbp and
global tensor types so). A value is saved as ``{"__flow_plain__": name, "data": ...}``; at load the name is
looked up among the registered types only: a name no installed plugin registers raises
:class:`UnknownPlainType`, and no class path from a file is ever imported.
"""
from importlib import metadata

from oneflow import _C

GROUP = "oneflow_graph.plain_types"
MARK = "__flow_plain__"

_by_name = {}
_by_type = {}
_entry_points_read = False


class UnknownPlainType(ValueError):
    """A saved value whose type name no installed plugin registers."""


def register(name, cls):
    """Registers ``cls`` (which has ``__flow_plain__`` and the classmethod ``__flow_from_plain__``) as ``name``.
    Registering the same class again under its name does nothing."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"register(): name must be a non-empty str, got {name!r}")
    for attr in ("__flow_plain__", "__flow_from_plain__"):
        if not callable(getattr(cls, attr, None)):
            raise TypeError(f"register(): {cls!r} has no {attr}() (see oneflow_graph.plain_types)")
    prev = _by_name.get(name)
    if prev is not None and prev is not cls:
        raise ValueError(f"register(): the plain type name {name!r} is already taken by {prev!r}")
    _by_name[name] = cls
    _by_type[cls] = name


def _read_entry_points():
    global _entry_points_read
    if _entry_points_read:
        return
    _entry_points_read = True
    for ep in metadata.entry_points(group=GROUP):
        register(ep.name, ep.load())


def name_of(cls):
    """The registered name of ``cls`` (None when it is not registered)."""
    _read_entry_points()
    return _by_type.get(cls)


def lookup(name):
    """The registered type called ``name``; raises :class:`UnknownPlainType` otherwise."""
    _read_entry_points()
    cls = _by_name.get(name) if isinstance(name, str) else None
    if cls is None:
        raise UnknownPlainType(f"the runtime state holds a value of type {name!r}, which no installed plugin "
                               f"registers (install the package that saved it)")
    return cls


def _is_scalar(obj):
    return obj is None or type(obj) in (bool, int, float, str) or isinstance(obj, (_C.dtype, _C.device))


def _is_local_tensor(obj):
    import oneflow as flow

    return type(obj) in (flow.Tensor, flow.nn.Parameter)


def encode(obj, where, tensors=False):
    """``obj`` as plain data: registered values become ``{"__flow_plain__": name, "data": ...}``; anything else
    that is not plain data raises TypeError naming ``where``. ``tensors``: whether local tensors may appear (they
    may always inside a registered value's data)."""
    if _is_scalar(obj) or tensors and _is_local_tensor(obj):
        return obj
    if type(obj) in (list, tuple):
        return type(obj)(encode(x, f"{where}[{i}]", tensors) for i, x in enumerate(obj))
    if type(obj) is dict:
        if MARK in obj:
            raise TypeError(f"runtime_state_dict(): {where} is a dict with the reserved key {MARK!r}")
        out = {}
        for k, v in obj.items():
            if not _is_scalar(k):
                encode(k, f"{where} key")  # raises: keys stay plain scalars
            out[k] = encode(v, f"{where}[{k!r}]", tensors)
        return out
    name = name_of(type(obj))
    if name is None:
        raise TypeError(f"runtime_state_dict(): {where} is a {type(obj).__module__}.{type(obj).__qualname__}, "
                        f"which a runtime state cannot hold as plain data")
    return {MARK: name, "data": encode(obj.__flow_plain__(), f"{where} ({name})", tensors=True)}


def has_encoded(obj):
    """Whether ``obj`` (plain data) holds an encoded value."""
    if type(obj) in (list, tuple):
        return any(has_encoded(x) for x in obj)
    if type(obj) is dict:
        return MARK in obj or any(has_encoded(v) for v in obj.values())
    return False


def decode(obj):
    """The inverse of :func:`encode`: rebuilds registered values (innermost first). Raises
    :class:`UnknownPlainType` for a type name no installed plugin registers and ValueError for malformed
    data; the rebuilding classmethod's own errors (a placement naming a rank this job lacks) propagate."""
    if type(obj) is tuple:
        return tuple(decode(x) for x in obj)
    if type(obj) is list:
        return [decode(x) for x in obj]
    if type(obj) is dict:
        if MARK in obj:
            if set(obj) != {MARK, "data"}:
                raise ValueError(f"a malformed encoded value: keys {sorted(map(str, obj))}")
            return lookup(obj[MARK]).__flow_from_plain__(decode(obj["data"]))
        return {k: decode(v) for k, v in obj.items()}
    return obj
