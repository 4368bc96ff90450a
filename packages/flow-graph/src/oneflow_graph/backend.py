"""``flow.compile(model)`` with the graph backend: the ``compile_backend.graph`` entry point (also registered as
``compile_backend.inductor``, the default backend's name, so that ``flow.compile(model)`` and
``model.compile()`` use it when flow-graph is installed)."""
from .compiled import CompiledCallable


def graph_backend(model, example_inputs):
    """``backend(model, example_inputs) -> callable``: ``model`` (an ``nn.Module`` or a function) as a
    :class:`~oneflow_graph.compiled.CompiledCallable`.

    Each input signature is traced and compiled once. Calls that autograd must see (grad mode on and an input
    or a parameter that requires grad) run the compiled forward as one autograd node whose backward runs the
    compiled backward, so ``loss.backward()`` outside the call fills the gradients as with the eager model;
    other calls run the compiled inference graph.
    """
    return CompiledCallable(model)
