"""Full backward hooks for Modules: identity autograd Functions around the module's inputs and outputs
capture ``grad_output`` (at the outputs) and ``grad_input`` (at the inputs) and call the hooks."""
import warnings

from ... import _C
from ...autograd.function import Function


def _check_count(returned, expected, what, name):
    """A hook's replacement gradients must match what it was given one for one (PyTorch's error)."""
    got = len(returned) if isinstance(returned, (tuple, list)) else 1
    if got != expected:
        raise RuntimeError(f"{what} returned an invalid number of {name}, got {got}, but expected {expected}")


class _Identity(Function):
    @staticmethod
    def forward(ctx, state, kind, *tensors):
        ctx.state, ctx.kind = state, kind
        ctx.set_materialize_grads(False)  # an output that no loss reached gets None, not zeros, as in torch
        return tuple(_C.ops.view(t, list(t.shape)) if t is not None else None for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        grads = ctx.state.on_grad(ctx.kind, grads)
        return (None, None) + tuple(grads)


class BackwardHookState:
    def __init__(self, module):
        self.module = module
        self.grad_output = None
        self.n_inputs = 0
        self.input_pos = []
        self.n_outputs = 0
        self.output_pos = []
        self.fired = False

    def _split(self, values):
        pos = [i for i, v in enumerate(values) if isinstance(v, _C.TensorBase) and v.requires_grad]
        return pos, [values[i] for i in pos]

    def setup_inputs(self, args):
        pos, ts = self._split(args)
        self.input_pos = pos
        self.n_inputs = len(args)
        if not ts:
            return args
        wrapped = _Identity.apply(self, "input", *ts)
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        out = list(args)
        for i, w in zip(pos, wrapped):
            out[i] = w
        return tuple(out)

    def setup_outputs(self, result):
        # as in torch, only a tensor or a tuple is looked into: other outputs (dicts, lists) get no hooks
        single = isinstance(result, _C.TensorBase)
        values = (result,) if single else result if isinstance(result, tuple) else None
        if values is None:
            warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of Tensors "
                          f"but received {type(result)}")
            return result
        pos, ts = self._split(values)
        if not ts:
            return result
        self.n_outputs, self.output_pos = len(values), pos
        wrapped = _Identity.apply(self, "output", *ts)
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        out = list(values)
        for i, w in zip(pos, wrapped):
            out[i] = w
        if not self.input_pos:
            self.fire_without_inputs = True
        return out[0] if single else type(result)(out)

    def on_grad(self, kind, grads):
        m = self.module
        if kind == "output":
            # one entry per element of the module's output: None for non-tensors and unreached outputs
            full = [None] * self.n_outputs
            for i, g in zip(self.output_pos, grads):
                full[i] = g
            for hook in m._all_backward_pre_hooks():
                r = hook(m, tuple(full))
                if r is not None:
                    _check_count(r, len(full), "Backward pre hook", "grad_output")
                    full = list(r) if isinstance(r, (tuple, list)) else [r]
            self.grad_output = tuple(full)
            if not self.input_pos:  # nothing upstream requires grad: call hooks now with grad_input = None
                if m._all_backward_hooks():
                    warnings.warn("Full backward hook is firing when gradients are computed with respect to module "
                                  "outputs since no inputs require gradients. See the documentation of "
                                  "Module.register_full_backward_hook for more details.")
                for hook in m._all_backward_hooks():
                    hook(m, (None,) * self.n_inputs, self.grad_output)
            return tuple(full[i] for i in self.output_pos)
        if self.grad_output is None:  # no gradient came through the outputs (or they were not hooked)
            return grads
        full = [None] * self.n_inputs
        for i, g in zip(self.input_pos, grads):
            full[i] = g
        for hook in m._all_backward_hooks():
            r = hook(m, tuple(full), self.grad_output)
            if r is not None:
                _check_count(r, len(full), "Backward hook", "grad_input")
                full = list(r)
        return tuple(full[i] for i in self.input_pos)
