"""``oneflow.amp.StaticGradScaler``: a fixed loss scale, as OneFlow's.

OneFlow's static loss scaling multiplies the loss by a constant and divides the gradients by it before the
update; unlike :class:`GradScaler` it never checks for inf/NaN, never skips a step and never changes the scale.
It serves models whose gradient range is known (a fixed power of two keeps the division exact), where the
dynamic scaler's per-step finiteness check and host synchronisation are overhead.
"""
from collections import defaultdict

from .grad_scaler import GradScaler, _refresh_per_optimizer_state

__all__ = ["StaticGradScaler"]


class StaticGradScaler(GradScaler):
    r"""Scales the loss by a constant ``scale_factor`` and unscales the gradients by it before each step.

    Works in eager code with :class:`GradScaler`'s methods (``scale``, ``unscale_``, ``step``, ``update``,
    ``get_scale``) and in ``nn.Graph`` through ``graph.set_grad_scaler``. No step is ever skipped: gradients
    holding an inf or NaN reach the optimizer, as in OneFlow.

    Args:
        scale_factor (float): the loss scale, > 0.

    Example::

        >>> scaler = oneflow.amp.StaticGradScaler(1024.0)
        >>> scaler.scale(loss).backward()
        >>> scaler.step(optimizer)
        >>> scaler.update()
    """

    def __init__(self, scale_factor):
        if isinstance(scale_factor, bool) or not isinstance(scale_factor, (int, float)):
            raise TypeError(f"StaticGradScaler(): scale_factor must be a number, but got "
                            f"{type(scale_factor).__name__}")
        if not scale_factor > 0:
            raise ValueError(f"StaticGradScaler(): scale_factor must be > 0, but got {scale_factor}")
        # growth/backoff factors of 1: the base class's update never changes the scale
        super().__init__("cpu", init_scale=float(scale_factor), growth_factor=2.0, backoff_factor=0.5,
                         growth_interval=1)
        self._growth_factor = 1.0
        self._backoff_factor = 1.0

    _dynamic = False  # the scale never changes and no step is skipped (nn.Graph reads this)

    def _maybe_opt_step(self, optimizer, state, *args, **kwargs):
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale=None):
        """Ends the iteration; the scale stays. ``new_scale`` is refused: a static scale does not change."""
        if new_scale is not None:
            raise RuntimeError("StaticGradScaler.update(): the scale of a static scaler is fixed; use "
                               "oneflow.amp.GradScaler for a scale that changes")
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def state_dict(self):
        """``{'scale'}``."""
        return {"scale": self.get_scale()}

    def load_state_dict(self, state_dict):
        if "scale" not in state_dict:
            raise RuntimeError("StaticGradScaler.load_state_dict(): the state dict has no 'scale'")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(self._init_scale)
