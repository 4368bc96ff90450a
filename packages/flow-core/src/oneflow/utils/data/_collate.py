"""``default_collate`` and ``default_convert``: how DataLoader turns samples into batches (PyTorch's rules).

Tensors are stacked along a new first dimension; NumPy arrays and scalars become tensors of their dtype;
Python floats become float64, ints int64 and bools bool tensors; strings are kept as lists; mappings, named
tuples and sequences are collated element-wise (tuples come back as lists, as in PyTorch).
"""
import collections.abc
import copy
import re

import numpy as np

__all__ = ["default_collate", "default_convert", "collate", "default_collate_fn_map"]

_np_str_obj = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}")


def _C():
    from ... import _C as c

    return c


def _as_tensor(x, dtype=None):
    from ..._ops.creation import as_tensor

    return as_tensor(x, dtype=dtype)


def _tensor(x, dtype=None):
    from ..._ops.creation import tensor

    return tensor(x, dtype=dtype)


def default_convert(data):
    """Converts NumPy arrays/scalars (also inside mappings, named tuples and sequences) to tensors."""
    c = _C()
    t = type(data)
    if isinstance(data, c.TensorBase):
        return data
    if t.__module__ == "numpy" and t.__name__ not in ("str_", "string_", "bytes_"):
        if t.__name__ == "ndarray" and _np_str_obj.search(data.dtype.str) is not None:
            return data
        return _as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({k: default_convert(data[k]) for k in data})
                return clone
            return t({k: default_convert(data[k]) for k in data})
        except TypeError:
            return {k: default_convert(data[k]) for k in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return t(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return t([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate_tensor_fn(batch, *, collate_fn_map=None):
    c = _C()
    elem = batch[0]
    if not any(t.requires_grad for t in batch) and elem.dtype != c.bfloat16:
        # many small samples: one NumPy stack over zero-copy views beats a graph of unsqueeze + cat ops
        arrs = [c._to_numpy(t) for t in batch]
        if all(a.shape == arrs[0].shape and a.dtype == arrs[0].dtype for a in arrs):
            return c._from_numpy(np.stack(arrs, 0))
    import oneflow

    return oneflow.stack(list(batch), 0)  # promotes dtypes / raises PyTorch's shape error / keeps autograd


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if _np_str_obj.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    # one copy: NumPy stacks the arrays, the tensor shares the result
    if all(b.shape == elem.shape and b.dtype == elem.dtype for b in batch):
        return _C()._from_numpy(np.ascontiguousarray(np.stack(batch, 0)))
    return collate([_as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return _as_tensor(np.asarray(batch))


def collate_float_fn(batch, *, collate_fn_map=None):
    return _tensor(batch, dtype=_C().float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    return _tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


def collate(batch, *, collate_fn_map=None):
    """Collates ``batch`` (a list of samples), dispatching on the type of its first element through
    ``collate_fn_map`` (exact type first, then ``isinstance`` in insertion order), then containers."""
    elem = batch[0]
    t = type(elem)
    if collate_fn_map is not None:
        if t in collate_fn_map:
            return collate_fn_map[t](batch, collate_fn_map=collate_fn_map)
        for ct in collate_fn_map:
            if isinstance(elem, ct):
                return collate_fn_map[ct](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem})
                return clone
            return t({k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem})
        except TypeError:
            return {k: collate([d[k] for d in batch], collate_fn_map=collate_fn_map) for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return t(*(collate(s, collate_fn_map=collate_fn_map) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        n = len(next(it))
        if not all(len(e) == n for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(s, collate_fn_map=collate_fn_map) for s in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, s in enumerate(transposed):
                    clone[i] = collate(s, collate_fn_map=collate_fn_map)
                return clone
            return t([collate(s, collate_fn_map=collate_fn_map) for s in transposed])
        except TypeError:
            return [collate(s, collate_fn_map=collate_fn_map) for s in transposed]
    raise TypeError(default_collate_err_msg_format.format(t))


def _default_map():
    from ..._tensor import Tensor
    from ... import _C as c

    return {
        c.TensorBase: collate_tensor_fn,
        Tensor: collate_tensor_fn,
        np.ndarray: collate_numpy_array_fn,
        (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
        float: collate_float_fn,
        int: collate_int_fn,
        str: collate_str_fn,
        bytes: collate_str_fn,
    }


default_collate_fn_map = _default_map()


def default_collate(batch):
    """Collates a list of samples into a batch (see the module docstring for the rules)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
