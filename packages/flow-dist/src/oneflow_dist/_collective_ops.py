"""The collectives of global tensors as ops (``oneflow.library.custom_op``): functional ops on local tensors
whose kernel runs the communicator's collective.

Boxing issues its communication through them, so eager global tensors and traced graphs run the same ops: under
``nn.Graph`` tracing each collective becomes one IR node (declared with side effects: the passes never drop,
merge or fold it) that the graph's plan runs in its place among the other steps. Each op takes the group as
``ranks`` (global ranks in the communicator's order) and reads the cached communicator of those ranks when it
runs. Every run is recorded for ``comm_debug`` with the bytes this rank sends by the ring algorithm.
"""
from oneflow import _C
from oneflow.library import custom_op

from . import _world, comm_debug
from ._comm import ReduceOp

_REDUCE = {"sum": ReduceOp.SUM, "max": ReduceOp.MAX}


def _nbytes(t):
    return t.numel() * t.element_size()


def _comm(ranks):
    c = _world.world().sub(list(ranks))
    if c is None:
        raise RuntimeError(f"a collective over ranks {list(ranks)} ran on rank {_world.rank()}, which is not one "
                           f"of them")
    return c


def _meta(shape, dtype):
    return _C._empty(list(shape), dtype, "meta")


def _same_meta(inputs, attrs):
    return _meta(inputs[0].shape, inputs[0].dtype)


def _all_reduce(x, ranks, reduce="sum"):
    y = x.contiguous().clone()
    k = len(ranks)
    comm_debug.record("all_reduce", 2 * (k - 1) * _nbytes(y) // k, k)
    _comm(ranks).all_reduce(y, _REDUCE[reduce])
    return y


def _all_gather(x, ranks):
    src = x.contiguous()
    k = len(ranks)
    out = _C._empty([k, *src.shape], src.dtype, None)
    comm_debug.record("all_gather", (k - 1) * _nbytes(src), k)
    _comm(ranks).all_gather(out, src)
    return out


def _all_gather_meta(inputs, attrs):
    return _meta([len(attrs["ranks"]), *inputs[0].shape], inputs[0].dtype)


def _reduce_scatter(x, ranks, reduce="sum"):
    src = x.contiguous()
    k = len(ranks)
    out = _C._empty(list(src.shape[1:]), src.dtype, None)
    comm_debug.record("reduce_scatter", (k - 1) * _nbytes(out), k)
    _comm(ranks).reduce_scatter(out, src, _REDUCE[reduce])
    return out


def _reduce_scatter_meta(inputs, attrs):
    x = inputs[0]
    if x.dim() == 0 or x.shape[0] != len(attrs["ranks"]):
        raise RuntimeError(f"dist_reduce_scatter: expected an input stacking {len(attrs['ranks'])} pieces along "
                           f"dim 0, got shape {tuple(x.shape)}")
    return _meta(x.shape[1:], x.dtype)


def _all_to_all(x, ranks):
    src = x.contiguous()
    k = len(ranks)
    out = _C._empty(list(src.shape), src.dtype, None)
    comm_debug.record("all_to_all", (k - 1) * _nbytes(src) // k, k)
    _comm(ranks).all_to_all(out, src)
    return out


def _broadcast(x, ranks, root=0):
    y = x.contiguous().clone()
    k = len(ranks)
    comm_debug.record("broadcast", (k - 1) * _nbytes(y) // k, k)
    _comm(ranks).broadcast(y, root)
    return y


all_reduce = custom_op("dist_all_reduce", kernel=_all_reduce, meta=_same_meta, side_effects=True)
all_gather = custom_op("dist_all_gather", kernel=_all_gather, meta=_all_gather_meta, side_effects=True)
reduce_scatter = custom_op("dist_reduce_scatter", kernel=_reduce_scatter, meta=_reduce_scatter_meta,
                           side_effects=True)
all_to_all = custom_op("dist_all_to_all", kernel=_all_to_all, meta=_same_meta, side_effects=True)
broadcast = custom_op("dist_broadcast", kernel=_broadcast, meta=_same_meta, side_effects=True)

COLLECTIVES = frozenset(op.name for op in (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast))
