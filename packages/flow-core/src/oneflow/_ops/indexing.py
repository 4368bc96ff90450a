"""``Tensor.__getitem__`` / ``Tensor.__setitem__`` with PyTorch's semantics.

Basic indices (ints, slices with positive steps, ``None``, ``...``, Python bools) are applied as views with
the registry's ``select``/``slice``/``unsqueeze``, so results share storage; integer/bool tensors and sequences
(lists, tuples inside the index tuple, ``range``, NumPy arrays) are advanced indices, applied afterwards with the
``index`` op on the view (like PyTorch, whose ints are selects *before* advanced indexing, which decides where
advanced dims land). As in PyTorch, a sequence of numbers becomes an int64 index (floats truncated) unless it
holds only bools, which makes it a mask.

``__setitem__`` writes through the view with ``copy_``/``fill_`` (advanced: ``index_put_``); the dispatcher
records an in-place op on a view on its base too (PyTorch's CopySlices), so gradients of both the target
and the written value are right.
"""
import collections.abc
import operator

import numpy as np

from .. import _C
from ._names import torch_dtype_name
from .dtype_info import typename

ops = _C.ops
_TensorBase = _C.TensorBase
_INT_DTYPES = (_C.int64, _C.int32, _C.int16, _C.int8)
_MASK_DTYPES = (_C.bool, _C.uint8)


def _data_tensor(data, like, dtype=None):
    """Python data of an index or an assigned value as a tensor. For a global ``like`` it is a broadcast global
    tensor on its placement (the same data on every rank), as a user would write it: a local tensor does not
    mix with global ones."""
    from .creation import tensor

    if getattr(like, "is_global", False) is True:
        import oneflow  # a global tensor exists, so the plugin giving oneflow.sbp is installed

        return tensor(data, dtype=dtype, placement=like.placement,
                      sbp=(oneflow.sbp.broadcast,) * like.placement.ranks.ndim)
    return tensor(data, dtype=dtype)


def _index_tensor(obj, like=None):
    """A sequence (list, tuple, range, ndarray ...) used as an index, as a tensor: bools stay a mask, uint8
    arrays a byte mask, anything else numeric becomes int64 (floats truncated, as PyTorch converts them). It is
    global (broadcast) where the indexed tensor ``like`` is."""
    if isinstance(obj, range):  # without a Python int per element
        return _data_tensor(np.arange(obj.start, obj.stop, obj.step, dtype=np.int64), like)
    arr = np.asarray(obj)
    if arr.dtype.kind in "USa":
        raise TypeError(f"new(): invalid data type '{'str' if arr.dtype.kind == 'U' else 'bytes'}'")
    if arr.dtype == object:
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
                         "indices")
    if arr.dtype.kind not in "biuf":
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if arr.size == 0 or arr.dtype.kind == "f" or (arr.dtype.kind in "iu" and arr.dtype != np.uint8):
        arr = arr.astype(np.int64)
    return _data_tensor(arr, like)


def _is_sequence(obj):
    """What PyTorch turns into an index tensor: sequences and arrays, but not strings (refused by the conversion)
    or sets (not sequences)."""
    return isinstance(obj, (collections.abc.Sequence, np.ndarray)) and not isinstance(obj, _TensorBase)


def _long(data, like=None):
    return _data_tensor(data, like, _C.int64)


def _as_int(v, what="slice indices"):
    if v is None or isinstance(v, int):
        return v
    if isinstance(v, _TensorBase):
        if v.dtype not in _INT_DTYPES or v.numel() != 1:
            raise TypeError(f"{what} must be integers or None or have an __index__ method")
        return int(v.item())
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{what} must be integers or None or have an __index__ method") from None


def _classify(index, like=None):
    """Normalised index items: ('int', i) ('slice', s) ('none',) ('ell',) ('bool', b) ('adv', t) ('mask', t);
    sequences become tensors global where the indexed tensor ``like`` is."""
    if isinstance(index, list) and len(index) < 32 and any(
            isinstance(i, (slice, _TensorBase)) or _is_sequence(i) or i is None or i is Ellipsis for i in index):
        index = tuple(index)  # PyTorch's (deprecated) treatSequenceAsTuple rule
    if not isinstance(index, tuple):
        index = (index,)
    items = []
    consumed = 0
    for it in index:
        if it is None:
            items.append(("none", None))
        elif it is Ellipsis:
            # PyTorch (unlike NumPy) accepts several; each one skips the dims the other items leave over
            items.append(("ell", None))
        elif isinstance(it, (bool, np.bool_)):
            items.append(("bool", bool(it)))
        elif isinstance(it, slice):
            items.append(("slice", it))
            consumed += 1
        elif isinstance(it, int) or isinstance(it, np.integer):
            items.append(("int", int(it)))
            consumed += 1
        else:
            if _is_sequence(it):
                it = _index_tensor(it, like)
            if isinstance(it, _TensorBase):
                if it.dtype in _MASK_DTYPES:
                    if it.dim() == 0:
                        items.append(("bool", bool(it.item())))
                    else:
                        items.append(("mask", it))
                        consumed += it.dim()
                elif it.dtype in _INT_DTYPES:
                    if it.dim() == 0:  # like PyTorch: a 0-dim integer tensor selects (a view)
                        items.append(("int", int(it.item())))
                    else:
                        items.append(("adv", it))
                    consumed += 1
                else:
                    raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
            elif hasattr(it, "__index__"):
                items.append(("int", operator.index(it)))
                consumed += 1
            else:
                raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are "
                                 f"valid indices (got {type(it).__name__})")
    return items, consumed


def _check_0dim_index(index):
    """PyTorch's messages for a bare int or slice on a 0-dim tensor (other indices give 'too many indices')."""
    if isinstance(index, (int, np.integer)) and not isinstance(index, (bool, np.bool_)):
        raise IndexError("invalid index of a 0-dim tensor. Use `tensor.item()` in Python or `tensor.item<T>()` "
                         "in C++ to convert a 0-dim tensor to a number")
    if isinstance(index, slice):
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")


def _check_dim(dim, ndim):
    """An item placed past the last dim (possible after several ellipses) is refused as PyTorch refuses it."""
    if dim >= ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")


def _plan(self, index):
    """Basic-index chain (groups of (kind, dim, a, b, c): 0 select, 1 slice, 2 unsqueeze) and the advanced
    index list for the resulting view (None = keep the dim), or None when there are no advanced indices."""
    items, consumed = _classify(index, self)
    nd = self.dim()
    if nd == 0:
        _check_0dim_index(index)
    if consumed > nd:
        raise IndexError(f"too many indices for tensor of dimension {nd}")
    shape = list(self.shape)
    spec = []
    adv = []
    has_adv = False
    dim = 0
    orig = 0  # the dim of `self` the next item indexes (for error messages)
    for kind, val in items:
        if kind in ("int", "slice"):
            _check_dim(dim, len(shape))
        elif kind in ("none", "bool"):
            _check_dim(dim, len(shape) + 1)
        if kind == "int":
            size = shape[dim]
            if not -size <= val < size:
                raise IndexError(f"index {val} is out of bounds for dimension {orig} with size {size}")
            spec.append((0, dim, val, 0, 0))
            del shape[dim]
            orig += 1
        elif kind == "slice":
            start, stop, step = _as_int(val.start), _as_int(val.stop), _as_int(val.step)
            if step is None:
                step = 1
            if step == 0:
                raise ValueError("slice step cannot be zero")
            if step < 0:
                raise ValueError("step must be greater than zero")
            size = shape[dim]
            start, stop, _ = slice(start, stop, step).indices(size)
            if (start, stop, step) != (0, size, 1):
                spec.append((1, dim, start, stop, step))
                shape[dim] = len(range(start, stop, step))
            adv.append(None)
            dim += 1
            orig += 1
        elif kind == "none":
            spec.append((2, dim, 0, 0, 0))
            shape.insert(dim, 1)
            adv.append(None)
            dim += 1
        elif kind == "ell":
            n = nd - consumed
            adv.extend([None] * n)
            dim += n
            orig += n
        elif kind == "bool":
            spec.append((2, dim, 0, 0, 0))
            shape.insert(dim, 1)
            adv.append(_long([0] if val else [], self))
            has_adv = True
            dim += 1
        elif kind == "adv":
            adv.append(val)
            has_adv = True
            dim += 1
            orig += 1
        else:  # mask
            for j in range(val.dim()):
                if dim + j >= len(shape) or val.shape[j] != shape[dim + j]:
                    raise IndexError(f"The shape of the mask {list(val.shape)} at index {j} does not match the shape "
                                     f"of the indexed tensor {shape} at index {dim + j}")
            adv.append(val)
            has_adv = True
            dim += val.dim()
            orig += val.dim()
    if has_adv:
        while adv and adv[-1] is None:
            adv.pop()
        if len(adv) > len(shape):  # only reachable past the dims that several ellipses skipped
            raise IndexError(f"too many indices for tensor of dimension {len(shape)} (got {len(adv)})")
    return spec, (adv if has_adv else None)


def _apply_spec(t, spec):
    for kind, d, a, b, c in spec:
        if kind == 0:
            t = ops.select(t, d, a)
        elif kind == 1:
            t = ops.slice(t, d, a, b, c)
        else:
            t = ops.unsqueeze(t, d)
    return t


def __getitem__(self, index):
    # fast paths for the commonest forms
    if type(index) is int and self.dim() > 0:
        size = self.shape[0]
        if not -size <= index < size:
            raise IndexError(f"index {index} is out of bounds for dimension 0 with size {size}")
        return ops.select(self, 0, index)
    spec, adv = _plan(self, index)
    t = _apply_spec(self, spec)
    if adv is not None:
        return ops.index(t, adv)
    if not spec:
        return ops.view(self, list(self.shape))  # a new view even for x[...] / x[:]
    return t


_SCALARS = (int, float, bool, complex, np.number, np.bool_)


def _value_tensor(self, value):
    """The value of ``self[index] = value`` as a tensor. Numbers, nested sequences and arrays are converted to
    ``self``'s dtype (sequences and arrays are a oneflow extension: PyTorch refuses them); anything else is
    refused with PyTorch's TypeError."""
    if isinstance(value, _TensorBase):
        return value
    if not isinstance(value, _SCALARS + (list, tuple, np.ndarray)):
        raise TypeError(f"can't assign a {typename(type(value))} to a {self.type()}")
    return _data_tensor(value, self, self.dtype)


def _strip_leading_ones(v, ndim):
    while v.dim() > ndim and v.shape[0] == 1:
        v = ops.select(v, 0, 0)
    return v


def _is_expandable(shape, to):
    if len(shape) > len(to):
        return False
    return all(a == b or a == 1 for a, b in zip(reversed(shape), reversed(to)))


def put_value(target, indices, value, accumulate):
    """``value`` ready for ``index_put_(target, indices, value)``, or PyTorch's errors in PyTorch's order.

    Like PyTorch, a one-element value written through a single bool/uint8 mask (other entries None) is a
    ``masked_fill`` and is cast to ``target``'s dtype; otherwise the dtypes must match, and a value that cannot
    broadcast to the indexing result is reported before a dtype mismatch.
    """
    if not isinstance(value, _TensorBase) or value.dtype == target.dtype:
        return value  # the op reports a non-tensor value
    given = [i for i in indices if i is not None]
    if (not accumulate and value.numel() == 1 and len(given) == 1 and isinstance(given[0], _TensorBase)
            and given[0].dtype in _MASK_DTYPES):
        return ops.to_dtype(value, target.dtype)
    try:  # the indexing result's shape, computed only on this error path
        result_shape = list(ops.index(target.detach(), list(indices)).shape)
    except (IndexError, RuntimeError):  # a bad index: PyTorch reports the dtypes first
        result_shape = list(value.shape)
    if not _is_expandable(list(value.shape), result_shape):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(value.shape)} cannot be broadcast to "
                           f"indexing result of shape {result_shape}")
    raise RuntimeError("Index put requires the source and destination dtypes match, got "
                       f"{torch_dtype_name(target.dtype)} for the destination and {torch_dtype_name(value.dtype)} "
                       "for the source.")


def __setitem__(self, index, value):
    spec, adv = _plan(self, index)
    view = _apply_spec(self, spec)
    if adv is not None:
        value = _value_tensor(self, value)
        ops.index_put_(view, put_value(view, adv, value, False), adv, False)
    elif isinstance(value, _SCALARS) and not _C._has_internal_overlap(view):
        ops.fill_(view, value)
    else:
        # copy_ also refuses a target whose elements share memory (an expanded view), as PyTorch's setitem does
        ops.copy_(view, _strip_leading_ones(_value_tensor(self, value), view.dim()))


TENSOR_METHODS = {"__getitem__": __getitem__, "__setitem__": __setitem__}
