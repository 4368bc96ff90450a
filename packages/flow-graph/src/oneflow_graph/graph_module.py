"""``oneflow.nn.graph``: the per-module graph options, OneFlow's ``module.to(flow.nn.graph.GraphModule)``.

``GraphModule`` is a proxy of one eager module (the same proxy for every ``to`` call): it reads and calls through
to the module and holds the options a Graph honours for it while tracing: ``activation_checkpointing`` (the
module's forward activations are recomputed in the backward instead of kept, see
:mod:`oneflow_graph.passes.checkpoint`) and ``set_stage`` (recorded for pipeline parallelism, which comes with
the hybrid-parallel work)."""
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
        """Records the pipeline stage of the module (OneFlow's ``set_stage``): read back as ``stage_id`` and
        ``stage_placement``. Pipelining itself is not implemented yet: the graph runs as one stage."""
        if not isinstance(stage_id, int) or isinstance(stage_id, bool) or stage_id < 0:
            raise TypeError(f"GraphModule.set_stage: stage_id must be a non-negative int, but got {stage_id!r}")
        self.__dict__["stage_id"], self.__dict__["stage_placement"] = stage_id, placement

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
        return f"GraphModule({self.origin!r}, activation_checkpointing={self.activation_checkpointing})"


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
