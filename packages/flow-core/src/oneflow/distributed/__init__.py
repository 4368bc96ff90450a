"""``oneflow.distributed`` without its plugin: the flow-dist package provides the real module (process groups,
collectives, the launcher). With flow-dist installed, ``import oneflow.distributed`` gives flow-dist's module
instead of this one (see ``oneflow._plugins``).

As ``torch.distributed`` on a build without distributed support, this module imports, :func:`is_available` and
:func:`is_initialized` are False, so that code such as
``if dist.is_available() and dist.is_initialized(): ...`` runs; every other name raises an error (an
``AttributeError``, or an ``ImportError`` for ``from oneflow.distributed import ...``) that says to install
flow-dist.
"""
from .. import _plugins

__all__ = ["is_available", "is_initialized"]


def is_available():
    """Whether the distributed package is available: False, flow-dist is not installed."""
    return False


def is_initialized():
    """Whether the default process group has been initialized: never, flow-dist is not installed."""
    return False


def __getattr__(name):
    if name.startswith("__"):  # module protocol lookups (__path__, __all__ ...) are not plugin names
        raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
    raise _plugins.missing(f"distributed.{name}")
