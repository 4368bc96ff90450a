"""``oneflow.cpu``: the CPU device module (``torch.cpu``'s queries, which on the CPU are trivial, and its
deprecated ``amp`` spellings)."""
from . import amp  # noqa: F401

__all__ = ["is_available", "device_count", "current_device", "synchronize", "amp"]


def is_available():
    """Always True: the CPU backend is part of every build."""
    return True


def device_count():
    """The number of CPU devices: 1 (threads are not devices)."""
    return 1


def current_device():
    """The current CPU device's name: ``"cpu"``."""
    return "cpu"


def synchronize(device=None):
    """Waits for work queued on the CPU: none is ever queued, so this returns at once."""
