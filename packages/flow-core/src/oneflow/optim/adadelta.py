"""Adadelta (PyTorch's formulas: rho, eps, weight_decay, maximize)."""
import oneflow as flow

from .optimizer import Optimizer, _check_lr

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta, PyTorch's ``torch.optim.Adadelta``: state ``step``, ``square_avg``, ``acc_delta``.
    One fused op per group (``adadelta_update_``)."""

    _load_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    @flow.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step."""
        def pack(group):
            return self._pack_state(group, ("square_avg", "acc_delta", "step"), lambda p, g: {
                "step": self._new_step(), "square_avg": flow.zeros_like(p), "acc_delta": flow.zeros_like(p)})

        return self._step_groups(closure, "adadelta_update_", pack, lambda group: {
            k: group[k] for k in ("rho", "eps", "weight_decay", "maximize")})
