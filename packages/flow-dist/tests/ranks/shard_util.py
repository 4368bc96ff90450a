"""What the shard tests share: the block of a whole (single-process) array a rank of a placement holds."""
import numpy as np

import oneflow as flow


def shard_of(full, placement, nd_sbp, rank=None):
    """The block of ``full`` this rank holds (OneFlow's balanced split, nested in hierarchy order)."""
    rank = flow.env.get_rank() if rank is None else rank
    at = tuple(int(c) for c in np.argwhere(placement.ranks == rank)[0])
    sl = [slice(0, s) for s in full.shape]
    for h, s in enumerate(nd_sbp):
        if not s.is_split():
            continue
        d, parts, i = s.dim, placement.ranks.shape[h], at[h]
        a, b = sl[d].start, sl[d].stop
        base, rem = divmod(b - a, parts)
        lo = a + i * base + min(i, rem)
        sl[d] = slice(lo, lo + base + (1 if i < rem else 0))
    return full[tuple(sl)]


def peak_of(fn):
    """``fn()``'s result and the peak bytes the allocator held for it above what was allocated before."""
    flow._C._reset_peak_stats()
    base = flow._C._allocator_stats()["allocated_bytes"]
    out = fn()
    return out, flow._C._allocator_stats()["peak_allocated_bytes"] - base
