"""``put`` (writes at flat indices) and ``index_reduce`` (prod/mean/amax/amin of slices into ``self``)."""
import builtins
import warnings

from .. import _C
from ._names import torch_dtype_name

ops = _C.ops

__all__ = ["put", "index_reduce"]


def put(input, index, source, accumulate=False):
    """A copy of ``input`` with ``source`` written at the flat ``index`` positions of its flattened view (summed
    into them when ``accumulate``). Negative indices count from the end."""
    if index.dtype != _C.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {torch_dtype_name(index.dtype)}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{torch_dtype_name(input.dtype)} and source.dtype = {torch_dtype_name(source.dtype)}")
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = input.numel()
    flat_index = ops.reshape(index, [-1])
    if flat_index.numel():
        bad = ops.logical_or(ops.ge(flat_index, n), ops.lt(flat_index, -n))
        if ops.any(bad).item():
            first = flat_index[ops.nonzero(bad)[0, 0].item()].item()
            raise IndexError(f"out of range: tried to access index {first} on a tensor of {n} elements.")
    flat_index = ops.where(ops.lt(flat_index, 0), ops.add(flat_index, n), flat_index)
    flat = ops.reshape(input, [n])
    out = ops.index_put(flat, ops.reshape(source, [-1]), [flat_index], accumulate)
    return ops.reshape(out, list(input.shape))


def put_(self, index, source, accumulate=False):
    """In-place :func:`put`."""
    return ops.copy_(self, put(self, index, source, accumulate))


_index_reduce_warned = False


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """A copy of ``input`` where slice ``index[i]`` along ``dim`` is reduced (``'prod'``, ``'mean'``, ``'amax'``
    or ``'amin'``) with slice ``i`` of ``source``; ``include_self=False`` leaves ``input``'s values out of the
    reduction at the indexed slices."""
    global _index_reduce_warned
    if not _index_reduce_warned:
        _index_reduce_warned = True
        warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning, stacklevel=2)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    nd = builtins.max(input.dim(), 1)
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    dim = dim % nd
    if index.dim() > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.dim()} with type: "
                         f"{torch_dtype_name(index.dtype)} and size: {list(index.shape)}")
    if index.dtype not in (_C.int32, _C.int64):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{torch_dtype_name(index.dtype)}")
    if input.dtype != source.dtype:
        raise RuntimeError(f"index_reduce_(): self ({torch_dtype_name(input.dtype)}) and source "
                           f"({torch_dtype_name(source.dtype)}) must have the same scalar type")
    if input.dim() == 0 or source.dim() == 0:
        if input.dim() != source.dim():
            raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified "
                               f"dimension. Got self.shape = {list(input.shape)} source.shape = {list(source.shape)}")
        out = index_reduce(ops.reshape(input, [1]), 0, index, ops.reshape(source, [1]), reduce,
                           include_self=include_self)
        return ops.reshape(out, [])
    n = index.numel()
    src_len = source.shape[dim] if source.dim() > dim else 1
    if n != src_len:
        raise RuntimeError(f"index_reduce_(): Number of indices ({n}) should be equal to source.size(dim): "
                           f"({src_len}), for dim: {dim}")
    if source.dim() != input.dim() or any(s != t for d, (s, t) in enumerate(zip(source.shape, input.shape))
                                          if d != dim):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(input.shape)} source.shape = {list(source.shape)}")
    idx = ops.reshape(index, [-1])
    if n and ops.any(ops.logical_or(ops.ge(idx, input.shape[dim]), ops.lt(idx, 0))).item():
        raise IndexError("index out of range in self")
    view = [1] * input.dim()
    view[dim] = n
    full = ops.expand(ops.reshape(ops.to_dtype(idx, _C.int64), view), list(source.shape))
    return ops.scatter_reduce(input, dim, full, source, reduce, include_self=include_self)


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    """In-place :func:`index_reduce`."""
    # prod/amax/amin backwards save self, which the copy below overwrites: reduce a clone while recording
    src = ops.clone(self) if self.requires_grad and _C.is_grad_enabled() else self
    return ops.copy_(self, index_reduce(src, dim, index, source, reduce, include_self=include_self))


TENSOR_METHODS = {"put": put, "put_": put_, "index_reduce": index_reduce, "index_reduce_": index_reduce_}
