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

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("fused", None)
            group.setdefault("decoupled_weight_decay", False)
            for p in group["params"]:
                self._ensure_step_tensor(self.state.get(p, {}))

    @flow.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            amsgrad = group["amsgrad"]
            packed = []
            for p, g in self._grads_of(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = self._new_step()
                    state["exp_avg"] = flow.zeros_like(p)
                    state["exp_avg_sq"] = flow.zeros_like(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = flow.zeros_like(p)
                packed += (p, g, state["exp_avg"], state["exp_avg_sq"], state["step"])
                if amsgrad:
                    packed.append(state["max_exp_avg_sq"])
            beta1, beta2 = group["betas"]
            self._run("adam_update_", packed, lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                      weight_decay=group["weight_decay"], amsgrad=amsgrad, maximize=group["maximize"],
                      decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss
