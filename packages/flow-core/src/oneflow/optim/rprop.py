"""Rprop: per-element step sizes adapted by the gradient's sign (PyTorch's ``torch.optim.Rprop``)."""
import oneflow as flow

from .optimizer import Optimizer, _check_lr

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Rprop (resilient backpropagation), PyTorch's ``torch.optim.Rprop``: state ``step``, ``prev``,
    ``step_size``. One fused op (``rprop_update_``) updates a whole group."""

    _load_defaults = dict(foreach=None, maximize=False, differentiable=False, capturable=False)

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_lr(lr)
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)
        super().__init__(params, defaults)

    @flow.no_grad()
    def step(self, closure=None):
        """Perform a single optimization step."""
        def pack(group):
            return self._pack_state(group, ("prev", "step_size", "step"), lambda p, g: {
                "step": self._new_step(), "prev": flow.zeros_like(p),
                "step_size": flow.full_like(g, float(group["lr"]))})

        def attrs(group):
            (etaminus, etaplus), (step_min, step_max) = group["etas"], group["step_sizes"]
            return dict(etaminus=etaminus, etaplus=etaplus, step_size_min=step_min, step_size_max=step_max,
                        maximize=group["maximize"])

        # the op takes no lr: it is the step sizes' initial value
        return self._step_groups(closure, "rprop_update_", pack, attrs, takes_lr=False)
