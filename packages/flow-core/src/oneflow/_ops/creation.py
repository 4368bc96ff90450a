"""Tensor creation: from data, filled, ranges (arange/linspace/logspace/eye run in C++, ops/creation.cpp)."""
import builtins
import warnings

import numpy as np

from .. import _C
from .._printing import set_printoptions  # noqa: F401  (exported as oneflow.set_printoptions)

__all__ = ["tensor", "as_tensor", "asarray", "from_numpy", "zeros", "ones", "empty", "full", "zeros_like",
           "ones_like", "empty_like", "full_like", "from_dlpack", "scalar_tensor", "arange", "range", "linspace",
           "logspace", "eye", "set_printoptions", "empty_strided"]

_NP_TO_FLOW = {
    np.dtype(np.bool_): _C.bool, np.dtype(np.uint8): _C.uint8, np.dtype(np.int8): _C.int8,
    np.dtype(np.int16): _C.int16, np.dtype(np.int32): _C.int32, np.dtype(np.int64): _C.int64,
    np.dtype(np.float16): _C.float16, np.dtype(np.float32): _C.float32, np.dtype(np.float64): _C.float64,
}
_NP_TYPE_ERROR = ("can't convert np.ndarray of type {}. The only supported types are: float64, float32, float16, "
                  "int64, int32, int16, int8, uint8, and bool.")


def _shape(size, op="empty"):
    """Sizes given as varargs ints, or one tuple/list/oneflow.Size (PyTorch accepts both)."""
    if len(size) == 1 and not isinstance(size[0], (builtins.int, np.integer)) and not (
            isinstance(size[0], _C.TensorBase) and size[0].dim() == 0):
        size = size[0]
    try:
        shape = [s.__index__() for s in size]
    except (AttributeError, TypeError):
        raise TypeError(f"{op}(): argument 'size' must be tuple of ints, but found element of type "
                        f"{type(next((s for s in size if not hasattr(s, '__index__')), None)).__name__}") from None
    for s in shape:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {shape}")
    return shape


def _device(device):
    """Validates ``device`` (only CPU memory exists in a CPU build; others raise the build's device error)."""
    if device is not None:
        d = device if isinstance(device, _C.device) else _C.device(device)
        if d.type != "cpu":
            _C._empty([0], _C.float32, d)
    return None


def _finish(t, requires_grad, out=None):
    if out is not None:
        if list(out.shape) != list(t.shape):  # resized like the ops' out= (silently when it was empty)
            if out.numel() != 0:
                warnings.warn(f"An output with one or more elements was resized since it had shape "
                              f"{list(out.shape)}, which does not match the required output shape {list(t.shape)}. "
                              "Pass outputs with zero elements to resize them silently.", UserWarning, stacklevel=3)
            out.resize_(list(t.shape))
        _C.ops.copy_(out, t)
        return out
    if requires_grad:
        t.requires_grad_(True)
    return t


def _infer_dtype(data):
    """PyTorch's dtype inference for Python data: bools, ints -> int64, floats -> default dtype."""
    def walk(x):
        if isinstance(x, (builtins.bool, np.bool_)):
            return 0
        if isinstance(x, (builtins.int, np.integer)):
            return 1
        if isinstance(x, (builtins.float, np.floating)):
            return 2
        if isinstance(x, _C.TensorBase):
            return 3 if x.dtype.is_floating_point else (0 if x.dtype == _C.bool else 1)
        if isinstance(x, complex):
            raise TypeError("complex tensors are not supported")
        if isinstance(x, (list, tuple, builtins.range)) or (hasattr(x, "__len__") and hasattr(x, "__getitem__")
                                                           and not isinstance(x, (str, bytes))):
            return max((walk(e) for e in x), default=2 if len(x) == 0 else 0)
        raise TypeError(f"Could not infer dtype of {type(x).__name__}")
    k = walk(data)
    return [_C.bool, _C.int64, _C.get_default_dtype(), _C.get_default_dtype()][k]


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """Constructs a tensor with a copy of ``data`` (a number, nested sequence, NumPy array or tensor).

    Without ``dtype``: Python floats give the default dtype, ints int64, bools bool; NumPy arrays and tensors keep
    their dtype.
    """
    _device(device)
    if isinstance(data, _C.TensorBase):
        t = _C.ops.clone(data.detach())
        if dtype is not None and dtype != t.dtype:
            t = _C.ops.to_dtype(t, dtype)
        return _finish(t, requires_grad)
    if isinstance(data, np.generic):
        data = np.asarray(data)
    if isinstance(data, np.ndarray):
        if data.dtype not in _NP_TO_FLOW:
            raise TypeError(_NP_TYPE_ERROR.format(data.dtype))
        t = _C._from_numpy(np.array(data, copy=True, order="C"))
        if dtype is not None and dtype != t.dtype:
            t = _C.ops.to_dtype(t, dtype)
        return _finish(t, requires_grad)
    if isinstance(data, (list, tuple)) and any(isinstance(e, _C.TensorBase) for e in _flatten(data)):
        data = _nested_tensors_to_lists(data)
    inferred = _infer_dtype(data)
    target = dtype or inferred
    np_dtype = np.float64 if target.is_floating_point else (np.bool_ if target == _C.bool else np.int64)
    try:
        arr = np.array(data, dtype=np_dtype)
    except ValueError as e:
        raise ValueError(f"expected sequence of equal-length sequences: {e}") from None
    except OverflowError:
        raise RuntimeError("Overflow when unpacking long") from None
    if arr.dtype == object:
        raise ValueError("expected sequence of equal-length sequences")
    if target != _C.bool and not target.is_floating_point and target != _C.int64 and arr.size:
        _check_int_range(arr, target)
    t = _C._from_numpy(np.array(arr, copy=True, order="C"))
    if t.dtype != target:
        t = _C.ops.to_dtype(t, target)
    return _finish(t, requires_grad)


def _check_int_range(arr, dtype):
    """PyTorch's overflow check for numbers put into a narrower integer tensor: out of range raises (an unsigned
    type also takes negatives down to -max, which wrap)."""
    info = np.iinfo(str(dtype).split(".")[-1])
    lo, hi = int(arr.min()), int(arr.max())
    if hi > info.max or (lo < -info.max if info.min == 0 else lo < info.min):
        raise RuntimeError(f"value cannot be converted to type {str(dtype).split('.')[-1]} without overflow")


def _flatten(x):
    if isinstance(x, (list, tuple)):
        for e in x:
            yield from _flatten(e)
    else:
        yield x


def _nested_tensors_to_lists(x):
    if isinstance(x, (list, tuple)):
        return [_nested_tensors_to_lists(e) for e in x]
    if isinstance(x, _C.TensorBase):
        return x.tolist()
    return x


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with a tensor or NumPy array when dtype and device allow."""
    _device(device)
    if isinstance(data, _C.TensorBase):
        return data if dtype is None or dtype == data.dtype else _C.ops.to_dtype(data, dtype)
    if isinstance(data, np.ndarray) and data.dtype in _NP_TO_FLOW:
        t = from_numpy(data) if all(s >= 0 for s in data.strides) else tensor(data)
        return t if dtype is None or dtype == t.dtype else _C.ops.to_dtype(t, dtype)
    return tensor(data, dtype=dtype)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False):
    """Converts ``obj`` to a tensor, sharing memory when possible unless ``copy=True``."""
    if copy:
        t = tensor(obj, dtype=dtype, device=device)
    else:
        t = as_tensor(obj, dtype=dtype, device=device)
    return _finish(t, requires_grad) if requires_grad else t


def from_numpy(ndarray):
    """A tensor sharing memory with ``ndarray`` (changes to one are seen by the other)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if ndarray.dtype not in _NP_TO_FLOW:
        raise TypeError(_NP_TYPE_ERROR.format(ndarray.dtype))
    return _C._from_numpy(ndarray)


def from_dlpack(ext_tensor):
    """A tensor sharing memory with any object implementing the DLPack protocol (or a DLPack capsule)."""
    return _C._from_dlpack(ext_tensor)


def _kw_size(size, kwargs_size, op):
    if kwargs_size is not None:
        if size:
            raise TypeError(f"{op}() got multiple values for argument 'size'")
        size = (kwargs_size,)
    return _shape(size, op)


def empty(*size, dtype=None, device=None, requires_grad=False, out=None, pin_memory=False, memory_format=None,
          **kw):
    """An uninitialised tensor of the given size."""
    shape = _kw_size(size, kw.pop("size", None), "empty")
    _reject(kw, "empty")
    _device(device)
    t = _C._empty(shape, dtype or _C.get_default_dtype(), None)
    if memory_format is not None:
        from .memory_format import to_format

        t = to_format(t, memory_format)
    return _finish(t, requires_grad, out)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    """An uninitialised tensor with the given ``size`` and ``stride``."""
    shape = _shape((size,), "empty_strided")
    strides = [builtins.int(s) for s in stride]
    if len(strides) != len(shape):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of strides "
                           f"({len(strides)})")
    _device(device)
    t = _C._empty_strided(shape, strides, dtype or _C.get_default_dtype(), None)
    return _finish(t, requires_grad)


def _reject(kw, op):
    if kw:
        raise TypeError(f"{op}() got an unexpected keyword argument '{next(iter(kw))}'")


def _filled(shape, value, dtype, device, requires_grad, out):
    _device(device)
    t = _C._empty(shape, dtype, None)
    _C.ops.fill_(t, value)
    return _finish(t, requires_grad, out)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False):
    """A tensor of ``size`` filled with ``fill_value``; without ``dtype`` it is inferred from the value
    (bool -> bool, int -> int64, float -> default dtype)."""
    if dtype is None:
        dtype = fill_value.dtype if isinstance(fill_value, _C.TensorBase) else _infer_dtype(fill_value)
    return _filled(_shape((size,), "full"), fill_value, dtype, device, requires_grad, out)


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False, **kw):
    """A tensor of zeros (default dtype unless ``dtype``)."""
    shape = _kw_size(size, kw.pop("size", None), "zeros")
    _reject(kw, "zeros")
    return _filled(shape, 0, dtype or _C.get_default_dtype(), device, requires_grad, out)


def ones(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False, **kw):
    """A tensor of ones (default dtype unless ``dtype``)."""
    shape = _kw_size(size, kw.pop("size", None), "ones")
    _reject(kw, "ones")
    return _filled(shape, 1, dtype or _C.get_default_dtype(), device, requires_grad, out)


def _like(input, op):
    if not isinstance(input, _C.TensorBase):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return list(input.shape)


def like_layout(input, t, memory_format):
    """``t`` (row-major, shaped like ``input``) laid out as the ``*_like`` functions lay out their result: in
    ``memory_format``, or by default (preserve_format) in ``input``'s own dimension order when ``input`` is
    dense without overlap (a transposed or channels-last tensor), else row-major, as in PyTorch."""
    from .memory_format import laid_out_in, preserve_format, to_format

    if memory_format is not None and memory_format is not preserve_format:
        return to_format(t, memory_format)
    if input.dim() < 2 or input.is_contiguous():
        return t
    order = sorted(builtins.range(input.dim()), key=lambda d: (-input.stride(d), d))
    expected = 1
    for d in reversed(order):
        if input.shape[d] != 1:
            if input.stride(d) != expected:
                return t  # overlapping or with gaps: row-major
            expected *= input.shape[d]
    return laid_out_in(t, order)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
               pin_memory=False):
    """An uninitialised tensor shaped (and, by default, strided) like ``input`` (its dtype unless ``dtype``)."""
    _device(device)
    t = like_layout(input, _C._empty(_like(input, "empty_like"), dtype or input.dtype, None), memory_format)
    return _finish(t, requires_grad)


def _filled_like(input, op, value, dtype, device, requires_grad, memory_format):
    t = like_layout(input, _filled(_like(input, op), value, dtype or input.dtype, device, False, None), memory_format)
    return _finish(t, requires_grad)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
               pin_memory=False):
    """Zeros shaped (and, by default, strided) like ``input`` (its dtype unless ``dtype``)."""
    return _filled_like(input, "zeros_like", 0, dtype, device, requires_grad, memory_format)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
              pin_memory=False):
    """Ones shaped (and, by default, strided) like ``input`` (its dtype unless ``dtype``)."""
    return _filled_like(input, "ones_like", 1, dtype, device, requires_grad, memory_format)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
              pin_memory=False):
    """``fill_value`` shaped (and, by default, strided) like ``input`` (its dtype unless ``dtype``)."""
    return _filled_like(input, "full_like", fill_value, dtype, device, requires_grad, memory_format)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A 0-dim tensor holding ``s`` (default dtype unless ``dtype``)."""
    return _filled([], s, dtype or _C.get_default_dtype(), device, requires_grad, None)


def arange(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
           pin_memory=False):
    """Values from ``start`` to ``end`` (exclusive) by ``step``: ``arange(end)`` or ``arange(start, end, step)``.

    Without ``dtype`` the result is int64 when all of start/end/step are integers, else the default float dtype;
    its length is ``ceil((end - start) / step)``.
    """
    if end is None:
        start, end = 0, start
    _device(device)
    return _finish(_C.ops.arange(start, end, step, dtype=dtype), requires_grad, out)


def range(start=0, end=None, step=1, *, dtype=None, device=None, requires_grad=False, out=None, layout=None):
    """Deprecated in PyTorch: like ``arange`` but includes ``end``; the default float dtype unless ``dtype``."""
    if end is None:
        start, end = 0, start
    dtype = dtype or _C.get_default_dtype()
    if step == 0:
        raise RuntimeError("range: step must be nonzero")
    n = builtins.int(np.floor((builtins.float(end) - builtins.float(start)) / builtins.float(step))) + 1
    if n < 0:
        raise RuntimeError("range: upper bound and lower bound inconsistent with step sign")
    t = _C.ops.arange(0, n, dtype=_C.float64)
    t = _C.ops.to_dtype(t * builtins.float(step) + builtins.float(start), dtype)
    return _finish(t, requires_grad, out)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
             pin_memory=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (default float dtype)."""
    _device(device)
    return _finish(_C.ops.linspace(start, end, steps, dtype=dtype), requires_grad, out)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
             pin_memory=False):
    """``base ** linspace(start, end, steps)`` (default float dtype)."""
    _device(device)
    return _finish(_C.ops.logspace(start, end, steps, base, dtype=dtype), requires_grad, out)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False):
    """An ``n`` x ``m`` (default ``n`` x ``n``) matrix with ones on the diagonal."""
    _device(device)
    return _finish(_C.ops.eye(n, m, dtype=dtype), requires_grad, out)
