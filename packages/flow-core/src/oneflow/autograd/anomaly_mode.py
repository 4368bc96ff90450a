"""``oneflow.autograd.anomaly_mode`` (PyTorch's module path): ``detect_anomaly`` and ``set_detect_anomaly``."""
from . import detect_anomaly, set_detect_anomaly  # noqa: F401

__all__ = ["detect_anomaly", "set_detect_anomaly"]
