"""``LinearCrossEntropyLoss`` (PyTorch 2.13's ``torch.nn.LinearCrossEntropyLoss``): a classification head and its
cross-entropy loss in one module, computed by :func:`~oneflow.nn.functional.linear_cross_entropy`."""
import math

from .. import functional as F
from .._functional_linear_ce import LinearCrossEntropyOptions
from .linear import Linear
from .loss import _WeightedLoss

__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]


class LinearCrossEntropyLoss(_WeightedLoss):
    """Projects ``input`` with its own :class:`Linear` (``in_features`` to ``num_classes`` times the
    ``out_features`` dims) and returns the cross entropy against ``target``; with ``options`` the loss is computed
    in row chunks without materializing all logits (see :func:`~oneflow.nn.functional.linear_cross_entropy`).

    Args:
        in_features (int): size of each input sample.
        num_classes (int): number of classes C.
        out_features (tuple): extra output dims for a K-dimensional loss (default ``()``).
        bias (bool): whether the projection has a bias (default False).
        reduction, weight, ignore_index, label_smoothing: as :class:`CrossEntropyLoss` (``ignore_index=None``
            ignores nothing).
        options (LinearCrossEntropyOptions, optional): opt in to the chunked implementation.
    """

    def __init__(self, in_features, num_classes, *, out_features=(), bias=False, device=None, dtype=None,
                 reduction="mean", weight=None, ignore_index=None, label_smoothing=0.0, options=None):
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if label_smoothing < 0 or label_smoothing > 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight=weight, size_average=None, reduce=None, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = tuple(out_features)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(self.out_features, start=num_classes), bias=bias, device=device,
                             dtype=dtype)
        self.options = options

    def forward(self, input, target):
        w = self.linear.weight.reshape((self.num_classes, *self.out_features, self.linear.in_features))
        b = self.linear.bias.reshape((self.num_classes, *self.out_features)) if self.linear.bias is not None else None
        return F.linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight, reduction=self.reduction,
                                      ignore_index=self.ignore_index, label_smoothing=self.label_smoothing,
                                      options=self.options)

    def extra_repr(self):
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, "
                f"reduction={self.reduction}, ignore_index={self.ignore_index}, "
                f"label_smoothing={self.label_smoothing}, options={self.options}")
