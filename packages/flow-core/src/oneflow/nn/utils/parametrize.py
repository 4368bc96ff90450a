"""Parametrizations (PyTorch's ``torch.nn.utils.parametrize``): a parameter or buffer ``module.<name>`` is
replaced by a function of stored tensors. Reading ``module.<name>`` computes it; assigning to it stores
``right_inverse(value)``. The stored tensors live in ``module.parametrizations.<name>.original`` (or
``original0``, ``original1``, ... when ``right_inverse`` returns several), so state dicts use PyTorch's keys.

The module's class is swapped for a subclass carrying one property per parametrized name, as in PyTorch.
"""
import copy
from contextlib import contextmanager

from ..._tensor import Tensor
from ...autograd import no_grad
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized", "cached",
           "type_before_parametrizations", "transfer_parametrizations_and_params", "ParametrizationList"]

_cache_enabled = 0
_cache = {}


@contextmanager
def cached():
    """Within this context each parametrized tensor is computed once, on first use, and reused (for a
    forward that reads a parametrized weight several times, as RNN cells do)."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register_parameter_or_buffer(module, name, x):
    if isinstance(x, Parameter):
        module.register_parameter(name, x)
    else:
        module.register_buffer(name, x)


def _assign(dest, src):
    """Store ``src`` in the tensor ``dest`` in place, so that references to ``dest`` (an optimizer's) stay."""
    if tuple(dest.shape) != tuple(src.shape):
        dest.resize_(list(src.shape))
    dest.copy_(src)


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, and the tensor(s) they start from."""

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        original_shape, original_dtype = tuple(original.shape), original.dtype
        with no_grad():
            new = original
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, list, tuple)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                             f"Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if original.dtype != new.dtype:
                raise ValueError("When `right_inverse` outputs one tensor, it may not change the dtype.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}")
            with no_grad():
                _assign(original, new)
            _register_parameter_or_buffer(self, "original", original)
        else:
            for i, originali in enumerate(new):
                if not isinstance(originali, Tensor):
                    raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...)."
                                     f" Got element {i} of the sequence with type {type(originali).__name__}.")
                originali = originali.detach()
                if isinstance(original, Parameter):
                    originali = Parameter(originali, original.requires_grad)
                originali.requires_grad_(original.requires_grad)
                _register_parameter_or_buffer(self, f"original{i}", originali)
        if not self.unsafe:
            # the parametrization must give back a tensor like the one it replaces
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if z.dtype != original_dtype:
                raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized dtype: {original_dtype}\n"
                                 f"parametrized dtype: {z.dtype}")
            if tuple(z.shape) != original_shape:
                raise ValueError("Registering a parametrization may not change the shape of the tensor, unless "
                                 f"`unsafe` flag is enabled.\nunparametrized shape: {original_shape}\n"
                                 f"parametrized shape: {tuple(z.shape)}")

    def right_inverse(self, value):
        """Store the tensor(s) whose parametrization is ``value`` (what assigning ``module.<name>`` does)."""
        with no_grad():
            for module in reversed(self):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype {value.dtype} while "
                                     f"`original` has dtype {self.original.dtype}")
                _assign(self.original, value)
            else:
                if not isinstance(value, (list, tuple)) or len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of {self.ntensors} tensors")
                for i, tensor in enumerate(value):
                    _assign(getattr(self, f"original{i}"), tensor)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _inject_new_class(module):
    cls = module.__class__

    def getstate(self):
        raise RuntimeError("Serialization of parametrized modules is only supported through state_dict(). See: "
                           "https://pytorch.org/tutorials/beginner/saving_loading_models.html")

    def default_deepcopy(self, memo):
        # the generated class cannot be pickled, so deepcopy (AveragedModel, copy.deepcopy) copies the
        # instance dict into a new instance of the same class
        replica = memo.get(id(self))
        if replica is None:
            replica = self.__new__(self.__class__)
            memo[id(self)] = replica
            replica.__dict__ = copy.deepcopy(self.__dict__, memo)
        return replica

    dct = {"__getstate__": getstate}
    if not hasattr(cls, "__deepcopy__"):
        dct["__deepcopy__"] = default_deepcopy
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), dct)


def _inject_property(module, tensor_name):
    def get_parametrized(self):
        parametrization = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            tensor = _cache.get(key)
            if tensor is None:
                tensor = parametrization()
                _cache[key] = tensor
            return tensor
        return parametrization()

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Parametrize ``module.<tensor_name>`` (a parameter or buffer) by the module ``parametrization``:
    reading it then returns ``parametrization(original)``. Registering a second parametrization on the same
    name chains it after the first.

    If ``parametrization`` has ``right_inverse``, the stored original is initialised to
    ``right_inverse(current value)``, so the parametrized tensor starts at the value it replaces. Unless
    ``unsafe``, the result must keep the tensor's shape and dtype. Returns ``module``.
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            if x.dtype != y.dtype or tuple(x.shape) != tuple(y.shape):
                raise ValueError("Registering a parametrization may not change the shape or dtype of the tensor, "
                                 "unless the `unsafe` flag is enabled.")
            if hasattr(parametrization, "right_inverse"):
                try:
                    z = parametrization.right_inverse(x)
                except NotImplementedError:
                    pass
                else:
                    if not isinstance(z, Tensor) or z.dtype != y.dtype or tuple(z.shape) != tuple(y.shape):
                        raise ValueError("right_inverse must return a tensor of the shape and dtype it was given")
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        parametrizations = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        module.parametrizations[tensor_name] = parametrizations
        _inject_property(module, tensor_name)
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    return module


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` has any parametrization (or one on ``tensor_name``)."""
    parametrizations = module.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is None or not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Undo the parametrizations of ``module.<tensor_name>``. With ``leave_parametrized`` the tensor keeps its
    current (parametrized) value, else it goes back to the stored original. The module gets its own class
    back when nothing is parametrized any more. Returns ``module``."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    parametrizations = module.parametrizations[tensor_name]
    if parametrizations.is_tensor:
        original = parametrizations.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
                _assign(original, t)
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized "
                             "in terms of a sequence of tensors.")
        # computed with grad enabled: whether any original requires grad decides Parameter vs plain tensor
        t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) if t.requires_grad else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def type_before_parametrizations(module):
    """The module's class before any parametrization was registered."""
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module, to_module, tensor_name=None):
    """Register on ``to_module`` the parametrizations of ``from_module`` (all of them, or those of
    ``tensor_name``) and share their original tensors, creating the parameter on ``to_module`` when it lacks it.
    Does nothing if ``from_module`` is not parametrized. Returns ``to_module``."""
    if is_parametrized(from_module):
        if not isinstance(from_module.parametrizations, ModuleDict):
            raise AssertionError("Expected from_module.parametrizations to be a ModuleDict, "
                                 f"got {type(from_module.parametrizations).__name__}")
        names = from_module.parametrizations if tensor_name is None else [tensor_name]
        for name in names:
            if not hasattr(to_module, name):
                setattr(to_module, name, Parameter(getattr(from_module, name)))
            # the same parametrization modules, as in PyTorch: their state (a spectral norm's vectors) is shared
            for param_func in from_module.parametrizations[name]:
                register_parametrization(to_module, name, param_func)
            if not isinstance(to_module.parametrizations, ModuleDict):
                raise AssertionError("Expected to_module.parametrizations to be a ModuleDict, "
                                     f"got {type(to_module.parametrizations).__name__}")
            source, target = from_module.parametrizations[name], to_module.parametrizations[name]
            if hasattr(source, "original"):
                target.original = source.original
            else:
                i = 0
                while hasattr(source, f"original{i}"):
                    setattr(target, f"original{i}", getattr(source, f"original{i}"))
                    i += 1
    return to_module
