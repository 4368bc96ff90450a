"""Adagrad (PyTorch's formulas: lr_decay, weight_decay, initial_accumulator_value, eps, maximize)."""
import oneflow as flow

from .optimizer import Optimizer, _check_fused, _check_lr

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad, PyTorch's ``torch.optim.Adagrad``: state ``step`` and ``sum`` (created at construction,
    ``sum`` filled with initial_accumulator_value). One fused op per group (``adagrad_update_``)."""

    _load_defaults = dict(foreach=None, maximize=False, differentiable=False, fused=None)

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = self._new_step(group["fused"])
                state["sum"] = flow.full_like(p, group["initial_accumulator_value"])

    @flow.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step."""
        def pack(group):  # the state is created at construction, or here for a group added later
            return self._pack_state(group, ("sum", "step"), lambda p, g: {
                "step": self._new_step(group["fused"]), "sum": flow.full_like(p, group["initial_accumulator_value"])})

        return self._step_groups(closure, "adagrad_update_", pack, lambda group: {
            k: group[k] for k in ("lr_decay", "weight_decay", "eps", "maximize")})
