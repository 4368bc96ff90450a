"""Adam (PyTorch's formulas, amsgrad, maximize, L2 or decoupled weight decay)."""
import oneflow as flow

from .optimizer import Optimizer

__all__ = ["Adam"]


def _check_adam_args(lr, betas, eps, weight_decay):
    if not 0.0 <= lr:
        raise ValueError(f"Invalid learning rate: {lr}")
    if not 0.0 <= eps:
        raise ValueError(f"Invalid epsilon value: {eps}")
    if not 0.0 <= betas[0] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
    if not 0.0 <= betas[1] < 1.0:
        raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
    if not 0.0 <= weight_decay:
        raise ValueError(f"Invalid weight_decay value: {weight_decay}")


class Adam(Optimizer):
    """Adam, PyTorch's ``torch.optim.Adam``: state ``step`` (0-dim tensor), ``exp_avg``, ``exp_avg_sq``
    (and ``max_exp_avg_sq`` with amsgrad). One fused op (``adam_update_``) updates a whole group."""

    _load_defaults = dict(amsgrad=False, maximize=False, foreach=None, capturable=False, differentiable=False,
                         fused=None, decoupled_weight_decay=False)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    @flow.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            amsgrad = group["amsgrad"]
            packed = pack_moments(self, group, amsgrad)
            beta1, beta2 = group["betas"]
            self._run("adam_update_", packed, lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                      weight_decay=group["weight_decay"], amsgrad=amsgrad, maximize=group["maximize"],
                      decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


def pack_moments(optimizer, group, amsgrad):
    """The flat tensor list of Adam-style update ops: per parameter with a grad, [param, grad, exp_avg,
    exp_avg_sq, step] (+ max_exp_avg_sq with amsgrad), creating the state on first use."""
    extra = ("max_exp_avg_sq",) if amsgrad else ()

    def init(p, g):
        return {"step": optimizer._new_step(), **{k: flow.zeros_like(p) for k in ("exp_avg", "exp_avg_sq") + extra}}

    return optimizer._pack_state(group, ("exp_avg", "exp_avg_sq", "step") + extra, init)
