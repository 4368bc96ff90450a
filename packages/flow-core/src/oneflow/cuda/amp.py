"""``oneflow.cuda.amp``: PyTorch's deprecated CUDA spellings of ``oneflow.autocast("cuda")`` and
``oneflow.amp.GradScaler("cuda")``, with the same deprecation warnings."""
import warnings

from ..amp import GradScaler as _GradScaler
from ..amp.autocast_mode import autocast as _autocast

__all__ = ["autocast", "GradScaler"]


class autocast(_autocast):
    """``oneflow.autocast("cuda", ...)`` (deprecated spelling)."""

    def __init__(self, enabled=True, dtype=None, cache_enabled=True):
        warnings.warn("`oneflow.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`oneflow.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        kwargs = {} if dtype is None else {"dtype": dtype}
        super().__init__("cuda", enabled=enabled, cache_enabled=cache_enabled, **kwargs)


class GradScaler(_GradScaler):
    """``oneflow.amp.GradScaler("cuda", ...)`` (deprecated spelling)."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        warnings.warn("`oneflow.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`oneflow.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)
