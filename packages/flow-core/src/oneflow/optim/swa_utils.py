"""Weight averaging (PyTorch's ``torch.optim.swa_utils``): ``AveragedModel`` for stochastic weight averaging
and exponential moving averages of a model's parameters, ``update_bn`` to recompute batch-norm statistics for
averaged weights, and the ``SWALR`` schedule."""
import copy
import itertools
import math

import oneflow as flow

from ..nn import Module
from ..nn.modules.normalization import _BatchNorm
from .lr_scheduler import LRScheduler, _format_param, _warn_get_lr_called_within_step

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn",
           "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """A ``multi_avg_fn`` for ``AveragedModel``: every averaged tensor moves ``1 - decay`` of the way to the
    model's (an exponential moving average). ``decay`` must lie in [0, 1]."""
    _check_decay(decay)

    @flow.no_grad()
    def ema_update(ema_param_list, current_param_list, _):
        for p_ema, p_model in zip(ema_param_list, current_param_list):
            if p_ema.is_floating_point():
                p_ema.lerp_(p_model, 1 - decay)
            else:
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """A ``multi_avg_fn`` for ``AveragedModel``: the running equal-weight mean of the models seen so far."""

    @flow.no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        for p_avg, p_model in zip(averaged_param_list, current_param_list):
            if p_avg.is_floating_point():
                p_avg.lerp_(p_model, 1 / (float(num_averaged) + 1))
            else:
                p_avg.add_((p_model - p_avg) / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """An ``avg_fn`` for ``AveragedModel``: ``decay * averaged + (1 - decay) * current``, per tensor.
    ``decay`` must lie in [0, 1]."""
    _check_decay(decay)

    @flow.no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """An ``avg_fn`` for ``AveragedModel``: the running equal-weight mean, per tensor."""

    @flow.no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose parameters (and, with ``use_buffers``, buffers) hold an average of the
    parameters it is updated with: ``update_parameters(model)`` after each optimizer step (or epoch).

    Args:
        model (Module): the model to average; it is deep-copied.
        device (optional): where the averaged copy lives.
        avg_fn (callable, optional): ``avg_fn(averaged, current, num_averaged) -> new averaged`` per tensor.
        multi_avg_fn (callable, optional): the same on lists of tensors, in place. Neither given: the
            equal-weight running mean (SWA). ``get_ema_multi_avg_fn(decay)`` gives an EMA.
        use_buffers (bool): average buffers too (batch-norm statistics); otherwise they are copied from
            ``model`` on every update.

    The first update copies the model's values; ``n_averaged`` (a buffer) counts updates.
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", flow.tensor(0, dtype=flow.int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    @flow.no_grad()
    def update_parameters(self, model):
        """Folds ``model``'s current parameters (and buffers with ``use_buffers``) into the average."""
        if self.use_buffers:
            mine = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            mine, theirs = list(self.module.parameters()), list(model.parameters())
        mine = [p.detach() for p in mine]
        theirs = [p.detach().to(a.device) for a, p in zip(mine, theirs)]
        first = int(self.n_averaged) == 0
        if first:
            for a, p in zip(mine, theirs):
                a.copy_(p)
        elif self.avg_fn is not None:
            for a, p in zip(mine, theirs):
                a.copy_(self.avg_fn(a, p, self.n_averaged.to(a.device)))
        elif self.multi_avg_fn is not None:
            # as in PyTorch, the function sees one (device, dtype) group of tensors at a time
            groups = {}
            for a, p in zip(mine, theirs):
                pair = groups.setdefault((str(a.device), a.dtype), ([], []))
                pair[0].append(a)
                pair[1].append(p)
            for mine_group, theirs_group in groups.values():
                self.multi_avg_fn(mine_group, theirs_group, self.n_averaged.to(mine_group[0].device))
        else:
            swa = get_swa_avg_fn()
            for a, p in zip(mine, theirs):
                a.copy_(swa(a, p, self.n_averaged.to(a.device)))
        if not self.use_buffers:
            # buffers are not averaged: keep them in step with the source model
            for b_avg, b_model in zip(self.module.buffers(), model.buffers()):
                b_avg.detach().copy_(b_model.detach().to(b_avg.device))
        self.n_averaged += 1


@flow.no_grad()
def update_bn(loader, model, device=None):
    """Recomputes the running statistics of every batch-norm layer of ``model`` with one pass over
    ``loader`` (cumulative averages, as for weights that no training step produced). Batches may be tensors
    or sequences whose first element is the input."""
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    for batch in loader:
        if isinstance(batch, (list, tuple)):
            batch = batch[0]
        if device is not None:
            batch = batch.to(device)
        model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneals each group's learning rate from its current value to ``swa_lr`` over ``anneal_epochs`` steps
    (``'cos'`` or ``'linear'``), then holds it there; for the averaging phase of SWA."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        for lr, group in zip(_format_param("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _set_anneal_func(self, anneal_strategy):
        # the strategy's name is what the state dict keeps; the function is rebuilt from it on loading
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def state_dict(self):
        """The scheduler's state, without the optimizer and the annealing function (``_anneal_strategy`` names
        it)."""
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        """Load the scheduler's state (as returned by :meth:`state_dict`)."""
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        return swa_lr if alpha == 1 else (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self):
        _warn_get_lr_called_within_step(self)
        # the schedule is a function of the step count; the lr the previous step set is inverted back to
        # the starting lr, so that other changes to group["lr"] carry through
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev_lrs)]
