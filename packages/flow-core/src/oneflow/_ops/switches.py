"""Process-wide switches with PyTorch's names: float32 matmul precision, deterministic algorithms and the
default device. They are stored in Python and validated like PyTorch's; in this CPU-only build they select
nothing (every kernel is already deterministic and computes float32 matmuls in full precision, and CPU is the
only device), so scripts that set them run unchanged."""
import builtins

from .. import _C

__all__ = ["set_float32_matmul_precision", "get_float32_matmul_precision", "use_deterministic_algorithms",
           "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
           "set_default_device", "get_default_device"]

_state = {"matmul_precision": "highest", "deterministic": False, "warn_only": False}


def set_float32_matmul_precision(precision):
    """Records the internal precision of float32 matrix multiplications: ``'highest'`` (default), ``'high'``
    or ``'medium'``. Other strings warn and change nothing, as in PyTorch. Has no effect on CPU kernels."""
    if not isinstance(precision, str):
        raise RuntimeError(f"set_float32_matmul_precision expects a str, but got {type(precision).__name__}")
    if precision not in ("highest", "high", "medium"):
        import warnings

        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      f"set_float32_matmul_precision call has no effect.", UserWarning, stacklevel=2)
        return
    _state["matmul_precision"] = precision


def get_float32_matmul_precision():
    """The value last set by ``set_float32_matmul_precision`` (``'highest'`` by default)."""
    return _state["matmul_precision"]


def _check_bool(name, value, position=""):
    if not isinstance(value, builtins.bool):
        raise TypeError(f"_set_deterministic_algorithms(): argument '{name}'{position} must be bool, not "
                        f"{type(value).__name__}")


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Records whether only deterministic algorithms may be used (and whether violations would only warn).
    Every kernel of this CPU build is deterministic, so nothing is ever refused."""
    _check_bool("mode", mode, " (position 1)")
    _check_bool("warn_only", warn_only)
    _state["deterministic"], _state["warn_only"] = mode, warn_only


def are_deterministic_algorithms_enabled():
    """Whether ``use_deterministic_algorithms(True)`` is in effect."""
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    """Whether ``use_deterministic_algorithms(..., warn_only=True)`` is in effect."""
    return _state["warn_only"]


def set_default_device(device):
    """Sets the device factory functions allocate on when given none: ``'cpu'`` (or ``None``, which resets to
    it), or ``'meta'`` (tensors with metadata only). Other devices raise the error ``oneflow.ones(1, device=...)``
    raises in this build."""
    from . import creation

    creation._default_device[0] = None if device is None else creation._device(device)


def get_default_device():
    """The device factory functions allocate on when given none (``device(type='cpu')`` unless
    :func:`set_default_device` chose another)."""
    from . import creation

    return creation._default_device[0] or _C.device("cpu")


def _device_enter(self):
    # ``with oneflow.device(d):`` makes d the factory functions' default, as in PyTorch, until the block ends
    from . import creation

    stack = creation.__dict__.setdefault("_device_stack", [])
    stack.append(creation._default_device[0])
    set_default_device(self)
    return self


def _device_exit(self, *exc):
    from . import creation

    creation._default_device[0] = creation.__dict__.get("_device_stack", [None]).pop()
    return False


_C.device.__enter__ = _device_enter
_C.device.__exit__ = _device_exit
