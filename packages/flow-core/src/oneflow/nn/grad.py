"""``oneflow.nn.grad`` (PyTorch's ``torch.nn.grad``): the gradients of a convolution with respect to its input
and its weight, for given output gradients, computed by differentiating the convolution itself."""
from .. import autograd
from . import functional as F

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _grad_of(conv, wrt_input, x, w, grad_output, stride, padding, dilation, groups):
    with autograd.enable_grad():
        target = (x if wrt_input else w).detach().requires_grad_()
        out = conv(target, w, None, stride, padding, dilation, groups) if wrt_input else \
            conv(x, target, None, stride, padding, dilation, groups)
        (g,) = autograd.grad(out, target, grad_output)
    return g


def _make(name, conv):
    def input_grad(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
        x = grad_output.new_zeros(list(input_size))
        return _grad_of(conv, True, x, weight, grad_output, stride, padding, dilation, groups)

    def weight_grad(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
        w = grad_output.new_zeros(list(weight_size))
        return _grad_of(conv, False, input, w, grad_output, stride, padding, dilation, groups)

    input_grad.__name__, weight_grad.__name__ = f"{name}_input", f"{name}_weight"
    input_grad.__doc__ = (f"The gradient of ``{name}`` with respect to an input of ``input_size``, for output "
                          "gradients ``grad_output`` and ``weight``.")
    weight_grad.__doc__ = (f"The gradient of ``{name}`` with respect to a weight of ``weight_size``, for output "
                           "gradients ``grad_output`` and ``input``.")
    return input_grad, weight_grad


conv1d_input, conv1d_weight = _make("conv1d", F.conv1d)
conv2d_input, conv2d_weight = _make("conv2d", F.conv2d)
conv3d_input, conv3d_weight = _make("conv3d", F.conv3d)
