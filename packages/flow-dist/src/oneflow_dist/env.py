"""``oneflow.env``: this process's place in the job (OneFlow's names).

Ranks come from the launcher's environment (``flowrun`` sets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE); a
process started without a launcher is rank 0 of a world of 1.
"""
from . import _world

__all__ = ["get_rank", "get_world_size", "get_local_rank", "get_local_world_size", "get_node_size", "init_rdma",
           "rdma_is_initialized", "barrier", "all_device_placement"]


def get_rank():
    """The global rank of this process, in ``[0, get_world_size())``."""
    return _world.rank()


def get_world_size():
    """The number of processes of the job."""
    return _world.world_size()


def get_local_rank():
    """The rank of this process among the processes of its node."""
    return _world.local_rank()


def get_local_world_size():
    """The number of processes on this node."""
    return _world.local_world_size()


def get_node_size():
    """The number of nodes of the job."""
    return _world.node_size()


_rdma = False


def init_rdma():
    """Initializes RDMA between nodes; nothing to do with the CPU (MPI) engine, which picks its own transport."""
    global _rdma
    _rdma = True


def rdma_is_initialized():
    """Whether :func:`init_rdma` was called."""
    return _rdma


def barrier():
    """Blocks until every rank of the job reaches it."""
    _world.world().barrier()


def all_device_placement(device_type):
    """The placement of every rank of the job on ``device_type`` ("cpu"; "cuda" needs a CUDA build), ranks in
    one dimension: ``flow.placement(device_type, ranks=range(get_world_size()))``."""
    from .placement import placement

    return placement(device_type, ranks=list(range(get_world_size())))
