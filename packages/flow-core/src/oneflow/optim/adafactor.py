"""Adafactor (PyTorch's ``torch.optim.Adafactor``, Shazeer & Stern 2018 as PyTorch formulates it)."""
import oneflow as flow

from .optimizer import Optimizer, _check_lr

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor: an adaptive method whose second-moment estimate of a matrix-shaped parameter is factored into
    per-row and per-column running means of the squared gradient (over the last two dims), so its state is
    O(rows + columns) instead of O(rows x columns); vectors keep a full estimate. Steps are scaled by the
    parameter's RMS (at least ``eps[1]``), by ``min(lr, 1 / sqrt(step))``, and clipped to an update RMS of ``d``.

    State per parameter: ``step``, and ``row_var`` and ``col_var`` (dims >= 2) or ``variance`` (vectors), as in
    PyTorch. One fused op per group (``adafactor_update_``).

    Args:
        params (iterable): parameters or parameter groups.
        lr (float or Tensor): the relative step size's ceiling (default 1e-2).
        beta2_decay (float): the second moment's decay exponent: beta2 at step t is ``1 - t ** beta2_decay``
            (default -0.8; must be <= 0).
        eps (tuple): ``(eps1, eps2)``: the floor of the second-moment estimate (None: the dtype's machine
            epsilon) and of the parameter's RMS in the step size (default ``(None, 1e-3)``).
        d (float): the clipping threshold of the update's RMS (default 1.0; must be >= 1).
        weight_decay (float): decoupled weight decay, ``param *= 1 - lr * weight_decay`` (default 0).
        foreach (bool, optional): accepted for PyTorch compatibility (every update is one fused op).
        maximize (bool): maximize the objective instead of minimizing it.
    """

    _load_defaults = dict(foreach=None, maximize=False)

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)
        super().__init__(params, defaults)

    @staticmethod
    def _init_state(state, grad):
        state["step"] = Optimizer._new_step()
        if grad.dim() > 1:
            state["row_var"] = grad.new_zeros(list(grad.shape[:-1]) + [1])
            state["col_var"] = grad.new_zeros(list(grad.shape[:-2]) + [1, grad.shape[-1]])
        else:
            state["variance"] = flow.zeros_like(grad)

    @flow.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step."""
        loss = self._closure_loss(closure)
        for index, group in enumerate(self.param_groups):
            lists = [[], [], [], [], []]  # params, grads, row_vars, col_vars, steps
            for p, g in self._grads_of(group):
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                state = self.state[p]
                if len(state) == 0:
                    self._init_state(state, g)
                if g.dim() > 1:
                    entry = (p, g, state["row_var"], state["col_var"], state["step"])
                else:  # a vector's full estimate; the unused column factor is an empty tensor
                    entry = (p, g, state["variance"], p.new_empty(0), state["step"])
                for lst, t in zip(lists, entry):
                    lst.append(t)
            eps1, eps2 = group["eps"]
            self._run("adafactor_update_", lists, lr=self._lr_tensor(index, group), beta2_decay=group["beta2_decay"],
                      eps1=eps1, eps2=eps2, d=group["d"], weight_decay=group["weight_decay"],
                      maximize=group["maximize"])
        return loss
