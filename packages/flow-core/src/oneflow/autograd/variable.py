"""``oneflow.autograd.variable`` (PyTorch's module path for the legacy ``Variable``)."""
from . import Variable  # noqa: F401

__all__ = ["Variable"]
