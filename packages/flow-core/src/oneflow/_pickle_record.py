"""The pickle record of our checkpoint format: how :func:`oneflow.save` stores objects that plain data can't
describe (whole modules, NumPy arrays, user classes), and how :func:`oneflow.load` reads it back.

The record ``oneflow/data.pkl`` is a pickle in which every tensor, dtype and device is a persistent id: tensors
still go to the archive's tensor and storage tables (so views and tied weights share memory after loading, and
tensor bytes are never pickled). Reading it is restricted unless the caller passes ``weights_only=False``: the
restricted reader admits plain containers, ``oneflow.Size`` and the user's allowlist
(:mod:`oneflow._safe_globals`), and nothing else the file names can be imported or called.
"""
import _compat_pickle
import codecs
import collections
import io
import pickle

from . import _C, _safe_globals

DEFAULT_PROTOCOL = pickle.DEFAULT_PROTOCOL

# the globals a weights-only read admits besides the user's allowlist
_SAFE_BUILTINS = {"set": set, "frozenset": frozenset, "complex": complex, "bytearray": bytearray, "slice": slice}


def safe_codecs_encode(s, encoding="utf-8"):
    """``_codecs.encode`` as protocol-2 pickles use it for bytes (latin1 only, never another codec)."""
    if not isinstance(s, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("flow.load: _codecs.encode is only allowed for latin1 byte strings")
    return codecs.encode(s, encoding)


def py2_names(module, name):
    """Python 2 names in protocol 0-2 pickles (``__builtin__.set``) as Python 3's, as ``pickle`` maps them."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def safe_global(module, name):
    """The object a weights-only read admits for ``module.name``, or the weights-only error."""
    from ._tensor import Size

    module, name = py2_names(module, name)
    if module in _safe_globals.BLOCKED_MODULES:
        raise _safe_globals.refuse(module, name)
    if module == "builtins" and name in _SAFE_BUILTINS:
        return _SAFE_BUILTINS[name]
    if module == "collections" and name in ("OrderedDict", "Counter"):
        return getattr(collections, name)
    if module == "_codecs" and name == "encode":
        return safe_codecs_encode
    if (module, name) in (("oneflow._tensor", "Size"), ("oneflow", "Size")):
        return Size
    obj = _safe_globals.user_allowed().get(f"{module}.{name}")
    if obj is not None:
        return obj
    raise _safe_globals.refuse(module, name)


def dumps(obj, encoder, pickle_module=None, protocol=None):
    """``obj`` pickled, with its tensors, dtypes and devices handed to ``encoder`` (the archive's tables)."""
    from ._tensor import Tensor

    module = pickle if pickle_module is None else pickle_module

    class Pickler(module.Pickler):
        def persistent_id(self, o):
            if isinstance(o, Tensor):
                return ("tensor", encoder.tensor(o, "obj")["i"])
            if isinstance(o, _C.dtype):
                return ("dtype", str(o).split(".")[-1])
            if isinstance(o, _C.device):
                return ("device", str(o))
            return None

    buf = io.BytesIO()
    Pickler(buf, protocol=DEFAULT_PROTOCOL if protocol is None else protocol).dump(obj)
    return buf.getvalue()


def unpickler(data, tensor, weights_only, pickle_module=None, encoding="utf-8"):
    """The unpickler of a pickle record; ``tensor(i)`` gives the archive's tensor ``i``. Without
    ``weights_only`` the file may import and call anything (full pickle)."""
    from .serialization import _DTYPES

    module = pickle if pickle_module is None else pickle_module

    class Unpickler(module.Unpickler):
        def find_class(self, mod, name):
            if weights_only:
                return safe_global(mod, name)
            return super().find_class(mod, name)

        def persistent_load(self, pid):
            ok = isinstance(pid, tuple) and len(pid) == 2 and isinstance(pid[0], str)
            if ok and pid[0] == "tensor" and type(pid[1]) is int:
                return tensor(pid[1])
            if ok and pid[0] == "dtype" and pid[1] in _DTYPES:
                return getattr(_C, pid[1])
            if ok and pid[0] == "device" and isinstance(pid[1], str):
                return _C.device(pid[1])
            raise pickle.UnpicklingError(f"flow.load: unsupported persistent id {pid!r:.80} in the pickle record")

    return Unpickler(io.BytesIO(data), encoding=encoding)
