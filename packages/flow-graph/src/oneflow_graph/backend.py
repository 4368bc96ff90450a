"""``flow.compile(model, backend="graph")``: run a model or function as an nn.Graph."""
import oneflow as flow

from .graph import Graph
from .structure import leaves


class _CallGraph(Graph):
    def __init__(self, fn):
        super().__init__()
        if isinstance(fn, flow.nn.Module):
            self.model = fn
        else:
            self.__dict__["fn"] = fn

    def build(self, *args, **kwargs):
        fn = self._modules.get("model") or self.__dict__["fn"]
        return fn(*args, **kwargs)


def graph_backend(model, example_inputs):
    """The ``compile_backend.graph`` entry point: ``backend(model, example_inputs) -> callable``.

    Calls made without autograd (``flow.no_grad()``/``inference_mode``, or with no parameter or input that
    requires grad) run as a compiled inference graph. A graph call is not recorded by autograd yet (one
    autograd node for a compiled region is future work), so calls that autograd must see run ``model``
    eagerly: gradients stay correct.
    """
    graph = _CallGraph(model)
    owner = model if isinstance(model, flow.nn.Module) else getattr(model, "__self__", None)
    # a plain function may reach parameters we cannot see: it runs as a graph only with grad mode off
    params = list(owner.parameters()) if isinstance(owner, flow.nn.Module) else None

    def run(*args, **kwargs):
        if flow.is_grad_enabled() and (params is None or any(p.requires_grad for p in params) or any(
                isinstance(x, flow.Tensor) and x.requires_grad for x in leaves((args, kwargs)))):
            return model(*args, **kwargs)
        return graph(*args, **kwargs)

    run.graph = graph
    return run
