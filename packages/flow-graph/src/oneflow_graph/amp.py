"""Mixed precision in a graph (``graph.config.enable_amp``, ``Graph.set_grad_scaler``).

``build`` is traced inside ``oneflow.autocast``: the core's dispatcher inserts the casts above autograd, so the
IR holds exactly the casts (and the cast-cached weights) eager autocast execution issues, backward included,
and stays bitwise equal to it. A cast-insertion pass over the IR would have to re-implement the core's op
lists and promotion rules and could drift from them; tracing under the policy the core applies cannot.
The optimizer steps run outside the autocast region, as in eager code.
"""
import oneflow as flow

_AMP_DTYPES = (flow.float16, flow.bfloat16)


def check_dtype(dtype):
    if dtype not in _AMP_DTYPES:
        raise ValueError(f"enable_amp(): dtype must be oneflow.float16 or oneflow.bfloat16, but got {dtype}")
    return dtype


def autocast_build(build, dtype):
    """``build`` run inside an autocast region of ``dtype`` (the core's autocast is for CPU tensors)."""

    def run(*args, **kwargs):
        with flow.autocast("cpu", dtype=dtype):
            return build(*args, **kwargs)

    return run


def check_scaler(scaler):
    if not isinstance(scaler, flow.amp.GradScaler):
        raise TypeError(f"set_grad_scaler() expects an oneflow.amp.GradScaler or StaticGradScaler, but got "
                        f"{type(scaler).__name__}")
    return scaler


def prepare_scaler(scaler):
    """Makes the scaler's scale and growth tracker (eagerly, so the trace binds them as variables); returns
    ``{id(tensor): state name}``."""
    if scaler._scale is None:
        scaler._lazy_init_scale_growth_tracker(flow.device("cpu"))
    return {id(scaler._scale): "grad_scaler.scale", id(scaler._growth_tracker): "grad_scaler.growth_tracker"}


class ScaledStep:
    """A grad scaler's work inside one traced training step, with eager GradScaler's semantics: the loss is
    multiplied by the scale before backward; each optimizer's gradients are unscaled (by the float32 inverse of
    the scale) and checked for inf/NaN before clipping; its step is undone when one was found (every tensor the
    step wrote is selected back from a copy taken before it); then the scale backs off or grows.

    A static plan cannot skip ops, so a skipped step still runs and is then reverted: the values are those of
    eager code, which never ran it. Optimizer state the step creates (the first step's moments) has no value to
    revert to; :meth:`drop_new_state` removes it after a call that skipped, as eager state would not exist."""

    def __init__(self, scaler):
        self.scaler = scaler
        self.found = []  # one bool 0-dim traced tensor per optimizer
        self._snapshots = None

    def transform(self, loss):
        return loss * self.scaler._scale

    def scaled_build(self, build):
        from .tracer import active_mode

        def run(*args, **kwargs):
            mode = active_mode()
            outer = mode.loss_transform
            mode.loss_transform = self.transform if outer is None else (lambda loss: self.transform(outer(loss)))
            try:
                return build(*args, **kwargs)
            finally:
                mode.loss_transform = outer

        return run

    def unscale(self, opt):
        """Unscales ``opt``'s gradients in place and records whether any held an inf or NaN."""
        dynamic = self.scaler._dynamic  # StaticGradScaler: divide only, never skip (OneFlow's static scale)
        with flow.no_grad():
            inv = self.scaler._scale.double().reciprocal().float()
            found = None
            for group in opt.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if p.grad.dtype == flow.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    if dynamic:
                        bad = flow.isfinite(p.grad).all().logical_not()
                        found = bad if found is None else found.logical_or(bad)
                    p.grad.mul_(inv)
            if not dynamic:
                return
            if found is None:
                found = flow.zeros((), dtype=flow.bool)
            self.found.append(found)
            # what the step may write: the parameters it updates and the optimizer state that exists already
            written = [p for g in opt.param_groups for p in g["params"] if p.grad is not None]
            written += [t for s in opt.state.values() for t in s.values() if isinstance(t, flow.Tensor)]
            self._snapshots = [(t, t.detach().clone()) for t in written]

    def revert_if_found(self):
        """After the step of the optimizer last unscaled: every tensor it wrote back to its value before the
        step where an inf/NaN was found."""
        if not self.scaler._dynamic:
            return
        found = self.found[-1]
        with flow.no_grad():
            for t, before in self._snapshots:
                t.copy_(flow.where(found, before, t))
        self._snapshots = None

    def update(self):
        """GradScaler.update(): halve (backoff_factor) the scale after a skipped step, grow it after
        growth_interval clean steps (unless the product overflows float32)."""
        s = self.scaler
        if not s._dynamic:
            self.any_found = None
            return
        scale, tracker = s._scale, s._growth_tracker
        with flow.no_grad():
            found = self.found[0]
            for f in self.found[1:]:
                found = found.logical_or(f)
            successful = tracker + 1
            grow = (successful == s._growth_interval).logical_and(found.logical_not())
            grown = scale * s._growth_factor
            grown = flow.where(flow.isfinite(grown), grown, scale)
            new_scale = flow.where(found, scale * s._backoff_factor, flow.where(grow, grown, scale))
            new_tracker = flow.where(found.logical_or(grow), flow.zeros_like(successful), successful)
            scale.copy_(new_scale)
            tracker.copy_(new_tracker)
        self.any_found = found


def drop_new_state(graph, new_state):
    """After a call whose (first) optimizer step was skipped: the optimizer state that step created goes."""
    for opt, _ in graph._opts:
        for p in list(opt.state):
            state = opt.state[p]
            for key in [k for k in list(state) if (id(state), k) in new_state]:
                del state[key]
            if not state:
                del opt.state[p]
