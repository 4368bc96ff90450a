"""Utilities (PyTorch's ``torch.utils``): ``oneflow.utils.data`` (datasets, samplers, DataLoader) and
``oneflow.utils.vision`` (dataset readers and transforms)."""
from . import data  # noqa: F401
