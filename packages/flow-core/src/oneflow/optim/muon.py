"""Muon (PyTorch's ``torch.optim.Muon``): momentum SGD with Newton-Schulz-orthogonalised updates."""
import oneflow as flow

from .optimizer import Optimizer, _check_lr

__all__ = ["Muon"]


class Muon(Optimizer):
    """Muon for 2-D parameters: the (Nesterov) momentum of the gradient is orthogonalised by ``ns_steps``
    iterations of the quintic Newton-Schulz map ``X <- a X + (b G + c G^2) X``, ``G = X X^T`` (run in bfloat16,
    as PyTorch runs it), then applied with decoupled weight decay and a learning rate adjusted to the shape.

    Args:
        params (iterable): 2-D parameters or parameter groups (others raise ValueError).
        lr (float or Tensor): learning rate (default 1e-3).
        weight_decay (float): decoupled weight decay, ``param *= 1 - lr * weight_decay`` (default 0.1).
        momentum (float): momentum factor (default 0.95).
        nesterov (bool): Nesterov momentum (default True).
        ns_coefficients (tuple): the iteration's ``(a, b, c)`` (default ``(3.4445, -4.775, 2.0315)``).
        eps (float): floor of the norm the update is divided by before iterating (default 1e-7).
        ns_steps (int): iterations (default 5; must be below 100).
        adjust_lr_fn (str, optional): ``"original"`` (the default: ``lr * sqrt(max(1, rows / cols))``) or
            ``"match_rms_adamw"`` (``0.2 * lr * sqrt(max(rows, cols))``).

    One fused op per group (``muon_update_``); state per parameter: ``momentum_buffer``.
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(3.4445, -4.775, 2.0315), eps=1e-07, ns_steps=5, adjust_lr_fn=None):
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ["original", "match_rms_adamw"]:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                        ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    @flow.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step."""
        loss = self._closure_loss(closure)
        for index, group in enumerate(self.param_groups):
            params, grads, bufs = [], [], []
            for p, g in self._grads_of(group):
                if p.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = flow.zeros_like(g)
                params.append(p)
                grads.append(g)
                bufs.append(state["momentum_buffer"])
            self._run("muon_update_", [params, grads, bufs], lr=self._lr_tensor(index, group),
                      weight_decay=group["weight_decay"],
                      momentum=group["momentum"], nesterov=group["nesterov"],
                      ns_coefficients=list(group["ns_coefficients"]), eps=group["eps"], ns_steps=group["ns_steps"],
                      adjust_lr_fn=group["adjust_lr_fn"] or "")
        return loss
