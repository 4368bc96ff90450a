"""Tensor creation: from data, filled, ranges."""
import builtins

import numpy as np

from .. import _C

__all__ = ["tensor", "as_tensor", "from_numpy", "zeros", "ones", "empty", "full", "zeros_like", "ones_like",
           "empty_like", "full_like", "from_dlpack", "scalar_tensor"]

_NP_TO_FLOW = {
    np.dtype(np.bool_): _C.bool, np.dtype(np.uint8): _C.uint8, np.dtype(np.int8): _C.int8,
    np.dtype(np.int16): _C.int16, np.dtype(np.int32): _C.int32, np.dtype(np.int64): _C.int64,
    np.dtype(np.float16): _C.float16, np.dtype(np.float32): _C.float32, np.dtype(np.float64): _C.float64,
}


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        return [builtins.int(s) for s in size[0]]
    if len(size) == 1 and hasattr(size[0], "__len__") and not isinstance(size[0], _C.TensorBase):
        return [builtins.int(s) for s in size[0]]
    return [builtins.int(s) for s in size]


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def _infer_dtype(data):
    """PyTorch's dtype inference for Python data: bools, ints -> int64, floats -> default dtype."""
    def walk(x):
        if isinstance(x, builtins.bool) or isinstance(x, np.bool_):
            return 0
        if isinstance(x, (builtins.int, np.integer)):
            return 1
        if isinstance(x, (builtins.float, np.floating)):
            return 2
        if isinstance(x, _C.TensorBase):
            return 3 if x.dtype.is_floating_point else (0 if x.dtype == _C.bool else 1)
        if isinstance(x, (list, tuple)):
            return max((walk(e) for e in x), default=2 if len(x) == 0 else 0)
        if isinstance(x, complex):
            raise TypeError("complex tensors are not supported")
        raise TypeError(f"Could not infer dtype of {type(x).__name__}")
    k = walk(data)
    return [_C.bool, _C.int64, _C.get_default_dtype(), _C.get_default_dtype()][k]


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """Constructs a tensor with a copy of ``data`` (a number, nested sequence, NumPy array or tensor)."""
    if isinstance(data, _C.TensorBase):
        t = _C.ops.clone(data.detach())
        if dtype is not None and dtype != t.dtype:
            t = _C.ops.to_dtype(t, dtype)
        return _finish(_to_device(t, device), requires_grad)
    if isinstance(data, np.generic):  # NumPy scalars keep their dtype, like torch.tensor(np.float64(1))
        data = np.asarray(data)
    if isinstance(data, np.ndarray):
        arr = np.array(data, copy=True, order="C")
        if arr.dtype not in _NP_TO_FLOW:
            raise TypeError(f"can't convert np.ndarray of type {arr.dtype}. The only supported types are: "
                            "float64, float32, float16, int64, int32, int16, int8, uint8, and bool.")
        t = _C._from_numpy(arr)
        if dtype is not None and dtype != t.dtype:
            t = _C.ops.to_dtype(t, dtype)
        return _finish(_to_device(t, device), requires_grad)
    if isinstance(data, (list, tuple)) and any(isinstance(e, _C.TensorBase) for e in _flatten(data)):
        data = _nested_tensors_to_lists(data)
    inferred = _infer_dtype(data)
    target = dtype or inferred
    np_dtype = np.float64 if target.is_floating_point else (np.bool_ if target == _C.bool else np.int64)
    arr = np.array(data, dtype=np_dtype)
    if arr.dtype == object:
        raise ValueError("expected sequence of equal-length sequences")
    t = _C._from_numpy(np.array(arr, copy=True, order="C"))
    if t.dtype != target:
        t = _C.ops.to_dtype(t, target)
    return _finish(_to_device(t, device), requires_grad)


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


def _to_device(t, device):
    if device is not None:
        d = device if isinstance(device, _C.device) else _C.device(device)
        if d.type != "cpu":
            _C._empty([0], _C.float32, d)
    return t


def as_tensor(data, dtype=None, device=None):
    """Like ``tensor`` but shares memory with a tensor or NumPy array when dtype and device allow."""
    if isinstance(data, _C.TensorBase):
        return data if dtype is None or dtype == data.dtype else _C.ops.to_dtype(data, dtype)
    if isinstance(data, np.ndarray) and data.dtype in _NP_TO_FLOW:
        t = from_numpy(data) if all(s >= 0 for s in data.strides) else tensor(data)
        return t if dtype is None or dtype == t.dtype else _C.ops.to_dtype(t, dtype)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray):
    """A tensor sharing memory with ``ndarray`` (changes to one are seen by the other)."""
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if ndarray.dtype not in _NP_TO_FLOW:
        raise TypeError(f"can't convert np.ndarray of type {ndarray.dtype}. The only supported types are: "
                        "float64, float32, float16, int64, int32, int16, int8, uint8, and bool.")
    return _C._from_numpy(ndarray)


def from_dlpack(ext_tensor):
    """A tensor sharing memory with any object implementing the DLPack protocol."""
    return _C._from_dlpack(ext_tensor)


def empty(*size, dtype=None, device=None, requires_grad=False, out=None, pin_memory=False, memory_format=None):
    return _finish(_C._empty(_shape(size), dtype or _C.get_default_dtype(), device), requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False, out=None):
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from the value when not given)."""
    if dtype is None:
        dtype = _infer_dtype(fill_value) if not isinstance(fill_value, _C.TensorBase) else fill_value.dtype
    t = _C._empty(_shape((size,)) if not isinstance(size, builtins.int) else [size], dtype, device)
    _C.ops.fill_(t, fill_value)
    return _finish(t, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None):
    return full(_shape(size), 0, dtype=dtype or _C.get_default_dtype(), device=device, requires_grad=requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False, out=None):
    return full(_shape(size), 1, dtype=dtype or _C.get_default_dtype(), device=device, requires_grad=requires_grad)


def empty_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    return empty(list(input.shape), dtype=dtype or input.dtype, requires_grad=requires_grad)


def zeros_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    return full(list(input.shape), 0, dtype=dtype or input.dtype, requires_grad=requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False, memory_format=None):
    return full(list(input.shape), 1, dtype=dtype or input.dtype, requires_grad=requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False, memory_format=None):
    return full(list(input.shape), fill_value, dtype=dtype or input.dtype, requires_grad=requires_grad)


def scalar_tensor(s, dtype=None, device=None, requires_grad=False):
    return full([], s, dtype=dtype or _C.get_default_dtype(), requires_grad=requires_grad)
