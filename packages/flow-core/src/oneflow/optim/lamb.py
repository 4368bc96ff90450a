"""LAMB (layer-wise adaptive moments), OneFlow's ``flow.optim.LAMB`` with apex's update rule."""
import oneflow as flow

from .adam import _check_adam_args, pack_moments
from .optimizer import Optimizer

__all__ = ["LAMB"]


class LAMB(Optimizer):
    """LAMB: Adam moments, then a per-parameter trust ratio.

    ``u = m_hat / (sqrt(v_hat) + eps)`` (``m_hat, v_hat`` bias-corrected when ``do_bias_correction``);
    with ``adam_w_mode`` the decay is decoupled, ``u += weight_decay * w``, otherwise it is L2 added to the
    gradient before the moments. Then ``w -= lr * (||w|| / ||u||) * u`` (ratio 1 when either norm is 0).
    State: ``step``, ``exp_avg``, ``exp_avg_sq`` (+ ``max_exp_avg_sq`` with amsgrad). One fused op per group.
    ``contiguous_params`` (OneFlow's option for packing parameters into one buffer) is accepted and kept in
    the defaults; the fused op already updates a whole group in one call.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, adam_w_mode=True,
                 do_bias_correction=True, amsgrad=False, contiguous_params=False):
        _check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, adam_w_mode=adam_w_mode,
                        do_bias_correction=do_bias_correction, amsgrad=amsgrad,
                        contiguous_params=contiguous_params)
        super().__init__(params, defaults)

    @flow.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step."""
        loss = self._closure_loss(closure)
        for index, group in enumerate(self.param_groups):
            amsgrad = group["amsgrad"]
            lists = pack_moments(self, group, amsgrad)
            beta1, beta2 = group["betas"]
            self._run("lamb_update_", lists, lr=self._lr_tensor(index, group), beta1=beta1, beta2=beta2,
                      eps=group["eps"], weight_decay=group["weight_decay"], adam_w_mode=group["adam_w_mode"],
                      do_bias_correction=group["do_bias_correction"], amsgrad=amsgrad)
        return loss
