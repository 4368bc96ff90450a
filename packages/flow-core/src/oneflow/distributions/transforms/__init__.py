"""Invertible maps between constrained spaces (PyTorch's ``torch.distributions.transforms``): each transform has
a ``domain`` and ``codomain`` constraint, computes ``y = t(x)``, ``x = t.inv(y)`` and ``log|dy/dx|``, and knows
how it changes tensor shapes. :class:`~oneflow.distributions.TransformedDistribution` pushes a distribution
through a chain of them.

The transforms live in one module per kind (base, elementwise, vector_matrix, joint)."""
from .base import ComposeTransform, IndependentTransform, ReshapeTransform, Transform, identity_transform
from .elementwise import (AbsTransform, AffineTransform, CumulativeDistributionTransform, ExpTransform, PowerTransform,
                          SigmoidTransform, SoftplusTransform, TanhTransform)
from .joint import CatTransform, StackTransform
from .vector_matrix import (CorrCholeskyTransform, LowerCholeskyTransform, PositiveDefiniteTransform, SoftmaxTransform,
                            StickBreakingTransform)

__all__ = ["AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftplusTransform",
           "TanhTransform", "SoftmaxTransform", "StackTransform", "StickBreakingTransform", "Transform",
           "identity_transform"]
