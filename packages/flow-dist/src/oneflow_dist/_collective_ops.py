"""The collectives of global tensors as ops (``oneflow.library.custom_op``): functional ops on local tensors
whose kernel runs the communicator's collective.

Boxing issues its communication through them, so eager global tensors and traced graphs run the same ops: under
``nn.Graph`` tracing each collective becomes one IR node (declared with side effects: the passes never drop,
merge or fold it) that the graph's plan runs in its place among the other steps. Each op takes the group as
``ranks`` (global ranks in the communicator's order) and reads the cached communicator of those ranks when it
runs. Every run is recorded for ``comm_debug`` with the bytes this rank sends by the ring algorithm.

Point-to-point transfers (``dist_send`` / ``dist_recv``, what a placement change issues) are ops too: a send
does not wait (its buffer is kept until the transfer completes, so two ranks sending to each other at once
never deadlock, as a pipeline's stages do), a receive waits for its message, matched by ``(peer, tag)``.
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


def _same_meta(x, **attrs):
    return _meta(x.shape, x.dtype)


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


def _all_gather_meta(x, ranks):
    return _meta([len(ranks), *x.shape], x.dtype)


def _reduce_scatter(x, ranks, reduce="sum"):
    src = x.contiguous()
    k = len(ranks)
    out = _C._empty(list(src.shape[1:]), src.dtype, None)
    comm_debug.record("reduce_scatter", (k - 1) * _nbytes(out), k)
    _comm(ranks).reduce_scatter(out, src, _REDUCE[reduce])
    return out


def _reduce_scatter_meta(x, ranks, reduce="sum"):
    if x.dim() == 0 or x.shape[0] != len(ranks):
        raise RuntimeError(f"dist_reduce_scatter: expected an input stacking {len(ranks)} pieces along dim 0, got "
                           f"shape {tuple(x.shape)}")
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


# sends in flight: (work, buffer); the buffer must outlive the transfer. Completed ones are dropped as later
# transfers run, and flush() waits for the rest (a pipelined graph's plan ends with it)
_pending = []


def _reap():
    _pending[:] = [(w, b) for w, b in _pending if not w.is_completed()]


def _send(x, dst, tag):
    buf = x.contiguous().clone()  # the caller's tensor may change (or be freed) before the transfer completes
    comm_debug.record("send", _nbytes(buf), 2, peer=dst, tag=tag)
    _reap()
    _pending.append((_world.world().isend(buf, dst, tag), buf))
    return _C._empty([0], x.dtype, None)


def _send_meta(x, dst, tag):
    return _meta([0], x.dtype)


def _recv(after, size, dtype, src, tag):
    out = _C._empty(list(size), dtype, None)
    comm_debug.record("recv", 0, 2, peer=src, tag=tag)
    _reap()
    _world.world().irecv(out, src, tag).wait()
    return out


def _recv_meta(after, size, dtype, src, tag):
    return _meta(size, dtype)


def flush_sends():
    """Waits until every send this process started has completed."""
    for work, _ in _pending:
        work.wait()
    _pending.clear()


def _flush(token):
    flush_sends()
    return _C._empty([0], token.dtype, None)


def _flush_meta(token):
    return _meta([0], token.dtype)


def _op(name, schema, kernel, meta):
    found = getattr(_C.ops, name, None)  # registered once per process (a re-import finds it)
    if found is not None:
        return found
    return custom_op(name, schema, kernel=kernel, meta=meta, side_effects=True)


all_reduce = _op("dist_all_reduce", "(Tensor self, int[] ranks, str reduce='sum') -> Tensor", _all_reduce,
                 _same_meta)
all_gather = _op("dist_all_gather", "(Tensor self, int[] ranks) -> Tensor", _all_gather, _all_gather_meta)
reduce_scatter = _op("dist_reduce_scatter", "(Tensor self, int[] ranks, str reduce='sum') -> Tensor",
                     _reduce_scatter, _reduce_scatter_meta)
all_to_all = _op("dist_all_to_all", "(Tensor self, int[] ranks) -> Tensor", _all_to_all, _same_meta)
broadcast = _op("dist_broadcast", "(Tensor self, int[] ranks, int root=0) -> Tensor", _broadcast, _same_meta)

# ``after``: the tensor the received value stands for on this rank (the source's shard, empty outside the source
# placement): it orders the receive after that tensor's producer and gives the op an input to trace by
send = _op("dist_send", "(Tensor self, int dst, int tag) -> Tensor", _send, _send_meta)
recv = _op("dist_recv", "(Tensor after, int[] size, ScalarType dtype, int src, int tag) -> Tensor", _recv,
           _recv_meta)
flush = _op("dist_flush_sends", "(Tensor token) -> Tensor", _flush, _flush_meta)

COLLECTIVES = frozenset(("dist_all_reduce", "dist_all_gather", "dist_reduce_scatter", "dist_all_to_all",
                         "dist_broadcast", "dist_send", "dist_recv", "dist_flush_sends"))
