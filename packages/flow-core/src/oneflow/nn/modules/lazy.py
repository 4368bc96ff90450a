"""``LazyModuleMixin``: modules whose parameter shapes are inferred from the first input (torch.nn.modules.lazy)."""
import itertools

from ..parameter import is_lazy
from .module import _EXTRA_STATE_KEY_SUFFIX, _no_grad

__all__ = []


class LazyModuleMixin:
    """Mixin for modules that hold ``UninitializedParameter``/``UninitializedBuffer`` placeholders.

    A forward pre-hook calls ``initialize_parameters(*args, **kwargs)`` on the first call, which must
    materialise every placeholder; the hooks are then removed and, when ``cls_to_become`` is set, the module
    turns into that (non-lazy) class. Loading a ``state_dict`` with initialised tensors materialises the
    placeholders from their shapes.
    """

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._load_hook = self._register_load_state_dict_pre_hook(self._lazy_load_hook)
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters, with_kwargs=True)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        # placeholders are saved as they are (detaching would turn them into empty tensors)
        for name, t in itertools.chain(self._parameters.items(), ((n, b) for n, b in self._buffers.items()
                                                                   if n not in self._non_persistent_buffers_set)):
            if t is not None:
                destination[prefix + name] = t if (is_lazy(t) or keep_vars) else t.detach()
        if self._has_extra_state():
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def _lazy_load_hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                        error_msgs):
        for name, t in itertools.chain(self._parameters.items(), self._buffers.items()):
            key = prefix + name
            if key in state_dict and t is not None and is_lazy(t) and not is_lazy(state_dict[key]):
                with _no_grad():
                    t.materialize(tuple(state_dict[key].size()))

    def initialize_parameters(self, *args, **kwargs):
        """Materialises the placeholders from the first input (implemented by each lazy module)."""
        raise NotImplementedError(f"initialize_parameters is not implemented for {self.__class__.__name__}")

    def has_uninitialized_params(self):
        """Whether any parameter or buffer is still a placeholder."""
        return any(is_lazy(t) for t in itertools.chain(self._parameters.values(), self._buffers.values()))

    def _infer_parameters(self, module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {self._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        module._load_hook.remove()
        delattr(module, "_initialize_hook")
        delattr(module, "_load_hook")
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become

    def _apply(self, fn, recurse=True):
        # ``fn`` (e.g. ``.double()``/``.to(device)``) changes the placeholders' dtype/device but keeps them lazy
        lazy = {k: b for k, b in self._buffers.items() if b is not None and is_lazy(b)}
        out = super()._apply(fn, recurse)
        for k, b in lazy.items():
            b.data = fn(b.detach())
            self._buffers[k] = b
        return out

    def _replicate_for_data_parallel(self):
        raise RuntimeError("Modules with uninitialized parameters can't be used with `DataParallel`. Run a dummy "
                           "forward pass to correctly initialize the modules")

