"""``oneflow.nn.graph``: the per-module graph options, OneFlow's ``module.to(flow.nn.graph.GraphModule)``.

``GraphModule`` is a proxy of one eager module (the same proxy for every ``to`` call): it reads and calls through
to the module and holds the options a Graph honours for it while tracing: ``activation_checkpointing`` (the
module's forward activations are recomputed in the backward instead of kept, see
:mod:`oneflow_graph.passes.checkpoint`) and ``set_stage`` (the module is a stage of a pipeline, see
:mod:`oneflow_graph.pipeline`)."""
import contextlib

import oneflow as flow

from .tracer import active_mode


class GraphModule:
    """The graph options of ``module``; get it with ``module.to(flow.nn.graph.GraphModule)``.

    Attributes:
        origin (nn.Module): the eager module.
        activation_checkpointing (bool): recompute the module's activations in the backward of a training
            graph instead of keeping them from the forward. Default: ``False``.
        stage_id (int or None), stage_placement: what :meth:`set_stage` recorded.
    """

    def __init__(self, module):
        if not isinstance(module, flow.nn.Module):
            raise TypeError(f"GraphModule wraps an nn.Module, but got {type(module).__name__}")
        d = self.__dict__
        d["origin"], d["_activation_checkpointing"] = module, False
        d["stage_id"] = d["stage_placement"] = None
        d["_moved"] = {}  # id(old parameter) -> (it, the global parameter set_stage replaced it by)

    @classmethod
    def _from_module(cls, module):
        """What ``module.to(GraphModule)`` returns: the module's one proxy."""
        proxy = module.__dict__.get("_graph_module_proxy")
        if proxy is None:
            proxy = module.__dict__["_graph_module_proxy"] = cls(module)
        return proxy

    @property
    def activation_checkpointing(self):
        return self._activation_checkpointing

    @activation_checkpointing.setter
    def activation_checkpointing(self, value):
        if not isinstance(value, bool):
            raise TypeError(f"GraphModule.activation_checkpointing must be a bool, but got {type(value).__name__}")
        self.__dict__["_activation_checkpointing"] = value

    def set_stage(self, stage_id, placement=None):
        """Makes the module stage ``stage_id`` of a pipeline on ``placement`` (OneFlow's ``set_stage``).

        Its parameters and buffers that are not global tensors on ``placement`` become global there, broadcast
        (``to_global(placement, flow.sbp.broadcast)``; ones already on ``placement``, with any sbp, stay); an
        optimizer of a graph that holds the replaced parameters is given the new ones when the graph compiles.
        Inside a graph, global tensors passed to the module move to ``placement`` (keeping their sbp) first.
        A training graph with ``config.set_gradient_accumulation_steps(m)`` and stages ``0 .. n-1`` runs its
        ``m`` micro-batches as a pipeline: each rank runs its stage in the schedule's order (zero-bubble ZB-H1,
        or 1F1B: ``config.set_pipeline_schedule``), sending activations to the next stage and gradients to the
        previous one (see :mod:`oneflow_graph.pipeline`).

        Args:
            stage_id (int): the stage, from 0.
            placement (oneflow.placement, optional): the ranks of the stage. Default: the placement the
                module's parameters already have (all global on one placement).
        """
        if not isinstance(stage_id, int) or isinstance(stage_id, bool) or stage_id < 0:
            raise TypeError(f"GraphModule.set_stage: stage_id must be a non-negative int, but got {stage_id!r}")
        tensors = list(self.origin.parameters()) + list(self.origin.buffers())
        if placement is None:
            found = {t.placement for t in tensors if getattr(t, "is_global", False)}
            if len(found) == 1 and all(getattr(t, "is_global", False) for t in tensors):
                placement = found.pop()
        elif type(placement).__name__ != "placement" or not hasattr(placement, "ranks"):
            raise TypeError(f"GraphModule.set_stage: placement must be a oneflow.placement, but got "
                            f"{type(placement).__name__}")
        else:
            self.__dict__.setdefault("_moved", {}).update(_move_to(self.origin, placement))
        self.__dict__["stage_id"], self.__dict__["stage_placement"] = stage_id, placement

    def __getstate__(self):  # the replaced parameters are the graph's business, not a copy's
        return {k: v for k, v in self.__dict__.items() if k != "_moved"}

    def __getattr__(self, name):
        origin = self.__dict__.get("origin")
        if origin is None:  # while unpickling, before the state is back
            raise AttributeError(name)
        return getattr(origin, name)

    def __setattr__(self, name, value):
        if name in ("activation_checkpointing",):
            object.__setattr__(self, name, value)
        else:
            raise AttributeError(f"GraphModule has no option '{name}' (set attributes on the module itself)")

    def __call__(self, *args, **kwargs):
        return self.origin(*args, **kwargs)

    def __repr__(self):
        stage = "" if self.stage_id is None else f", stage_id={self.stage_id}, placement={self.stage_placement!r}"
        return f"GraphModule({self.origin!r}, activation_checkpointing={self.activation_checkpointing}{stage})"


def _move_to(module, placement):
    """The parameters and buffers of ``module`` not on ``placement`` made global there (broadcast); returns
    ``{id(old parameter): (old parameter, new parameter)}``."""
    broadcast = flow.sbp.broadcast
    moved = {}
    with flow.no_grad():
        for m in module.modules():
            for key, p in m._parameters.items():
                if p is None or (getattr(p, "is_global", False) and p.placement == placement):
                    continue
                new = flow.nn.Parameter(p.detach().to_global(placement=placement, sbp=broadcast), p.requires_grad)
                m._parameters[key] = new
                moved[id(p)] = (p, new)  # the old one kept: its id must not be reused while this is looked up
            for key, b in m._buffers.items():
                if b is not None and not (getattr(b, "is_global", False) and b.placement == placement):
                    m._buffers[key] = b.to_global(placement=placement, sbp=broadcast)
    return moved


@contextlib.contextmanager
def checkpoint_hooks(modules):
    """While tracing: hooks on each module (and submodule) whose GraphModule asks for activation checkpointing,
    recording the nodes its forward traced. Yields the list of those node lists (one per call)."""
    regions, handles = [], []
    seen = set()
    for top in modules or ():
        for m in top.modules():
            proxy = m.__dict__.get("_graph_module_proxy")
            if id(m) in seen or proxy is None or not proxy.activation_checkpointing:
                continue
            seen.add(id(m))
            starts = []

            def pre(mod, args, starts=starts):
                mode = active_mode()
                starts.append(None if mode is None else len(mode.ir.nodes))

            def post(mod, args, out, starts=starts):
                start, mode = starts.pop(), active_mode()
                if start is not None and mode is not None:
                    regions.append(list(mode.ir.nodes[start:]))

            handles += [m.register_forward_pre_hook(pre), m.register_forward_hook(post)]
    try:
        yield regions
    finally:
        for h in handles:
            h.remove()
