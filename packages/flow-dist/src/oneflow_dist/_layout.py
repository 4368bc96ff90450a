"""Where a global tensor's values lie: the slice of the logical tensor that each rank holds under an nd-sbp.

A split of ``n`` rows over ``k`` ranks is OneFlow's balanced one: every rank gets ``n // k`` rows and the first
``n % k`` ranks one more. Several hierarchy dimensions splitting the same tensor dim nest in hierarchy order
(the second splits each piece of the first).
"""
import numpy as np

from . import _world
from .sbp import sbp as _Sbp


def balanced(n, parts, i):
    """``(start, stop)`` of piece ``i`` of ``n`` rows split into ``parts`` balanced pieces."""
    base, rem = divmod(n, parts)
    start = i * base + min(i, rem)
    return start, start + base + (1 if i < rem else 0)


_coords = {}


def coord(placement, rank=None):
    """This rank's index in the placement's rank array (a tuple), or None outside it."""
    key = (placement, rank)
    if key in _coords:
        return _coords[key]
    found = np.argwhere(placement.ranks == (_world.rank() if rank is None else rank))
    at = tuple(int(c) for c in found[0]) if found.size else None
    if len(_coords) < 1024:
        _coords[key] = at
    return at


def normalize_sbp(sbp, placement, ndim, op="to_global"):
    """``sbp`` (one sbp or a sequence, one per hierarchy dimension) as a checked tuple."""
    if isinstance(sbp, _Sbp):
        sbp = (sbp,)
    if not isinstance(sbp, (tuple, list)) or not all(isinstance(s, _Sbp) for s in sbp):
        raise TypeError(f"{op}(): sbp must be a oneflow.sbp or a tuple of them (one per placement hierarchy "
                        f"dimension), got {sbp!r}")
    sbp = tuple(sbp)
    nh = placement.ranks.ndim
    if len(sbp) != nh:
        raise ValueError(f"{op}(): the placement has a hierarchy of {nh} dimension(s) "
                         f"{tuple(placement.ranks.shape)}, so sbp needs {nh} entries, got {len(sbp)}")
    for s in sbp:
        if s.is_split() and not s.dim < max(ndim, 1):
            raise ValueError(f"{op}(): split dim {s.dim} is out of range for a tensor of {ndim} dimension(s)")
        if s.is_split() and ndim == 0:
            raise ValueError(f"{op}(): a 0-dim tensor cannot be split")
    return sbp


def ranges(shape, placement, nd_sbp, at=None):
    """``[(start, stop)]`` per tensor dim of the block that the rank at index ``at`` (default: this rank) holds."""
    at = coord(placement) if at is None else at
    out = [(0, n) for n in shape]
    hier = placement.ranks.shape
    for h, s in enumerate(nd_sbp):
        if s.is_split():
            a, b = out[s.dim]
            lo, hi = balanced(b - a, hier[h], at[h])
            out[s.dim] = (a + lo, a + hi)
    return out


def local_shape(shape, placement, nd_sbp, at=None):
    return tuple(b - a for a, b in ranges(shape, placement, nd_sbp, at))
