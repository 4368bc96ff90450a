"""``oneflow.autograd.grad_mode`` (PyTorch's module path for the grad-mode context managers): ``no_grad``,
``enable_grad``, ``set_grad_enabled``, ``inference_mode``, and ``set_multithreading_enabled``."""
from . import enable_grad, inference_mode, no_grad, set_grad_enabled  # noqa: F401
from . import _GradModeBase

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "set_multithreading_enabled"]

_multithreading = [True]


class set_multithreading_enabled(_GradModeBase):
    """Context manager (or decorator) that turns multithreaded backward on or off, as PyTorch's: the flag is
    recorded and reported by ``is_multithreading_enabled``. This engine runs every backward on the calling
    thread (parallelism is inside the kernels), so the flag changes nothing else."""

    def __init__(self, mode):
        self.mode = bool(mode)
        self._args = (mode,)

    def __enter__(self):
        # set on entry only: PyTorch's guard object, made at construction, is released (and the setting
        # undone) as soon as the object is dropped, so the switch only lasts for a with block or a call
        self.prev = _multithreading[0]
        _multithreading[0] = self.mode

    def __exit__(self, *exc):
        _multithreading[0] = self.prev
        return False


def is_multithreading_enabled():
    """Whether multithreaded backward is enabled (see :class:`set_multithreading_enabled`)."""
    return _multithreading[0]
