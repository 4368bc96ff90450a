"""PyTorch modules (and the values they hold) turned into oneflow ones that share their tensors' memory.

Standard ``torch.nn`` layers map to the oneflow class of the same name, built from the layer's hyper-parameters
and given the layer's parameters and buffers. A module class of the user's (including subclasses of standard
layers) gets a oneflow twin: the same methods, re-created over globals in which ``torch`` names resolve as
``oneflow.mock_torch`` resolves them, so its ``forward`` runs on oneflow unchanged.
"""
import importlib
import inspect
import types
import warnings

import oneflow as flow
from oneflow.utils.tensor import from_torch

from ...mock_torch import enable as _enable_mock
from ...mock_torch import is_enabled as _mock_enabled
from ...mock_torch import real_torch as _real_torch

# Attributes of torch.nn.Module's bookkeeping that the conversion rebuilds instead of copying.
_MODULE_STATE = {"_parameters", "_buffers", "_modules", "_non_persistent_buffers_set", "_backward_pre_hooks",
                 "_backward_hooks", "_is_full_backward_hook", "_forward_hooks", "_forward_hooks_with_kwargs",
                 "_forward_hooks_always_called", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs",
                 "_state_dict_hooks", "_state_dict_pre_hooks", "_load_state_dict_pre_hooks",
                 "_load_state_dict_post_hooks", "_compiled_call_impl", "training"}
_CONTAINERS = ("Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict")


class ConversionError(TypeError):
    """A PyTorch module (or a value inside it) that compile_from_torch can't run on oneflow."""


def torch_lib():
    """The real PyTorch (also while the mock is on)."""
    real = _real_torch()
    if real is not None:
        return real
    import torch

    return torch


def is_torch_object(value):
    mod = getattr(type(value), "__module__", "") or ""
    return mod == "torch" or mod.startswith("torch.")


_proxies = {}


def _torch_module_proxy(name):
    """What ``import <name>`` (a torch module name) gives under the mock, without leaving the mock on."""
    if _mock_enabled():
        return importlib.import_module(name)
    if name not in _proxies:
        with _enable_mock():
            _proxies[name] = importlib.import_module(name)
    return _proxies[name]


class Converter:
    """One conversion: ``memo`` keeps shared objects shared (tied weights, a module used twice)."""

    def __init__(self):
        self.torch = torch_lib()
        self.memo = {}
        self.classes = {}
        self.globals = {}

    # ---- values ------------------------------------------------------------------------------------------------
    def value(self, v):
        key = id(v)
        if key in self.memo:
            return self.memo[key][1]
        out = self._value(v)
        self.memo[key] = (v, out)  # the original is kept alive so that its id is not reused
        return out

    def _value(self, v):
        torch = self.torch
        if isinstance(v, torch.nn.parameter.UninitializedTensorMixin):
            raise ConversionError("compile_from_torch: the module has uninitialized (lazy) parameters or buffers; "
                                  "run it once on an input to initialize them first")
        if isinstance(v, torch.nn.Parameter):
            return flow.nn.Parameter(from_torch(v.detach()), requires_grad=v.requires_grad)
        if isinstance(v, torch.Tensor):
            return from_torch(v)
        if isinstance(v, torch.nn.Module):
            return self.module(v)
        if isinstance(v, torch.dtype):
            return getattr(flow, str(v).rpartition(".")[2])
        if isinstance(v, torch.device):
            return flow.device(str(v))
        if isinstance(v, torch.Size):
            return flow.Size(v)
        if isinstance(v, types.ModuleType):
            name = v.__name__
            return _torch_module_proxy(name) if name == "torch" or name.startswith("torch.") else v
        if isinstance(v, types.FunctionType):
            return v if _defined_in_torch(v) else self.function(v)
        if isinstance(v, types.MethodType):
            return types.MethodType(self.value(v.__func__), self.value(v.__self__))
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, tuple) and type(v) is tuple:
            return tuple(self.value(x) for x in v)
        if isinstance(v, dict) and type(v) is dict:
            return {k: self.value(x) for k, x in v.items()}
        if isinstance(v, type) and _defined_in_torch(v):
            return self.torch_name(v)
        if is_torch_object(v) or _defined_in_torch(v):
            return self.torch_name(v)
        return v

    def torch_name(self, v):
        """oneflow's object for a torch class or function, found where torch exposes it."""
        name = getattr(v, "__name__", None)
        for ns in ("torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.optim", "torch.utils.data",
                   "torch.autograd", "torch.linalg", "torch.fft", "torch.special"):
            mod = _import_real(ns)
            if name is not None and mod is not None and getattr(mod, name, None) is v:
                return getattr(_torch_module_proxy(ns), name)
        raise ConversionError(f"compile_from_torch: don't know oneflow's counterpart of {v!r}")

    # ---- functions and classes ---------------------------------------------------------------------------------
    def globals_for(self, g):
        key = id(g)
        if key not in self.globals:
            mapped = self.globals[key] = dict(g)  # filled in place: a twin's methods made meanwhile share it
            for k, x in g.items():
                if k.startswith("__") and k.endswith("__"):
                    continue
                if isinstance(x, type) and issubclass(x, self.torch.nn.Module) and not _defined_in_torch(x):
                    mapped[k] = self.flow_class(x)  # isinstance checks and constructions in forward see twins
                    continue
                if isinstance(x, types.ModuleType) or (isinstance(x, type) and _defined_in_torch(x)) or (
                        callable(x) and _defined_in_torch(x)) or is_torch_object(x):
                    try:
                        mapped[k] = self.value(x)
                    except ConversionError:
                        pass  # a torch name oneflow lacks: the call that reaches it raises then
        return self.globals[key]

    def function(self, f, owner=None):
        """``f`` over remapped globals; the ``__class__`` cell (``super()``) points to ``owner``'s twin."""
        closure = None
        if f.__closure__:
            cells = []
            for name, cell in zip(f.__code__.co_freevars, f.__closure__):
                try:
                    contents = cell.cell_contents
                except ValueError:  # an empty cell
                    cells.append(cell)
                    continue
                if name == "__class__" and owner is not None:
                    cells.append(types.CellType(owner))
                else:
                    cells.append(types.CellType(self.value(contents)))
            closure = tuple(cells)
        defaults = tuple(self.value(d) for d in f.__defaults__) if f.__defaults__ else f.__defaults__
        g = types.FunctionType(f.__code__, self.globals_for(f.__globals__), f.__name__, defaults, closure)
        g.__kwdefaults__ = {k: self.value(x) for k, x in f.__kwdefaults__.items()} if f.__kwdefaults__ else None
        g.__qualname__, g.__doc__, g.__module__ = f.__qualname__, f.__doc__, f.__module__
        g.__dict__.update(f.__dict__)
        return g

    def flow_class(self, cls):
        """oneflow's class for a torch module class: the standard layer of that name, or the user class's twin."""
        if cls in self.classes:
            return self.classes[cls]
        torch = self.torch
        if cls is torch.nn.Module or cls is object:
            out = flow.nn.Module
        elif _defined_in_torch(cls):
            out = getattr(flow.nn, cls.__name__, None)
            if out is None:
                raise ConversionError(f"compile_from_torch: torch.nn.{cls.__name__} has no oneflow counterpart "
                                      "(oneflow.nn lacks it)")
        else:
            bases = tuple(self.flow_class(b) for b in cls.__bases__ if b is not object) or (flow.nn.Module,)
            out = type(cls.__name__, bases, {"__module__": cls.__module__, "__qualname__": cls.__qualname__})
            self.classes[cls] = out  # before the methods: a method's super() refers to it
            for name, attr in cls.__dict__.items():
                if name in ("__dict__", "__weakref__", "__module__", "__qualname__"):
                    continue
                setattr(out, name, self._member(attr, out))
        self.classes[cls] = out
        return out

    def _member(self, attr, owner):
        if isinstance(attr, types.FunctionType):
            return self.function(attr, owner)
        if isinstance(attr, staticmethod):
            return staticmethod(self._member(attr.__func__, owner))
        if isinstance(attr, classmethod):
            return classmethod(self._member(attr.__func__, owner))
        if isinstance(attr, property):
            return property(*(self._member(f, owner) if f is not None else None
                              for f in (attr.fget, attr.fset, attr.fdel)), attr.__doc__)
        return self.value(attr)

    # ---- modules -----------------------------------------------------------------------------------------------
    def module(self, m):
        hooks = [h for h in ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
                 if getattr(m, h, None)]
        if hooks:
            warnings.warn(f"compile_from_torch: the hooks of {type(m).__name__} ({', '.join(hooks)}) are torch "
                          "functions and are not carried over to the oneflow module", RuntimeWarning, stacklevel=4)
        cls = type(m)
        if _defined_in_torch(cls) and cls.__name__ in _CONTAINERS:
            out = self._container(m)
        elif _defined_in_torch(cls):
            out = self._standard(m)
        else:
            out = self._custom(m)
        out.train(m.training)
        return out

    def _container(self, m):
        cls = getattr(flow.nn, type(m).__name__)
        if type(m).__name__ in ("Sequential", "ModuleDict"):
            out = cls()
            for name, child in m._modules.items():
                out.add_module(name, self.value(child))
            return out
        if type(m).__name__ == "ModuleList":
            return cls([self.value(c) for c in m._modules.values()])
        return cls({k: self.value(p) for k, p in m._parameters.items()} if type(m).__name__ == "ParameterDict"
                   else [self.value(p) for p in m._parameters.values()])

    def _standard(self, m):
        cls = self.flow_class(type(m))
        kwargs = {}
        for name in _init_arguments(cls):
            if name in m.__dict__ or name in m._parameters or name in m._buffers:
                v = getattr(m, name)
                kwargs[name] = (v is not None) if name == "bias" and not isinstance(v, bool) else self.value(v)
        try:
            out = cls(**kwargs)
        except Exception as e:
            raise ConversionError(f"compile_from_torch: can't build oneflow.nn.{cls.__name__} from {m!r}: {e}") from e
        self._share_state(m, out)
        for name, child in m._modules.items():
            out._modules[name] = self.value(child) if child is not None else None
        return out

    def _custom(self, m):
        cls = self.flow_class(type(m))
        out = cls.__new__(cls)
        flow.nn.Module.__init__(out)
        for name, v in m.__dict__.items():
            if name not in _MODULE_STATE:
                out.__dict__[name] = self.value(v)
        self._share_state(m, out)
        for name, child in m._modules.items():
            out._modules[name] = self.value(child) if child is not None else None
        return out

    def _share_state(self, m, out):
        """``out``'s parameters and buffers become ``m``'s, shared (names and shapes must agree)."""
        for name, p in m._parameters.items():
            shared = self.value(p) if p is not None else None
            mine = out._parameters.get(name, None)
            if shared is not None and mine is not None and tuple(mine.shape) != tuple(shared.shape):
                raise ConversionError(f"compile_from_torch: parameter {name!r} of {type(m).__name__} has shape "
                                      f"{tuple(p.shape)}, oneflow's has {tuple(mine.shape)}")
            out._parameters[name] = shared
        for name, b in m._buffers.items():
            out._buffers[name] = self.value(b) if b is not None else None
            if name in m._non_persistent_buffers_set:
                out._non_persistent_buffers_set.add(name)
            else:
                out._non_persistent_buffers_set.discard(name)


def _init_arguments(cls):
    """The keyword arguments ``cls(...)`` takes, following ``*args, **kwargs`` constructors to their base's."""
    names = []
    for klass in cls.__mro__:
        if "__init__" not in klass.__dict__:
            continue
        params = inspect.signature(klass.__dict__["__init__"]).parameters.values()
        # "mode": RNNBase's, which LSTM/GRU/RNN pass themselves; device/dtype: the torch module's are implied
        names += [p.name for p in params if p.name not in ("self", "device", "dtype", "mode") and p.name not in names
                  and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY)]
        if not any(p.kind == p.VAR_KEYWORD for p in params):
            break
    return names


def _defined_in_torch(obj):
    mod = getattr(obj, "__module__", None)
    return isinstance(mod, str) and (mod == "torch" or mod.startswith("torch."))


def _import_real(name):
    torch = torch_lib()
    mod = torch
    for part in name.split(".")[1:]:
        mod = getattr(mod, part, None)
        if mod is None:
            return None
    return mod
