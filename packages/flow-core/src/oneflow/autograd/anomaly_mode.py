"""``oneflow.autograd.anomaly_mode`` (PyTorch's module path): ``detect_anomaly`` and ``set_detect_anomaly``."""
import warnings

from .. import _C
from .grad_mode import _GradModeBase

__all__ = ["detect_anomaly", "set_detect_anomaly"]


class set_detect_anomaly:
    """Turns anomaly detection on or off: immediately, and as a context manager until the block ends. While on,
    ``backward`` raises as soon as a node returns NaN gradients, naming the node (``check_nan``). Unlike
    PyTorch's, it does not record the forward traceback of each node."""

    def __init__(self, mode, check_nan=True):
        self.prev = (_C.is_anomaly_enabled(), _C.is_anomaly_check_nan_enabled())
        _C._set_anomaly_enabled(bool(mode), bool(check_nan))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(*self.prev)
        return False


class detect_anomaly(_GradModeBase):
    """Context manager (or decorator) enabling anomaly detection for its block (see ``set_detect_anomaly``)."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        self._args = (check_nan,)

    def __enter__(self):
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.")
        self.prev = (_C.is_anomaly_enabled(), _C.is_anomaly_check_nan_enabled())
        _C._set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(*self.prev)
        return False
