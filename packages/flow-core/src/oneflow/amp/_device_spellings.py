"""The deprecated per-device spellings of autocast and GradScaler (``oneflow.cuda.amp.autocast(...)``,
``oneflow.cpu.amp.GradScaler(...)``, ...): the generic classes bound to one device, warning as PyTorch's do."""
import warnings

from .autocast_mode import autocast as _autocast
from .grad_scaler import GradScaler as _GradScaler


def device_amp(device):
    """(autocast, GradScaler) classes for ``oneflow.<device>.amp``."""

    class autocast(_autocast):
        __doc__ = f'``oneflow.autocast("{device}", ...)`` (deprecated spelling).'

        def __init__(self, enabled=True, dtype=None, cache_enabled=True):
            warnings.warn(f"`oneflow.{device}.amp.autocast(args...)` is deprecated. Please use "
                          f"`oneflow.amp.autocast('{device}', args...)` instead.", FutureWarning, stacklevel=2)
            kwargs = {} if dtype is None else {"dtype": dtype}
            super().__init__(device, enabled=enabled, cache_enabled=cache_enabled, **kwargs)

    class GradScaler(_GradScaler):
        __doc__ = f'``oneflow.amp.GradScaler("{device}", ...)`` (deprecated spelling).'

        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                     enabled=True):
            warnings.warn(f"`oneflow.{device}.amp.GradScaler(args...)` is deprecated. Please use "
                          f"`oneflow.amp.GradScaler('{device}', args...)` instead.", FutureWarning, stacklevel=2)
            super().__init__(device, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

    for cls in (autocast, GradScaler):
        cls.__module__ = f"oneflow.{device}.amp"
        cls.__qualname__ = cls.__name__
    return autocast, GradScaler
