"""Adamax, NAdam and RAdam: Adam's relatives with PyTorch's formulas, each one fused op per parameter group."""
import oneflow as flow

from .adam import _check_adam_args
from .optimizer import Optimizer, _scalar_dtype

__all__ = ["Adamax", "NAdam", "RAdam"]

_FLAGS = dict(foreach=None, maximize=False, capturable=False, differentiable=False)


def _moments(optimizer, group, second, extra=None):
    """The lists params, grads, exp_avgs, <second>s, steps (+ the ``extra`` one-element states)."""

    def init(p, g):
        state = {"step": optimizer._new_step()}
        if extra is not None:
            state[extra] = flow.ones((), dtype=_scalar_dtype())
        state.update({"exp_avg": flow.zeros_like(p), second: flow.zeros_like(p)})
        return state

    keys = ("exp_avg", second, "step") + ((extra,) if extra is not None else ())
    return optimizer._pack_state(group, keys, init)


def _attrs(*keys):
    """The update op's options from a group: Adam's common ones, plus ``keys`` as they are."""

    def attrs(group):
        beta1, beta2 = group["betas"]
        return dict(beta1=beta1, beta2=beta2, eps=group["eps"], weight_decay=group["weight_decay"],
                    maximize=group["maximize"], **{k: group[k] for k in keys})

    return attrs


class Adamax(Optimizer):
    """Adamax (Adam with the infinity norm), PyTorch's ``torch.optim.Adamax``: state ``step``, ``exp_avg``,
    ``exp_inf``. One fused op (``adamax_update_``) updates a whole group."""

    _load_defaults = dict(_FLAGS)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @flow.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step."""
        return self._step_groups(closure, "adamax_update_", lambda g: _moments(self, g, "exp_inf"), _attrs())


class NAdam(Optimizer):
    """NAdam (Adam with Nesterov momentum and a momentum-decay schedule), PyTorch's ``torch.optim.NAdam``:
    state ``step``, ``mu_product``, ``exp_avg``, ``exp_avg_sq``. One fused op (``nadam_update_``) per group."""

    _load_defaults = dict(_FLAGS, decoupled_weight_decay=False)
    _capturable_what = "params, mu_products and state_steps"
    _scalar_state_keys = ("mu_product",)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    @flow.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step."""
        return self._step_groups(closure, "nadam_update_",
                                 lambda g: _moments(self, g, "exp_avg_sq", extra="mu_product"),
                                 _attrs("momentum_decay", "decoupled_weight_decay"))


class RAdam(Optimizer):
    """RAdam (Adam with the variance rectified while its estimate is unreliable), PyTorch's
    ``torch.optim.RAdam``: state ``step``, ``exp_avg``, ``exp_avg_sq``. One fused op (``radam_update_``)."""

    _load_defaults = dict(_FLAGS, decoupled_weight_decay=False)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    @flow.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step."""
        return self._step_groups(closure, "radam_update_", lambda g: _moments(self, g, "exp_avg_sq"),
                                 _attrs("decoupled_weight_decay"))
