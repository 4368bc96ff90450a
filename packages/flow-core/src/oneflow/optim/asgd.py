"""ASGD: SGD with Polyak-Ruppert averaging of the iterates (PyTorch's ``torch.optim.ASGD``)."""
import oneflow as flow

from .optimizer import Optimizer, _check_lr, _scalar_dtype

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """Averaged SGD, PyTorch's ``torch.optim.ASGD``: state ``step``, ``eta`` (the decaying step size),
    ``mu`` (the averaging weight, 1 until ``t0`` steps) and ``ax`` (the averaged parameters). One fused op
    (``asgd_update_``) updates a whole group."""

    _load_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)
    _capturable_what = "params, mus, etas, and state_steps"
    _scalar_state_keys = ("eta", "mu")

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @flow.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step."""
        def pack(group):
            return self._pack_state(group, ("ax", "step", "eta", "mu"), lambda p, g: {
                "step": self._new_step(), "eta": flow.tensor(float(group["lr"]), dtype=_scalar_dtype()),
                "mu": flow.ones((), dtype=_scalar_dtype()), "ax": flow.zeros_like(p)})

        return self._step_groups(closure, "asgd_update_", pack, lambda group: {
            k: group[k] for k in ("lambd", "alpha", "t0", "weight_decay", "maximize")})
