"""compile_from_torch: a PyTorch module converted once, then called with torch or oneflow tensors."""
import warnings

import oneflow as flow
from oneflow import _plugins
from oneflow.utils.tensor import from_torch, to_torch

from ._convert import Converter, torch_lib

_OPTIONS = {"debug": int, "size": int, "dynamic": bool}


class CompiledModule:
    """What :func:`compile_from_torch` returns: the oneflow twin of a PyTorch module (``.oneflow_module``,
    sharing the torch module's parameter and buffer memory) and a callable over it.

    Called with torch tensors it gives torch tensors (inference: no autograd crosses between the frameworks);
    called with oneflow tensors it gives oneflow tensors and records oneflow autograd, so the twin can be trained
    on oneflow (its in-place parameter updates are seen by the torch module, and the torch module's by it).
    """

    def __init__(self, torch_module, oneflow_module, graph):
        self.torch_module = torch_module
        self.oneflow_module = oneflow_module
        self._run = graph if graph is not None else oneflow_module
        self.uses_graph = graph is not None

    def __call__(self, *args, **kwargs):
        torch = torch_lib()
        if _any_tensor(torch.Tensor, (args, kwargs)):
            args, kwargs = _map((args, kwargs), torch.Tensor, from_torch)
            with flow.no_grad():
                out = self._run(*args, **kwargs)
            return _map(out, flow.Tensor, to_torch)
        return self._run(*args, **kwargs)

    def parameters(self, recurse=True):
        """The oneflow module's parameters (the torch module's memory), for a oneflow optimizer."""
        return self.oneflow_module.parameters(recurse)

    def train(self, mode=True):
        self.oneflow_module.train(mode)
        self.torch_module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def __repr__(self):
        return f"CompiledModule(graph={self.uses_graph}, {self.oneflow_module!r})"


def compile_from_torch(torch_module, *, use_graph=True, options=None):
    r"""Runs an existing PyTorch module on oneflow's kernels, sharing its parameters' memory.

    Standard ``torch.nn`` layers (Linear, Conv, BatchNorm, LayerNorm, Embedding, RNNs, activations, Dropout,
    the containers, ...) become the oneflow layers of the same name; a module class of your own becomes a twin
    class whose methods (``forward`` included) run over ``torch`` names resolved as ``oneflow.mock_torch``
    resolves them. Parameters and buffers are shared through DLPack: an update on either side is seen by the
    other (in-place updates such as optimizer steps; rebinding ``param.data`` to a new tensor breaks the link).

    Args:
        torch_module (torch.nn.Module): the module (on the CPU).
        use_graph (bool): run it as compiled static graphs (``flow.compile`` with flow-graph's backend: one
            per input signature and train/eval mode, and ``loss.backward()`` after a call runs the compiled
            backward). flow-graph provides graphs; without it the module runs eagerly, with a warning.
        options (dict, optional): graph options: ``debug`` (int: > 0 prints the IR of each compiled graph),
            ``size`` and ``dynamic`` (int, bool: accepted for OneFlow's signature; every input signature
            keeps its graph).

    Returns:
        CompiledModule: called with torch tensors, it returns torch tensors; with oneflow tensors, oneflow ones.
    """
    torch = torch_lib()
    if not isinstance(torch_module, torch.nn.Module):
        raise TypeError(f"compile_from_torch: expected a torch.nn.Module, got {type(torch_module).__name__}")
    options = {} if options is None else options
    if not isinstance(options, dict):
        raise TypeError(f"compile_from_torch: options must be a dict, got {type(options).__name__}")
    for k, v in options.items():
        if k not in _OPTIONS:
            raise ValueError(f"compile_from_torch: unknown option {k!r}; the options are {sorted(_OPTIONS)}")
        if not isinstance(v, _OPTIONS[k]):
            raise TypeError(f"compile_from_torch: option {k!r} must be {_OPTIONS[k].__name__}, got "
                            f"{type(v).__name__}")
    oneflow_module = Converter().module(torch_module)
    graph = _graph(oneflow_module, options) if use_graph else None
    return CompiledModule(torch_module, oneflow_module, graph)


def _graph(module, options):
    # flow.compile's graph backend, not an nn.Graph subclass: the module keeps its eager semantics around the
    # compiled plans (train()/eval() pick another plan, loss.backward() after a call runs the compiled backward)
    backend = _plugins.compile_backend("graph")
    if backend is None:
        warnings.warn("compile_from_torch: use_graph=True needs the flow-graph package, which is not installed; "
                      "the module runs eagerly (install flow-graph, or pass use_graph=False)", RuntimeWarning,
                      stacklevel=3)
        return None
    compiled = backend(module, None)  # the backend protocol: (model, example_inputs) -> callable
    return _Debugged(compiled) if options.get("debug") else compiled


class _Debugged:
    """``options={"debug": n}``, n > 0: prints the IR of each plan compiled for a new input signature."""

    def __init__(self, compiled):
        self.compiled = compiled

    def __call__(self, *args, **kwargs):
        count = self.compiled.compile_count
        out = self.compiled(*args, **kwargs)
        region = self.compiled.last
        if self.compiled.compile_count != count and region is not None:
            for ir in (region.ir_forward, region.ir_backward):
                if ir is not None:
                    print(ir)
        return out

    def __getattr__(self, name):
        return getattr(self.compiled, name)


def _any_tensor(cls, obj):
    if isinstance(obj, cls):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_any_tensor(cls, x) for x in obj)
    if isinstance(obj, dict):
        return any(_any_tensor(cls, x) for x in obj.values())
    return False


def _map(obj, cls, fn):
    if isinstance(obj, cls):
        return fn(obj)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # named tuples keep their type
        return type(obj)(*(_map(x, cls, fn) for x in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_map(x, cls, fn) for x in obj)
    if isinstance(obj, dict):
        return {k: _map(x, cls, fn) for k, x in obj.items()}
    return obj
