"""Folding an eval-mode BatchNorm into the convolution or linear layer before it (PyTorch's
``torch.nn.utils.fusion``): one layer computing ``bn(layer(x))`` with the running statistics."""
import copy

from ... import _C
from ..._ops.creation import ones_like, zeros_like
from ...autograd import no_grad
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


# explicit raises, not asserts: the checks must survive ``python -O``
def _check_eval(layer, bn):
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")


def _check_running_stats(bn):
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def fuse_conv_bn_eval(conv, bn, transpose=False):
    """A copy of ``conv`` (eval mode) whose weight and bias also apply ``bn`` (eval mode); ``transpose`` for
    transposed convolutions (output channels along the weight's dim 1)."""
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    _check_running_stats(bn)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """(weight, bias) Parameters of a convolution followed by batch norm with these statistics; missing
    biases and affine terms count as zero / one. Results keep the convolution's dtypes."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    conv_b = zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = zeros_like(bn_rm) if bn_b is None else bn_b
    rsqrt = _C.ops.rsqrt(bn_rv + bn_eps)
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.dim() - 2)
    with no_grad():
        w = (conv_w * (bn_w * rsqrt).reshape(shape)).to(dtype=w_dtype)
        b = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(dtype=b_dtype)
    return Parameter(w, conv_w.requires_grad), Parameter(b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of ``linear`` (eval mode) whose weight and bias also apply the BatchNorm1d ``bn`` (eval mode)."""
    _check_eval(linear, bn)
    # bn's channel dim must broadcast against linear's output features
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
                             f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    _check_running_stats(bn)
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    """(weight, bias) Parameters of a linear layer followed by batch norm with these statistics."""
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    linear_b = zeros_like(bn_rm) if linear_b is None else linear_b
    with no_grad():
        scale = bn_w * _C.ops.rsqrt(bn_rv + bn_eps)
        w = linear_w * scale.unsqueeze(-1).to(dtype=w_dtype)
        b = ((linear_b - bn_rm) * scale + bn_b).to(dtype=b_dtype)
    return Parameter(w, linear_w.requires_grad), Parameter(b, linear_b.requires_grad)
