"""Adam (PyTorch's formulas, amsgrad, maximize, L2 or decoupled weight decay)."""
import oneflow as flow

from .optimizer import Optimizer, _check_fused, _check_lr, _to_scalar

__all__ = ["Adam"]


def _check_adam_args(lr, betas, eps, weight_decay):
    _check_lr(lr)
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


def _check_tensor_betas(betas, foreach, capturable):
    """Adam's (and AdamW's) rules for betas: both floats or both 1-element tensors (kept as 0-dim tensors)."""
    if not (all(isinstance(b, float) for b in betas[:2]) or all(isinstance(b, flow.Tensor) for b in betas[:2])):
        raise ValueError("betas must be either both floats or both Tensors")
    for i in (0, 1):
        if isinstance(betas[i], flow.Tensor):
            if not capturable and foreach:
                raise ValueError(f"betas[{i}] as a Tensor is not supported for capturable=False and foreach=True")
            if betas[i].numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
    return tuple(map(_to_scalar, betas))


class Adam(Optimizer):
    """Adam, PyTorch's ``torch.optim.Adam``: state ``step`` (0-dim tensor), ``exp_avg``, ``exp_avg_sq``
    (and ``max_exp_avg_sq`` with amsgrad). One fused op (``adam_update_``) updates a whole group."""

    _load_defaults = dict(amsgrad=False, maximize=False, foreach=None, capturable=False, differentiable=False,
                         fused=None, decoupled_weight_decay=False)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        if isinstance(lr, flow.Tensor) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
        _check_adam_args(lr, betas, eps, weight_decay)
        betas = _check_tensor_betas(betas, foreach, capturable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, foreach=foreach, capturable=capturable, differentiable=differentiable,
                        fused=fused, decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)

    @flow.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step."""
        loss = self._closure_loss(closure)
        for index, group in enumerate(self.param_groups):
            amsgrad = group["amsgrad"]
            lists = pack_moments(self, group, amsgrad)
            beta1, beta2 = group["betas"]
            self._run("adam_update_", lists, lr=self._lr_tensor(index, group), beta1=beta1, beta2=beta2,
                      eps=group["eps"], weight_decay=group["weight_decay"], amsgrad=amsgrad, maximize=group["maximize"],
                      decoupled_weight_decay=group["decoupled_weight_decay"])
        return loss


def pack_moments(optimizer, group, amsgrad):
    """The tensor lists of Adam-style update ops: params, grads, exp_avgs, exp_avg_sqs, steps, max_exp_avg_sqs
    (empty without amsgrad), creating the state on first use."""
    extra = ("max_exp_avg_sq",) if amsgrad else ()

    def init(p, g):
        return {"step": optimizer._new_step(group.get("fused")),
                **{k: flow.zeros_like(p) for k in ("exp_avg", "exp_avg_sq") + extra}}

    return optimizer._pack_state(group, ("exp_avg", "exp_avg_sq", "step", extra[0] if extra else None), init)
