"""TensorBoard logging, as ``torch.utils.tensorboard``: :class:`SummaryWriter` writes the event files itself,
so neither TensorFlow nor the ``tensorboard`` package is needed to log (only to view)."""
from .writer import SummaryWriter  # noqa: F401

__all__ = ["SummaryWriter"]
