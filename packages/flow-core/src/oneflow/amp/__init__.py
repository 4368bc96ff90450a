"""Mixed precision: ``oneflow.amp.autocast`` (also ``oneflow.autocast``), ``GradScaler`` and ``StaticGradScaler``."""
from .autocast_mode import *  # noqa: F401,F403
from .autocast_mode import __all__ as _autocast_all
from .autocast_mode import custom_bwd, custom_fwd  # noqa: F401
from .grad_scaler import GradScaler, OptState  # noqa: F401
from .static_grad_scaler import StaticGradScaler  # noqa: F401

__all__ = list(_autocast_all) + ["GradScaler", "StaticGradScaler", "custom_fwd", "custom_bwd"]
