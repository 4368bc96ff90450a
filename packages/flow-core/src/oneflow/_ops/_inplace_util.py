"""Helpers of the Python-level tensor methods: NumPy round trips for ops without a registry kernel,
PyTorch's checks and copy for in-place forms computed out of place, and gradient reduction to a shape."""
import numpy as np

from .. import _C
from ._names import torch_dtype_name
from .misc import can_cast
from .reduce import sum_to_size

ops = _C.ops



def _np(t):
    """A float64/int NumPy copy of ``t``'s values (bfloat16 goes through float32, which NumPy lacks)."""
    t = t.detach()
    if t.dtype == _C.bfloat16:
        t = ops.to_dtype(t, _C.float32)
    return np.array(_C._to_numpy(ops.contiguous(t)), copy=True)


def _from_np(arr, dtype):
    t = _C._from_numpy(np.ascontiguousarray(arr))
    return ops.to_dtype(t, dtype) if t.dtype != dtype else t


def _need_tensor(op, name, pos, value):
    if not isinstance(value, _C.TensorBase):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(value).__name__}")


def _check_inplace(self, result, op=None):
    """PyTorch's checks for writing an out-of-place ``result`` into ``self``: same shape, castable dtype."""
    if list(result.shape) != list(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                           f"{list(result.shape)}")
    if not can_cast(result.dtype, self.dtype):
        prefix = f"{op}: " if op else ""
        raise RuntimeError(f"{prefix}result type {torch_dtype_name(result.dtype)} can't be cast to the desired "
                           f"output type {torch_dtype_name(self.dtype)}")


def _write(self, result, op=None):
    _check_inplace(self, result, op)
    return ops.copy_(self, result)


def _inplace(fn, op=None):
    """An in-place method computing ``fn(self, ...)`` out of place and copying it into ``self``. While autograd
    records, ``fn`` sees a clone, so the values its backward saves are not the ones the copy overwrites."""
    def method(self, *args, **kwargs):
        src = ops.clone(self) if self.requires_grad and _C.is_grad_enabled() else self
        return _write(self, fn(src, *args, **kwargs), op)

    method.__name__ = f"{fn.__name__}_"
    method.__doc__ = f"In-place ``{fn.__name__}``."
    return method


def _sum_to(g, shape):
    return g if list(g.shape) == list(shape) else sum_to_size(g, *shape)


def _float_dtype(dtype):
    """Integer and bool inputs of PyTorch's float ops compute in the default float dtype."""
    return dtype if dtype.is_floating_point else _C.get_default_dtype()
