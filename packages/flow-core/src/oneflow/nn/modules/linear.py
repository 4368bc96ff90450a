"""Identity, Linear, Bilinear and LazyLinear."""
import math

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module, _no_grad
from ._layer_utils import _factory

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear"]

_ops = _C.ops


def _empty(*shape, **kw):
    import oneflow

    return oneflow.empty(*shape, **kw)


class Identity(Module):
    """Returns its input unchanged (arguments are accepted and ignored)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x A^T + b`` with ``weight`` (out_features, in_features) and ``bias`` (out_features)."""

    __constants__ = ["in_features", "out_features"]

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        kw = _factory(device, dtype)
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(_empty((out_features, in_features), **kw))
        if bias:
            self.bias = Parameter(_empty(out_features, **kw))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        # kaiming_uniform_(a=sqrt(5)) == U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as in torch
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        b = self.bias
        if b is not None and input.dim() == 2:
            return _ops.addmm(b, input, _ops.transpose(self.weight, 0, 1))
        return F.linear(input, self.weight, b)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """``MultiheadAttention.out_proj``'s class in PyTorch (a marker for its quantisation passes): a Linear."""


class Bilinear(Module):
    """``y = x1^T A x2 + b`` with ``weight`` (out, in1, in2)."""

    __constants__ = ["in1_features", "in2_features", "out_features"]

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        kw = _factory(device, dtype)
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(_empty((out_features, in1_features, in2_features), **kw))
        if bias:
            self.bias = Parameter(_empty(out_features, **kw))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1 / math.sqrt(self.weight.size(1))
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose ``in_features`` is inferred from the first input (``input.shape[-1]``); ``weight`` and
    ``bias`` are ``UninitializedParameter`` until then, after which the module becomes a plain ``Linear``."""

    cls_to_become = Linear

    def __init__(self, out_features, bias=True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input):
        """Materialises ``weight`` (out_features, input.shape[-1]) and ``bias``, then initialises them."""
        if self.has_uninitialized_params():
            with _no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()
        # weights loaded from a state_dict before the first call leave in_features unset: take it from the input
        if self.in_features == 0:
            if input.shape[-1] != self.weight.shape[-1]:
                raise AssertionError(f"The in_features inferred from input: {input.shape[-1]} is not equal to "
                                     f"in_features from self.weight: {self.weight.shape[-1]}")
            self.in_features = input.shape[-1]
