"""Numeric limits of dtypes (``finfo``, ``iinfo``) and ``typename``, with PyTorch's attributes and reprs."""
import builtins
import sys

from .. import _C

__all__ = ["finfo", "iinfo", "typename"]

# dtype -> (bits, eps, max, tiny, resolution); tiny is the smallest positive normal number
_FLOAT_LIMITS = {
    _C.float16: (16, 2.0 ** -10, 65504.0, 2.0 ** -14, 1e-3),
    _C.bfloat16: (16, 2.0 ** -7, (2.0 - 2.0 ** -7) * 2.0 ** 127, 2.0 ** -126, 1e-2),
    _C.float32: (32, 2.0 ** -23, (2.0 - 2.0 ** -23) * 2.0 ** 127, 2.0 ** -126, 1e-6),
    _C.float64: (64, sys.float_info.epsilon, sys.float_info.max, sys.float_info.min, 1e-15),
}
# dtype -> (bits, min, max)
_INT_LIMITS = {
    _C.uint8: (8, 0, 2 ** 8 - 1), _C.int8: (8, -2 ** 7, 2 ** 7 - 1), _C.int16: (16, -2 ** 15, 2 ** 15 - 1),
    _C.int32: (32, -2 ** 31, 2 ** 31 - 1), _C.int64: (64, -2 ** 63, 2 ** 63 - 1),
}


def _check_dtype(kind, type):
    if not isinstance(type, _C.dtype):
        raise TypeError(f"{kind}(): argument 'type' (position 1) must be oneflow.dtype, "
                        f"not {builtins.type(type).__name__}")


class _Info:
    """Common equality, hashing and repr of ``finfo`` / ``iinfo`` (``%g``-formatted values, as PyTorch's)."""
    _fields = ()

    def __eq__(self, other):
        return builtins.type(self) is builtins.type(other) and self.dtype == other.dtype

    def __hash__(self):
        return hash((builtins.type(self).__name__, self.dtype))

    def __repr__(self):
        values = ", ".join(f"{f}={getattr(self, f):g}" for f in self._fields)
        return f"{builtins.type(self).__name__}({values}, dtype={self.dtype})"

    __str__ = __repr__


class finfo(_Info):
    """Numerical properties of a floating-point dtype (default: the default dtype).

    Attributes: ``bits``, ``eps`` (difference between 1.0 and the next representable number), ``max``, ``min``
    (= -max), ``tiny`` and ``smallest_normal`` (smallest positive normal number), ``resolution``
    (``10 ** -precision_digits``) and ``dtype`` (the dtype's name, a ``str``).
    """
    _fields = ("resolution", "min", "max", "eps", "smallest_normal", "tiny")

    def __init__(self, type=None):
        if type is None:
            type = _C.get_default_dtype()
        _check_dtype("finfo", type)
        if type not in _FLOAT_LIMITS:
            raise TypeError("oneflow.finfo() requires a floating point input type. "
                            "Use oneflow.iinfo to handle 'oneflow.finfo'")
        self.bits, self.eps, self.max, self.tiny, self.resolution = _FLOAT_LIMITS[type]
        self.min = -self.max
        self.smallest_normal = self.tiny
        self.dtype = type.name


class iinfo(_Info):
    """Numerical properties of an integer dtype: ``bits``, ``min``, ``max`` (Python ints) and ``dtype`` (its
    name, a ``str``)."""
    _fields = ("min", "max")

    def __init__(self, type):
        _check_dtype("iinfo", type)
        if type == _C.bool:
            raise TypeError("oneflow.bool is not supported by oneflow.iinfo")
        if type not in _INT_LIMITS:
            raise TypeError("oneflow.iinfo() requires an integer input type. "
                            "Use oneflow.finfo to handle 'oneflow.iinfo'")
        self.bits, self.min, self.max = _INT_LIMITS[type]
        self.dtype = type.name


def typename(obj):
    """A string naming the type of ``obj``: ``Tensor.type()`` for tensors (``'oneflow.FloatTensor'``), else the
    ``module.qualname`` of the object (or of its class), without ``builtins.``."""
    from .._tensor import Tensor

    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    if module in ("", "builtins"):
        return qualname
    return f"{module}.{qualname}"
