"""``oneflow.amp.GradScaler``: dynamic loss scaling, with PyTorch's semantics.

The loss is multiplied by a scale before backward so that small low-precision gradients do not flush to
zero; ``unscale_`` divides the gradients back (recording whether any is inf/NaN), ``step`` skips the
optimizer step when one was, and ``update`` halves the scale after such a step or doubles it after
``growth_interval`` clean steps.
"""
import warnings
from collections import abc, defaultdict
from enum import Enum

import numpy as np

from .. import _C

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _flow():
    import oneflow

    return oneflow


def _non_finite_check_and_unscale_(grads, found_inf, inv_scale):
    """Multiply every grad by ``inv_scale`` in place; set ``found_inf`` to 1 if any holds an inf or NaN."""
    flow = _flow()
    inv = float(inv_scale.item())
    if all(type(g) is flow.Tensor and g.device.type == "cpu" for g in grads):
        if _C._amp_non_finite_check_and_unscale_(grads, inv):  # one fused pass per gradient
            found_inf.fill_(1.0)
        return
    bad = False  # tensor subclasses (e.g. global tensors): through their own op handling
    for g in grads:
        if not bad and not bool(flow.isfinite(g).all()):
            bad = True
        if inv != 1.0:
            g.mul_(inv)
    if bad:
        found_inf.fill_(1.0)


def _update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """PyTorch's _amp_update_scale_: back off after an overflow, grow after growth_interval clean steps."""
    if float(found_inf.item()) > 0:
        scale.mul_(backoff_factor)
        growth_tracker.fill_(0)
        return
    successful = int(growth_tracker.item()) + 1
    if successful == growth_interval:
        # the product is taken in the scale's float32, so a scale that would overflow float32 stays put
        with np.errstate(over="ignore"):
            new_scale = np.float32(scale.item()) * np.float32(growth_factor)
        if np.isfinite(new_scale):
            scale.fill_(float(new_scale))
        growth_tracker.fill_(0)
    else:
        growth_tracker.fill_(successful)


class GradScaler:
    r"""Scales the loss to keep low-precision gradients representable, and unscales them before the step.

    Args:
        device (str): device of the scale tensor. Default: ``'cpu'`` (PyTorch defaults to ``'cuda'``; flow's
            core runs on the CPU). ``'cuda'`` without a CUDA build disables the scaler with a warning.
        init_scale (float): initial scale factor. Default: ``2.**16``.
        growth_factor (float): factor the scale grows by after ``growth_interval`` steps without inf/NaN.
        backoff_factor (float): factor the scale shrinks by after a step with inf/NaN gradients.
        growth_interval (int): number of consecutive clean steps before the scale grows.
        enabled (bool): if False, every method is a no-op (``scale`` returns its input).

    Example::

        >>> scaler = oneflow.amp.GradScaler("cpu")
        >>> with oneflow.autocast("cpu"):
        ...     loss = loss_fn(model(x), y)
        >>> scaler.scale(loss).backward()
        >>> scaler.step(optimizer)
        >>> scaler.update()
    """

    _dynamic = True  # the scale adapts and inf/NaN steps are skipped (StaticGradScaler: neither)

    def __init__(self, device="cpu", init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if self._device == "cuda" and enabled and not _C.cuda_is_built():
            warnings.warn("oneflow.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        flow = _flow()
        self._scale = flow.full((), self._init_scale, dtype=flow.float32, device=dev)
        self._growth_tracker = flow.full((), self._init_growth_tracker, dtype=flow.int32, device=dev)

    def scale(self, outputs):
        """Multiply ``outputs`` (a tensor or a nested list/tuple/iterable of tensors) by the scale."""
        if not self._enabled:
            return outputs
        flow = _flow()

        def apply_scale(val):
            if isinstance(val, flow.Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                return val * self._scale
            if isinstance(val, abc.Iterable):
                it = map(apply_scale, val)
                if isinstance(val, (list, tuple)):
                    return type(val)(it)
                return it
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        flow = _flow()
        per_device_and_dtype = defaultdict(lambda: defaultdict(list))
        with flow.no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype == flow.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    g = param.grad
                    per_device_and_dtype[g.device][g.dtype].append(g)
            found = {}
            for device, per_dtype in per_device_and_dtype.items():
                found[device] = found_inf if not found else flow.zeros_like(found_inf)
                for grads in per_dtype.values():
                    _non_finite_check_and_unscale_(grads, found[device], inv_scale)
        return found

    def unscale_(self, optimizer):
        """Divide ``optimizer``'s gradients by the scale in place (call before clipping them); at most once
        per ``update()``."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        elif state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        flow = _flow()
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = flow.full((), 0.0, dtype=flow.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def _check_inf_per_device(self, optimizer):
        """Record, without unscaling (the inverse scale is 1), whether ``optimizer``'s gradients hold an inf or
        NaN; returns ``{device: found_inf}``."""
        flow = _flow()
        _scale, _ = self._check_scale_growth_tracker("_check_inf_per_device")
        dummy_inv_scale = flow.full((), 1.0, dtype=flow.float32, device=_scale.device)
        found_inf = flow.full((), 0.0, dtype=flow.float32, device=_scale.device)
        self._per_optimizer_states[id(optimizer)]["found_inf_per_device"] = self._unscale_grads_(
            optimizer, dummy_inv_scale, found_inf, True)
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _found_inf_per_device(self, optimizer):
        """``{device: found_inf}`` recorded for ``optimizer`` by its last unscale or inf check."""
        return self._per_optimizer_states[id(optimizer)]["found_inf_per_device"]

    def _maybe_opt_step(self, optimizer, state, *args, **kwargs):
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscale the gradients (unless ``unscale_`` was called) and run ``optimizer.step(*args, **kwargs)``
        unless they hold infs or NaNs. Returns what ``optimizer.step`` returned, or None when skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Update the scale: set it to ``new_scale`` if given, else back off after a skipped step or grow it
        after ``growth_interval`` clean ones."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        flow = _flow()
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element oneflow.FloatTensor with "
                          "requires_grad=False.")
                if not isinstance(new_scale, flow.Tensor) or new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                self._scale.copy_(new_scale.reshape(()))
        else:
            found_infs = [f for state in self._per_optimizer_states.values()
                          for f in state["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            combined = found_infs[0]
            for f in found_infs[1:]:
                combined = combined + f
            _update_scale_(_scale, _growth_tracker, combined, self._growth_factor, self._backoff_factor,
                           self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """``{'scale', 'growth_factor', 'backoff_factor', 'growth_interval', '_growth_tracker'}`` ({} when
        disabled)."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)
