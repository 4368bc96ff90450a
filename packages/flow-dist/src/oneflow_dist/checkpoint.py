"""Checkpoints of global tensors, as OneFlow saves and loads them (flow-core's ``_global_save`` and
``_global_load`` entry points).

``flow.save(obj, path, global_dst_rank=r)`` is collective: every rank calls it with the same structure, each
global tensor in ``obj`` is gathered whole onto rank ``r``, and only rank ``r`` writes the file (atomically, as
every ``flow.save`` to a path does), holding plain local tensors: the file does not depend on the layout it was
saved from. Its outcome is then broadcast, so a failure on rank ``r`` raises on every rank instead of leaving
the others waiting. ``flow.load(path, global_src_rank=r)`` reads the file on rank ``r`` only and gives every rank
the same object whose tensors are global, broadcast over all the job's ranks; ``load_state_dict`` (a boxing
``copy_`` into each parameter) then lays them out as the model's own placement and sbp, whatever the rank count or
sbp it was saved from.
"""
import oneflow as flow

from . import _world
from .env import all_device_placement
from .sbp import broadcast

__all__ = ["gather_for_save", "finish_save", "load_broadcast"]


def _is_tensor(x):
    return isinstance(x, flow.Tensor)


def _map(obj, fn, leaf=_is_tensor):
    """``obj`` with every leaf ``x`` (a tensor by default) replaced by ``fn(x)``, containers rebuilt with their
    own types; the walk's order is the structure's, the same on every rank for the same structure."""
    if leaf(obj):
        return fn(obj)
    if isinstance(obj, dict):
        out = type(obj)() if type(obj) is not dict else {}
        for k, v in obj.items():
            out[k] = _map(v, fn, leaf)
        if hasattr(obj, "_metadata"):  # state dicts carry their modules' versions
            out._metadata = obj._metadata
        return out
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_map(v, fn, leaf) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(v, fn, leaf) for v in obj)
    return obj


def _whole_on(t, dst):
    """A global tensor's whole value as a local tensor on rank ``dst`` (None on the other ranks)."""
    ranks = t.placement.ranks.flatten().tolist()
    nd = t.placement.ranks.ndim
    if dst in ranks:
        full = t.detach().to_global(sbp=(broadcast,) * nd)
    else:  # the tensor lives on other ranks (a pipeline stage): moved onto dst first
        full = t.detach().to_global(placement=flow.placement(t.placement.type, ranks=[dst]), sbp=broadcast)
    return full.to_local() if flow.env.get_rank() == dst else None


def gather_for_save(obj, dst):
    """``(obj with its global tensors gathered whole onto rank dst, whether this rank writes)``; collective."""
    world = flow.env.get_world_size()
    if not isinstance(dst, int) or isinstance(dst, bool) or not 0 <= dst < world:
        raise ValueError(f"flow.save: global_dst_rank must be a rank of this job (0 to {world - 1}), got {dst!r}")
    me = flow.env.get_rank()

    def gather(t):
        if getattr(t, "is_global", False):
            return _whole_on(t, dst)
        return t
    return _map(obj, gather), me == dst


def finish_save(error, dst):
    """Broadcasts the outcome of rank dst's write; raises it on every rank when it failed."""
    comm = _world.world()
    outcome = comm.broadcast_object(None if error is None else (type(error).__name__, str(error)), dst)
    if outcome is not None and error is None:
        raise RuntimeError(f"flow.save: rank {dst} failed to write the checkpoint: {outcome[0]}: {outcome[1]}")


def load_broadcast(read, src):
    """``read()`` on rank src, its object given to every rank with its tensors global (broadcast over all
    ranks); a failure on src raises on every rank."""
    world = flow.env.get_world_size()
    if not isinstance(src, int) or isinstance(src, bool) or not 0 <= src < world:
        raise ValueError(f"flow.load: global_src_rank must be a rank of this job (0 to {world - 1}), got {src!r}")
    comm = _world.world()
    me = flow.env.get_rank()
    obj, error = None, None
    if me == src:
        try:
            obj = read()
        except Exception as e:  # every rank raises it, not only src
            error = e
    tensors = []

    def skeleton(t):  # the structure travels as a pickle, the tensors' data by in-place broadcasts
        tensors.append(t.detach())
        return _Slot(len(tensors) - 1, tuple(t.shape), t.dtype, t.requires_grad)

    shape = (_map(obj, skeleton), None) if error is None else (None, (type(error), str(error)))
    shape = comm.broadcast_object(shape if me == src else None, src)
    if shape[1] is not None:
        if error is not None:
            raise error
        kind, message = shape[1]
        raise kind(message) if issubclass(kind, Exception) else RuntimeError(message)
    placement = all_device_placement("cpu")

    def fill(slot):
        t = tensors[slot.index].contiguous() if me == src else flow.empty(*slot.shape, dtype=slot.dtype)
        if world > 1 and t.numel():
            comm.broadcast(t, src)
        g = t.to_global(placement, broadcast)
        return g.requires_grad_(True) if slot.requires_grad and g.is_floating_point() else g
    return _map(shape[0], fill, leaf=lambda x: isinstance(x, _Slot))


class _Slot:
    def __init__(self, index, shape, dtype, requires_grad):
        self.index, self.shape, self.dtype, self.requires_grad = index, shape, dtype, requires_grad
