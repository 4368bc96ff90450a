"""Nested tuple/list/dict structures of a graph's arguments and results: flattening, rebuilding, signatures."""
import oneflow as flow


def leaves(obj):
    """The leaves of ``obj`` (anything but a tuple, list or dict), depth first."""
    out = []
    _collect(obj, out)
    return out


def _collect(obj, out):
    if isinstance(obj, (tuple, list)):
        for o in obj:
            _collect(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _collect(o, out)
    else:
        out.append(obj)


def map_leaves(obj, fn):
    """``obj`` with each leaf replaced by ``fn(leaf)`` (namedtuples and dict subclasses keep their type)."""
    if isinstance(obj, tuple):
        items = [map_leaves(o, fn) for o in obj]
        return type(obj)(*items) if hasattr(obj, "_fields") else type(obj)(items)
    if isinstance(obj, list):
        return [map_leaves(o, fn) for o in obj]
    if isinstance(obj, dict):
        return type(obj)((k, map_leaves(v, fn)) for k, v in obj.items())
    return fn(obj)


def signature(obj):
    """A hashable description of ``obj``'s structure, tensor shapes/dtypes/devices and non-tensor leaves: two
    calls with the same signature run the same compiled plan."""
    if isinstance(obj, flow.Tensor):
        if hasattr(type(obj), "__tensor_flatten__"):  # a global tensor: its layout (placement, sbp) and shards
            names, ctx = obj.__tensor_flatten__()
            return ("W", type(obj).__name__, tuple(obj.shape), obj.dtype, ctx) + tuple(
                signature(getattr(obj, n)) for n in names)
        return ("T", tuple(obj.shape), obj.dtype, str(obj.device))
    if isinstance(obj, tuple):
        return (type(obj).__name__,) + tuple(signature(o) for o in obj)
    if isinstance(obj, list):
        return ("list",) + tuple(signature(o) for o in obj)
    if isinstance(obj, dict):
        return ("dict",) + tuple((k, signature(v)) for k, v in obj.items())
    try:
        hash(obj)
    except TypeError:
        return ("obj", type(obj).__name__, id(obj))
    return ("py", type(obj).__name__, obj)


def describe(obj):
    """A short human description of a structure (for error messages)."""
    if isinstance(obj, flow.Tensor):
        return f"Tensor(shape={tuple(obj.shape)}, dtype={obj.dtype})"
    if isinstance(obj, tuple):
        return "(" + ", ".join(describe(o) for o in obj) + ("," if len(obj) == 1 else "") + ")"
    if isinstance(obj, list):
        return "[" + ", ".join(describe(o) for o in obj) + "]"
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{k!r}: {describe(v)}" for k, v in obj.items()) + "}"
    return repr(obj)
