"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize (PyTorch's formulas)."""
import oneflow as flow

from .optimizer import Optimizer, _check_fused, _check_lr

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent (optionally with momentum), PyTorch's ``torch.optim.SGD``.

    The whole group is updated by one fused op (``sgd_update_``). The momentum buffer starts as the first
    (weight-decayed) gradient, then ``buf = momentum * buf + (1 - dampening) * grad``.
    """

    _load_defaults = dict(nesterov=False, maximize=False, foreach=None, differentiable=False, fused=None)

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _check_lr(lr)
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)
        _check_fused(fused, foreach, differentiable)

    @flow.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step."""
        loss = self._closure_loss(closure)
        for index, group in enumerate(self.param_groups):
            momentum = group["momentum"]
            params, grads, bufs, fresh = [], [], [], []
            for i, (p, g) in enumerate(self._grads_of(group)):
                params.append(p)
                grads.append(g)
                if momentum != 0:
                    state = self.state[p]
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = flow.empty_like(p)
                        state["momentum_buffer"] = buf
                        self._state_created(p, state)
                        buf = state["momentum_buffer"]
                        fresh.append(i)
                    bufs.append(buf)
            self._run("sgd_update_", [params, grads, bufs], lr=self._lr_tensor(index, group), momentum=momentum,
                      dampening=group["dampening"], weight_decay=group["weight_decay"], nesterov=group["nesterov"],
                      maximize=group["maximize"], fresh=fresh)
        return loss
