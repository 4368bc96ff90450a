"""``oneflow.comm``: OneFlow's collectives on local tensors, over every rank of the job. They need no
initialization. Reductions sum."""
import oneflow as flow

from .distributed import _api as _d
from ._tensors import check_tensor

__all__ = ["all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
           "all_to_all", "broadcast", "scatter", "gather", "reduce", "send", "recv", "barrier"]

_META_TAG = 7001  # send/recv: the shape and dtype travel ahead of the data under their own tag


def all_reduce(tensor):
    """Sums ``tensor`` over all ranks, in place on every rank."""
    _d.all_reduce(tensor, group=_d.world_group())


def all_gather(tensor_list, tensor):
    """Gathers ``tensor`` of every rank into ``tensor_list`` (one tensor per rank)."""
    _d.all_gather(tensor_list, tensor, group=_d.world_group())


def all_gather_into_tensor(output_tensor, input_tensor):
    """Gathers ``input_tensor`` of every rank into ``output_tensor`` (concatenated along dim 0)."""
    _d.all_gather_into_tensor(output_tensor, input_tensor, group=_d.world_group())


def reduce_scatter(output, input_list):
    """Sums ``input_list[i]`` over the ranks into ``output`` of rank i."""
    _d.reduce_scatter(output, input_list, group=_d.world_group())


def reduce_scatter_tensor(output_tensor, input_tensor):
    """Sums ``input_tensor`` (one block per rank along dim 0) over the ranks; rank i gets block i."""
    _d.reduce_scatter_tensor(output_tensor, input_tensor, group=_d.world_group())


def all_to_all(output_tensor_list, input_tensor_list):
    """Sends ``input_tensor_list[i]`` to rank i, which receives it in ``output_tensor_list[me]``."""
    _d.all_to_all(output_tensor_list, input_tensor_list, group=_d.world_group())


def broadcast(tensor, src):
    """Copies ``tensor`` of rank ``src`` into ``tensor`` on every rank."""
    _d.broadcast(tensor, src, group=_d.world_group())


def scatter(tensor, scatter_list=None, src=0):
    """Sends ``scatter_list[i]`` of rank ``src`` into ``tensor`` of rank i."""
    _d.scatter(tensor, scatter_list, src, group=_d.world_group())


def gather(tensor, gather_list=None, dst=0):
    """Gathers ``tensor`` of every rank into ``gather_list`` of rank ``dst``."""
    _d.gather(tensor, gather_list, dst, group=_d.world_group())


def reduce(tensor, dst):
    """Sums ``tensor`` over the ranks into ``tensor`` of rank ``dst``."""
    _d.reduce(tensor, dst, group=_d.world_group())


def barrier():
    """Blocks until every rank reaches it."""
    _d.barrier(group=_d.world_group())


def send(tensor, dst, send_meta=True):
    """Sends ``tensor`` to rank ``dst``. With ``send_meta`` its shape and dtype go first, so that :func:`recv`
    needs neither; without, the receiver must pass them (``shape``, ``dtype``) or ``out``."""
    check_tensor(tensor, "send")
    g = _d.world_group()
    peer = _d._member(g, dst, "send", "dst")
    if send_meta:
        g._comm.send_object((tuple(tensor.shape), str(tensor.dtype)), peer, _META_TAG)
    _d.send(tensor, dst, group=g)


def recv(src, shape=None, dtype=None, device=None, *, out=None):
    """Receives a tensor from rank ``src`` and returns it (in ``out`` when given). Without ``shape``/``dtype``
    (and ``out``) the sender must have used ``send_meta=True``."""
    g = _d.world_group()
    peer = _d._member(g, src, "recv", "src")
    if out is None:
        if shape is None or dtype is None:
            shape, dname = g._comm.recv_object(peer, _META_TAG)
            dtype = getattr(flow, dname.split(".")[-1])
        out = flow.empty(tuple(shape), dtype=dtype)
    check_tensor(out, "recv", "out")
    _d.recv(out, src, group=g)
    return out
