"""The module objects ``import torch`` gives under the mock: a ``torch.<x>`` module reads ``oneflow.<x>``'s
attributes, and names oneflow lacks become a clear error (or, in lazy mode, a placeholder)."""
import sys
import types

# A version string that libraries parse (packaging.version, LooseVersion, "major.minor" splits): the PyTorch
# release whose API this framework follows, with a local label saying what it really is.
TORCH_VERSION = "2.13.0+oneflow"


class NotProvidedError(NotImplementedError):
    """A torch API oneflow does not provide, used through a ``mock_torch(lazy=True)`` placeholder."""


def not_provided(torch_name, cause=None):
    """The message for a torch name oneflow lacks; ``cause``: oneflow's own error, kept when it says more (a
    companion package to install)."""
    from oneflow._plugins import PluginNotInstalledError

    if isinstance(cause, PluginNotInstalledError):
        return f"{torch_name} is not provided by oneflow as installed: {cause}"
    return (f"{torch_name} is not provided by oneflow (oneflow.mock_torch maps torch.* to oneflow.*, and "
            f"oneflow{torch_name[len('torch'):]} does not exist)")


def _warn(settings, torch_name, what):
    if settings.verbose:
        print(f"oneflow.mock_torch: {torch_name} is not provided by oneflow; {what}", file=sys.stderr)


class Placeholder:
    """Stands for a torch name oneflow lacks (lazy mode): any use raises :class:`NotProvidedError` naming it;
    attributes are placeholders too, so that ``torch.missing.thing`` can be written down without failing."""

    __slots__ = ("_torch_name", "_cause")

    def __init__(self, torch_name, cause=None):
        object.__setattr__(self, "_torch_name", torch_name)
        object.__setattr__(self, "_cause", cause)

    def _fail(self, *args, **kwargs):
        raise NotProvidedError(not_provided(self._torch_name, self._cause))

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Placeholder(f"{self._torch_name}.{name}")

    def __repr__(self):
        return f"<oneflow.mock_torch placeholder for {self._torch_name}>"

    __call__ = __getitem__ = __setattr__ = __iter__ = __enter__ = __len__ = _fail
    __instancecheck__ = __subclasscheck__ = __mro_entries__ = _fail
    __add__ = __radd__ = __sub__ = __mul__ = __eq__ = __lt__ = __gt__ = __le__ = __ge__ = _fail
    __hash__ = object.__hash__


class TorchModule(types.ModuleType):
    """``torch.<x>``: attributes come from the oneflow module (read once, then kept in this module's dict, so
    that later reads cost what a read of the oneflow module costs); submodules are ``TorchModule`` s as well."""

    def __init__(self, name, target, settings):
        super().__init__(name, getattr(target, "__doc__", None))
        d = self.__dict__
        d["_oneflow_module"] = target
        d["_mock_settings"] = settings
        d["_is_oneflow_mock"] = True
        if hasattr(target, "__path__"):
            d["__path__"] = []  # a package: submodule imports come to the mock's finder
        if getattr(target, "__file__", None):
            d["__file__"] = target.__file__

    def __getattr__(self, name):
        d = self.__dict__
        target = d["_oneflow_module"]
        try:
            value = getattr(target, name)
        except AttributeError as e:
            if name.startswith("__") and name.endswith("__"):
                raise
            value = missing_attribute(self, name, e)
        else:
            if isinstance(value, types.ModuleType) and is_oneflow_module(value):
                value = torch_module(f"{self.__name__}.{name}", value, d["_mock_settings"])
        d[name] = value
        return value

    def __dir__(self):
        return sorted(set(dir(self.__dict__["_oneflow_module"])) | set(self.__dict__))

    def __repr__(self):
        return f"<module '{self.__name__}' (oneflow.mock_torch: {self.__dict__['_oneflow_module'].__name__})>"


class MissingModule(types.ModuleType):
    """A torch submodule oneflow lacks, imported in lazy mode: every attribute is a :class:`Placeholder`."""

    def __init__(self, name, settings):
        super().__init__(name, f"placeholder for {name}, which oneflow does not provide")
        self.__dict__["__path__"] = []
        self.__dict__["_is_oneflow_mock"] = True

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return Placeholder(f"{self.__name__}.{name}")


def is_oneflow_module(mod):
    name = getattr(mod, "__name__", "")
    return name == "oneflow" or name.startswith(("oneflow.", "oneflow_"))


def missing_attribute(module, name, cause=None):
    torch_name = f"{module.__name__}.{name}"
    settings = module.__dict__["_mock_settings"]
    if settings.lazy:
        _warn(settings, torch_name, "using a placeholder that raises when used")
        return Placeholder(torch_name, cause)
    _warn(settings, torch_name, "raising AttributeError")
    err = AttributeError(f"module '{module.__name__}' has no attribute '{name}': {not_provided(torch_name, cause)}")
    err.name, err.obj = name, module
    raise err


def missing_module(torch_name, settings, cause=None):
    """The module for ``import torch.<x>`` where oneflow has no ``oneflow.<x>`` (a placeholder in lazy mode)."""
    if settings.lazy:
        _warn(settings, torch_name, "importing a placeholder module")
        return MissingModule(torch_name, settings)
    _warn(settings, torch_name, "raising ModuleNotFoundError")
    # No `name=`: the import system would take an error naming the very module a `from torch.x import y` asked
    # for as "y is not a submodule" and replace this message with a bare "cannot import name".
    raise ModuleNotFoundError(f"No module named '{torch_name}': {not_provided(torch_name, cause)}")


def torch_module(torch_name, target, settings):
    """The one ``TorchModule`` for ``torch_name``, registered in sys.modules while the mock is on (so that imports
    and attribute reads agree); one read after :func:`disable` (through a module kept from the mock) is not."""
    existing = sys.modules.get(torch_name)
    if isinstance(existing, TorchModule) and existing.__dict__["_oneflow_module"] is target:
        return existing
    mod = TorchModule(torch_name, target, settings)
    if torch_name == "torch":
        _torch_only_names(mod, settings)
    if settings.active:
        sys.modules[torch_name] = mod
    return mod


def _torch_only_names(mod, settings):
    version = types.ModuleType("torch.version", "torch.version under oneflow.mock_torch")
    version.__version__ = TORCH_VERSION
    version.cuda = version.hip = version.xpu = None
    version.debug = False
    version.git_version = "oneflow"
    mod.__dict__.update(__version__=TORCH_VERSION, version=version)
    if settings.active:
        sys.modules["torch.version"] = version
