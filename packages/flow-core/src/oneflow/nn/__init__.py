"""Neural-network building blocks (``oneflow.nn``)."""
import importlib as _importlib
import os as _os

from .. import _plugins
from . import functional  # noqa: F401
from .parameter import Parameter, Buffer, UninitializedParameter, UninitializedBuffer  # noqa: F401
from .modules.module import Module  # noqa: F401
from .modules.container import Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict  # noqa: F401


def _export_modules():
    here = _os.path.join(_os.path.dirname(__file__), "modules")
    out = {}
    for f in sorted(_os.listdir(here)):
        if f.endswith(".py") and not f.startswith("_") and f not in ("module.py", "container.py"):
            m = _importlib.import_module(f"{__name__}.modules.{f[:-3]}")
            for n in getattr(m, "__all__", ()):
                out[n] = getattr(m, n)
    return out


globals().update(_export_modules())
# defined beside MultiheadAttention, which it implements; nn.functional is loaded before nn.modules
functional.multi_head_attention_forward = _importlib.import_module(
    f"{__name__}.modules.transformer").multi_head_attention_forward
functional.__all__ = list(getattr(functional, "__all__", [])) + ["multi_head_attention_forward"]
for _sub in ("init", "utils", "attention", "grad", "parallel"):
    if _os.path.exists(_os.path.join(_os.path.dirname(__file__), _sub + ".py")) or _os.path.isdir(
            _os.path.join(_os.path.dirname(__file__), _sub)):
        globals()[_sub] = _importlib.import_module(f"{__name__}.{_sub}")


def __getattr__(name):
    return _plugins.resolve("nn.", name)
