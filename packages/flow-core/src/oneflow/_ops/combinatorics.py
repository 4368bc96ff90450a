"""Grids and index sets: ``meshgrid``, ``cartesian_prod``, ``combinations``, ``tril_indices`` /
``triu_indices`` and ``block_diag``, composed from views, ``index_select`` and ``cat`` so autograd flows."""
import itertools
import warnings

import numpy as np

from .. import _C
from ._names import torch_dtype_name

ops = _C.ops

__all__ = ["meshgrid", "cartesian_prod", "combinations", "tril_indices", "triu_indices", "block_diag"]


def _tensor_list(tensors):
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return list(tensors[0])
    return list(tensors)


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 0-D/1-D ``tensors``: output ``i`` has shape ``(len(t0), len(t1), ...)`` and
    varies along dim ``i`` (``indexing='ij'``, the default, which warns when omitted as PyTorch does) or with
    the first two dims swapped (``indexing='xy'``, NumPy's Cartesian convention). Outputs are expanded views."""
    tensors = _tensor_list(tensors)
    if indexing is None:
        warnings.warn("oneflow.meshgrid: in an upcoming release, it will be required to pass the indexing "
                      "argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("xy", "ij"):
        raise RuntimeError(f'oneflow.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.dim() > 1:
            raise RuntimeError(f"oneflow.meshgrid: Expected 0D or 1D tensor in the tensor list but got a "
                               f"{t.dim()}D tensor of shape {list(t.shape)}")
        if t.dtype != tensors[0].dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    swap = indexing == "xy" and len(tensors) >= 2
    if swap:
        tensors = [tensors[1], tensors[0]] + tensors[2:]
    shape = [t.numel() for t in tensors]
    n = len(tensors)
    grids = [ops.expand(ops.reshape(t, [-1 if j == i else 1 for j in range(n)]), shape)
             for i, t in enumerate(tensors)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def _check_1d(t):
    if t.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


def cartesian_prod(*tensors):
    """The Cartesian product of 1-D ``tensors`` as a ``(N, len(tensors))`` tensor (like
    ``itertools.product``); a single tensor is returned as is."""
    tensors = _tensor_list(tensors)
    for t in tensors:
        _check_1d(t)
    if len(tensors) == 1:
        return tensors[0]
    grids = meshgrid(*tensors, indexing="ij")
    return ops.cat([ops.reshape(g, [-1, 1]) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """Length-``r`` combinations of the elements of the 1-D ``input`` (like ``itertools.combinations``, or
    ``combinations_with_replacement`` when ``with_replacement``), as a ``(N, r)`` tensor; ``r=0`` gives an
    empty 1-D tensor."""
    _check_1d(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return ops.slice(input, 0, 0, 0, 1)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.array(list(pick(range(input.shape[0]), r)), dtype=np.int64).reshape(-1)
    from .creation import tensor

    return ops.reshape(ops.index_select(input, 0, tensor(idx)), [-1, r])


def _tri_indices(name, mask_fn):
    def f(row, col, offset=0, *, dtype=None, device=None, layout=None, pin_memory=False):
        from .creation import _device, tensor

        _device(device)
        dtype = _C.int64 if dtype is None else dtype
        if dtype not in (_C.int32, _C.int64):
            raise NotImplementedError(f"\"{name}\" not implemented for '{torch_dtype_name(dtype)}'")
        if row < 0:
            raise RuntimeError(f"row must be non-negative, got{row}")
        if col < 0:
            raise RuntimeError(f"col must be non-negative, got{col}")
        rows, cols = np.nonzero(mask_fn(np.ones((row, col), dtype=bool), offset))
        return tensor(np.stack([rows, cols]).astype(np.int64).reshape(2, -1), dtype=dtype)

    f.__name__ = name
    part = "lower" if name == "tril_indices" else "upper"
    f.__doc__ = (f"The coordinates of the {part} triangle of a ``row`` x ``col`` matrix as a ``(2, N)`` tensor "
                 f"(row indices, then column indices, in row-major order); ``offset`` shifts the diagonal as in "
                 f"``{name[:4]}``. ``dtype`` is ``int64`` (default) or ``int32``.")
    return f


tril_indices = _tri_indices("tril_indices", np.tril)
triu_indices = _tri_indices("triu_indices", np.triu)


def block_diag(*tensors):
    """A block-diagonal matrix with ``tensors`` (0-D, 1-D or 2-D; treated as ``(1, 1)``, ``(1, n)`` and as
    is) on its diagonal and zeros elsewhere, in their promoted dtype."""
    mats = []
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError(f"oneflow.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
        mats.append(ops.reshape(t, [1, 1] if t.dim() == 0 else [1, -1] if t.dim() == 1 else list(t.shape)))
    from .creation import zeros

    if not mats:
        return zeros(1, 0)
    dtype = mats[0].dtype
    for m in mats[1:]:
        dtype = _C.promote_types(dtype, m.dtype)
    total = sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        h, w = m.shape
        parts = [zeros(h, left, dtype=dtype), ops.to_dtype(m, dtype), zeros(h, total - left - w, dtype=dtype)]
        rows.append(ops.cat(parts, 1))
        left += w
    return ops.cat(rows, 0)
