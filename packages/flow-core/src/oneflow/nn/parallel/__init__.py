"""``oneflow.nn.parallel``: parallel wrappers of modules, with ``torch.nn.parallel``'s names.

``DistributedDataParallel`` comes from the flow-dist package (entry point ``nn.parallel.DistributedDataParallel``
of the ``oneflow.plugins`` group). Without it the name still imports, as programs import it whether or not they
run distributed, and constructing one raises an error that says to install flow-dist. Other plugins can attach
names here as ``nn.parallel.<name>``.
"""
from ... import _plugins

_DDP = "nn.parallel.DistributedDataParallel"


class _MissingDistributedDataParallel:
    """Stands for ``DistributedDataParallel`` while flow-dist is not installed: importing it works, using it
    raises the plugin error naming the package to install."""

    def __new__(cls, *args, **kwargs):
        real = _plugins.load(_DDP)
        if real is None:
            raise _plugins.missing(_DDP)
        return real(*args, **kwargs)


_MissingDistributedDataParallel.__name__ = _MissingDistributedDataParallel.__qualname__ = "DistributedDataParallel"


def __getattr__(name):
    if name.startswith("__"):  # module protocol lookups (__path__, __all__ ...) are not plugin names
        raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
    if name == "DistributedDataParallel" and _plugins.load(_DDP) is None:
        return _MissingDistributedDataParallel
    return _plugins.resolve("nn.parallel.", name)
