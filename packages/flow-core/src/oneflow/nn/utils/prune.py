"""Pruning (PyTorch's ``torch.nn.utils.prune``): pruning parameter ``name`` of a module moves it to the
parameter ``name + "_orig"``, stores a binary buffer ``name + "_mask"`` and keeps the plain attribute ``name``
equal to ``orig * mask`` through a forward pre-hook (the pruning method itself). Pruning the same parameter
again combines the methods in a ``PruningContainer``; ``remove`` makes the pruning permanent."""
import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ... import _C
from ..._ops.creation import ones_like, zeros_like
from ..._ops.creation_random import rand, rand_like
from ..._ops.index import topk
from ..._ops.reduce import kthvalue, norm
from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


def _pruning_hooks(module, name):
    """The ``(hook id, method)`` pairs of ``module``'s pruning pre-hooks acting on ``name``."""
    return [(k, hook) for k, hook in module._forward_pre_hooks.items()
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name]


class BasePruningMethod(ABC):
    """Abstract base class of pruning methods: subclasses define :meth:`compute_mask` (and a
    ``PRUNING_TYPE`` of ``"unstructured"``, ``"structured"`` or ``"global"``). An applied method is the
    forward pre-hook that recomputes ``module.<name>`` from ``<name>_orig`` and ``<name>_mask``."""

    _tensor_name: str

    def __call__(self, module, inputs):
        """Recomputes ``module.<name>`` as ``<name>_orig * <name>_mask`` (see :meth:`apply_mask`)."""
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """Returns the mask for the importance scores ``t``, combined with ``default_mask`` (the mask of the
        previous pruning iterations, ones if none; same shape as ``t``)."""

    def apply_mask(self, module):
        """Returns ``module``'s pruned tensor: its ``<name>_orig`` times its ``<name>_mask``."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prunes ``module.<name>`` with ``cls(*args, **kwargs)``, on top of any earlier pruning of it, and
        installs the reparametrization and its forward pre-hook. ``importance_scores`` (same shape as the
        parameter; default: the parameter) decide what is pruned. Returns the (possibly combined) method."""
        old = _pruning_hooks(module, name)
        if len(old) > 1:
            raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module "
                                 f"{module}. Use a PruningContainer.")
        for k, _ in old:
            del module._forward_pre_hooks[k]
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old:
            old_method = old[0][1]
            if isinstance(old_method, PruningContainer):
                old_method.add_pruning_method(method)
                method = old_method
            else:
                container = PruningContainer(old_method)
                container.add_pruning_method(method)
                method = container

        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(f"importance_scores should have the same shape as parameter {name} of "
                                     f"{module}, got {importance_scores.shape} vs {orig.shape}")
        else:
            importance_scores = orig

        # A container means an earlier iteration already set up <name>_orig and <name>_mask.
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()

        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            # Leave a first-time pruned module as it was: the parameter back under its own name.
            if first:
                module.__dict__.pop(name, None)
                module._buffers.pop(name + "_mask", None)
                orig = module._parameters.pop(name + "_orig")
                module.register_parameter(name, orig)
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """Returns ``t`` times the mask :meth:`compute_mask` gives for ``importance_scores`` (default: ``t``)
        on top of ``default_mask`` (default: ones)."""
        if importance_scores is not None:
            if importance_scores.shape != t.shape:
                raise AssertionError(f"importance_scores should have the same shape as tensor t, got "
                                     f"{importance_scores.shape} vs {t.shape}")
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Makes the pruning of ``module.<name>`` permanent: ``<name>`` becomes a parameter holding the pruned
        values, and ``<name>_orig`` and ``<name>_mask`` go. The pruned entries are not restored."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        # Reuse the _orig Parameter object so optimizers holding it keep training the now-permanent weight.
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.data
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods applied in turn to one parameter (iterative pruning). Built from one
    method or several; its mask is that of the latest method, computed on the still-unpruned part."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1:
            self._tensor_name = args[0]._tensor_name
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method):
        """Appends the pruning ``method`` (a :class:`BasePruningMethod` acting on the same parameter)."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' "
                             f"to PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """Returns ``default_mask`` with the latest method's mask computed on, and written into, the part of
        ``t`` still unpruned: the entries where it is 1 (``"unstructured"``), the channels along the method's
        ``dim`` not yet all zero (``"structured"``) or the whole tensor (``"global"``)."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            slc = default_mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute '
                                     "`dim` defined.")
            n_dims = t.dim()
            dim = method.dim + n_dims if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {n_dims}")
            keep_channel = default_mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            slc = tuple(keep_channel if d == dim else slice(None) for d in range(n_dims))
        elif kind == "global":
            slc = tuple(slice(None) for _ in range(len(t.shape)))
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        partial_mask = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask[slc] = partial_mask.to(dtype=new_mask.dtype)
        return new_mask


class Identity(BasePruningMethod):
    """Prunes nothing: installs the pruning reparametrization with a mask of ones."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        """Installs the reparametrization of ``module.<name>`` with a mask of ones."""
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes ``amount`` (int: a count; float in [0, 1]: a fraction) of the unpruned entries, at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        return _unstructured_mask(t, self.amount, default_mask,
                                  lambda k: topk(rand_like(t).view(-1), k=k).indices)

    @classmethod
    def apply(cls, module, name, amount):
        """Prunes ``amount`` of ``module.<name>``'s unpruned entries at random."""
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes ``amount`` (int: a count; float in [0, 1]: a fraction) of the unpruned entries, those of
    smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_pruning_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        return _unstructured_mask(t, self.amount, default_mask,
                                  lambda k: topk(_C.ops.abs(t).view(-1), k=k, largest=False).indices)

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        """Prunes ``amount`` of ``module.<name>``'s unpruned entries, those of smallest absolute
        ``importance_scores`` (default: the parameter)."""
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes ``amount`` (int: a count; float in [0, 1]: a fraction) of the channels along ``dim``, at
    random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.dim = dim

    def compute_mask(self, t, default_mask):
        """Returns ``default_mask`` with randomly chosen channels of ``t`` along ``dim`` zeroed.

        Raises:
            IndexError: if ``dim >= t.dim()``
        """
        tensor_size, nparams_toprune = _structured_counts(t, self.amount, self.dim)
        if nparams_toprune == 0:
            return default_mask
        prob = rand(tensor_size, device=t.device)
        threshold = kthvalue(prob, k=nparams_toprune).values
        mask = _channel_mask(t, self.dim, prob > threshold)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        """Prunes ``amount`` of ``module.<name>``'s channels along ``dim`` at random."""
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes ``amount`` (int: a count; float in [0, 1]: a fraction) of the channels along ``dim``, those of
    smallest L\\ ``n``-norm (``n`` as ``p`` of :func:`oneflow.norm`)."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_pruning_amount_init(amount)
        self.amount = amount
        self.n = n
        self.dim = dim

    def compute_mask(self, t, default_mask):
        """Returns ``default_mask`` with the channels of ``t`` along ``dim`` of smallest norm zeroed.

        Raises:
            IndexError: if ``dim >= t.dim()``
        """
        tensor_size, nparams_toprune = _structured_counts(t, self.amount, self.dim)
        # topk of the kept channels (not bottom-k of the pruned ones) so that ties break as in PyTorch.
        kept = topk(_compute_norm(t, self.n, self.dim), k=tensor_size - nparams_toprune, largest=True)
        if nparams_toprune == 0:
            return default_mask
        mask = _channel_mask(t, self.dim, kept.indices)
        mask *= default_mask.to(dtype=mask.dtype)
        return mask

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        """Prunes ``amount`` of ``module.<name>``'s channels along ``dim``, those whose ``importance_scores``
        (default: the parameter) have the smallest L\\ ``n``-norm."""
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes with a given ``mask`` (on top of any earlier mask)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask shape "
                                 f"{self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        """Prunes ``module.<name>`` where ``mask`` is 0."""
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Installs the pruning reparametrization of ``module.<name>`` (``<name>_orig``, ``<name>_mask``) with a
    mask of ones, pruning nothing. Returns ``module``."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prunes ``amount`` (int: a count; float in [0, 1]: a fraction) of ``module.<name>``'s unpruned entries
    at random. Returns ``module``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prunes ``amount`` (int: a count; float in [0, 1]: a fraction) of ``module.<name>``'s unpruned entries,
    those of smallest absolute ``importance_scores`` (default: the parameter). Returns ``module``."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prunes ``amount`` (int: a count; float in [0, 1]: a fraction) of ``module.<name>``'s channels along
    ``dim`` at random. Returns ``module``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prunes ``amount`` (int: a count; float in [0, 1]: a fraction) of ``module.<name>``'s channels along
    ``dim``, those whose ``importance_scores`` (default: the parameter) have the smallest L\\ ``n``-norm
    (``n`` as ``p`` of :func:`oneflow.norm`). Returns ``module``."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prunes the ``(module, name)`` pairs of ``parameters`` together: ``pruning_method(**kwargs)`` (a class
    of ``PRUNING_TYPE`` ``"unstructured"``, e.g. :class:`L1Unstructured` with ``amount``) sees all their
    entries at once. ``importance_scores`` maps ``(module, name)`` to a tensor shaped like that parameter.

    Raises:
        TypeError: if ``pruning_method.PRUNING_TYPE != "unstructured"``
    """
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    # The pairs are walked three times, so a generator must not be used up by the first pass.
    parameters = list(parameters)

    scores = parameters_to_vector([importance_scores.get((module, name), getattr(module, name))
                                   for module, name in parameters])
    default_mask = parameters_to_vector([getattr(module, name + "_mask", ones_like(getattr(module, name)))
                                         for module, name in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final_mask = container.compute_mask(scores, default_mask)

    pointer = 0
    for module, name in parameters:
        param = getattr(module, name)
        num_param = param.numel()
        custom_from_mask(module, name, mask=final_mask[pointer:pointer + num_param].view_as(param))
        pointer += num_param


def custom_from_mask(module, name, mask):
    """Prunes ``module.<name>`` where ``mask`` is 0 (on top of any earlier pruning). Returns ``module``."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module, name):
    """Makes the pruning of ``module.<name>`` permanent and drops its pre-hook: ``<name>`` becomes a plain
    parameter holding the pruned values; ``<name>_orig`` and ``<name>_mask`` go. Returns ``module``.

    Raises:
        ValueError: if ``module.<name>`` is not pruned
    """
    for k, hook in _pruning_hooks(module, name):
        hook.remove(module)
        del module._forward_pre_hooks[k]
        return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """Whether ``module`` or any of its submodules has a pruning pre-hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, sub in module.named_modules() for hook in sub._forward_pre_hooks.values())


def _channel_mask(t, dim, channels):
    """A mask shaped like ``t``: ones on the ``channels`` (indices or a boolean mask) along ``dim``."""
    mask = zeros_like(t)
    slc = [slice(None)] * t.dim()
    slc[dim] = channels
    mask[tuple(slc)] = 1
    return mask


def _validate_pruning_amount_init(amount):
    """Checks that ``amount`` is a non-negative int or a float in [0, 1] (TypeError / ValueError)."""
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _validate_pruning_amount(amount, tensor_size):
    """Checks that an int ``amount`` is at most ``tensor_size``, the number of units there are to prune."""
    if isinstance(amount, numbers.Integral) and amount > tensor_size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={tensor_size}")


def _unstructured_mask(t, amount, default_mask, choose):
    """``default_mask`` with the ``amount`` entries ``choose(count)`` picks (flat indices) set to 0."""
    tensor_size = t.nelement()
    nparams_toprune = _compute_nparams_toprune(amount, tensor_size)
    _validate_pruning_amount(nparams_toprune, tensor_size)
    mask = default_mask.clone()
    if nparams_toprune != 0:
        mask.view(-1)[choose(nparams_toprune)] = 0
    return mask


def _structured_counts(t, amount, dim):
    """(channels along ``dim``, channels to prune), after the structured methods' checks."""
    _validate_structured_pruning(t)
    _validate_pruning_dim(t, dim)
    tensor_size = t.shape[dim]
    nparams_toprune = _compute_nparams_toprune(amount, tensor_size)
    _validate_pruning_amount(nparams_toprune, tensor_size)
    return tensor_size, nparams_toprune


def _validate_structured_pruning(t):
    """Checks that ``t`` has channels, i.e. at least two dimensions."""
    shape = t.shape
    if len(shape) <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                         f"shape {shape} with {len(shape)} dims")


def _compute_nparams_toprune(amount, tensor_size):
    """The number of units ``amount`` (int: a count; float: a fraction of ``tensor_size``) stands for."""
    if isinstance(amount, numbers.Integral):
        return amount
    return round(amount * tensor_size)


def _validate_pruning_dim(t, dim):
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _compute_norm(t, n, dim):
    """The L\\ ``n``-norm of each channel of ``t`` along ``dim`` (over all the other dimensions)."""
    dims = list(range(t.dim()))
    dims.remove(dims[dim])
    return norm(t, p=n, dim=dims)
