"""Conv1d/2d/3d and ConvTranspose1d/2d/3d, with torch's parameters, initialisation and repr."""
import math

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter, UninitializedParameter
from .lazy import LazyModuleMixin
from .module import Module, _no_grad
from ._layer_utils import _factory, _pair, _reverse_repeat_tuple, _single, _triple

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d",
           "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d"]

_ops = _C.ops
_PAD_FN = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}


def _empty(shape, **kw):
    import oneflow

    return oneflow.empty(shape, **kw)


class _ConvNd(Module):
    __constants__ = ["stride", "padding", "dilation", "groups", "padding_mode", "output_padding", "in_channels",
                     "out_channels", "kernel_size"]

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, transposed, output_padding,
                 groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        kw = _factory(device, dtype)
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        valid_padding_strings = {"same", "valid"}
        if isinstance(padding, str):
            if padding not in valid_padding_strings:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {valid_padding_strings}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        valid_padding_modes = {"zeros", "reflect", "replicate", "circular"}
        if padding_mode not in valid_padding_modes:
            raise ValueError(f"padding_mode must be one of {valid_padding_modes}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = output_padding
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = [0, 0] * len(kernel_size)
            if padding == "same":
                for d, k, i in zip(dilation, kernel_size, range(len(kernel_size) - 1, -1, -1)):
                    total_padding = d * (k - 1)
                    left_pad = total_padding // 2
                    self._reversed_padding_repeated_twice[2 * i] = left_pad
                    self._reversed_padding_repeated_twice[2 * i + 1] = total_padding - left_pad
        else:
            self._reversed_padding_repeated_twice = _reverse_repeat_tuple(self.padding, 2)
        if transposed:
            self.weight = Parameter(_empty((in_channels, out_channels // groups, *kernel_size), **kw))
        else:
            self.weight = Parameter(_empty((out_channels, in_channels // groups, *kernel_size), **kw))
        if bias:
            self.bias = Parameter(_empty(out_channels, **kw))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        # kaiming_uniform_(a=sqrt(5)) == U(-1/sqrt(fan_in), 1/sqrt(fan_in)), as in torch
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state):
        super().__setstate__(state)
        if not hasattr(self, "padding_mode"):
            self.padding_mode = "zeros"


class _Conv(_ConvNd):
    _nd = 2

    def _conv_forward(self, input, weight, bias):
        nd = self._nd
        if self.padding_mode != "zeros":
            return _PAD_FN[nd](F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode), weight,
                               bias, self.stride, (0,) * nd, self.dilation, self.groups)
        padding = self.padding
        if input.dim() == nd + 2 and not isinstance(padding, str):
            # batched input, explicit padding: straight to the convolution op
            return _ops.convolution(input, weight, bias, self.stride, padding, self.dilation, False, self._zeros,
                                    self.groups)
        return _PAD_FN[nd](input, weight, bias, self.stride, padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)


def _conv_init(self, tup, nd, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
               padding_mode, device, dtype):
    padding_ = padding if isinstance(padding, str) else tup(padding)
    _ConvNd.__init__(self, in_channels, out_channels, tup(kernel_size), tup(stride), padding_, tup(dilation), False,
                     tup(0), groups, bias, padding_mode, device, dtype)
    self._zeros = (0,) * nd


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) inputs: weight (out, in // groups, k)."""

    _nd = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        _conv_init(self, _single, 1, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                   padding_mode, device, dtype)


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) inputs: weight (out, in // groups, kH, kW)."""

    _nd = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        _conv_init(self, _pair, 2, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                   padding_mode, device, dtype)


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W) inputs: weight (out, in // groups, kD, kH, kW)."""

    _nd = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        _conv_init(self, _triple, 3, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                   padding_mode, device, dtype)


class _ConvTransposeNd(_ConvNd):
    _nd = 2
    _tup = staticmethod(_pair)

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for {self.__class__.__name__}')
        t = self._tup
        super().__init__(in_channels, out_channels, t(kernel_size), t(stride), t(padding), t(dilation), True,
                         t(output_padding), groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size, stride, padding, kernel_size, num_spatial_dims, dilation=None):
        if output_size is None:
            return _single(self.output_padding)
        has_batch_dim = input.dim() == num_spatial_dims + 2
        num_non_spatial_dims = 2 if has_batch_dim else 1
        output_size = list(output_size)
        if len(output_size) == num_non_spatial_dims + num_spatial_dims:
            output_size = output_size[num_non_spatial_dims:]
        if len(output_size) != num_spatial_dims:
            raise ValueError(f"ConvTranspose{num_spatial_dims}D: for {input.dim()}D input, output_size must have "
                             f"{num_spatial_dims} or {num_non_spatial_dims + num_spatial_dims} elements "
                             f"(got {len(output_size)})")
        min_sizes, max_sizes = [], []
        for d in range(num_spatial_dims):
            dim_size = ((input.size(d + num_non_spatial_dims) - 1) * stride[d] - 2 * padding[d]
                        + (dilation[d] if dilation is not None else 1) * (kernel_size[d] - 1) + 1)
            min_sizes.append(dim_size)
            max_sizes.append(min_sizes[d] + stride[d] - 1)
        for i in range(len(output_size)):
            if output_size[i] < min_sizes[i] or output_size[i] > max_sizes[i]:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes range from "
                                 f"{min_sizes} to {max_sizes} (for an input of {list(input.shape)[2:]})")
        return [output_size[d] - min_sizes[d] for d in range(num_spatial_dims)]

    def forward(self, input, output_size=None):
        nd = self._nd
        if input.dim() not in (nd + 1, nd + 2):
            raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                               f"conv_transpose{nd}d, but got input of size: {list(input.shape)}")
        output_padding = self._output_padding(input, output_size, self.stride, self.padding, self.kernel_size, nd,
                                              self.dilation)
        x = input if input.dim() == nd + 2 else _ops.unsqueeze(input, 0)
        out = _ops.convolution(x, self.weight, self.bias, self.stride, self.padding, self.dilation, True,
                               output_padding, self.groups)
        return out if input.dim() == nd + 2 else _ops.squeeze_dim(out, 0)


class ConvTranspose1d(_ConvTransposeNd):
    """1-D transposed convolution: weight (in, out // groups, k)."""

    _nd = 1
    _tup = staticmethod(_single)


class ConvTranspose2d(_ConvTransposeNd):
    """2-D transposed convolution: weight (in, out // groups, kH, kW)."""

    _nd = 2
    _tup = staticmethod(_pair)


class ConvTranspose3d(_ConvTransposeNd):
    """3-D transposed convolution: weight (in, out // groups, kD, kH, kW)."""

    _nd = 3
    _tup = staticmethod(_triple)


class _LazyConvXdMixin(LazyModuleMixin):
    """``in_channels`` from the first input's channel dim; ``weight``/``bias`` are placeholders until then."""

    def _make_lazy(self, out_channels, bias, device, dtype):
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self):
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs):
        """Materialises ``weight`` and ``bias`` for the input's channel count, then initialises them."""
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError("in_channels must be divisible by groups")
            with _no_grad():
                if self.transposed:
                    self.weight.materialize((self.in_channels, self.out_channels // self.groups, *self.kernel_size))
                else:
                    self.weight.materialize((self.out_channels, self.in_channels // self.groups, *self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()

    def _get_in_channels(self, input):
        no_batch = self._nd + 1
        if input.dim() not in (no_batch, no_batch + 1):
            raise RuntimeError(f"Expected {no_batch}D (unbatched) or {no_batch + 1}D (batched) input to "
                               f"{self.__class__.__name__}, but got input of size: {list(input.shape)}")
        return input.shape[1] if input.dim() == no_batch + 1 else input.shape[0]


class _LazyConv(_LazyConvXdMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        # bias=False here: the placeholders replace the parameters
        super().__init__(0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode, device, dtype)
        self._make_lazy(out_channels, bias, device, dtype)


class _LazyConvTranspose(_LazyConvXdMixin):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__(0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation, padding_mode,
                         device, dtype)
        self._make_lazy(out_channels, bias, device, dtype)


class LazyConv1d(_LazyConv, Conv1d):
    """A Conv1d whose ``in_channels`` is inferred from the first input; it then becomes a ``Conv1d``."""

    cls_to_become = Conv1d


class LazyConv2d(_LazyConv, Conv2d):
    """A Conv2d whose ``in_channels`` is inferred from the first input; it then becomes a ``Conv2d``."""

    cls_to_become = Conv2d


class LazyConv3d(_LazyConv, Conv3d):
    """A Conv3d whose ``in_channels`` is inferred from the first input; it then becomes a ``Conv3d``."""

    cls_to_become = Conv3d


class LazyConvTranspose1d(_LazyConvTranspose, ConvTranspose1d):
    """A ConvTranspose1d whose ``in_channels`` is inferred from the first input; it then becomes a
    ``ConvTranspose1d``."""

    cls_to_become = ConvTranspose1d


class LazyConvTranspose2d(_LazyConvTranspose, ConvTranspose2d):
    """A ConvTranspose2d whose ``in_channels`` is inferred from the first input; it then becomes a
    ``ConvTranspose2d``."""

    cls_to_become = ConvTranspose2d


class LazyConvTranspose3d(_LazyConvTranspose, ConvTranspose3d):
    """A ConvTranspose3d whose ``in_channels`` is inferred from the first input; it then becomes a
    ``ConvTranspose3d``."""

    cls_to_become = ConvTranspose3d
