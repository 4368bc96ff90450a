"""The callable ``flow.compile`` returns with the graph backend: each call runs compiled plans, as one autograd
node where autograd must see it.

Per input signature (structure, shapes, dtypes, devices, non-tensor values, which inputs require grad, grad
mode and the module's ``training`` flag) the region is traced and compiled once (:mod:`oneflow_graph.aot`).
With grad mode on and a grad target (an input or a parameter that requires grad), a call runs the forward plan
inside a custom autograd Function, :class:`CompiledRegionFunction`, whose backward runs the backward plan: the
eager code around the call (a loss, ``loss.backward()``, an optimizer) works as with the eager module, and each
call keeps its own saved values, freed by the backward unless ``retain_graph=True``. Without a grad target
(``no_grad``, ``inference_mode``, frozen parameters) a call runs the inference plan alone.
"""
import warnings

import oneflow as flow
from oneflow._dispatch import current_modes

from .aot import compile_region
from .errors import GraphTraceError
from .executor import flat_tensors
from .structure import leaves, map_leaves, signature
from .tracer import TraceMode

_DOUBLE_BACKWARD = (
    "a flow.compile'd region was differentiated with create_graph=True: its backward runs a compiled plan whose "
    "results have no autograd history, so double backward through it is not supported; compute higher-order "
    "gradients with the eager model (or wrap the region with flow.compiler.disable)")


class CompiledRegionFunction(flow.autograd.Function):
    """One call of a compiled region as one autograd node: ``forward`` runs the forward plan, ``backward`` the
    backward plan on what that call saved."""

    @staticmethod
    def forward(ctx, region, num_inputs, *tensors):
        flat = tensors[:num_inputs]
        outputs, saved = region.forward.run(list(flat))
        out_tensors = [x for x in leaves(outputs) if isinstance(x, flow.Tensor)]
        ctx.region = region
        ctx.save_for_backward(*[flat[i] for i in region.saved_inputs], *saved)
        ctx.mark_non_differentiable(*[t for t, d in zip(out_tensors, region.differentiable) if not d])
        return tuple(out_tensors)

    @staticmethod
    def backward(ctx, *grad_outputs):
        if flow.is_grad_enabled():
            raise RuntimeError(_DOUBLE_BACKWARD)
        region = ctx.region
        saved = list(ctx.saved_tensors)
        gos = [g for g, d in zip(grad_outputs, region.differentiable) if d]
        grads = region.backward.run(saved + gos)
        n_in = len(ctx.needs_input_grad) - 2 - len(region.target_variables)
        per_input = [None] * n_in
        for k, i in enumerate(region.target_inputs):
            per_input[i] = grads[k]
        return (None, None, *per_input, *grads[len(region.target_inputs):])


class CompiledCallable:
    """``model`` (an ``nn.Module`` or a function) compiled with the graph backend: see the module docstring.

    Args:
        model: what to compile.
        name (str): the name of its graphs (in errors and printed IR).
    """

    def __init__(self, model, name=None):
        self.model = model
        owner = model if isinstance(model, flow.nn.Module) else getattr(model, "__self__", None)
        self.module = owner if isinstance(owner, flow.nn.Module) else None
        self.name = name or f"compiled_{type(self.module).__name__ if self.module is not None else _fn_name(model)}"
        self.cache = {}
        self.compile_count = 0
        self.last = None

    def _key(self, args, kwargs, grad):
        flat = flat_tensors(args, kwargs)
        req = tuple(t.requires_grad for t in flat) if grad else ()
        training = self.module.training if self.module is not None else None
        return signature((args, kwargs)), grad, req, training

    def __call__(self, *args, **kwargs):
        if any(isinstance(m, TraceMode) for m in current_modes()):
            # inside another graph's trace: the region's ops become part of that graph
            return self.model(*args, **kwargs)
        grad = flow.is_grad_enabled()
        key = self._key(args, kwargs, grad)
        region = self.cache.get(key)
        if region is _EAGER:
            return self.model(*args, **kwargs)
        if region is None or not region.still_valid():
            try:
                region = self.cache[key] = self._compile(args, kwargs, grad)
            except GraphTraceError as e:
                # as torch.compile falls back where it cannot capture a graph: this signature runs eagerly
                warnings.warn(f"{self.name}: cannot compile this call, it runs eagerly ({e})", stacklevel=2)
                self.cache[key] = _EAGER
                return self.model(*args, **kwargs)
        self.last = region
        flat = flat_tensors(args, kwargs)
        if region.backward is None:
            outputs, _ = region.forward.run(flat)
            return outputs
        outs = iter(CompiledRegionFunction.apply(region, len(flat), *flat, *region.target_variables))
        structure = region.ir_forward.outputs[0]
        from .ir import Value

        return map_leaves(structure, lambda x: next(outs) if isinstance(x, Value) else x)

    def _compile(self, args, kwargs, grad):
        names = {}
        if self.module is not None:
            for n, t in self.module.named_parameters(remove_duplicate=False):
                names.setdefault(id(t), n)
            for n, t in self.module.named_buffers(remove_duplicate=False):
                names.setdefault(id(t), n)
        region = compile_region(self.model, args, kwargs, name=self.name, names=names, grad=grad)
        self.compile_count += 1
        return region


_EAGER = object()  # the cache's mark of a signature that could not be traced


def _fn_name(fn):
    return getattr(fn, "__name__", type(fn).__name__).strip("<>")
