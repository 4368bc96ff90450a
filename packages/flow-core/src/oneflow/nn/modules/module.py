"""``nn.Module``: the base class of every layer and model, with PyTorch's semantics."""
import functools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ... import _C, _input_errors
from ..._tensor import Tensor
from ...utils.hooks import RemovableHandle
from ..parameter import Buffer, Parameter

_EXTRA_STATE_KEY_SUFFIX = "_extra_state"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the lists of missing and unexpected keys (a named tuple)."""

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys!r}, unexpected_keys={self.unexpected_keys!r})"

    __str__ = __repr__


# Hooks common to every module (``register_module_*``): forward and backward hooks run before each module's own,
# registration hooks may replace what is being registered.
_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_forward_hooks_with_kwargs = set()
_global_forward_hooks_always_called = set()
_global_backward_hooks = OrderedDict()
_global_backward_pre_hooks = OrderedDict()
_global_module_registration_hooks = OrderedDict()
_global_parameter_registration_hooks = OrderedDict()
_global_buffer_registration_hooks = OrderedDict()


def _add_global_hook(hooks, hook):
    h = RemovableHandle(hooks)
    hooks[h.id] = hook
    return h


def register_module_forward_pre_hook(hook):
    """Registers ``hook(module, args) -> None or new args`` to run before every module's ``forward``, ahead of
    the module's own pre-hooks."""
    return _add_global_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """Registers ``hook(module, args, output) -> None or new output`` (``hook(module, args, kwargs, output)``
    with ``with_kwargs``) to run after every module's ``forward``, ahead of the module's own hooks; with
    ``always_call`` it runs even when ``forward`` raises."""
    h = _add_global_hook(_global_forward_hooks, hook)
    if with_kwargs:
        _global_forward_hooks_with_kwargs.add(h.id)
    if always_call:
        _global_forward_hooks_always_called.add(h.id)
    return h


def register_module_full_backward_pre_hook(hook):
    """Registers ``hook(module, grad_output) -> None or new grad_output`` for every module, run before the
    module's own backward pre-hooks."""
    return _add_global_hook(_global_backward_pre_hooks, hook)


def register_module_full_backward_hook(hook):
    """Registers ``hook(module, grad_input, grad_output) -> None or new grad_input`` for every module, run
    before the module's own backward hooks."""
    return _add_global_hook(_global_backward_hooks, hook)


def register_module_backward_hook(hook):
    """Deprecated spelling of :func:`register_module_full_backward_hook` (the hook gets the full module
    gradients, as ``Module.register_backward_hook`` does here)."""
    return register_module_full_backward_hook(hook)


def register_module_module_registration_hook(hook):
    """Registers ``hook(module, name, submodule) -> None or replacement`` called whenever a module registers a
    child (``add_module`` or attribute assignment)."""
    return _add_global_hook(_global_module_registration_hooks, hook)


def register_module_parameter_registration_hook(hook):
    """Registers ``hook(module, name, param) -> None or replacement`` called whenever a module registers a
    parameter."""
    return _add_global_hook(_global_parameter_registration_hooks, hook)


def register_module_buffer_registration_hook(hook):
    """Registers ``hook(module, name, buffer) -> None or replacement`` called whenever a module registers a
    buffer."""
    return _add_global_hook(_global_buffer_registration_hooks, hook)


def _registered(hooks, module, name, value):
    """``value`` after the registration hooks, each of which may replace it."""
    for hook in hooks.values():
        r = hook(module, name, value)
        if r is not None:
            value = r
    return value


def _typename(obj):
    """How error messages name ``obj`` (``oneflow.FloatTensor``, ``oneflow.nn.modules.linear.Linear``, ``int``),
    as torch's do with ``torch.typename``."""
    if isinstance(obj, _C.TensorBase):
        try:
            return obj.type()
        except Exception:  # a dtype without a legacy tensor-type name
            pass
    module = getattr(type(obj), "__module__", "builtins")
    name = type(obj).__qualname__
    return name if module in (None, "builtins") else f"{module}.{name}"


def _check_name(name, kind):
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")


def _plain(t):
    """``t`` as a plain Tensor sharing its storage (what a module stores for an ``nn.Buffer``)."""
    return t if type(t) is Tensor else t.detach().requires_grad_(t.requires_grad)


def _addindent(s, n):
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    return lines[0] + "\n" + "\n".join(" " * n + line for line in lines[1:])


class Module:
    """Base class for all neural-network modules.

    Assigning a ``Parameter``, a ``Module`` or (via ``register_buffer``) a tensor to an attribute registers it,
    so ``parameters()``, ``state_dict()``, ``to()`` and ``train()/eval()`` reach everything inside.
    """

    training: bool
    _version = 1

    def __init__(self, *args, **kwargs):
        # the messages Python itself gives for a signature without parameters
        if kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} were "
                            "given")
        d = self.__dict__
        d["training"] = True
        d["_parameters"] = OrderedDict()
        d["_buffers"] = OrderedDict()
        d["_non_persistent_buffers_set"] = set()
        d["_modules"] = OrderedDict()
        d["_forward_pre_hooks"] = OrderedDict()
        d["_forward_pre_hooks_with_kwargs"] = set()
        d["_forward_hooks"] = OrderedDict()
        d["_forward_hooks_with_kwargs"] = set()
        d["_forward_hooks_always_called"] = set()
        d["_backward_hooks"] = OrderedDict()
        d["_backward_pre_hooks"] = OrderedDict()
        d["_state_dict_hooks"] = OrderedDict()
        d["_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_pre_hooks"] = OrderedDict()
        d["_load_state_dict_post_hooks"] = OrderedDict()

    forward = None

    # ---- registration -------------------------------------------------------------------------------
    def register_parameter(self, name, param):
        """Adds a parameter to the module.

        Args:
            name (str): name of the parameter; it is then reachable as an attribute.
            param (Parameter or None): the parameter; ``None`` declares the name without a value (it is left out
                of ``parameters()`` and ``state_dict()``, as a missing bias is).
        """
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name(name, "parameter")
        if "." in name:
            raise KeyError('parameter name can\'t contain "."')
        if name == "":
            raise KeyError('parameter name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is None:
            # as in torch, registration hooks only see real parameters
            self._parameters[name] = None
            return
        if not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(oneflow.nn.Parameter or None required)")
        if getattr(param, "grad_fn", None) is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created "
                             f"explicitly. To express '{name}' as a function of another Tensor, compute the value in "
                             "the forward() method.")
        self._parameters[name] = _registered(_global_parameter_registration_hooks, self, name, param)

    def register_buffer(self, name, tensor, persistent=True):
        """Adds a buffer: state that is not a parameter (e.g. BatchNorm's ``running_mean``).

        Args:
            name (str): name of the buffer; it is then reachable as an attribute.
            tensor (Tensor or None): the buffer; ``None`` declares the name without a value.
            persistent (bool): whether the buffer is part of ``state_dict``. Default: ``True``.
        """
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name(name, "buffer")
        if "." in name:
            raise KeyError('buffer name can\'t contain "."')
        if name == "":
            raise KeyError('buffer name can\'t be empty string ""')
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, _C.TensorBase):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(oneflow Tensor or None required)")
        if isinstance(tensor, Buffer):
            # ``nn.Buffer`` only marks a tensor for registration; the module stores the plain tensor, as torch does
            tensor = _plain(tensor)
        self._buffers[name] = _registered(_global_buffer_registration_hooks, self, name, tensor)
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        """Adds a child module, reachable as the attribute ``name``.

        Args:
            name (str): name of the child module.
            module (Module or None): the child; ``None`` declares the name without a value.
        """
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        _check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if "." in name:
            raise KeyError(f'module name can\'t contain ".", got: {name}')
        if name == "":
            raise KeyError('module name can\'t be empty string ""')
        self._modules[name] = _registered(_global_module_registration_hooks, self, name, module)

    register_module = add_module

    def get_submodule(self, target):
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def set_submodule(self, target, module, strict=False):
        """Sets the submodule at dotted path ``target`` to ``module``; its parent must exist. With ``strict``,
        the attribute must already exist and be a module."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def get_parameter(self, target):
        """The parameter at the dotted path ``target`` (``"layer.0.weight"``).

        Raises:
            AttributeError: if a module on the path is missing, or the last name is not a parameter.
        """
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target):
        """The buffer at the dotted path ``target`` (``"bn.running_mean"``), persistent or not.

        Raises:
            AttributeError: if a module on the path is missing, or the last name is not a buffer.
        """
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return mod._buffers[name]

    # ---- attribute protocol -------------------------------------------------------------------------
    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            for store in ("_buffers", "_modules"):
                d[store].pop(name, None)
            d.pop(name, None)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(oneflow.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if "_modules" not in d:
                raise AttributeError("cannot assign module before Module.__init__() call")
            for store in ("_parameters", "_buffers"):
                d[store].pop(name, None)
            d.pop(name, None)
            d["_modules"][name] = _registered(_global_module_registration_hooks, self, name, value)
        elif "_modules" in d and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(oneflow.nn.Module or None expected)")
            d["_modules"][name] = _registered(_global_module_registration_hooks, self, name, value)
        elif isinstance(value, Buffer) or ("_buffers" in d and name in d["_buffers"]):
            if value is not None and not isinstance(value, _C.TensorBase):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(oneflow.nn.Buffer, oneflow.Tensor or None expected)")
            # a Buffer carries its own persistence; a plain tensor keeps the one the name was registered with
            persistent = (value.persistent if isinstance(value, Buffer)
                          else name not in self._non_persistent_buffers_set)
            self.register_buffer(name, value, persistent)
        else:
            object.__setattr__(self, name, value)

    def __delattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(store, {}):
                del self.__dict__[store][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        keys = list(super().__dir__()) + list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(set(k for k in keys if not k[0].isdigit()))

    def __setstate__(self, state):
        self.__dict__.update(state)
        # modules pickled before these hook tables existed
        for name in ("_state_dict_pre_hooks", "_load_state_dict_post_hooks"):
            self.__dict__.setdefault(name, OrderedDict())
        self.__dict__.setdefault("_forward_hooks_always_called", set())

    # ---- iteration ----------------------------------------------------------------------------------
    def _named_members(self, get_members, prefix="", recurse=True, remove_duplicate=True):
        memo = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mod_prefix, mod in modules:
            for k, v in get_members(mod):
                if v is None or (remove_duplicate and id(v) in memo):
                    continue
                if remove_duplicate:
                    memo.add(id(v))
                yield (mod_prefix + ("." if mod_prefix else "") + k, v)

    def parameters(self, recurse=True):
        """Iterator over the module's parameters (each shared parameter once)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        return self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def children(self):
        for _, m in self.named_children():
            yield m

    def named_children(self):
        memo = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in memo:
                memo.add(id(m))
                yield name, m

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is None:
                continue
            yield from m.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    # ---- modes and conversion -----------------------------------------------------------------------
    def train(self, mode=True):
        """Sets training mode (affects Dropout, BatchNorm, ...) on this module and its children."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for m in self.children():
            m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Resets the gradients of all parameters (to None by default, like PyTorch 2)."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                g = p.grad
                if g.grad_fn is not None:
                    g.detach_()
                else:
                    g.requires_grad_(False)
                _C.ops.fill_(g, 0)

    def _apply(self, fn, recurse=True):
        if recurse:
            for m in self.children():
                m._apply(fn)
        for key, p in self._parameters.items():
            if p is None:
                continue
            with _no_grad():
                new = fn(p)
            if new is not p:
                p.data = new
            if p.grad is not None:
                with _no_grad():
                    g = fn(p.grad)
                if g is not p.grad:
                    p.grad = g
        for key, b in self._buffers.items():
            if b is not None:
                self._buffers[key] = fn(b)
        return self

    def apply(self, fn):
        """Calls ``fn`` on every submodule (children first) and on self, e.g. for initialisation."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """Moves and/or casts the parameters and buffers in place; returns ``self``.

        Accepts the spellings of ``Tensor.to``: ``to(device=None, dtype=None, non_blocking=False)``,
        ``to(dtype, non_blocking=False)``, ``to(tensor, non_blocking=False)`` and ``to(memory_format=...)``.
        Only floating-point tensors change dtype; integer buffers keep theirs.
        """
        if len(args) == 1 and not kwargs and isinstance(args[0], type) and hasattr(args[0], "_from_module"):
            return args[0]._from_module(self)  # OneFlow's module.to(flow.nn.graph.GraphModule): the proxy
        device, dtype, _, fmt = _parse_to(*args, **kwargs)
        if dtype is not None and not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")

        def convert(t):
            out = t
            if device is not None:
                out = out.to(device)
            if dtype is not None and t.dtype.is_floating_point:
                out = out.to(dtype)
            # as in torch, a format applies to the tensors of the rank it is defined for (4-D conv weights)
            if fmt is not None and t.dim() == {"channels_last": 4, "channels_last_3d": 5}.get(fmt._name, -1):
                out = out.contiguous(memory_format=fmt)
            return out

        return self._apply(convert)

    def float(self):
        return self._apply(lambda t: t.float() if t.dtype.is_floating_point else t)

    def double(self):
        return self._apply(lambda t: t.double() if t.dtype.is_floating_point else t)

    def half(self):
        return self._apply(lambda t: t.half() if t.dtype.is_floating_point else t)

    def bfloat16(self):
        return self._apply(lambda t: t.bfloat16() if t.dtype.is_floating_point else t)

    def cpu(self):
        """Moves every parameter and buffer to the CPU; returns ``self``."""
        return self._apply(lambda t: t.cpu())

    def to_global(self, placement=None, sbp=None):
        """OneFlow's ``Module.to_global``: every parameter and buffer becomes ``t.to_global(placement, sbp)``
        (a global tensor; needs flow-dist). Parameters are replaced by new ``Parameter`` objects of the global
        values (their gradients converted too), so make the optimizer afterwards. Returns ``self``."""
        for m in self.modules():
            for key, p in m._parameters.items():
                if p is None:
                    continue
                with _no_grad():
                    new = Parameter(p.detach().to_global(placement=placement, sbp=sbp), p.requires_grad)
                    if p.grad is not None:
                        new.grad = p.grad.to_global(placement=placement, sbp=sbp)
                m._parameters[key] = new
            for key, b in m._buffers.items():
                if b is not None:
                    with _no_grad():
                        m._buffers[key] = b.to_global(placement=placement, sbp=sbp)
        return self

    def share_memory(self):
        """Moves every parameter and buffer into shared memory (``Tensor.share_memory_``), e.g. for
        Hogwild-style training in forked processes. Returns ``self``."""
        return self._apply(lambda t: t.share_memory_())

    def cuda(self, device=None):
        return self.to("cuda" if device is None else device)

    def type(self, dst_type):
        """Casts every parameter and buffer (integer ones included) to ``dst_type``, a dtype or a tensor-type
        name such as ``"oneflow.DoubleTensor"``; returns ``self``."""
        return self._apply(lambda t: t.type(dst_type))

    def to_empty(self, *, device=None, recurse=True):
        """Replaces every parameter and buffer with an uninitialised tensor of the same shape and dtype on
        ``device`` (for modules built without real storage, to be filled afterwards)."""
        def empty_like(t):
            from ... import empty

            return empty(t.shape, dtype=t.dtype, device=device if device is not None else t.device)

        return self._apply(empty_like, recurse=recurse)

    # ---- state dict ---------------------------------------------------------------------------------
    def get_extra_state(self):
        """Extra picklable state for ``state_dict`` (key ``<prefix>_extra_state``); override together with
        ``set_extra_state``. Only called when a subclass overrides it."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called. "
                           "Override get_extra_state() together with set_extra_state().")

    def set_extra_state(self, state):
        """Restores what ``get_extra_state`` returned; override together with it."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called. "
                           "Override set_extra_state() together with get_extra_state().")

    def _has_extra_state(self):
        return type(self).get_extra_state is not Module.get_extra_state

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        if self._has_extra_state():
            destination[prefix + _EXTRA_STATE_KEY_SUFFIX] = self.get_extra_state()

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """A dict of every parameter and persistent buffer, keyed like PyTorch (``layer.0.weight``).

        Args:
            destination (dict, optional): filled in place and returned; by default a new ``OrderedDict`` whose
                ``_metadata`` attribute records each module's ``_version``.
            prefix (str): prepended to every key. Default: ``""``.
            keep_vars (bool): return the parameters themselves instead of detached tensors. Default: ``False``.
        """
        if args:
            # torch deprecates the positional spelling; FutureWarning so that users see it
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to the documentation of "
                          "nn.Module.state_dict for details.", FutureWarning, stacklevel=2)
            if destination is None:
                destination = args[0]
            if len(args) > 1 and prefix == "":
                prefix = args[1]
            if len(args) > 2 and keep_vars is False:
                keep_vars = args[2]
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()  # each module's format version, for load_state_dict
        local_metadata = {"version": self._version}
        if hasattr(destination, "_metadata"):
            destination._metadata[prefix[:-1]] = local_metadata
        for hook in self._state_dict_pre_hooks.values():
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            r = hook(self, destination, prefix, local_metadata)
            if r is not None:
                destination = r
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs, assign=False):
        """Loads this module's own entries (not its children's) from ``state_dict``, appending to the given
        lists. ``assign`` (or ``local_metadata["assign_to_params_buffers"]``, which ``load_state_dict`` sets, as
        torch does) replaces the tensors instead of copying into them."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        assign = assign or local_metadata.get("assign_to_params_buffers", False)
        local = {k: v for k, v in self._parameters.items() if v is not None}
        local.update({k: v for k, v in self._buffers.items()
                      if v is not None and k not in self._non_persistent_buffers_set})
        extra_key = prefix + _EXTRA_STATE_KEY_SUFFIX
        # loading extra state needs set_extra_state (saving needs get_extra_state)
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra_key in state_dict:
                self.set_extra_state(state_dict[extra_key])
            elif strict:
                missing_keys.append(extra_key)
        elif strict and extra_key in state_dict:
            unexpected_keys.append(extra_key)
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            src = state_dict[key]
            if not isinstance(src, _C.TensorBase):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                                  f"object from checkpoint but received {type(src)}")
                continue
            if param.dim() == 0 and src.dim() == 1:  # PyTorch's rule for checkpoints from before 0-dim tensors
                src = src[0]
            if tuple(src.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {src.shape} from checkpoint, "
                                  f"the shape in current model is {param.shape}.")
                continue
            try:
                with _no_grad():
                    if assign:
                        # the checkpoint's tensor itself becomes the module's (a Parameter where one was)
                        if isinstance(param, Parameter):
                            if isinstance(src, Parameter):
                                src.requires_grad_(param.requires_grad)
                            else:
                                src = Parameter(src, param.requires_grad)
                        setattr(self, name, src)
                    else:
                        _C.ops.copy_(param, src)
            except Exception as ex:
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{param.size()} and whose dimensions in the checkpoint are {src.size()}, an "
                                  f"exception occurred : {ex.args}.")
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra_key:
                    rest = key[len(prefix):].split(".", 1)
                    # a dotted rest belongs to a child module, which reports its own keys
                    if len(rest) > 1:
                        if rest[0] not in self._modules:
                            unexpected_keys.append(key)
                    elif rest[0] not in local:
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copies parameters and buffers from ``state_dict`` into this module and its descendants.

        Args:
            state_dict (Mapping): as returned by :meth:`state_dict`.
            strict (bool): whether the keys must match exactly. Default: ``True``.
            assign (bool): when ``True`` the module takes the state dict's tensors (and their dtypes) instead of
                copying into its own; parameters stay ``Parameter`` with their ``requires_grad``.
                Default: ``False``.

        Returns:
            ``NamedTuple`` with ``missing_keys`` and ``unexpected_keys`` fields.

        Raises:
            RuntimeError: listing every problem (missing/unexpected keys when ``strict``, size mismatches).
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        # a copy, so that what modules add while loading (old checkpoints' defaults) stays out of the caller's
        metadata = getattr(state_dict, "_metadata", None)
        state_dict = OrderedDict(state_dict)
        if metadata is not None:
            state_dict._metadata = metadata

        def load(module, local_state_dict, prefix=""):
            local_metadata = {} if metadata is None else metadata.get(prefix[:-1], {})
            if assign:
                # a copy: the flag must not end up in the caller's _metadata
                local_metadata = dict(local_metadata, assign_to_params_buffers=True)
            module._load_from_state_dict(local_state_dict, prefix, local_metadata, True, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    # each child sees only its own entries, so its pre-hooks cannot touch its siblings'
                    child_prefix = prefix + name + "."
                    child_state_dict = {k: v for k, v in local_state_dict.items() if k.startswith(child_prefix)}
                    load(child, child_state_dict, child_prefix)
            # post hooks run children first and see (and may prune) the keys before strict mode judges them
            keys = _IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                out = hook(module, keys)
                assert out is None, (
                    "Hooks registered with ``register_load_state_dict_post_hook`` are not expected to return new "
                    "values, if incompatible_keys need to be modified, it should be done inplace.")

        load(self, state_dict)
        load = None  # the closure refers to itself: this frees it without waiting for the cycle collector
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    def _register_state_dict_hook(self, hook):
        h = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[h.id] = hook
        return h

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        h = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[h.id] = functools.partial(hook, self) if with_module else hook
        return h

    def register_state_dict_pre_hook(self, hook):
        """``hook(module, prefix, keep_vars)`` runs before this module saves its entries in ``state_dict``."""
        h = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[h.id] = hook
        return h

    def register_state_dict_post_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata)`` runs after this module's entries (and its
        children's) are in ``state_dict``; it edits the dict in place and returns None."""
        def checked(module, state_dict, prefix, local_metadata):
            if hook(module, state_dict, prefix, local_metadata) is not None:
                raise RuntimeError("state_dict post-hook must return None")

        return self._register_state_dict_hook(checked)

    def register_load_state_dict_pre_hook(self, hook):
        """``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` runs before this module loads its entries; it may edit ``state_dict`` in place."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def register_load_state_dict_post_hook(self, hook):
        """``hook(module, incompatible_keys)`` runs after ``load_state_dict`` has loaded every module and before
        strict mode raises; it may remove entries from ``incompatible_keys.missing_keys`` /
        ``unexpected_keys`` in place, and must return None."""
        h = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[h.id] = hook
        return h

    # ---- hooks and call -----------------------------------------------------------------------------
    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """``hook(module, args) -> None or new args`` runs before ``forward``."""
        # the handle also forgets the hook's kwargs flag, so a removed hook leaves nothing behind
        h = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[h.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs.add(h.id)
        if prepend:
            self._forward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """``hook(module, args, output) -> None or new output`` runs after ``forward``."""
        h = RemovableHandle(
            self._forward_hooks, extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called]
        )
        self._forward_hooks[h.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs.add(h.id)
        if always_call:
            self._forward_hooks_always_called.add(h.id)
        if prepend:
            self._forward_hooks.move_to_end(h.id, last=False)
        return h

    def register_full_backward_hook(self, hook, prepend=False):
        """``hook(module, grad_input, grad_output) -> None or new grad_input`` runs when the gradients w.r.t.
        the module's inputs have been computed."""
        h = RemovableHandle(self._backward_hooks)
        self._backward_hooks[h.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(h.id, last=False)
        return h

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """``hook(module, grad_output) -> None or new grad_output`` runs before the module's backward."""
        h = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[h.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(h.id, last=False)
        return h

    def register_backward_hook(self, hook):
        return self.register_full_backward_hook(hook)

    def compile(self, *args, **kwargs):
        """Compiles this module in place with :func:`oneflow.compile` (PyTorch's ``Module.compile``): the
        arguments are those of ``oneflow.compile``, and from now on calling the module runs what the backend
        compiled (the module's ``__call__``, hooks included). Its type, parameters and ``state_dict`` keys stay
        as they are. With flow-graph installed the default backend traces the module into a graph (forward, and
        backward where autograd needs it); without it, or with ``backend="eager"``, calls run eagerly."""
        from ...compiler import _compile_in_place

        self._compiled_call_impl = _compile_in_place(self, *args, **kwargs)

    _compiled_call_impl = None

    def _call_impl(self, *args, **kwargs):
        # a module compiled in place (Module.compile) runs its compiled call, which calls back into this body
        # while it runs (``_running``): one attribute read for modules that are not compiled
        compiled = self._compiled_call_impl
        if compiled is not None and not compiled._running:
            return compiled(*args, **kwargs)
        forward = self.forward
        if forward is None:
            raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or self._backward_pre_hooks
                or _global_forward_pre_hooks or _global_forward_hooks or _global_backward_hooks
                or _global_backward_pre_hooks):
            try:
                return forward(*args, **kwargs)
            except (TypeError, AttributeError) as e:
                err = _input_errors.module_input_error(self, forward, args, kwargs, e)
                if err is None:
                    raise
                raise err from e
        called = set()
        done = {"result": None}  # forward's output once it has one, for the always_call hooks
        try:
            return self._call_with_hooks(forward, args, kwargs, called, done)
        except Exception as exc:
            err = _input_errors.module_input_error(self, forward, args, kwargs, exc) \
                if isinstance(exc, (TypeError, AttributeError)) else None
            result = done["result"]
            # hooks registered with always_call run even when forward (or another hook) raised; what they raise
            # in turn is only warned about, so the original error is the one that propagates
            always = self._forward_hooks_always_called | _global_forward_hooks_always_called
            with_kwargs = self._forward_hooks_with_kwargs | _global_forward_hooks_with_kwargs
            for hid, hook in self._all_forward_hooks():
                if hid in always and hid not in called:
                    try:
                        if hid in with_kwargs:
                            hook(self, args, kwargs, result)
                        else:
                            hook(self, args, result)
                    except Exception as e:
                        warnings.warn("forward hook with ``always_call=True`` raised an exception that was silenced "
                                      f"as another error was raised in forward: {e}")
            if err is not None:
                raise err from exc
            raise

    def _all_forward_hooks(self):
        """(id, hook) of the global forward hooks, then the module's own."""
        return list(_global_forward_hooks.items()) + list(self._forward_hooks.items())

    def _all_backward_hooks(self):
        return list(_global_backward_hooks.values()) + list(self._backward_hooks.values())

    def _all_backward_pre_hooks(self):
        return list(_global_backward_pre_hooks.values()) + list(self._backward_pre_hooks.values())

    def _call_with_hooks(self, forward, args, kwargs, called, done):
        for hid, hook in list(_global_forward_pre_hooks.items()) + list(self._forward_pre_hooks.items()):
            if hid in self._forward_pre_hooks_with_kwargs:
                r = hook(self, args, kwargs)
                if r is not None:
                    if not (isinstance(r, tuple) and len(r) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {r}.")
                    args, kwargs = r
            else:
                r = hook(self, args)
                if r is not None:
                    args = r if isinstance(r, tuple) else (r,)
        bw = None
        if (self._backward_hooks or self._backward_pre_hooks or _global_backward_hooks or _global_backward_pre_hooks) \
                and _C.is_grad_enabled():
            from ._backward_hooks import BackwardHookState

            bw = BackwardHookState(self)
            args = bw.setup_inputs(args)
        result = done["result"] = forward(*args, **kwargs)
        with_kwargs = self._forward_hooks_with_kwargs | _global_forward_hooks_with_kwargs
        for hid, hook in self._all_forward_hooks():
            called.add(hid)
            r = hook(self, args, kwargs, result) if hid in with_kwargs else hook(self, args, result)
            if r is not None:
                result = r
        if bw is not None:
            result = bw.setup_outputs(result)
        return result

    __call__ = _call_impl

    # ---- repr ---------------------------------------------------------------------------------------
    def extra_repr(self):
        """Extra text for ``repr`` (override in layers: e.g. ``in_features=2, out_features=3``)."""
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for key, m in self._modules.items():
            lines.append(f"({key}): " + _addindent(repr(m), 2))
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


def _parse_to(*args, **kwargs):
    """``(device, dtype, non_blocking, memory_format)`` from the arguments of ``Module.to``.

    Raises:
        TypeError: for arguments none of ``Tensor.to``'s signatures takes.
    """
    def invalid():
        def name(v):
            if isinstance(v, _C.TensorBase):
                return "Tensor"
            return f"oneflow.{type(v).__name__}" if isinstance(v, (_C.dtype, _C.device)) else type(v).__name__

        # the layout of torch's message, trailing separator of keyword-only calls included
        got = ", ".join([name(a) for a in args] + [f"{k}={name(v)}" for k, v in sorted(kwargs.items())])
        if kwargs and not args:
            got += ", "
        return TypeError(f"to() received an invalid combination of arguments - got ({got}), but expected one of:\n"
                         " * (oneflow.device device = None, oneflow.dtype dtype = None, bool non_blocking = False, "
                         "bool copy = False, *, oneflow.memory_format memory_format = None)\n"
                         " * (oneflow.dtype dtype, bool non_blocking = False, bool copy = False, *, "
                         "oneflow.memory_format memory_format = None)\n"
                         " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
                         "oneflow.memory_format memory_format = None)\n")

    if set(kwargs) - {"device", "dtype", "non_blocking", "copy", "memory_format"}:
        raise invalid()
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    non_blocking, fmt = kwargs.get("non_blocking", False), kwargs.get("memory_format")
    rest = list(args)
    if rest and isinstance(rest[0], _C.TensorBase):
        t = rest.pop(0)
        device, dtype = t.device, t.dtype
    elif rest and isinstance(rest[0], _C.dtype):
        dtype = rest.pop(0)
    elif rest and (isinstance(rest[0], (str, _C.device))
                   or (isinstance(rest[0], int) and not isinstance(rest[0], bool))):  # an int is a device index
        device = rest.pop(0)
        if rest and isinstance(rest[0], _C.dtype):
            dtype = rest.pop(0)
    # what may follow: non_blocking, copy
    if len(rest) > 2 or not all(isinstance(a, bool) for a in rest):
        raise invalid()
    if rest:
        non_blocking = rest[0]
    if device is not None and not isinstance(device, _C.device):
        device = _C.device(device)
    if dtype is not None and not isinstance(dtype, _C.dtype):
        raise invalid()
    return device, dtype, non_blocking, fmt


class _no_grad:
    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)
