"""Binary-search lookups: ``searchsorted`` and ``bucketize``, over the ``_searchsorted`` registry op (a binary
search per value, NaNs sorting last as in PyTorch)."""
import numbers

from .. import _C

ops = _C.ops

__all__ = ["searchsorted", "bucketize", "isin"]


def _insertion_index(boundaries, values, right, out_int32):
    """Insertion points of ``values[..., j]`` into each sorted row ``boundaries[..., :]`` (leading dims
    equal, or ``boundaries`` 1-D), by binary search (NaN sorting last)."""
    if _C.promote_types(boundaries.dtype, values.dtype) == _C.bool:  # PyTorch's kernel has no bool version
        raise NotImplementedError("\"searchsorted_out_cpu\" not implemented for 'Bool'")
    out = ops._searchsorted(boundaries, values, right)
    return ops.to_dtype(out, _C.int32) if out_int32 else out


def _as_tensor(values, like):
    if isinstance(values, numbers.Number):
        from .creation import tensor

        return tensor(values, dtype=_C.promote_types(like.dtype, tensor(values).dtype))
    return values


def searchsorted(sorted_sequence, values, *, out_int32=False, right=False, side=None, sorter=None, out=None):
    """Indices where ``values`` would be inserted into the innermost dim of ``sorted_sequence`` to keep it
    sorted: the first such index (``right=False`` / ``side='left'``) or the last (``right=True`` /
    ``side='right'``). ``sorted_sequence`` is 1-D or has the same leading dims as ``values``; ``sorter``
    (int64 indices) sorts an unsorted sequence; ``values`` may be a number (giving a 0-D result). The result is
    int64, or int32 with ``out_int32``."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"oneflow.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("oneflow.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    if sorted_sequence.dim() == 0:
        raise RuntimeError("oneflow.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    values = _as_tensor(values, sorted_sequence)
    if sorted_sequence.dim() != 1 and list(sorted_sequence.shape[:-1]) != list(values.shape[:-1]):
        raise RuntimeError(f"oneflow.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries tensor {list(sorted_sequence.shape)} and input value tensor "
                           f"{list(values.shape)}")
    if sorter is not None:
        if sorter.dtype != _C.int64:
            from ._names import torch_dtype_name

            raise RuntimeError(f"oneflow.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{torch_dtype_name(sorter.dtype)}")
        if list(sorter.shape) != list(sorted_sequence.shape):
            raise RuntimeError(f"oneflow.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(sorted_sequence.shape)}and got sorter tensor "
                               f"{list(sorter.shape)}")
        sorted_sequence = ops.gather(sorted_sequence, -1, sorter)
    result = _insertion_index(sorted_sequence, values, right, out_int32)
    if out is not None:
        return ops.copy_(out, result)
    return result


def bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    """The index of the bucket of each element of ``input`` given 1-D increasing ``boundaries``:
    ``boundaries[i-1] < x <= boundaries[i]`` (``right=False``) or ``boundaries[i-1] <= x < boundaries[i]``
    (``right=True``). ``input`` may be a number (giving a 0-D result)."""
    if boundaries.dim() != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.dim()})")
    result = _insertion_index(boundaries, _as_tensor(input, boundaries), right, out_int32)
    if out is not None:
        return ops.copy_(out, result)
    return result


def isin(elements, test_elements, *, assume_unique=False, invert=False):  # noqa: ARG001 (assume_unique: a hint)
    """Whether each element of ``elements`` occurs in ``test_elements`` (either may be a number), as a bool
    tensor shaped like ``elements``; ``invert=True`` negates it. Values are compared in their promoted dtype,
    and NaN is never found. Sorting the test values once makes each lookup a binary search."""
    from .creation import tensor

    if not isinstance(elements, _C.TensorBase) and not isinstance(test_elements, _C.TensorBase):
        raise TypeError("isin() expects at least one of elements and test_elements to be a tensor")
    e = elements if isinstance(elements, _C.TensorBase) else tensor(elements)
    t = test_elements if isinstance(test_elements, _C.TensorBase) else tensor(test_elements)
    dt = _C.promote_types(e.dtype, t.dtype)
    e, t = ops.to_dtype(e.detach(), dt), ops.to_dtype(ops.reshape(t.detach(), [-1]), dt)
    t = ops.masked_select(t, ops.eq(t, t))  # NaN matches nothing, and would stop the binary search
    if t.numel() == 0:
        from .creation import zeros

        found = zeros(list(e.shape), dtype=_C.bool)
    else:
        st = ops.sort(t, 0, False, stable=True)[0]
        pos = ops.clamp(ops._searchsorted(st, ops.reshape(e, [-1]), False), 0, t.numel() - 1)
        found = ops.reshape(ops.eq(ops.index_select(st, 0, pos), ops.reshape(e, [-1])), list(e.shape))
    return ops.logical_not(found) if invert else found
