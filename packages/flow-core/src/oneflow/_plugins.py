"""Plugins: packages that attach to the ``oneflow`` namespace through the entry-point group ``oneflow.plugins``.

An entry point ``name = module:attr`` makes ``oneflow.<name>`` (or ``oneflow.nn.<rest>`` for names starting
``nn.``) resolve lazily to that object. The project's own companion packages register this way; until one is
installed its names raise ``PluginNotInstalledError`` saying which package to install.
"""
import importlib
from importlib import metadata

GROUP = "oneflow.plugins"

# Names the companion packages provide, and the package to install for each.
KNOWN = {
    "nn.Graph": "flow-graph",
    "placement": "flow-dist",
    "sbp": "flow-dist",
    "env": "flow-dist",
    "distributed": "flow-dist",
    "one_embedding": "flow-embedding",
    "mock_torch": "flow-torchcompat",
}

_entry_points = None
_loaded = {}


class PluginNotInstalledError(AttributeError):
    """Raised for a plugin name whose package is not installed (an AttributeError, so hasattr() is False)."""


def refresh():
    """Forget cached entry points (after installing a plugin in a running process)."""
    global _entry_points
    _entry_points = None
    _loaded.clear()


def entry_points():
    global _entry_points
    if _entry_points is None:
        eps = metadata.entry_points()
        group = eps.select(group=GROUP) if hasattr(eps, "select") else eps.get(GROUP, [])
        _entry_points = {ep.name: ep for ep in group}
    return _entry_points


def available():
    """Names provided by installed plugins."""
    return sorted(entry_points())


def resolve(prefix, name):
    """Resolve ``oneflow.<prefix><name>`` through plugins, or raise the right error."""
    full = prefix + name
    if full in _loaded:
        return _loaded[full]
    ep = entry_points().get(full)
    if ep is not None:
        obj = ep.load()
        _loaded[full] = obj
        return obj
    if full in KNOWN:
        pkg = KNOWN[full]
        raise PluginNotInstalledError(
            f"oneflow.{full} is provided by the '{pkg}' package, which is not installed. "
            f"Install it with `pip install {pkg}` (in this repository: `pip install packages/{pkg}`).")
    mod = "oneflow" + ("." + prefix.rstrip(".") if prefix else "")
    raise AttributeError(f"module '{mod}' has no attribute '{name}'")


def load_module(name):
    return importlib.import_module(name)
