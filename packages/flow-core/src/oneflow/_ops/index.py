"""Shape and indexing ops with PyTorch's Python signatures: stack and friends, cat aliases, nonzero(as_tuple),
sort/topk named tuples, unique, repeat/tile, flip/roll, scatter with ``value=``, index_put in PyTorch's order."""
import collections

import numpy as np

from .. import _C
from ._names import torch_dtype_name
from .indexing import put_value

ops = _C.ops
_TensorBase = _C.TensorBase

__all__ = ["cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "nonzero",
           "argwhere", "sort", "argsort", "msort", "topk", "unique", "unique_consecutive", "tile", "flip", "fliplr",
           "flipud", "roll", "repeat_interleave", "scatter", "index_put", "index_put_", "take_along_dim", "rot90",
           "index_fill", "row_stack", "select_scatter", "slice_scatter", "diagonal_scatter"]

sort_return = collections.namedtuple("sort", ["values", "indices"])
topk_return = collections.namedtuple("topk", ["values", "indices"])


def _ints(args, name):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return [int(a) for a in args[0]]
    if len(args) == 1 and isinstance(args[0], _TensorBase):
        return [int(a) for a in args[0].tolist()]
    return [int(a) for a in args]


def cat(tensors, dim=0, *, out=None):
    """Concatenates ``tensors`` along ``dim`` (type promotion across inputs; 1-D empty tensors are skipped)."""
    if isinstance(tensors, _TensorBase):
        raise TypeError("cat(): argument 'tensors' must be tuple of Tensors, not Tensor")
    if len(tensors) == 0:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    return ops.cat(list(tensors), dim, out=out)


concat = concatenate = cat


def stack(tensors, dim=0, *, out=None):
    """Stacks equally shaped tensors along a new dimension ``dim``."""
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    s0 = list(tensors[0].shape)
    for i, t in enumerate(tensors[1:], 1):
        if list(t.shape) != s0:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {s0} at entry 0 and "
                               f"{list(t.shape)} at entry {i}")
    nd = len(s0) + 1
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    d = dim + nd if dim < 0 else dim
    return cat([ops.unsqueeze(t, d) for t in tensors], d, out=out)


def _atleast(t, n):
    s = list(t.shape)
    if len(s) >= n:
        return t
    if n == 1:
        return ops.reshape(t, [1])
    if n == 2:
        return ops.reshape(t, [1] + s if s else [1, 1])
    return ops.reshape(t, [1, 1, 1] if not s else ([1] + s + [1] if len(s) == 1 else s + [1]))


def hstack(tensors, *, out=None):
    """Stacks horizontally (along dim 1, or dim 0 for 1-D tensors)."""
    ts = [_atleast(t, 1) for t in tensors]
    return cat(ts, 0 if ts[0].dim() == 1 else 1, out=out)


def vstack(tensors, *, out=None):
    """Stacks vertically (row-wise) after making inputs at least 2-D."""
    return cat([_atleast(t, 2) for t in tensors], 0, out=out)


row_stack = vstack


def dstack(tensors, *, out=None):
    """Stacks depth-wise (along dim 2) after making inputs at least 3-D."""
    return cat([_atleast(t, 3) for t in tensors], 2, out=out)


def column_stack(tensors, *, out=None):
    """Stacks 1-D tensors as columns of a 2-D tensor (others as in hstack)."""
    ts = [ops.reshape(t, [t.numel(), 1]) if t.dim() <= 1 else t for t in tensors]
    return cat(ts, 1, out=out)


def nonzero(input, *, out=None, as_tuple=False):
    """Indices of the non-zero elements: an (n, ndim) int64 tensor, or one 1-D tensor per dim (as_tuple)."""
    if not as_tuple:
        return ops.nonzero(input)
    x = ops.reshape(input, [1]) if input.dim() == 0 else input
    r = ops.nonzero(x)
    return tuple(ops.select(r, 1, i) for i in range(x.dim()))


def argwhere(input):
    """argwhere(input) -> Tensor

    The indices of the nonzero elements of ``input``, one row per element (same as :func:`oneflow.nonzero`)."""
    return ops.nonzero(input)


def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    """Sorts along ``dim``; returns ``(values, indices)``. Always stable; NaN sorts above every number."""
    v, i = ops.sort(input, dim, descending, stable=bool(stable), out=out)
    return sort_return(v, i)


def argsort(input, dim=-1, descending=False, stable=False):
    """Indices that sort ``input`` along ``dim``."""
    return ops.sort(input, dim, descending, stable=bool(stable))[1]


def msort(input):
    """msort(input) -> Tensor

    ``input`` sorted in ascending order along its first dimension (the values of ``sort(input, 0)``)."""
    return ops.sort(input, 0)[0]


def topk(input, k, dim=-1, largest=True, sorted=True, *, out=None):
    """The ``k`` largest (or smallest) elements along ``dim``: ``(values, indices)``."""
    if input.dtype == _C.bool and input.device.type == "cpu":  # PyTorch's CPU kernel refuses bool
        raise RuntimeError("topk does not support bool dtypes on CPU")
    v, i = ops.topk(input, k, dim, largest, sorted, out=out)
    return topk_return(v, i)


def _check_unique_dim(input, dim):
    """PyTorch's checks for ``unique(dim=...)`` that the registry op lacks: a 0-dim tensor has no dim, and a
    zero-size tensor can only be split along a zero-size dim (other slices would all be empty, and equal)."""
    if dim is None:
        return
    if input.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if input.numel() == 0 and -input.dim() <= dim < input.dim() and input.shape[dim] != 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied")


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """Unique elements (or slices along ``dim``), sorted; optionally the inverse indices and the counts."""
    _check_unique_dim(input, dim)
    v, inv, cnt = ops.unique(input, sorted, return_inverse, return_counts, dim)
    if not return_inverse and not return_counts:
        return v
    r = (v,)
    if return_inverse:
        r += (inv,)
    if return_counts:
        r += (cnt,)
    return r


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Collapses runs of equal consecutive elements (or slices along ``dim``)."""
    _check_unique_dim(input, dim)
    v, inv, cnt = ops.unique_consecutive(input, return_inverse, return_counts, dim)
    if not return_inverse and not return_counts:
        return v
    r = (v,)
    if return_inverse:
        r += (inv,)
    if return_counts:
        r += (cnt,)
    return r


def repeat(self, *sizes):
    """Repeats the tensor along each dim ``sizes[i]`` times (extra leading sizes add dims)."""
    reps = _ints(sizes, "repeat")
    if len(reps) < self.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor")
    if any(r < 0 for r in reps):
        raise RuntimeError(f"Trying to create tensor with negative dimension: {reps}")
    shape = [1] * (len(reps) - self.dim()) + list(self.shape)
    x = ops.reshape(self, shape)
    inter, exp, final = [], [], []
    for r, s in zip(reps, shape):
        inter += [1, s]
        exp += [r, s]
        final.append(r * s)
    return ops.reshape(ops.expand(ops.reshape(x, inter), exp), final)


def tile(input, *dims):
    """Like ``repeat``, but fewer ``dims`` than the tensor has are padded with leading 1s."""
    reps = _ints(dims, "tile")
    if len(reps) < input.dim():
        reps = [1] * (input.dim() - len(reps)) + reps
    return repeat(input, reps)


def flip(input, *dims):
    """Reverses the order of elements along ``dims`` (a copy)."""
    return ops.flip(input, _ints(dims, "flip"))


def fliplr(input):
    """fliplr(input) -> Tensor

    A copy of ``input`` (at least 2-D) with the order of its columns (dimension 1) reversed."""
    if input.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return ops.flip(input, [1])


def flipud(input):
    """flipud(input) -> Tensor

    A copy of ``input`` (at least 1-D) with the order of its rows (dimension 0) reversed."""
    if input.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return ops.flip(input, [0])


def roll(input, shifts, dims=None):
    """Rolls elements along ``dims`` by ``shifts`` (the flattened tensor when ``dims`` is None)."""
    shifts = [int(shifts)] if not isinstance(shifts, (tuple, list)) else [int(s) for s in shifts]
    dims = [] if dims is None else ([int(dims)] if not isinstance(dims, (tuple, list)) else [int(d) for d in dims])
    return ops.roll(input, shifts, dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeats each element (or slice along ``dim``) ``repeats`` times."""
    from .creation import tensor

    if repeats is None:  # torch.repeat_interleave(repeats): arange(len) repeated
        reps = input
        idx = np.repeat(np.arange(reps.shape[0]), reps.numpy())
        return tensor(idx, dtype=_C.int64)
    x = input
    if dim is None:
        x = ops.reshape(x, [-1])
        dim = 0
    nd = max(x.dim(), 1)
    d = dim + nd if dim < 0 else dim
    # a number or a 0-dim tensor repeats every slice; a 1-element 1-D tensor too, unless it is the per-slice
    # list of a dim of size 1 (the same result either way)
    if isinstance(repeats, int) or (isinstance(repeats, _TensorBase) and repeats.numel() == 1
                                    and (repeats.dim() == 0 or (repeats.dim() == 1 and x.shape[d] != 1))):
        r = int(repeats) if isinstance(repeats, int) else int(repeats.item())
        if r < 0:
            raise RuntimeError("repeats can not be negative")
        shape = list(x.shape)
        u = ops.unsqueeze(x, d + 1)
        exp = shape[:d + 1] + [r] + shape[d + 1:]
        return ops.reshape(ops.expand(u, exp), shape[:d] + [shape[d] * r] + shape[d + 1:])
    reps = repeats.numpy() if isinstance(repeats, _TensorBase) else np.asarray(repeats)
    if reps.ndim != 1 or reps.shape[0] != x.shape[d]:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{reps.shape[0] if reps.ndim else 1} and input.size({d}) = {x.shape[d]}")
    if (reps < 0).any():
        raise RuntimeError("repeats can not be negative")
    idx = tensor(np.repeat(np.arange(x.shape[d]), reps), dtype=_C.int64)
    return ops.index_select(x, d, idx)


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """Writes ``src`` (a tensor) or ``value`` (a number) into ``input`` at ``index`` along ``dim``."""
    if src is None:
        src = value
    if src is None:
        raise TypeError("scatter() missing required argument 'src' or 'value'")
    return ops.scatter(input, dim, index, src, reduce=reduce)


def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    """scatter_(dim, index, src=None, value=None, *, reduce=None) -> Tensor

    Writes ``src`` (a tensor, or the number ``value``) into ``self`` at ``index`` along ``dim``, combined with
    the old values by ``reduce`` ('add' or 'multiply') when given; returns ``self``."""
    if src is None:
        src = value
    return ops.scatter_(self, dim, index, src, reduce=reduce)


def index_put(input, indices, values, accumulate=False):
    r"""A copy of ``input`` with ``values`` written at the advanced ``indices``; see :meth:`index_put_`."""
    indices = list(indices)
    return ops.index_put(input, put_value(input, indices, values, accumulate), indices, accumulate)


def index_put_(input, indices, values, accumulate=False):
    r"""Writes ``values`` into ``input`` at the advanced ``indices`` (``input[indices] = values``).

    Args:
        indices (tuple of Tensor): integer or bool index tensors, one per leading dim (None keeps a dim).
        values (Tensor): broadcast to the indexing result; must have ``input``'s dtype, except that a
            one-element value written through a single bool mask is cast (PyTorch's ``masked_fill`` path).
        accumulate (bool): add into the existing values (duplicate indices add up) instead of writing.
            Default: ``False``.
    """
    indices = list(indices)
    return ops.index_put_(input, put_value(input, indices, values, accumulate), indices, accumulate)


def _check_take_along_dim(input, indices, dim):
    """PyTorch's checks of ``take_along_dim`` with a ``dim``, made before any broadcasting."""
    nd = input.dim()
    if nd == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    if indices.dtype != _C.int64:
        raise RuntimeError("torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{torch_dtype_name(indices.dtype)}")
    if input.dim() != indices.dim():
        raise RuntimeError("torch.take_along_dim(): input and indices should have the same number of dimensions, "
                           f"but got {input.dim()} dimensions for input, and {indices.dim()} dimensions for indices")


def take_along_dim(input, indices, dim=None):
    r"""Picks the values of ``input`` at ``indices`` along ``dim``.

    Args:
        input (Tensor): the source.
        indices (Tensor): int64 indices with ``input``'s number of dims; the other dims broadcast with
            ``input``'s.
        dim (int, optional): the dim to pick along. Default: ``None``, which picks from the flattened ``input``
            with the flattened ``indices`` (any integer dtype).
    """
    if dim is None:
        return ops.gather(ops.reshape(input, [-1]), 0, ops.reshape(indices, [-1]))
    _check_take_along_dim(input, indices, dim)
    nd = input.dim()
    d = dim + nd if dim < 0 else dim
    si, ii = list(input.shape), list(indices.shape)
    bi = [max(a, b) for a, b in zip(si, ii)]
    bi_in, bi_ix = list(bi), list(bi)
    bi_in[d], bi_ix[d] = si[d], ii[d]
    return ops.gather(ops.expand(input, bi_in), d, ops.expand(indices, bi_ix))


def rot90(input, k=1, dims=(0, 1)):
    """Rotates ``input`` by 90 degrees ``k`` times in the plane of ``dims``, from the first towards the second
    (negative ``k`` rotates the other way)."""
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    nd = input.dim()
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = dims
    for d in dims:
        if not -nd <= d < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})")
    if d0 % nd == d1 % nd:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k %= 4
    if k == 1:
        return ops.transpose(ops.flip(input, [d1]), d0, d1)
    if k == 2:
        return ops.flip(input, [d0, d1])
    if k == 3:
        return ops.transpose(ops.flip(input, [d0]), d0, d1)
    return ops.clone(input)


def _index_fill_args(self, dim, index, value):
    """(mask, value tensor) for ``index_fill``: a bool mask, True at ``index`` along ``dim``, broadcastable to
    ``self``."""
    from .creation import tensor, zeros

    nd = max(self.dim(), 1)
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    if index.dtype != _C.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index.dim() > 1:
        raise IndexError("index_fill_(): Index is supposed to be a vector")
    if isinstance(value, _TensorBase):
        if value.dim() != 0:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{value.dim()} dimension(s).")
    d = dim % nd
    n = self.shape[d] if self.dim() else 1
    idx = ops.reshape(index, [-1])
    if idx.numel():
        lo, hi = int(ops.min(idx).item()), int(ops.max(idx).item())
        bad = hi if hi >= n else (lo if lo < -n else None)
        if bad is not None:
            raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {n}")
    mask = ops.index_put(zeros(n, dtype=_C.bool), tensor(True), [idx], False)
    if self.dim():
        shape = [1] * self.dim()
        shape[d] = n
        mask = ops.reshape(mask, shape)
    else:
        mask = ops.reshape(mask, [])
    return mask, value


def index_fill(input, dim, index, value):
    """A copy of ``input`` with the slices at ``index`` along ``dim`` set to ``value`` (a number or a 0-dim
    tensor; gradients flow to both ``input`` and a tensor ``value``)."""
    mask, value = _index_fill_args(input, dim, index, value)
    return ops.masked_fill(input, mask, value)


def index_fill_(self, dim, index, value):
    """In-place ``index_fill``."""
    mask, value = _index_fill_args(self, dim, index, value)
    return ops.masked_fill_(self, mask, value)


def fill_diagonal_(self, fill_value, wrap=False):
    """Fills the main diagonal of ``self`` (2-D, or any dims all of equal length) with ``fill_value`` in place.
    With ``wrap=True`` a tall matrix's diagonal restarts every ``ncols + 1`` rows."""
    nd = self.dim()
    if nd < 2:
        raise RuntimeError("dimensions must larger than 1")
    shape = list(self.shape)
    if nd > 2 and any(s != shape[0] for s in shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    numel = self.numel()
    step = sum(int(np.prod(shape[i + 1:])) for i in range(nd))  # contiguous strides of the logical shape
    end = numel if (wrap and nd == 2 and shape[0] > shape[1]) else min(numel, min(shape) * step)
    flat = np.zeros(numel, dtype=bool)
    flat[0:end:step] = True
    from .creation import tensor

    mask = tensor(flat.reshape(shape))
    return ops.masked_fill_(self, mask, tensor(fill_value, dtype=self.dtype))


def _embed(input, src, region, name):
    """A copy of ``input`` with ``region(copy)`` (a view) replaced by ``src``; gradients reach both (the
    view's part of ``input`` gets none)."""
    out = ops.clone(input)
    view = region(out)
    if tuple(view.shape) != tuple(src.shape):
        raise RuntimeError(f"{name}: expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(view.shape)}")
    view.copy_(src)
    return out


def select_scatter(input, src, dim, index):
    """``input`` with ``input.select(dim, index)`` replaced by ``src`` (out of place)."""
    return _embed(input, src, lambda t: t.select(dim, index), "select_scatter")


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """``input`` with the slice ``start:end:step`` along ``dim`` replaced by ``src`` (out of place)."""
    def region(t):
        n = t.shape[dim]
        return ops.slice(t, dim, 0 if start is None else start, n if end is None else end, step)
    return _embed(input, src, region, "slice_scatter")


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """``input`` with ``input.diagonal(offset, dim1, dim2)`` replaced by ``src`` (out of place)."""
    return _embed(input, src, lambda t: t.diagonal(offset, dim1, dim2), "diagonal_scatter")


def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """In-place :func:`scatter_reduce`."""
    return self.copy_(ops.scatter_reduce(self, dim, index, src, reduce, include_self=include_self))


TENSOR_METHODS = {
    "select_scatter": select_scatter, "slice_scatter": slice_scatter, "diagonal_scatter": diagonal_scatter,
    "scatter_reduce_": scatter_reduce_,
    "repeat": repeat, "tile": tile, "flip": flip, "fliplr": fliplr, "flipud": flipud, "roll": roll,
    "nonzero": nonzero, "argwhere": argwhere, "sort": sort, "argsort": argsort, "msort": msort, "topk": topk,
    "unique": unique, "unique_consecutive": unique_consecutive, "repeat_interleave": repeat_interleave,
    "scatter": scatter, "scatter_": scatter_, "index_put": index_put, "index_put_": index_put_,
    "take_along_dim": take_along_dim, "index_fill": index_fill,
    "index_fill_": index_fill_, "rot90": rot90, "fill_diagonal_": fill_diagonal_,
}
