"""``oneflow.autocast``: regions where ops run in mixed precision, with PyTorch's CPU op lists.

Inside an enabled region, matmul/conv-like ops cast their floating inputs to the autocast dtype (bfloat16 by
default on CPU), ops that need range or precision (losses, ``prod``, 3-d pooling, ...) cast them to float32,
and ``cat``/``stack``/``index_copy`` run in the widest input type; every other op runs in the dtypes it is
given. The casts happen in the C++ dispatcher above autograd, so gradients reach float32 leaves in float32.
"""
import collections.abc
import functools
import warnings

import numpy as np

from .. import _C
from . import _policy

__all__ = ["autocast", "is_autocast_available", "is_autocast_enabled", "set_autocast_enabled",
           "get_autocast_dtype", "set_autocast_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
           "clear_autocast_cache", "autocast_increment_nesting", "autocast_decrement_nesting",
           "get_autocast_cpu_dtype", "is_autocast_cpu_enabled", "set_autocast_cpu_enabled",
           "set_autocast_cpu_dtype", "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "autocast_decorator"]

_policy.install()

# CUDA autocast state (the core has no CUDA kernels: a region for 'cuda' warns and stays disabled).
_cuda_state = {"enabled": False, "dtype": None}


def _check_device(device_type):
    if device_type not in ("cpu", "cuda"):
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")


def is_autocast_available(device_type):
    """Whether autocast supports ``device_type`` ('cpu'; 'cuda' only with a CUDA build)."""
    return device_type == "cpu" or (device_type == "cuda" and _C.cuda_is_built())


def is_autocast_enabled(device_type=None):
    """Whether autocast is on for ``device_type`` (PyTorch: no argument means 'cuda')."""
    if device_type is None:
        device_type = "cuda"
    _check_device(device_type)
    return _C._autocast_enabled() if device_type == "cpu" else _cuda_state["enabled"]


def set_autocast_enabled(device_type, enabled=None):
    """Turn autocast on or off for ``device_type`` (``set_autocast_enabled(enabled)`` means 'cuda')."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _check_device(device_type)
    if device_type == "cpu":
        _C._set_autocast_enabled(bool(enabled))
    else:
        _cuda_state["enabled"] = bool(enabled)


def get_autocast_dtype(device_type):
    """The lower-precision dtype autocast uses on ``device_type`` (bfloat16 on CPU, float16 on CUDA)."""
    _check_device(device_type)
    if device_type == "cpu":
        return _C._autocast_dtype()
    return _cuda_state["dtype"] or _C.float16


def set_autocast_dtype(device_type, dtype):
    """Sets the dtype autocast casts to on ``device_type`` ('cpu'; 'cuda' in CUDA builds) while it is enabled."""
    _check_device(device_type)
    if device_type == "cpu":
        _C._set_autocast_dtype(dtype)
    else:
        _cuda_state["dtype"] = dtype


def _deprecated(old, new):
    # the per-device spellings still work, with the DeprecationWarning PyTorch gives them
    warnings.warn(f"oneflow.{old} is deprecated. Please use oneflow.{new} instead.", DeprecationWarning,
                  stacklevel=3)


def get_autocast_cpu_dtype():
    """Deprecated: ``get_autocast_dtype('cpu')``."""
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    """Deprecated: ``set_autocast_dtype('cpu', dtype)``."""
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def is_autocast_cpu_enabled():
    """Deprecated: ``is_autocast_enabled('cpu')``."""
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled):
    """Deprecated: ``set_autocast_enabled('cpu', enabled)``."""
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_gpu_dtype():
    """Deprecated: ``get_autocast_dtype('cuda')``."""
    _deprecated("get_autocast_gpu_dtype()", "get_autocast_dtype('cuda')")
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    """Deprecated: ``set_autocast_dtype('cuda', dtype)``."""
    _deprecated("set_autocast_gpu_dtype(dtype)", "set_autocast_dtype('cuda', dtype)")
    set_autocast_dtype("cuda", dtype)


def is_autocast_cache_enabled():
    """Whether casts of float32 leaf parameters are reused within an autocast region."""
    return _C._autocast_cache_enabled()


def set_autocast_cache_enabled(enabled):
    """Turns the cache of autocast's casts of leaf tensors (parameters) on or off; it is cleared when the
    outermost autocast region exits."""
    _C._set_autocast_cache_enabled(bool(enabled))


def clear_autocast_cache():
    """Drop the cached casts of leaf parameters."""
    _C._clear_autocast_cache()


def autocast_increment_nesting():
    """Counts one more autocast region entered; returns the new depth (the cache is cleared at depth 0)."""
    return _C._autocast_increment_nesting()


def autocast_decrement_nesting():
    """Counts one autocast region left; returns the new depth (the cache is cleared at depth 0)."""
    return _C._autocast_decrement_nesting()


class autocast:
    r"""Context manager or decorator for a region that runs ops in mixed precision.

    Args:
        device_type (str): ``'cpu'`` (or ``'cuda'``, which is disabled with a warning without a CUDA build).
        dtype (oneflow.dtype, optional): the lower-precision dtype; default ``get_autocast_dtype(device_type)``
            (``oneflow.bfloat16`` on CPU). CPU supports ``bfloat16`` and ``float16``.
        enabled (bool): whether autocasting is on in the region. Default: ``True``.
        cache_enabled (bool, optional): reuse the casts of float32 leaf parameters within the region.
            Default: ``is_autocast_cache_enabled()`` (``True``).

    Example::

        >>> with oneflow.autocast("cpu", dtype=oneflow.bfloat16):
        ...     y = model(x)          # matmul/conv in bfloat16, losses in float32
        >>> y.float().sum().backward()  # gradients of float32 parameters are float32
    """

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        _check_device(device_type)
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        supported = (_C.bfloat16, _C.float16)
        if enabled:
            if device_type == "cuda" and not _C.cuda_is_built():
                warnings.warn("CUDA is not available or torch_xla is imported. Disabling autocast.", stacklevel=2)
                enabled = False
            elif self.fast_dtype not in supported:
                name = device_type.upper()
                warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                              f"{name} Autocast only supports dtypes of oneflow.bfloat16, oneflow.float16 "
                              "currently.", stacklevel=2)
                enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        self.prev_cache_enabled = is_autocast_cache_enabled()
        self.prev = is_autocast_enabled(self.device)
        self.prev_fastdtype = get_autocast_dtype(self.device)
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        set_autocast_enabled(self.device, self.prev)
        set_autocast_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you mean "
                            "to use autocast as a context manager? For example:\n"
                            "    with oneflow.autocast(device_type=...):\n"
                            "        output = model(input)")

        return autocast_decorator(self, func)


def autocast_decorator(autocast_instance, func):
    """``func`` running inside the region ``autocast_instance`` (what ``@autocast(...)`` returns)."""

    @functools.wraps(func)
    def decorate_autocast(*args, **kwargs):
        with autocast_instance:
            return func(*args, **kwargs)

    return decorate_autocast


def _cast(value, device_type, dtype):
    """Cast the floating (non-float64) tensors of ``value`` to ``dtype``: nested in mappings (given back as
    dicts), lists and tuples (same type back) and other iterables (a lazy iterator back); strings, bytes and
    numpy arrays are left alone, as in PyTorch."""
    if isinstance(value, _C.TensorBase):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype != _C.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes, np.ndarray)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, collections.abc.Iterable):
        iterable = (_cast(v, device_type, dtype) for v in value)
        return type(value)(iterable) if isinstance(value, (list, tuple)) else iterable
    return value


def custom_fwd(fwd=None, *, device_type, cast_inputs=None):
    """Decorator for the ``forward`` of a custom ``autograd.Function``: with ``cast_inputs`` set, inside an
    autocast region the inputs are cast to it and ``forward`` runs with autocast off (PyTorch's custom_fwd)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        args[0]._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            args[0]._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        args[0]._fwd_used_autocast = False
        if is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type):
    """Decorator for the ``backward`` of a custom ``autograd.Function``: runs it with the autocast state its
    forward ran with (PyTorch's custom_bwd)."""
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        with autocast(device_type=device_type, enabled=args[0]._fwd_used_autocast, dtype=args[0]._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
