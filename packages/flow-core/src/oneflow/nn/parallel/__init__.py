"""``oneflow.nn.parallel``: parallel wrappers of modules, with ``torch.nn.parallel``'s names.

``DistributedDataParallel`` comes from the flow-dist package (entry point ``nn.parallel.DistributedDataParallel``
of the ``oneflow.plugins`` group); without it, using the name raises an error that says to install flow-dist.
Other plugins can attach names here as ``nn.parallel.<name>``.
"""
from ... import _plugins


def __getattr__(name):
    if name.startswith("__"):  # module protocol lookups (__path__, __all__ ...) are not plugin names
        raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
    return _plugins.resolve("nn.parallel.", name)
