"""``oneflow.nn.utils.skip_init``: build a module without running its parameter initialisation."""
import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    r"""Instantiates ``module_cls(*args, **kwargs)`` with uninitialised parameters and buffers (their memory
    is allocated on ``device`` but not filled), for when they are about to be overwritten anyway, e.g. from a
    checkpoint. As in PyTorch, ``module_cls`` must accept a ``device`` argument.

    Example::

        >>> lin = oneflow.nn.utils.skip_init(oneflow.nn.Linear, 5, 1)
        >>> lin.weight.shape
        oneflow.Size([1, 5])
    """
    from ..modules.module import Module

    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)
