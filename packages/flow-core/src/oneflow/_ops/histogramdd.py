"""``histogramdd``: the multi-dimensional histogram of points given as the rows of the input's last dim, with
PyTorch's argument forms and checks (computed with NumPy; not differentiable, as in PyTorch)."""
import builtins
import math

import numpy as np

from .. import _C
from ._names import reject_dtype
from .reduce import _return_type

__all__ = ["histogramdd"]

histogramdd_return = _return_type("histogramdd", ("hist", "bin_edges"))


def _np_of(t):
    return np.array(_C._to_numpy(_C.ops.contiguous(t.detach())), copy=True)


def histogramdd(input, bins, *, range=None, weight=None, density=False, out=None):
    r"""histogramdd(input, bins, *, range=None, weight=None, density=False, out=None) -> (Tensor, Tensor[])

    The histogram of the points in ``input``: its innermost dim of size :math:`N` holds each point's
    coordinates, the other dims enumerate the points.

    Args:
        input (Tensor): floating point points, shape ``(..., N)``.
        bins (int, list of int, or list of Tensor): the number of equal-width bins in every dim, per dim,
            or the increasing bin edges of each dim.

    Keyword args:
        range (list of float, optional): ``[lo_0, hi_0, ..., lo_{N-1}, hi_{N-1}]``, the span of the equal-width
            bins (default: each dim's min and max; a single value widens to ``value -/+ 0.5``).
        weight (Tensor, optional): one weight per point (shape ``input.shape[:-1]``); default 1.
        density (bool): divide by the total weight and the bin volumes, making a density.

    Returns:
        ``(hist, bin_edges)``: the ``N``-dim histogram and the tuple of each dim's edges. Every bin holds the
        points on its left edge, the last bin of a dim also those on its right edge.
    """
    if out is not None:
        raise TypeError("histogramdd() got an unexpected keyword argument 'out'")
    if input.dim() < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    reject_dtype("histogramdd", input, bool_ok=False, integral_ok=False)
    n = input.shape[-1]
    points = _np_of(input).reshape(-1, n)
    if isinstance(bins, (builtins.int, np.integer)):
        bins = [builtins.int(bins)] * n
    bins = list(bins)
    if len(bins) != n:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    given_edges = bins and isinstance(bins[0], _C.TensorBase)
    if not given_edges:
        for i, b in enumerate(bins):
            if b <= 0:
                raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {b} for dimension {i}")
    w = None
    if weight is not None:
        if list(weight.shape) != list(input.shape[:-1]):
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have the same shape as "
                               f"the input tensor excluding its innermost dimension, but got input with shape "
                               f"{list(input.shape)} and weight with shape {list(weight.shape)}")
        w = _np_of(weight).reshape(-1)
    if given_edges:
        edges = [_np_of(b).astype(points.dtype) for b in bins]
    else:
        if range is not None:
            range = [builtins.float(r) for r in range]
            if len(range) != 2 * n:
                raise RuntimeError(f"torch.histogramdd: for a {n}-dimensional histogram range should have "
                                   f"{2 * n} elements, but got {len(range)}")
            spans = [(range[2 * i], range[2 * i + 1]) for i in builtins.range(n)]
        elif points.shape[0] == 0:
            spans = [(0.0, 1.0)] * n
        else:
            spans = [(builtins.float(points[:, i].min()), builtins.float(points[:, i].max()))
                     for i in builtins.range(n)]
        edges = []
        for i, (lo, hi) in enumerate(spans):
            if lo > hi:
                raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} max {hi:g} "
                                   f"for dimension {i}")
            if not (math.isfinite(lo) and math.isfinite(hi)):
                raise RuntimeError(f"torch.histogramdd: dimension {i}'s range [{lo:g}, {hi:g}] is not finite")
            if lo == hi:
                lo, hi = lo - 0.5, hi + 0.5
            edges.append(np.linspace(lo, hi, bins[i] + 1).astype(points.dtype))
    hist, _ = np.histogramdd(points, bins=edges, weights=w, density=density)
    from .creation import tensor

    return histogramdd_return((tensor(hist, dtype=input.dtype), tuple(tensor(e, dtype=input.dtype) for e in edges)))
