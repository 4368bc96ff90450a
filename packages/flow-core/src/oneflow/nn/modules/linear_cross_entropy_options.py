"""``LinearCrossEntropyOptions`` at ``torch.nn.modules.linear_cross_entropy_options``'s path (defined with the
functional form it configures)."""
from .._functional_linear_ce import LinearCrossEntropyOptions  # noqa: F401

__all__ = []  # exported as oneflow.nn.LinearCrossEntropyOptions from linear_cross_entropy.py
