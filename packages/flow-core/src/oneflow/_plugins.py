"""Plugins: packages that attach to the ``oneflow`` namespace through the entry-point group ``oneflow.plugins``.

Each entry point ``name = module[:attr]`` of the group attaches one object, looked up lazily (the group is read
on first use). The name says where it goes:

- ``<name>`` becomes ``oneflow.<name>``, and ``nn.<name>`` becomes ``oneflow.nn.<name>``;
  ``nn.parallel.<name>`` becomes ``oneflow.nn.parallel.<name>`` (e.g. ``nn.parallel.DistributedDataParallel``).
- An entry point whose object is a module is also importable: ``import oneflow.<name>`` (and
  ``oneflow.<name>.<submodule>``, ``python -m oneflow.<name>.<submodule>``) give the plugin's module and its
  submodules, not copies (e.g. ``distributed = oneflow_dist.distributed`` makes ``import oneflow.distributed``
  and ``python -m oneflow.distributed.launch`` the plugin's).
- ``Tensor.<name>`` becomes an attribute of ``oneflow.Tensor``, installed on the class at first use: a function
  becomes a method, a ``property`` a property (e.g. ``Tensor.to_global``, ``Tensor.placement``).
- ``compile_backend.<name>`` is a backend for ``oneflow.compile(model, backend="<name>")``: a callable
  ``backend(model, example_inputs) -> callable`` (PyTorch's backend contract, with the model itself in place of
  a traced graph), called at the first call; what it returns runs that call and the later ones.

The project's companion packages register this way. Until one is installed, its names raise
:class:`PluginNotInstalledError`, which says which package to install: as an ``AttributeError`` on attribute
access (so ``hasattr(oneflow, "placement")`` is False) and as a ``ModuleNotFoundError`` on import (so
``from oneflow.nn import Graph`` and ``import oneflow.mock_torch`` keep the message). ``oneflow.distributed`` is
importable without flow-dist, as ``torch.distributed`` is on builds without it: ``is_available()`` and
``is_initialized()`` are False and its other names raise that error. A plugin that is installed but fails to load
raises its own error.
"""
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from importlib import metadata

GROUP = "oneflow.plugins"
TENSOR_PREFIX = "Tensor."
COMPILE_BACKEND_PREFIX = "compile_backend."

# Names the companion packages provide, and the package to install for each (a name covers the names below it:
# "distributed" covers "distributed.init_process_group" and "distributed.launch").
KNOWN = {
    "nn.Graph": "flow-graph",
    "placement": "flow-dist",
    "sbp": "flow-dist",
    "env": "flow-dist",
    "comm": "flow-dist",
    "distributed": "flow-dist",
    "nn.parallel.DistributedDataParallel": "flow-dist",
    "Tensor.to_global": "flow-dist",
    "Tensor.placement": "flow-dist",
    "Tensor.sbp": "flow-dist",
    "Tensor.is_global": "flow-dist",
    "one_embedding": "flow-embedding",
    "mock_torch": "flow-torchcompat",
    "framework": "flow-torchcompat",  # oneflow.framework.infer_compiler (compile_from_torch)
}

# Tensor attributes with a value when their plugin is not installed (OneFlow's: local tensors are not global).
TENSOR_DEFAULTS = {"is_global": False}

# Module names flow-core has a stub package for: the plugin's module, when installed, takes their place.
STUBS = ("distributed",)

_entry_points = None
_loaded = {}
_aliases = {}  # "oneflow.<name>" -> the name of the plugin module it stands for
_tensor_installed = set()  # Tensor attributes installed from plugins (refresh() puts the descriptors back)


class PluginNotInstalledError(Exception):
    """A oneflow name whose plugin package is not installed; the message says which package to install.

    What is raised is one of its two subclasses: :class:`PluginAttributeError` (also an ``AttributeError``) for
    attribute access and :class:`PluginImportError` (also a ``ModuleNotFoundError``) for imports. One class can't
    be both: Python's AttributeError and ImportError have incompatible layouts.
    """


class PluginAttributeError(PluginNotInstalledError, AttributeError):
    """A plugin name accessed as an attribute (``oneflow.placement``) whose package is not installed."""


class PluginImportError(PluginNotInstalledError, ModuleNotFoundError):
    """A plugin name imported (``import oneflow.mock_torch``, ``from oneflow.nn import Graph``) whose package is
    not installed."""


def refresh():
    """Forget cached entry points (after installing a plugin in a running process, and in tests): plugin
    modules imported under ``oneflow.*`` names and plugin Tensor attributes are dropped, to be looked up again."""
    global _entry_points
    _entry_points = None
    _loaded.clear()
    stale = list(_aliases) + [n for n in list(sys.modules)
                              if any(n == f"oneflow.{s}" or n.startswith(f"oneflow.{s}.") for s in STUBS)]
    _aliases.clear()
    for fullname in stale:
        mod = sys.modules.pop(fullname, None)
        parent, _, child = fullname.rpartition(".")
        if mod is not None and getattr(sys.modules.get(parent), child, None) is mod:
            delattr(sys.modules[parent], child)
    tensor = sys.modules.get("oneflow._tensor")
    if tensor is not None:
        for name in _tensor_installed | _tensor_stand_ins:
            if TENSOR_PREFIX + name in KNOWN:
                setattr(tensor.Tensor, name, _TensorPluginAttribute(name))
            elif name in tensor.Tensor.__dict__:  # a name only the plugin knew: gone until read again
                delattr(tensor.Tensor, name)
    _tensor_installed.clear()
    _tensor_stand_ins.clear()


def entry_points():
    """``{name: EntryPoint}`` of the group (read once; see :func:`refresh`)."""
    global _entry_points
    if _entry_points is None:
        eps = metadata.entry_points()
        group = eps.select(group=GROUP) if hasattr(eps, "select") else eps.get(GROUP, [])
        _entry_points = {ep.name: ep for ep in group}
        _install_unknown_tensor_stand_ins()
    return _entry_points


def _install_unknown_tensor_stand_ins():
    # Tensor attributes only a plugin knows get their stand-in when the entry points are read (any plugin
    # lookup), not through a Tensor.__getattr__: defining one would slow every attribute read of every tensor
    # (CPython then leaves the type's attribute lookups unspecialised).
    tensor = sys.modules.get("oneflow._tensor")
    if tensor is None:
        return
    for full in _entry_points:
        name = full[len(TENSOR_PREFIX):]
        if full.startswith(TENSOR_PREFIX) and full not in KNOWN and name not in tensor.Tensor.__dict__:
            setattr(tensor.Tensor, name, _TensorPluginAttribute(name))
            _tensor_stand_ins.add(name)


_tensor_stand_ins = set()  # stand-ins installed for names flow-core does not know


def available():
    """Names provided by installed plugins."""
    return sorted(entry_points())


def package_for(full):
    """The package that provides ``oneflow.<full>``, or None."""
    parts = full.split(".")
    for n in range(len(parts), 0, -1):
        pkg = KNOWN.get(".".join(parts[:n]))
        if pkg is not None:
            return pkg
    return None


def _message(what, pkg):
    try:
        metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return (f"{what} is provided by the '{pkg}' package, which is not installed. Install it with "
                f"`pip install {pkg}` (in this repository: `pip install packages/{pkg}`).")
    # installed, yet its entry points were not found: a stale or partial install
    return (f"{what} should be provided by the '{pkg}' package, which is installed but does not register it in "
            f"the '{GROUP}' entry-point group; reinstall it (in this repository: `pip install packages/{pkg}`).")


def missing(full, import_=False):
    """The error for ``oneflow.<full>`` whose package is not installed (``import_``: for an import)."""
    pkg = package_for(full)
    if import_:
        return PluginImportError(f"No module named 'oneflow.{full}': " + _message("it", pkg))
    return _named(PluginAttributeError(_message(f"oneflow.{full}", pkg)), full.rpartition(".")[2])


def _named(error, name):
    error.name = name  # as Python sets it on its own AttributeErrors (the keyword needs Python 3.10)
    return error


def load(full):
    """The object of the installed entry point ``full``, or None when no plugin provides it."""
    if full in _loaded:
        return _loaded[full]
    ep = entry_points().get(full)
    if ep is None:
        return None
    obj = ep.load()  # a broken plugin raises here, with its own error
    _loaded[full] = obj
    return obj


def resolve(prefix, name):
    """Resolve ``oneflow.<prefix><name>`` through plugins, or raise the right AttributeError."""
    full = prefix + name
    obj = load(full)
    if obj is not None:
        return obj
    if package_for(full) is not None and not _provided_above(full):
        raise missing(full)
    mod = "oneflow" + ("." + prefix.rstrip(".") if prefix else "")
    raise _named(AttributeError(f"module '{mod}' has no attribute '{name}'"), name)


def _provided_above(full):
    """Whether an installed plugin provides a name above ``full`` (then ``full`` is simply absent from it)."""
    parts = full.split(".")
    return any(".".join(parts[:n]) in entry_points() for n in range(1, len(parts)))


def load_module(name):
    return importlib.import_module(name)


def plugin_module(full):
    """The module an installed entry point ``full`` provides, or None (not installed, or not a module)."""
    obj = load(full)
    return obj if isinstance(obj, types.ModuleType) else None


# ---- Tensor attributes ----------------------------------------------------------------------------------------
class _TensorPluginAttribute:
    """Stands on ``oneflow.Tensor`` for an attribute a plugin provides (``Tensor.placement``): at first use it
    installs the plugin's object on the class in its place, or raises the not-installed error."""

    def __init__(self, name):
        self.name = name

    def __get__(self, obj, cls=None):
        value = install_tensor_attribute(self.name)
        if value is None:
            if obj is not None and self.name in TENSOR_DEFAULTS:
                return TENSOR_DEFAULTS[self.name]
            if obj is None and self.name in TENSOR_DEFAULTS:
                return self
            raise missing(TENSOR_PREFIX + self.name)
        return value.__get__(obj, cls) if hasattr(value, "__get__") else value


def install_tensor_attribute(name):
    """Installs the plugin object of ``Tensor.<name>`` on ``oneflow.Tensor`` and returns it (None: no plugin)."""
    value = load(TENSOR_PREFIX + name)
    if value is None:
        return None
    from ._tensor import Tensor

    setattr(Tensor, name, value)
    _tensor_installed.add(name)
    return value


def install_tensor_descriptors(tensor_cls):
    """Puts the stand-ins of the known plugin Tensor attributes on ``tensor_cls`` (at import of oneflow)."""
    for full in KNOWN:
        if full.startswith(TENSOR_PREFIX):
            setattr(tensor_cls, full[len(TENSOR_PREFIX):], _TensorPluginAttribute(full[len(TENSOR_PREFIX):]))


# ---- compile backends -----------------------------------------------------------------------------------------
def compile_backend(name):
    """The backend callable that a plugin registers as ``compile_backend.<name>``, or None."""
    return load(COMPILE_BACKEND_PREFIX + name)


def compile_backends():
    """Names of the compile backends that installed plugins provide."""
    return sorted(n[len(COMPILE_BACKEND_PREFIX):] for n in entry_points() if n.startswith(COMPILE_BACKEND_PREFIX))


# ---- imports of plugin modules --------------------------------------------------------------------------------
class _AliasLoader(importlib.abc.Loader):
    """Loads ``oneflow.<name>`` as the plugin module ``target`` itself: executing the placeholder module puts
    the real one in its place in ``sys.modules`` (the import system then returns that one)."""

    def __init__(self, target, real_spec):
        self.target, self.real_spec = target, real_spec

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        real = importlib.import_module(self.target)
        sys.modules[module.__name__] = real
        _aliases[module.__name__] = self.target

    def get_code(self, fullname):  # for python -m oneflow.<name>.<submodule>
        return self.real_spec.loader.get_code(self.target)

    def is_package(self, fullname):
        return self.real_spec.submodule_search_locations is not None


def _alias_spec(fullname, target):
    real = importlib.util.find_spec(target)
    if real is None:
        return None
    return importlib.machinery.ModuleSpec(fullname, _AliasLoader(target, real), origin=real.origin,
                                          is_package=real.submodule_search_locations is not None)


class _AliasFinder(importlib.abc.MetaPathFinder):
    """First on ``sys.meta_path``: submodules of plugin modules imported as ``oneflow.<name>``, and the plugin
    modules that replace flow-core's stubs (``oneflow.distributed``). Anything else is left to the others."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("oneflow."):
            return None
        parent, _, child = fullname.rpartition(".")
        if parent in _aliases:
            return _alias_spec(fullname, f"{_aliases[parent]}.{child}")
        rest = fullname[len("oneflow."):]
        if rest in STUBS:
            mod = plugin_module(rest)
            if mod is not None:
                return _alias_spec(fullname, mod.__name__)
        return None


class _PluginModuleFinder(importlib.abc.MetaPathFinder):
    """Last on ``sys.meta_path``, so only for ``oneflow.*`` names nothing else found: an installed plugin module,
    or, for a name a companion package provides, the error that names the package."""

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("oneflow."):
            return None
        rest = fullname[len("oneflow."):]
        mod = plugin_module(rest)
        if mod is not None:
            return _alias_spec(fullname, mod.__name__)
        if package_for(rest) is not None and rest not in entry_points() and not _provided_above(rest):
            raise missing(rest, import_=True)
        return None


def _install_finders():
    if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _AliasFinder())
    if not any(isinstance(f, _PluginModuleFinder) for f in sys.meta_path):
        sys.meta_path.append(_PluginModuleFinder())


_install_finders()
