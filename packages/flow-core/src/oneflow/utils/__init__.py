"""Utilities (PyTorch's ``torch.utils``): ``oneflow.utils.data`` (datasets, samplers, DataLoader),
``oneflow.utils.checkpoint`` (activation checkpointing), ``oneflow.utils.dlpack`` (DLPack exchange),
``oneflow.utils.tensorboard`` (SummaryWriter) and ``oneflow.utils.vision`` (dataset readers and transforms)."""
from . import checkpoint  # noqa: F401
from . import data  # noqa: F401
from . import dlpack  # noqa: F401
