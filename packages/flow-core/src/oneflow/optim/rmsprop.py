"""RMSprop (PyTorch's formulas: alpha, eps, weight_decay, momentum, centered, maximize)."""
import oneflow as flow

from .optimizer import Optimizer, _check_lr

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop, PyTorch's ``torch.optim.RMSprop``: state ``step``, ``square_avg`` (+ ``momentum_buffer``
    when momentum > 0, + ``grad_avg`` when centered). One fused op per group (``rmsprop_update_``)."""

    _load_defaults = dict(momentum=0, centered=False, foreach=None, maximize=False, differentiable=False,
                         capturable=False)

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    @flow.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step."""
        def pack(group):
            momentum, centered = group["momentum"], group["centered"]

            def init(p, g):
                state = {"step": self._new_step(), "square_avg": flow.zeros_like(p)}
                if momentum > 0:
                    state["momentum_buffer"] = flow.zeros_like(p)
                if centered:
                    state["grad_avg"] = flow.zeros_like(p)
                return state

            keys = ("square_avg", "step", "momentum_buffer" if momentum > 0 else None, "grad_avg" if centered else None)
            return self._pack_state(group, keys, init)

        return self._step_groups(closure, "rmsprop_update_", pack, lambda group: {
            k: group[k] for k in ("alpha", "eps", "weight_decay", "momentum", "centered", "maximize")})
