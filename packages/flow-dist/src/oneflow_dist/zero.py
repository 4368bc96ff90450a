"""ZeRO: optimizer state (stage 1), gradients (stage 2) and parameters (stage 3) sharded over the ranks that
hold copies of a global parameter, as DeepSpeed's ZeRO and OneFlow's ``graph.config.enable_zero``.

A parameter that is broadcast along some hierarchy dimensions of its placement (data-parallel replicas) gets a
*shard layout*: its nd-sbp with each of those broadcasts replaced by a split of dim 0 (nested under the splits it
has). Then

- stage 1: the optimizer state of the parameter takes the shard layout the first time an update sees it (the
  tensors in ``optimizer.state`` keep their identity; each rank holds ``1/N`` of them). The fused update runs on
  the shards (the parameter and gradient sliced there, which costs no communication for replicas) and the
  updated parameter shards are gathered back (an all_gather per parameter and step);
- stage 2: in addition the gradient arrives in the shard layout: a partial gradient is reduce-scattered instead
  of all-reduced (the same bytes on the ring), and ``param.grad`` holds ``1/N`` of the values;
- stage 3: in addition the parameter itself is stored in the shard layout; the ops that use it gather what they
  need (the global ops' boxing), and the update needs no gather.

Everything stays a global tensor computing the single-process values, so results equal unsharded training up to
floating-point summation order. Parameters smaller than ``shard_min_size`` elements, 0-dim ones and those with
no broadcast dimension are left as they are.
"""
import oneflow as flow

from . import _layout, boxing
from .global_tensor import _Global
from .sbp import split

__all__ = ["shard_optimizer", "shard_layout", "state_bytes"]

_STAGES = (1, 2, 3)


def shard_layout(param):
    """The nd-sbp ZeRO keeps ``param``'s shards in (None when it has no broadcast dimension or is 0-dim)."""
    if not isinstance(param, _Global) or param.dim() == 0 or not any(s.is_broadcast() for s in param.sbp):
        return None
    return tuple(split(0) if s.is_broadcast() else s for s in param.sbp)


def _relayout_in_place(t, nd_sbp):
    """``t`` (a global tensor) now lays out its values in ``nd_sbp``: the same object, a new local shard."""
    d = t.__dict__
    local = boxing.box(d["_local"], tuple(t.shape), t.placement, t.sbp, nd_sbp)
    d["_local"], d["_nd_sbp"] = local, tuple(nd_sbp)
    d["_mk"] = (tuple(t.shape), local.dtype, tuple(nd_sbp), t.placement)


def _shard_state(q, t):
    """Optimizer state ``t`` of ZeRO parameter ``q`` takes ``q``'s shard layout for good (if it still has
    ``q``'s layout: per-parameter scalars like step counts stay whole)."""
    layout = q.__dict__.get("_zero_layout") if isinstance(q, _Global) else None
    if layout is not None and isinstance(t, _Global) and t is not q and tuple(t.shape) == tuple(q.shape) \
            and t.sbp == q.sbp and t.sbp != layout:
        _relayout_in_place(t, layout)


def _on_state_created(p, state):
    for t in state.values():
        _shard_state(p, t)


def _shard_view(t, q, layout):
    """``t``'s (``q`` or a tensor in ``q``'s layout) shard under ``layout`` as a view of its local tensor, or None
    when the shard is not one dim-0 range of it (the update then works on a copy). Writing the view writes ``t``.

    Only where ``q``'s layout splits no hierarchy dim along dim 0: then the shard is such a range on every rank
    and the copy it replaces is a local slice, so ranks that decide differently (a non-contiguous local) still
    run the same collectives."""
    local = t.__dict__["_local"]
    at = _layout.coord(q.placement)
    if at is None or t.sbp != q.sbp or not local.is_contiguous() or \
            any(s.is_split() and s.dim == 0 for s in q.sbp):
        return None
    mine = _layout.ranges(tuple(q.shape), q.placement, q.sbp, at)
    shard = _layout.ranges(tuple(q.shape), q.placement, layout, at)
    if mine[1:] != shard[1:] or not mine[0][0] <= shard[0][0] <= shard[0][1] <= mine[0][1]:
        return None
    return flow.narrow(local, 0, shard[0][0] - mine[0][0], shard[0][1] - shard[0][0])


def shard_optimizer(optimizer, stage=1, shard_min_size=1024):
    """Shards ``optimizer``'s state (and, from stage 2, the gradients; at stage 3 the parameters) of its global
    parameters over their replicas.

    Args:
        optimizer (oneflow.optim.Optimizer): an optimizer over global parameters (others are left alone).
        stage (int): 1, 2 or 3 (see the module's docstring). Default: 1.
        shard_min_size (int): parameters with fewer elements are not sharded. Default: 1024.

    Returns:
        The list of parameters that were sharded.

    Call it before the first step. A parameter already sharded at another stage is re-sharded at this one
    (stage 3 cannot be undone: its parameters stay split).
    """
    if stage not in _STAGES:
        raise ValueError(f"shard_optimizer(): stage must be 1, 2 or 3, but got {stage!r}")
    if isinstance(shard_min_size, bool) or not isinstance(shard_min_size, int) or shard_min_size < 0:
        raise ValueError(f"shard_optimizer(): shard_min_size must be an int >= 0, but got {shard_min_size!r}")
    sharded = []
    optimizer.__dict__["_state_init_hook"] = _on_state_created
    for group in optimizer.param_groups:
        for p in group["params"]:
            layout = shard_layout(p)
            if layout is None or p.numel() < shard_min_size:
                continue
            d = p.__dict__
            if stage == 3:
                with flow.no_grad():
                    _relayout_in_place(p, layout)
                if p.grad is not None:
                    _relayout_in_place(p.grad, layout)
                d.pop("_zero_layout", None)
                d.pop("_zero_grad_sbp", None)
            else:
                d["_zero_layout"] = layout
                if stage == 2:
                    d["_zero_grad_sbp"] = layout
                else:
                    d.pop("_zero_grad_sbp", None)
            sharded.append(p)
    return sharded


def state_bytes(optimizer):
    """Bytes of optimizer state this rank holds (the local shards of global state, whole local tensors)."""
    total = 0
    for state in optimizer.state.values():
        for t in state.values():
            if isinstance(t, _Global):
                t = t.__dict__["_local"]
            if isinstance(t, flow.Tensor):
                total += t.numel() * t.element_size()
    return total


def update_on_shards(op, names, groups, params, attrs):
    """A fused optimizer update whose parameters include ZeRO ones (``_zero_layout``): see the module's
    docstring. Others follow ``place`` as in an unsharded update."""
    from ._global_ops import _NON_ELEMENTWISE_UPDATES, _place_for_update, _whole_update

    if op.name in _NON_ELEMENTWISE_UPDATES:  # norms over whole tensors: computed whole, the state kept sharded
        for name in names[2:]:
            group = groups[name]
            for q, t in zip(params, group if isinstance(group, list) else ()):
                _shard_state(q, t)
        return _whole_update(op, names, groups, attrs)
    flat, gather = [], []
    for k, name in enumerate(names):
        group = groups[name]
        if not isinstance(group, list):
            flat.append(_place_for_update(None, group))
            continue
        for q, t in zip(params, group):
            layout = q.__dict__.get("_zero_layout") if isinstance(q, _Global) else None
            if layout is None or not isinstance(t, _Global):
                flat.append(_place_for_update(q, t))
            elif t is q:  # the parameter's shard: updated in place where it is a view, then gathered
                shard = _shard_view(q, q, layout)
                if shard is None:
                    shard = boxing.box(q.__dict__["_local"], tuple(q.shape), q.placement, q.sbp, layout)
                    shard = shard.clone() if shard is q.__dict__["_local"] else shard
                gather.append((q, shard, layout))
                flat.append(shard)
            elif tuple(t.shape) != tuple(q.shape):  # per-parameter scalars (step counts): whole values
                flat.append(_place_for_update(q, t))
            else:
                if k > 1:  # optimizer state (created before shard_optimizer): sharded for good
                    _shard_state(q, t)
                view = _shard_view(t, q, layout) if k == 1 else None  # a gradient is only read
                flat.append(view if view is not None else
                            boxing.box(t.__dict__["_local"], tuple(t.shape), t.placement, t.sbp, layout))
    out = op.redispatch(flat, attrs)
    for q, shard, layout in gather:
        if _layout.coord(q.placement) is not None:
            q.__dict__["_local"].copy_(boxing.box(shard, tuple(q.shape), q.placement, layout, q.sbp))
    return out
