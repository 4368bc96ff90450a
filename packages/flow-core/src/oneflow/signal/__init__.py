"""Signal processing, as ``torch.signal``: the :mod:`oneflow.signal.windows` window functions."""
from . import windows  # noqa: F401

__all__ = ["windows"]
