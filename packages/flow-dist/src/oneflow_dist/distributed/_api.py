"""The functions of ``oneflow.distributed`` (re-exported by the package)."""
import datetime

import oneflow as flow

from .. import _world
from .._comm import ReduceOp, Work
from .._tensors import check_list, check_same, check_tensor, flat_cat, inplace, split_into

__all__ = ["Backend", "GroupMember", "ProcessGroup", "ReduceOp", "Work", "all_gather", "all_gather_into_tensor",
           "all_gather_object", "all_reduce", "all_to_all", "all_to_all_single", "barrier", "broadcast",
           "broadcast_object_list", "destroy_process_group", "gather", "get_backend", "get_global_rank",
           "get_group_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group",
           "irecv", "is_available", "is_gloo_available", "is_initialized", "is_mpi_available", "is_nccl_available",
           "is_torchelastic_launched", "isend", "new_group", "recv", "reduce", "reduce_scatter",
           "reduce_scatter_tensor", "scatter", "send"]


class Backend(str):
    """Backend names, as ``torch.distributed.Backend``. This build runs every CPU backend name on MPI."""
    MPI = "mpi"
    GLOO = "gloo"
    NCCL = "nccl"
    UNDEFINED = "undefined"

    def __new__(cls, name):
        name = str(name).lower()
        if name not in ("mpi", "gloo", "nccl", "undefined") and not name.startswith("cpu:"):
            raise ValueError(f"Invalid backend: '{name}'")
        return super().__new__(cls, name)


class ProcessGroup:
    """A group of global ranks and its communicator (None on ranks outside the group)."""

    def __init__(self, ranks, comm):
        self._ranks = list(ranks)
        self._comm = comm

    def rank(self):
        return self._comm.rank if self._comm is not None else -1

    def size(self):
        return len(self._ranks)

    def __repr__(self):
        return f"<ProcessGroup ranks={self._ranks}>"


class GroupMember:
    WORLD = None  # the default group, once init_process_group ran
    NON_GROUP_MEMBER = object()


class group:
    WORLD = None


_state = {"initialized": False, "backend": None}


def is_available():
    """True: flow-dist is installed."""
    return True


def is_initialized():
    """Whether :func:`init_process_group` has been called (and not destroyed since)."""
    return _state["initialized"]


def is_mpi_available():
    return True


def is_nccl_available():
    return False


def is_gloo_available():
    return False


def is_torchelastic_launched():
    """Whether this process was started by a launcher that sets the job's environment (flowrun does)."""
    import os

    return "FLOWRUN_STATUS_DIR" in os.environ or "TORCHELASTIC_RUN_ID" in os.environ


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Initializes the default process group. The ranks and their wiring come from the launcher (``flowrun``);
    ``world_size`` and ``rank``, when given, must agree with it. ``backend``: None, "mpi", "gloo" (both run
    on MPI here) or "cpu:..."; "nccl" needs a CUDA build."""
    if _state["initialized"]:
        raise RuntimeError("trying to initialize the default process group twice!")
    if timeout is not None and not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout).__name__}")
    name = "mpi" if backend is None else Backend(backend)
    if name == "nccl" or "cuda:" in name:
        raise RuntimeError("ProcessGroupNCCL is only supported with GPUs, no GPUs found! (this build of flow-dist "
                           "has the MPI backend for CPU tensors: use backend='mpi' or 'gloo')")
    if world_size not in (-1, None) and world_size != _world.world_size():
        raise ValueError(f"init_process_group(): world_size={world_size}, but the launcher started "
                         f"{_world.world_size()} process(es)")
    if rank not in (-1, None) and rank != _world.rank():
        raise ValueError(f"init_process_group(): rank={rank}, but the launcher made this process rank "
                         f"{_world.rank()}")
    g = world_group()
    GroupMember.WORLD = group.WORLD = g
    _state.update(initialized=True, backend="mpi" if backend is None else str(name))


def destroy_process_group(group=None):
    """Destroys ``group`` (default: every group, and the default one)."""
    if group is None or group is GroupMember.WORLD:
        _state.update(initialized=False, backend=None)
        GroupMember.WORLD = globals()["group"].WORLD = None
    elif isinstance(group, ProcessGroup):
        group._comm = None


_implicit = {}


def world_group():
    """The group of the whole world whether or not init_process_group ran (``oneflow.comm`` uses it: OneFlow's
    collectives need no initialization)."""
    if GroupMember.WORLD is not None:
        return GroupMember.WORLD
    comm = _world.world()
    g = _implicit.get(id(comm))
    if g is None:
        g = _implicit[id(comm)] = ProcessGroup(range(comm.size), comm)
    return g


def _group(g, op):
    if g is None or g is GroupMember.WORLD:
        if not _state["initialized"]:
            raise ValueError("Default process group has not been initialized, please make sure to call "
                             "init_process_group.")
        return GroupMember.WORLD
    if not isinstance(g, ProcessGroup):
        raise TypeError(f"{op}(): group must be a ProcessGroup from new_group(), got {type(g).__name__}")
    return g


def _comm(g, op):
    g = _group(g, op)
    if g._comm is None:
        raise RuntimeError(f"{op}(): this rank ({_world.rank()}) is not a member of {g}")
    return g, g._comm


def _member(g, global_rank, op, name):
    if not isinstance(global_rank, int) or isinstance(global_rank, bool):
        raise TypeError(f"{op}(): {name} must be an int rank, got {global_rank!r}")
    try:
        return g._ranks.index(global_rank)
    except ValueError:
        raise ValueError(f"{op}(): {name}={global_rank} is not a rank of {g}") from None


def _done(async_op, work=None):
    if not async_op:
        if work is not None:
            work.wait()
        return None
    return work if work is not None else Work()


def get_rank(group=None):
    """This process's rank in ``group`` (default: the global rank); -1 outside the group."""
    if group is None and not _state["initialized"]:
        _group(None, "get_rank")
    return _group(group, "get_rank").rank()


def get_world_size(group=None):
    """The number of ranks in ``group`` (default: the world)."""
    return _group(group, "get_world_size").size()


def get_backend(group=None):
    _group(group, "get_backend")
    return _state["backend"]


def get_process_group_ranks(group):
    """The global ranks of ``group``, in group order."""
    return list(_group(group, "get_process_group_ranks")._ranks)


def get_global_rank(group, group_rank):
    g = _group(group, "get_global_rank")
    if not 0 <= group_rank < g.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {g}")
    return g._ranks[group_rank]


def get_group_rank(group, global_rank):
    return _member(_group(group, "get_group_rank"), global_rank, "get_group_rank", "global_rank")


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None):
    """A group of the global ``ranks`` (default: all, sorted). Every rank may call it; on ranks outside the group
    the result is a group they cannot use in collectives."""
    world = _group(None, "new_group")
    if ranks is None:
        ranks = list(range(world.size()))
    ranks = sorted(int(r) for r in ranks)
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group(): ranks must be distinct, got {ranks}")
    for r in ranks:
        if not 0 <= r < world.size():
            raise ValueError(f"new_group(): rank {r} is outside the world of {world.size()} process(es)")
    return ProcessGroup(ranks, world._comm.sub(ranks))


# ---- collectives -----------------------------------------------------------------------------------------------
def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``tensor`` over the ranks of ``group`` (``op``: ReduceOp.SUM, AVG, PRODUCT, MIN, MAX), in place on
    every rank. ``async_op=True`` returns a :class:`Work` to ``wait()`` on."""
    check_tensor(tensor, "all_reduce")
    _, comm = _comm(group, "all_reduce")
    if async_op and tensor.is_contiguous():
        return comm.iall_reduce(tensor, op)
    with inplace(tensor) as buf:
        comm.all_reduce(buf, op)
    return _done(async_op)


def broadcast(tensor, src, group=None, async_op=False):
    """Copies ``tensor`` of the global rank ``src`` into ``tensor`` on every rank of ``group``."""
    check_tensor(tensor, "broadcast")
    g, comm = _comm(group, "broadcast")
    root = _member(g, src, "broadcast", "src")
    with inplace(tensor, copy_in=comm.rank == root) as buf:
        comm.broadcast(buf, root)
    return _done(async_op)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``tensor`` over ``group`` into ``tensor`` of the global rank ``dst`` (the others' are unchanged)."""
    check_tensor(tensor, "reduce")
    g, comm = _comm(group, "reduce")
    root = _member(g, dst, "reduce", "dst")
    with inplace(tensor) as buf:
        comm.reduce(buf, root, op)
    return _done(async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gathers ``input_tensor`` of every rank into ``output_tensor``, concatenated along dim 0 (or stacked:
    any output with ``world_size * input.numel()`` elements)."""
    check_tensor(output_tensor, "all_gather_into_tensor", "output_tensor")
    check_tensor(input_tensor, "all_gather_into_tensor", "input_tensor")
    check_same(input_tensor, output_tensor, "all_gather_into_tensor")
    _, comm = _comm(group, "all_gather_into_tensor")
    with inplace(output_tensor, copy_in=False) as out:
        comm.all_gather(out, input_tensor.detach().contiguous())
    return _done(async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Gathers ``tensor`` of every rank of ``group`` into ``tensor_list`` (one tensor per rank)."""
    check_tensor(tensor, "all_gather")
    g, comm = _comm(group, "all_gather")
    check_list(tensor_list, "all_gather", "tensor_list", g.size())
    for t in tensor_list:
        check_same(tensor, t, "all_gather", "tensor and tensor_list")
        if t.numel() != tensor.numel():
            raise ValueError(f"all_gather(): each tensor of tensor_list needs {tensor.numel()} elements (the "
                             f"input's), got shape {tuple(t.shape)}")
    out = flow.empty(g.size() * tensor.numel(), dtype=tensor.dtype)
    comm.all_gather(out, tensor.detach().contiguous())
    split_into(out, tensor_list)
    return _done(async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``input`` (``world_size`` blocks along dim 0) over the ranks; rank i gets block i in ``output``."""
    check_tensor(output, "reduce_scatter_tensor", "output")
    check_tensor(input, "reduce_scatter_tensor", "input")
    check_same(input, output, "reduce_scatter_tensor")
    _, comm = _comm(group, "reduce_scatter_tensor")
    with inplace(output, copy_in=False) as out:
        comm.reduce_scatter(out, input.detach().contiguous(), op)
    return _done(async_op)


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces ``input_list[i]`` over the ranks into ``output`` of group rank i."""
    check_tensor(output, "reduce_scatter", "output")
    g, comm = _comm(group, "reduce_scatter")
    check_list(input_list, "reduce_scatter", "input_list", g.size())
    for t in input_list:
        check_same(output, t, "reduce_scatter", "output and input_list")
        if t.numel() != output.numel():
            raise ValueError(f"reduce_scatter(): each tensor of input_list needs {output.numel()} elements (the "
                             f"output's), got shape {tuple(t.shape)}")
    with inplace(output, copy_in=False) as out:
        comm.reduce_scatter(out, flat_cat(input_list, output.dtype), op)
    return _done(async_op)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Sends ``input_tensor_list[i]`` to group rank i, which receives it in its ``output_tensor_list[me]``
    (sizes may differ between pairs)."""
    g, comm = _comm(group, "all_to_all")
    check_list(output_tensor_list, "all_to_all", "output_tensor_list", g.size())
    check_list(input_tensor_list, "all_to_all", "input_tensor_list", g.size())
    dtype = input_tensor_list[0].dtype
    for t in (*input_tensor_list, *output_tensor_list):
        check_same(input_tensor_list[0], t, "all_to_all", "all tensors")
    out = flow.empty(sum(t.numel() for t in output_tensor_list), dtype=dtype)
    comm.all_to_all_v(out, [t.numel() for t in output_tensor_list], flat_cat(input_tensor_list, dtype),
                      [t.numel() for t in input_tensor_list])
    split_into(out, output_tensor_list)
    return _done(async_op)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None, async_op=False):
    """Splits ``input`` along dim 0 (equally, or by ``input_split_sizes``), sends piece i to group rank i and
    concatenates what arrives into ``output`` (by ``output_split_sizes``)."""
    check_tensor(output, "all_to_all_single", "output")
    check_tensor(input, "all_to_all_single", "input")
    check_same(input, output, "all_to_all_single")
    g, comm = _comm(group, "all_to_all_single")
    n = g.size()

    def counts(t, splits, name):
        rows = t.shape[0] if t.dim() else 1
        row = t.numel() // rows if rows else 0
        if splits is None:
            if rows % n:
                raise ValueError(f"all_to_all_single(): dim 0 of {name} ({rows}) is not divisible by the group "
                                 f"size {n}; pass {name}_split_sizes")
            return [rows // n * row] * n
        splits = list(splits)
        if len(splits) != n or sum(splits) != rows:
            raise ValueError(f"all_to_all_single(): {name}_split_sizes must have {n} entries summing to dim 0 "
                             f"({rows}), got {splits}")
        return [s * row for s in splits]

    in_counts = counts(input, input_split_sizes, "input")
    out_counts = counts(output, output_split_sizes, "output")
    with inplace(output, copy_in=False) as out:
        comm.all_to_all_v(out, out_counts, input.detach().contiguous(), in_counts)
    return _done(async_op)


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """Gathers ``tensor`` of every rank into ``gather_list`` of the global rank ``dst`` (None elsewhere)."""
    check_tensor(tensor, "gather")
    g, comm = _comm(group, "gather")
    root = _member(g, dst, "gather", "dst")
    src = tensor.detach().contiguous()
    if comm.rank == root:
        check_list(gather_list, "gather", "gather_list", g.size())
        out = flow.empty(g.size() * tensor.numel(), dtype=tensor.dtype)
        comm.gather(out, src, root)
        split_into(out, gather_list)
    else:
        if gather_list:
            raise ValueError("gather(): gather_list must be given only on the destination rank")
        comm.gather(None, src, root)
    return _done(async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """Sends ``scatter_list[i]`` of the global rank ``src`` to group rank i, into its ``tensor``."""
    check_tensor(tensor, "scatter")
    g, comm = _comm(group, "scatter")
    root = _member(g, src, "scatter", "src")
    flat = None
    if comm.rank == root:
        check_list(scatter_list, "scatter", "scatter_list", g.size())
        for t in scatter_list:
            if t.numel() != tensor.numel():
                raise ValueError(f"scatter(): each tensor of scatter_list needs {tensor.numel()} elements, got "
                                 f"shape {tuple(t.shape)}")
        flat = flat_cat(scatter_list, tensor.dtype)
    elif scatter_list:
        raise ValueError("scatter(): scatter_list must be given only on the source rank")
    with inplace(tensor, copy_in=False) as out:
        comm.scatter(out, flat, root)
    return _done(async_op)


def send(tensor, dst, group=None, tag=0):
    """Sends ``tensor`` to the global rank ``dst`` (blocking)."""
    check_tensor(tensor, "send")
    g, comm = _comm(group, "send")
    peer = _member(g, dst, "send", "dst")
    if peer == comm.rank:
        raise ValueError("send(): Invalid destination rank: should not be the same as the rank of the current "
                         "process.")
    comm.send(tensor.detach().contiguous(), peer, tag)


def recv(tensor, src=None, group=None, tag=0):
    """Receives into ``tensor`` from the global rank ``src`` (any rank if None); returns the sender's rank."""
    check_tensor(tensor, "recv")
    g, comm = _comm(group, "recv")
    peer = None if src is None else _member(g, src, "recv", "src")
    with inplace(tensor, copy_in=False) as out:
        got = comm.recv(out, peer, tag)
    return g._ranks[got]


def isend(tensor, dst, group=None, tag=0):
    """Sends ``tensor`` to ``dst`` without waiting; returns a :class:`Work` (keep ``tensor`` unchanged until it
    completes)."""
    check_tensor(tensor, "isend")
    g, comm = _comm(group, "isend")
    if not tensor.is_contiguous():
        raise ValueError("isend(): tensor must be contiguous")
    return comm.isend(tensor, _member(g, dst, "isend", "dst"), tag)


def irecv(tensor, src=None, group=None, tag=0):
    """Receives into the contiguous ``tensor`` from ``src`` without waiting; returns a :class:`Work`."""
    check_tensor(tensor, "irecv")
    g, comm = _comm(group, "irecv")
    if not tensor.is_contiguous():
        raise ValueError("irecv(): tensor must be contiguous")
    from mpi4py import MPI

    peer = MPI.ANY_SOURCE if src is None else _member(g, src, "irecv", "src")
    return comm.irecv(tensor, peer, tag)


def barrier(group=None, async_op=False, device_ids=None):
    """Blocks until every rank of ``group`` reaches it."""
    _comm(group, "barrier")[1].barrier()
    return _done(async_op)


def all_gather_object(object_list, obj, group=None):
    """Gathers the picklable ``obj`` of every rank into ``object_list`` (one entry per rank, filled in place)."""
    g, comm = _comm(group, "all_gather_object")
    if len(object_list) != g.size():
        raise ValueError(f"all_gather_object(): object_list must have {g.size()} entries, got {len(object_list)}")
    object_list[:] = comm.all_gather_object(obj)


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """Broadcasts the picklable objects of ``object_list`` of the global rank ``src`` into every rank's list."""
    g, comm = _comm(group, "broadcast_object_list")
    root = _member(g, src, "broadcast_object_list", "src")
    got = comm.broadcast_object(list(object_list) if comm.rank == root else None, root)
    if len(got) != len(object_list):
        raise ValueError(f"broadcast_object_list(): the lists differ in length ({len(got)} on rank {src}, "
                         f"{len(object_list)} here)")
    object_list[:] = got
