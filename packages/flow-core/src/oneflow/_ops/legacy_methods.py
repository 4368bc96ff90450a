"""Legacy Tensor methods kept for code written against older PyTorch: apply_, map_, as_subclass, new, resize,
resize_as, new_empty_strided."""
import builtins
import operator
import warnings

import numpy as np

from .. import _C
from .creation import _device, _shape

ops = _C.ops



def _py_caster(dtype):
    if dtype.is_floating_point:
        return builtins.float
    if dtype == _C.bool:
        return builtins.bool
    return lambda v: builtins.int(v) if isinstance(v, builtins.float) else operator.index(v)


def _elementwise_py(self, values, op):
    if self.requires_grad:
        raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use var.detach().{op}() instead.")
    if self.device.type != "cpu":
        raise TypeError(f"{op}_ is only implemented on CPU tensors")
    from .creation import tensor

    new = tensor(values, dtype=self.dtype) if values else _C._empty([0], self.dtype, None)
    return ops.copy_(self, ops.reshape(new, list(self.shape)))


def apply_(self, callable):
    """Applies ``callable`` to each element of ``self`` in place (CPU only; slow, element by element)."""
    cast = _py_caster(self.dtype)
    return _elementwise_py(self, [cast(callable(v)) for v in self.detach().reshape(-1).tolist()], "apply_")


def map_(self, tensor, callable):
    """Sets each element of ``self`` to ``callable(self_element, tensor_element)``, with ``tensor`` broadcast to
    ``self``'s shape (in place; CPU only)."""
    from .._tensor import _TYPE_NAMES

    if tensor.dtype != self.dtype:
        raise TypeError(f"map_: expected oneflow.{_TYPE_NAMES[self.dtype]} for 'other' "
                        f"(got oneflow.{_TYPE_NAMES[tensor.dtype]})")
    if tensor.dim() > self.dim():
        raise RuntimeError(f"expand({list(tensor.shape)}, size={list(self.shape)}): the number of sizes provided "
                           f"({self.dim()}) must be greater or equal to the number of dimensions in the tensor "
                           f"({tensor.dim()})")
    other = ops.expand(tensor.detach(), list(self.shape)).reshape(-1).tolist()
    cast = _py_caster(self.dtype)
    vals = [cast(callable(a, b)) for a, b in zip(self.detach().reshape(-1).tolist(), other)]
    return _elementwise_py(self, vals, "map_")


def as_subclass(self, cls):
    """``self`` as an instance of ``cls`` (a subclass of ``oneflow.Tensor``): the same data, and, like PyTorch's,
    attached to ``self``'s autograd graph through an alias (so the result is not a leaf when ``self`` requires
    grad)."""
    if not (isinstance(cls, type) and issubclass(cls, _C.TensorBase)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not possible. "
                        "Make sure your class inherits from Tensor.")
    alias = ops.as_strided(self, list(self.shape), list(self.stride()), self.storage_offset())
    # _make_subclass would detach; adopting the alias's impl keeps its grad_fn
    out = _C.TensorBase.__new__(cls)
    _C.TensorBase.__init__(out)
    out._assign(alias)
    return out


def new(self, *args, device=None, **kwargs):
    """The legacy constructor: ``new()`` (empty), ``new(*sizes)`` / ``new(Size)`` (uninitialised), ``new(data)``
    (a copy of a sequence) or ``new(tensor)`` (``tensor`` itself, which must have ``self``'s dtype); the result
    always has ``self``'s dtype."""
    from .._tensor import Size, _TYPE_NAMES
    from .creation import tensor

    _device(device)
    if kwargs:
        kinds = ", ".join(type(a).__name__ for a in args)
        raise TypeError(f"new() received an invalid combination of arguments - got ({kinds}, "
                        f"{', '.join(f'{k}={type(v).__name__}' for k, v in kwargs.items())})")
    if not args:
        return _C._empty([0], self.dtype, None)
    if builtins.all(isinstance(a, (builtins.int, np.integer)) and not isinstance(a, builtins.bool) for a in args) \
            or (len(args) == 1 and isinstance(args[0], Size)):
        return _C._empty(_shape(args, "new"), self.dtype, None)
    if len(args) != 1:
        raise TypeError(f"new() received an invalid combination of arguments - got "
                        f"({', '.join(type(a).__name__ for a in args)})")
    data = args[0]
    if isinstance(data, _C.TensorBase):
        if data.dtype != self.dtype:
            raise TypeError(f"expected oneflow.{_TYPE_NAMES[self.dtype]} (got oneflow.{_TYPE_NAMES[data.dtype]})")
        return data.detach()
    if isinstance(data, (builtins.int, builtins.float, builtins.bool)):
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    if isinstance(data, np.ndarray) or self.dtype.is_floating_point or self.dtype == _C.bool:
        return tensor(data, dtype=self.dtype)
    # sequence data cast to an integer dtype truncates, as PyTorch's legacy constructor does
    return ops.to_dtype(tensor(data, dtype=_C.float64 if _has_float(data) else _C.int64), self.dtype)


def _has_float(data):
    if isinstance(data, (list, tuple)):
        return any(_has_float(d) for d in data)
    return isinstance(data, (builtins.float, np.floating))


def _resize_autograd(self, shape, op):
    n = 1
    for s in shape:
        n *= s
    if n != self.numel():
        size = "x".join(str(s) for s in shape)
        raise RuntimeError(f"requested resize to {size} ({n} elements in total), but the given tensor has a size of "
                           f"{'x'.join(str(s) for s in self.shape)} ({self.numel()} elements). autograd's resize can "
                           "only change the shape of a given tensor, while preserving the number of elements. ")
    return ops.reshape(self, shape)


def resize(self, *sizes):
    """The deprecated out-of-place resize: ``self`` reshaped to ``sizes``, which must keep the number of elements."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _resize_autograd(self, _shape(sizes, "resize"), "resize")


def resize_as(self, other):
    """The deprecated out-of-place ``resize_as``: ``self`` reshaped to ``other``'s shape (same number of
    elements)."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _resize_autograd(self, list(other.shape), "resize_as")


def _new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False, **kw):
    """An uninitialised tensor with the given ``size`` and ``stride`` (dtype defaults to ``self``'s)."""
    from .creation import empty_strided

    return empty_strided(size, stride, dtype=dtype or self.dtype, device=self.device if device is None else device,
                         requires_grad=requires_grad, **kw)


TENSOR_METHODS = {
    "apply_": apply_, "map_": map_, "as_subclass": as_subclass, "new": new, "resize": resize,
    "resize_as": resize_as, "new_empty_strided": _new_empty_strided,
}
