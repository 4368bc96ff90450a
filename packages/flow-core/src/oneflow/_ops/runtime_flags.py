"""Process-wide settings and predicates of PyTorch's top level that this CPU build keeps in Python:
the checks of the intra-op thread count, the inter-op thread count, denormal flushing, warn-always, the legacy
default tensor type, the deterministic debug mode, and the ``get_device`` / ``is_storage`` / ``is_distributed``
queries."""
import builtins
import numbers
import os
import warnings

from .. import _C

__all__ = ["set_num_threads", "get_num_interop_threads", "set_num_interop_threads", "set_flush_denormal",
           "set_warn_always", "is_warn_always_enabled", "set_default_tensor_type", "get_deterministic_debug_mode",
           "set_deterministic_debug_mode", "get_device", "is_storage", "is_distributed"]

# PyTorch defaults the inter-op pool to the hardware concurrency; there is no such pool here, so the number is
# only recorded, and returned, for code that sizes its own work by it.
_state = {"interop_threads": os.cpu_count() or 1, "warn_always": False}


def _need_tensor(fn, value):
    if not isinstance(value, _C.TensorBase):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(value).__name__}")


def set_num_threads(num):
    """set_num_threads(int)

    Sets the number of threads OpenMP uses for intra-op parallelism on CPU (see :func:`oneflow.get_num_threads`).
    ``num`` must be a positive int, as in PyTorch: anything else raises ``RuntimeError`` instead of being
    passed on to OpenMP, which would silently ignore it."""
    # NumPy integers are Integral and count as ints, as in PyTorch
    if isinstance(num, builtins.bool) or not isinstance(num, numbers.Integral):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(num).__name__}")
    num = builtins.int(num)
    if num <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    if num > 2 ** 31 - 1:
        raise ValueError("Overflow when unpacking long")
    _C.set_num_threads(num)


def get_num_interop_threads():
    """get_num_interop_threads() -> int

    Returns the number of threads used for inter-op parallelism on CPU (the value last set, by default the
    number of CPUs). This build runs ops one after another, so the value schedules nothing."""
    return _state["interop_threads"]


def set_num_interop_threads(num):
    """set_num_interop_threads(int)

    Sets the number of threads used for inter-op parallelism on CPU. Recorded for
    :func:`get_num_interop_threads`; this build has no inter-op thread pool."""
    if isinstance(num, builtins.bool) or not isinstance(num, builtins.int):
        raise RuntimeError(f"set_num_interop_threads expects an int, but got {type(num).__name__}")
    if num <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    _state["interop_threads"] = num


def set_flush_denormal(mode):
    """set_flush_denormal(mode) -> bool

    Disables denormal floating numbers on CPU. Returns ``True`` if the system supports flushing denormal
    numbers and the mode was configured. The kernels of this build cannot switch the CPU's flush-to-zero mode,
    so turning it on returns ``False`` (unsupported, nothing changes) and turning it off returns ``True``
    (denormals are already kept)."""
    if not isinstance(mode, builtins.bool):
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    return not mode


def set_warn_always(b):
    """When this flag is False (default), some warnings may only appear once per process; setting it to True
    makes them always appear. Recorded for :func:`is_warn_always_enabled`."""
    if not isinstance(b, builtins.bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _state["warn_always"] = b


def is_warn_always_enabled():
    """Returns True if the global warn_always flag is turned on (see :func:`set_warn_always`)."""
    return _state["warn_always"]


# The legacy tensor-type names PyTorch accepts; only the floating ones can become the default.
_FLOAT_TYPES = {"FloatTensor": _C.float32, "DoubleTensor": _C.float64, "HalfTensor": _C.float16,
                "BFloat16Tensor": _C.bfloat16}
_OTHER_TYPES = {"ByteTensor", "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "BoolTensor"}


def set_default_tensor_type(t):
    """Sets the default floating point tensor type (deprecated since PyTorch 2.1: use
    :func:`oneflow.set_default_dtype` and :func:`oneflow.set_default_device`).

    Args:
        t (str): the legacy name of a floating point tensor type, e.g. ``"torch.DoubleTensor"`` (the
            ``oneflow.`` prefix is accepted too), or the legacy type class itself (``oneflow.DoubleTensor``); a
            CUDA type name also switches the default device, which fails without CUDA."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    from .._tensor import LEGACY_TYPES

    if t in LEGACY_TYPES:  # a legacy type class (oneflow.DoubleTensor): its name
        t = f"oneflow.{t.__name__}"
    if not isinstance(t, str):
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    module, _, name = t.rpartition(".")
    if not module:
        raise ModuleNotFoundError(f"No module named '{t}'")
    root, _, sub = module.partition(".")
    if root not in ("torch", "oneflow") or sub not in ("", "cuda"):
        raise ModuleNotFoundError(f"No module named '{module}'")
    if name in _OTHER_TYPES:
        raise TypeError("only floating-point types are supported as the default type")
    if name not in _FLOAT_TYPES:
        raise AttributeError(f"module '{module}' has no attribute '{name}'")
    if sub == "cuda":
        from .switches import set_default_device

        set_default_device("cuda")
    _C.set_default_dtype(_FLOAT_TYPES[name])


def get_deterministic_debug_mode():
    """Returns the current debug mode for deterministic operations: 0 (``"default"``), 1 (``"warn"``) or 2
    (``"error"``); see :func:`set_deterministic_debug_mode`."""
    from .switches import are_deterministic_algorithms_enabled, is_deterministic_algorithms_warn_only_enabled

    if not are_deterministic_algorithms_enabled():
        return 0
    return 1 if is_deterministic_algorithms_warn_only_enabled() else 2


def set_deterministic_debug_mode(debug_mode):
    """Sets the debug mode for deterministic operations, an alternative interface to
    :func:`oneflow.use_deterministic_algorithms`.

    Args:
        debug_mode (str or int): ``"default"`` or 0 (allow nondeterministic ops), ``"warn"`` or 1 (warn on
            them), ``"error"`` or 2 (raise on them)."""
    from .switches import use_deterministic_algorithms

    if isinstance(debug_mode, str):
        names = {"default": 0, "warn": 1, "error": 2}
        if debug_mode not in names:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = names[debug_mode]
    elif not isinstance(debug_mode, builtins.int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_device(input):
    """get_device(input) -> int

    The index of the device ``input`` is on: -1 for the CPU, the device ordinal for an accelerator."""
    _need_tensor("get_device", input)
    d = input.device
    return -1 if d.type == "cpu" else (d.index or 0)


def is_storage(obj):
    """Returns True if ``obj`` is a storage object (an ``UntypedStorage`` or a ``TypedStorage``)."""
    from .storage import UntypedStorage

    return isinstance(obj, UntypedStorage)


def is_distributed(input):
    """is_distributed(input) -> bool

    Whether ``input`` is a distributed tensor: never in this package (global tensors are a companion
    package's)."""
    _need_tensor("is_distributed", input)
    return False


TENSOR_METHODS = {"is_distributed": is_distributed}
