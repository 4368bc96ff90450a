"""Boxing: turning one rank's shard of a global tensor under one nd-sbp into its shard under another.

The 1-D table, along one hierarchy dimension (its ranks form one communicator):

==========  =====================  =====================================================
from -> to  collective             bytes sent per rank (ring minimum, buffer of B bytes)
==========  =====================  =====================================================
P -> B      all_reduce             2 (n-1)/n B
P -> S      reduce_scatter         (n-1)/n B
S -> B      all_gather             (n-1)/n B
S(i)->S(j)  all_to_all             (n-1)/n of the shard
B -> S      local slice            0
B -> P      member 0 keeps, others zeros (P(max): all keep)   0
S -> P      the shard in zeros of the whole                    0
==========  =====================  =====================================================

The collectives are the ops of ``_collective_ops`` (functional, on local tensors): under ``nn.Graph`` tracing
they become IR nodes that the graph's plan runs, so a graph boxes exactly as eager code does.

Uneven splits pad each piece to the largest one for the collective (as MPI's fixed-size collectives need).
n-D boxing runs the 1-D steps one hierarchy dimension at a time; where two dimensions split the same tensor dim
(nested pieces) it first gathers from the innermost dimension out and then splits from the outermost in.
"""
import oneflow as flow

from . import _collective_ops as ops
from . import _layout
from ._groups import communicator
from .sbp import broadcast

_REDUCE = {"partial_sum": "sum", "partial_max": "max"}


def _fill_value(kind, dtype):
    if kind == "partial_sum":
        return 0
    if dtype.is_floating_point:
        return float("-inf")
    return flow.iinfo(dtype).min if dtype != flow.bool else False


def _pieces(n, k):
    return [_layout.balanced(n, k, j) for j in range(k)]


def _pad(x, d, size):
    """``x`` extended along ``d`` to ``size`` (zeros after)."""
    if x.shape[d] == size:
        return x
    extra = list(x.shape)
    extra[d] = size - x.shape[d]
    return flow.cat([x, flow.zeros(*extra, dtype=x.dtype)], d)


# ---- the 1-D steps: x is this rank's shard; `full` the extent along the dim moved, inside this group ------------
def s_to_b(c, x, d, full):
    k = c.size
    pieces = _pieces(full, k)
    m = max(b - a for a, b in pieces)
    out = ops.all_gather(_pad(x, d, m), ranks=list(c.global_ranks))
    parts = [out[j] if b - a == m else flow.narrow(out[j], d, 0, b - a) for j, (a, b) in enumerate(pieces)]
    return flow.cat(parts, d) if k > 1 else parts[0].clone()


def p_to_b(c, x, kind):
    return ops.all_reduce(x, ranks=list(c.global_ranks), reduce=_REDUCE[kind])


def p_to_s(c, x, kind, d):
    k = c.size
    pieces = _pieces(x.shape[d], k)
    m = max(b - a for a, b in pieces)
    if d == 0 and m * k == x.shape[0] and x.is_contiguous():  # already the k pieces one after another: no copy
        stacked = x.view(k, m, *x.shape[1:])
    else:
        stacked = flow.stack([_pad(flow.narrow(x, d, a, b - a), d, m) for a, b in pieces])
    out = ops.reduce_scatter(stacked, ranks=list(c.global_ranks), reduce=_REDUCE[kind])
    a, b = pieces[c.rank]
    return out if b - a == m else flow.narrow(out, d, 0, b - a).contiguous()


def b_to_s(c, x, d):
    a, b = _layout.balanced(x.shape[d], c.size, c.rank)
    return flow.narrow(x, d, a, b - a).contiguous().clone()


def b_to_p(c, x, kind):
    if kind == "partial_max" or c.rank == 0:
        return x.clone()
    return flow.zeros_like(x)


def s_to_p(c, x, kind, d, full):
    a, b = _layout.balanced(full, c.size, c.rank)
    shape = list(x.shape)
    shape[d] = full
    out = flow.full(tuple(shape), _fill_value(kind, x.dtype), dtype=x.dtype)
    flow.narrow(out, d, a, b - a).copy_(x)
    return out


def s_to_s(c, x, i, j, full_i):
    """Split along ``i`` (``full_i`` rows in the group) to split along ``j``."""
    k = c.size
    mi = max(b - a for a, b in _pieces(full_i, k))
    jp = _pieces(x.shape[j], k)
    mj = max(b - a for a, b in jp)
    chunks = [_pad(_pad(flow.narrow(x, j, a, b - a), j, mj), i, mi) for a, b in jp]
    out = ops.all_to_all(flow.stack(chunks), ranks=list(c.global_ranks))
    a, b = jp[c.rank]
    parts = []
    for m, (lo, hi) in enumerate(_pieces(full_i, k)):
        piece = flow.narrow(out[m], i, 0, hi - lo)
        parts.append(flow.narrow(piece, j, 0, b - a))
    return flow.cat(parts, i)


def step(c, x, src, dst, full):
    """One hierarchy dimension from ``src`` to ``dst`` (``full``: the group's extent of each tensor dim)."""
    if src == dst or c is None:
        return x
    if src.is_partial():
        if dst.is_broadcast():
            return p_to_b(c, x, src.kind)
        if dst.is_split():
            return p_to_s(c, x, src.kind, dst.dim)
        return b_to_p(c, p_to_b(c, x, src.kind), dst.kind)  # P(sum) <-> P(max)
    if src.is_split():
        if dst.is_broadcast():
            return s_to_b(c, x, src.dim, full[src.dim])
        if dst.is_split():
            return s_to_s(c, x, src.dim, dst.dim, full[src.dim])
        return s_to_p(c, x, dst.kind, src.dim, full[src.dim])
    if dst.is_split():
        return b_to_s(c, x, dst.dim)
    return b_to_p(c, x, dst.kind)


def _split_dims(nd_sbp, skip):
    return {s.dim for h, s in enumerate(nd_sbp) if h != skip and s.is_split()}


def _full_extent(shape, placement, nd_sbp, h):
    """The extent of each tensor dim within the group along hierarchy dim ``h`` (as if ``h`` were broadcast)."""
    nd = list(nd_sbp)
    nd[h] = broadcast
    return [b - a for a, b in _layout.ranges(shape, placement, nd)]


def box(x, shape, placement, src, dst):
    """This rank's shard ``x`` of a global tensor of logical ``shape`` on ``placement``, from nd-sbp ``src`` to
    ``dst`` (same placement); returns the new shard (a new tensor, never ``x`` itself unless nothing changes)."""
    if src == dst:
        return x
    if _layout.coord(placement) is None:
        return x
    cur = list(src)
    nh = len(cur)

    def move(h, target):
        nonlocal x
        c = communicator(placement, h) if nh > 1 else communicator(placement)
        x = step(c, x, cur[h], target, _full_extent(shape, placement, cur, h))
        cur[h] = target

    progress = True
    while progress:  # direct steps where no other hierarchy dim splits the same tensor dim
        progress = False
        for h in range(nh):
            if cur[h] == dst[h]:
                continue
            dims = {s.dim for s in (cur[h], dst[h]) if s.is_split()}
            if dims & _split_dims(cur, h):
                continue
            move(h, dst[h])
            progress = True
    if tuple(cur) != tuple(dst):
        for h in reversed(range(nh)):  # gather from the innermost split out ...
            if not cur[h].is_broadcast():
                move(h, broadcast)
        for h in range(nh):  # ... then split from the outermost in
            if cur[h] != dst[h]:
                move(h, dst[h])
    return x


def from_broadcast(full, placement, nd_sbp):
    """This rank's shard under ``nd_sbp`` of a tensor whose whole value ``full`` every rank holds."""
    at = _layout.coord(placement)
    if at is None:  # a rank outside the placement holds nothing
        return flow.empty(0, dtype=full.dtype)
    out = full
    for h, s in enumerate(nd_sbp):
        if s.is_partial() and s.kind == "partial_sum" and at[h] != 0:
            return flow.zeros(*_layout.local_shape(tuple(full.shape), placement, nd_sbp), dtype=full.dtype)
    for d, (a, b) in enumerate(_layout.ranges(tuple(full.shape), placement, nd_sbp, at)):
        if (a, b) != (0, full.shape[d]):
            out = flow.narrow(out, d, a, b - a)
    return out.contiguous().clone() if out is full else out.contiguous()

