"""Neural-network building blocks (``oneflow.nn``)."""
from .. import _plugins
from . import functional  # noqa: F401


def __getattr__(name):
    return _plugins.resolve("nn.", name)
