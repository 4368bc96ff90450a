"""Sparse optimizer rules for OneEmbedding, and the Ftrl optimizer (``flow.one_embedding.Ftrl``).

flow-core's optimizers call ``param._sparse_update(optimizer, group)`` for the embedding's parameter after their
dense step (see ``Optimizer._step_sparse``); :func:`sparse_rule` turns the optimizer and its group options into
the update the C++ store applies to the touched rows, with the dense optimizer's formulas. The step counter is
kept in ``optimizer.state[param]["step"]`` (so ``optimizer.state_dict()`` holds it); bias corrections and Adagrad's
lr decay use it, as PyTorch's SparseAdam does for its one parameter. On one rank the registry op
``one_embedding_sparse_update_`` advances the counter and reads the group's lr tensor itself, so a compiled
``nn.Graph`` step sees both change between calls.
"""
import numbers

import oneflow as flow
from oneflow.optim.optimizer import Optimizer

__all__ = ["Ftrl", "sparse_rule"]

SGD, ADAM, ADAGRAD, FTRL = 0, 1, 2, 3  # the C++ store's numbering


def _float(x):
    return float(x.item()) if isinstance(x, flow.Tensor) else float(x)


def sparse_rule(optimizer, group, step):
    """``(kind, hyper)`` for the C++ store: the update of ``optimizer`` with ``group``'s options at step ``step``
    (1 for the first). Raises TypeError for optimizers without a sparse rule."""
    lr = _float(group["lr"])
    maximize = float(bool(group.get("maximize", False)))
    if isinstance(optimizer, Ftrl):
        return FTRL, [lr, group["weight_decay"], group["lr_power"], group["initial_accumulator_value"],
                      group["lambda1"], group["lambda2"], group["beta"]]
    if isinstance(optimizer, flow.optim.Adam):
        beta1, beta2 = (_float(b) for b in group["betas"])
        return ADAM, [lr, beta1, beta2, group["eps"], group["weight_decay"], float(bool(group["amsgrad"])),
                      maximize, float(bool(group.get("decoupled_weight_decay", False))), float(step)]
    if isinstance(optimizer, flow.optim.SGD):
        if group["momentum"] and group["dampening"]:
            # the dense rule starts a row's buffer at its first gradient undamped; the store cannot tell a row's
            # first update from a later one, so it would start it damped
            raise NotImplementedError("SGD with momentum and dampening != 0 has no sparse update for OneEmbedding "
                                      "parameters (use dampening=0)")
        return SGD, [lr, group["momentum"], group["dampening"], group["weight_decay"],
                     float(bool(group["nesterov"])), maximize]
    if isinstance(optimizer, flow.optim.Adagrad):
        clr = lr / (1 + (step - 1) * group["lr_decay"])
        return ADAGRAD, [clr, group["weight_decay"], group["eps"], maximize, group["initial_accumulator_value"]]
    raise TypeError(f"{type(optimizer).__name__} has no sparse update for OneEmbedding parameters; use "
                    "flow.optim.SGD, flow.optim.Adam, flow.optim.AdamW, flow.optim.Adagrad or "
                    "flow.one_embedding.Ftrl")


def state_columns(kind, hyper):
    """Optimizer state columns per value column (the store's rows need ``1 + this`` times embedding_dim)."""
    if kind == SGD:
        return 1 if hyper[1] != 0 else 0
    if kind == ADAM:
        return 3 if hyper[5] else 2
    return {ADAGRAD: 1, FTRL: 2}[kind]


class Ftrl(Optimizer):
    """FTRL-Proximal (McMahan et al., 2013), OneFlow's ``flow.one_embedding.Ftrl``.

    For each value, with accumulator ``n`` (starting at ``initial_accumulator_value``) and ``z`` (starting at 0)::

        g = grad + weight_decay * w
        n_new = n + g * g
        sigma = (n_new ** -lr_power - n ** -lr_power) / lr
        z = z + g - sigma * w
        w = 0 if |z| <= lambda1 else (sign(z) * lambda1 - z) / ((beta + n_new ** -lr_power) / lr + lambda2)

    Works on dense parameters and, sparsely, on OneEmbedding tables (stores with ``size_factor >= 3``).

    Args:
        params (iterable): parameters or parameter groups.
        lr (float): learning rate (default: 1e-3).
        weight_decay (float): L2 penalty added to the gradient (default: 0).
        lr_power (float): learning-rate power, ``<= 0`` (default: -0.5).
        initial_accumulator_value (float): starting accumulator, ``> 0`` (default: 0.1).
        lambda1 (float): L1 regularisation strength (default: 0).
        lambda2 (float): L2 regularisation strength (default: 0).
        beta (float): the beta of the per-coordinate learning rate (default: 0).
    """

    def __init__(self, params, lr=0.001, weight_decay=0.0, lr_power=-0.5, initial_accumulator_value=0.1,
                 lambda1=0.0, lambda2=0.0, beta=0.0):
        for name, value in (("lr", lr), ("weight_decay", weight_decay), ("lambda1", lambda1),
                            ("lambda2", lambda2), ("beta", beta)):
            if not isinstance(value, numbers.Real) or value < 0:
                raise ValueError(f"Invalid {name} value: {value}")
        if not lr > 0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if lr_power > 0:
            raise ValueError(f"Invalid lr_power value: {lr_power} (must be <= 0)")
        if not initial_accumulator_value > 0:
            raise ValueError(f"Invalid initial_accumulator_value value: {initial_accumulator_value} (must be > 0)")
        defaults = dict(lr=lr, weight_decay=weight_decay, lr_power=lr_power,
                        initial_accumulator_value=initial_accumulator_value, lambda1=lambda1, lambda2=lambda2,
                        beta=beta)
        super().__init__(params, defaults)

    @flow.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step."""
        loss = self._closure_loss(closure)
        for group in self.param_groups:
            lr, p_ = _float(group["lr"]), -group["lr_power"]
            l1, l2, beta, wd = group["lambda1"], group["lambda2"], group["beta"], group["weight_decay"]
            for w, grad in self._grads_of(group):
                state = self.state[w]
                if not state:
                    state["accumulator"] = flow.full_like(w, group["initial_accumulator_value"])
                    state["z"] = flow.zeros_like(w)
                n, z = state["accumulator"], state["z"]
                g = grad + wd * w if wd else grad
                n_new = n + g * g
                pn_new = n_new.pow(p_)
                sigma = (pn_new - n.pow(p_)) / lr
                z.add_(g - sigma * w)
                n.copy_(n_new)
                new_w = (flow.sign(z) * l1 - z) / ((beta + pn_new) / lr + l2)
                w.copy_(flow.where(z.abs() <= l1, flow.zeros_like(w), new_w))
        return loss
