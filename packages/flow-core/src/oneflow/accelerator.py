r"""``oneflow.accelerator``: the device-agnostic accelerator API of PyTorch 2.6+ (``torch.accelerator``).

The accelerator is the device type this build of oneflow was compiled for besides the CPU: ``cuda`` in a CUDA
build, none otherwise. Every call delegates to that device's module (:mod:`oneflow.cuda`). A CPU-only build
behaves as a CPU-only PyTorch: :func:`current_accelerator` is ``None``, :func:`is_available` is ``False``,
:func:`device_count` is 0, and calls that need a device raise ``RuntimeError``.

Example::

    >>> device = flow.accelerator.current_accelerator(check_available=True) or flow.device("cpu")
    >>> model = flow.nn.Linear(2, 2).to(device)
"""
import warnings

from . import _C

__all__ = [
    "current_accelerator", "current_device_idx", "current_device_index", "device_count", "device_index",
    "empty_cache", "is_available", "max_memory_allocated", "max_memory_reserved", "memory_allocated",
    "memory_reserved", "reset_peak_memory_stats", "set_device_idx", "set_device_index", "synchronize",
]

_NONE_AVAILABLE = "Cannot access accelerator device when none is available."


def _device_module():
    """The module of the build's accelerator, or PyTorch's error when there is none."""
    if current_accelerator() is None:
        raise RuntimeError(_NONE_AVAILABLE)
    from . import cuda

    return cuda


def _get_device_index(device, optional=False):
    """A device index from an int, a device string or a device of the accelerator's type (PyTorch's rules)."""
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if isinstance(device, str):
        device = _C.device(device)
    index = None
    if isinstance(device, _C.device):
        acc = current_accelerator()
        if acc is None:
            raise RuntimeError("Accelerator expected")
        if acc.type != device.type:
            raise ValueError(f"{device.type} doesn't match the current accelerator {acc}.")
        index = device.index
    if index is None:
        if not optional:
            raise ValueError(f"Expected a oneflow.device with a specified index or an integer, but got:{device}")
        return current_device_index()
    return index


def current_accelerator(check_available=False):
    r"""Return the device of the accelerator available at compilation time.
    If no accelerator were available at compilation time, returns None.

    Args:
        check_available (bool, optional): if True, will also do a runtime check to see if the device
            :func:`oneflow.accelerator.is_available` on top of the compile-time check. Default: ``False``

    Returns:
        oneflow.device: the current accelerator as a :class:`oneflow.device` (without an index; see
        :func:`current_device_index`), or ``None``.
    """
    if not _C.cuda_is_built():
        return None
    if check_available and not is_available():
        return None
    return _C.device("cuda")


def is_available():
    r"""Check if the current accelerator is available at runtime: it was built, all the required drivers are
    available and at least one device is visible.

    Returns:
        bool: A boolean indicating if there is an available accelerator.
    """
    if current_accelerator() is None:
        return False
    from . import cuda

    return cuda.is_available()


def device_count():
    r"""Return the number of current accelerator available.

    Returns:
        int: the number of the current accelerator available. If there is no available accelerators, return 0.
    """
    if current_accelerator() is None:
        return 0
    from . import cuda

    return cuda.device_count()


def current_device_index():
    r"""Return the index of a currently selected device for the current accelerator.

    Returns:
        int: the index of a currently selected device.

    Raises:
        RuntimeError: when there is no accelerator.
    """
    return _device_module().current_device()


def current_device_idx():
    r"""(Deprecated) Return the index of a currently selected device for the current accelerator.

    .. warning::
        :func:`current_device_idx` is deprecated in favor of :func:`current_device_index`.
    """
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_index(device, /):
    r"""Set the current device index to a given device.

    Args:
        device (:class:`oneflow.device`, str, int): a given device that must match the current accelerator
            device type.

    .. note:: This function is a no-op if this device index is negative.
    """
    index = _get_device_index(device, optional=False)
    if index < 0:
        return
    _device_module().set_device(index)


def set_device_idx(device, /):
    r"""(Deprecated) Set the current device index to a given device.

    .. warning::
        :func:`set_device_idx` is deprecated in favor of :func:`set_device_index`.
    """
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


def synchronize(device=None, /):
    r"""Wait for all kernels in all streams on the given device to complete.

    Args:
        device (:class:`oneflow.device`, str, int, optional): device for which to synchronize. It must match
            the current accelerator device type. If not given, use :func:`current_device_index` by default.
    """
    index = _get_device_index(device, optional=True)
    _device_module().synchronize(index)


class device_index:
    r"""Context manager to set the current device index for the current accelerator.

    Temporarily changes the current device index to the specified value for the duration of the context, and
    automatically restores the previous device index when exiting the context.

    Args:
        device (Optional[int]): a given device index to temporarily set. If None, no device index switching
            occurs.

    Example::

        >>> with flow.accelerator.device_index(0):
        ...     pass  # code here runs with device 0 as the current device
    """

    def __init__(self, device, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            mod = _device_module()
            self.prev_idx = mod.current_device()
            if self.idx >= 0:
                mod.set_device(self.idx)

    def __exit__(self, *exc_info):
        if self.idx is not None and self.prev_idx >= 0:
            _device_module().set_device(self.prev_idx)


# ---- memory: the accelerator's caching allocator ------------------------------------------------------------
def empty_cache():
    r"""Release all unoccupied cached memory currently held by the caching allocator so that those can be used
    in other application."""
    _device_module().empty_cache()


def memory_allocated(device_index=None, /):
    r"""Return the current accelerator device memory occupied by tensors in bytes for a given device index."""
    mod = _device_module()  # first, as in PyTorch: without an accelerator nothing else is checked
    return mod.memory_allocated(_get_device_index(device_index, optional=True))


def max_memory_allocated(device_index=None, /):
    r"""Return the current accelerator maximum device memory occupied by tensors in bytes for a given device
    index (the peak since the start or the last :func:`reset_peak_memory_stats`)."""
    mod = _device_module()  # first, as in PyTorch: without an accelerator nothing else is checked
    return mod.max_memory_allocated(_get_device_index(device_index, optional=True))


def memory_reserved(device_index=None, /):
    r"""Return the current accelerator device memory managed by the caching allocator in bytes for a given
    device index."""
    mod = _device_module()  # first, as in PyTorch: without an accelerator nothing else is checked
    return mod.memory_reserved(_get_device_index(device_index, optional=True))


def max_memory_reserved(device_index=None, /):
    r"""Return the current accelerator maximum device memory managed by the caching allocator in bytes for a
    given device index."""
    mod = _device_module()  # first, as in PyTorch: without an accelerator nothing else is checked
    return mod.max_memory_reserved(_get_device_index(device_index, optional=True))


def reset_peak_memory_stats(device_index=None, /):
    r"""Reset the "peak" stats tracked by the current accelerator memory allocator."""
    mod = _device_module()
    mod.reset_peak_memory_stats(_get_device_index(device_index, optional=True))
