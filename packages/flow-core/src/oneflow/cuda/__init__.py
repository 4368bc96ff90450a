"""``oneflow.cuda``: CUDA device queries with ``torch.cuda``'s names, so that scripts written as
``device = "cuda" if flow.cuda.is_available() else "cpu"`` run unchanged.

This build of flow-core has no CUDA kernels: ``is_available()`` is False and ``device_count()`` is 0. As in a
CPU-only PyTorch, seeding and cache calls do nothing, memory statistics are 0, and calls that need a device
raise an ``AssertionError`` that says so.
"""
from .. import _C
from . import amp  # noqa: F401

__all__ = [
    "is_available", "device_count", "is_initialized", "init", "current_device", "set_device", "synchronize",
    "get_device_name", "get_device_capability", "get_device_properties", "empty_cache", "manual_seed",
    "manual_seed_all", "seed", "seed_all", "memory_allocated", "max_memory_allocated", "memory_reserved",
    "max_memory_reserved", "reset_peak_memory_stats", "is_bf16_supported",
]


def _device_count():
    # a CUDA build would report its devices here; this one has none
    return int(_C.cuda_device_count()) if _C.cuda_is_built() and hasattr(_C, "cuda_device_count") else 0


def is_available():
    """True when oneflow was built with CUDA and a CUDA device is present."""
    return _device_count() > 0


def device_count():
    """The number of CUDA devices (0 without a CUDA build)."""
    return _device_count()


def is_initialized():
    """Whether CUDA state has been initialised (never, without devices)."""
    return False


def _lazy_init():
    if not is_available():
        raise AssertionError("oneflow was built without CUDA support (rebuild flow-core with -DFLOW_WITH_CUDA=ON)"
                             if not _C.cuda_is_built() else "no CUDA device is available")


def init():
    """Initialises CUDA; raises when no device is available."""
    _lazy_init()


def current_device():
    """The index of the current CUDA device."""
    _lazy_init()
    return 0


def set_device(device):
    """Selects the current CUDA device."""
    _lazy_init()


def synchronize(device=None):
    """Waits for all work queued on ``device``."""
    _lazy_init()


def get_device_name(device=None):
    """The name of ``device``."""
    _lazy_init()


def get_device_capability(device=None):
    """The compute capability ``(major, minor)`` of ``device``."""
    _lazy_init()


def get_device_properties(device=None):
    """The properties of ``device``."""
    _lazy_init()


def empty_cache():
    """Releases cached device memory (nothing to release without devices)."""


def manual_seed(seed):
    """Seeds the current device's generator (queued until CUDA is used, as in PyTorch: no effect without devices)."""


def manual_seed_all(seed):
    """Seeds every device's generator (no effect without devices)."""


def seed():
    """Seeds the current device's generator randomly (no effect without devices)."""


def seed_all():
    """Seeds every device's generator randomly (no effect without devices)."""


def memory_allocated(device=None):
    """Bytes of device memory held by tensors (0 without devices)."""
    return 0


def max_memory_allocated(device=None):
    """Peak of ``memory_allocated`` (0 without devices)."""
    return 0


def memory_reserved(device=None):
    """Bytes of device memory held by the caching allocator (0 without devices)."""
    return 0


def max_memory_reserved(device=None):
    """Peak of ``memory_reserved`` (0 without devices)."""
    return 0


def reset_peak_memory_stats(device=None):
    """Resets the peaks of the memory statistics (nothing to reset without devices)."""


def is_bf16_supported(including_emulation=True):
    """Whether the CUDA device supports bfloat16 (False without devices, as in a CPU-only PyTorch)."""
    return False
