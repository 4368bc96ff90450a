"""Names PyTorch also exposes at the top level (``torch.conv2d``, ``torch.layer_norm``, ``torch.abs_``, ...):
the functional ops of ``oneflow.nn.functional`` and the in-place Tensor methods, reachable as
``oneflow.<name>`` with the same signatures. Each forwards to the one definition it names."""
import importlib

from .. import _C

_FUNCTIONAL = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
               "max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "avg_pool1d",
               "adaptive_avg_pool1d", "adaptive_max_pool1d", "batch_norm", "layer_norm", "group_norm",
               "instance_norm", "rms_norm", "embedding_bag", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
               "prelu", "rrelu", "pdist", "pairwise_distance", "cosine_similarity", "cosine_embedding_loss",
               "margin_ranking_loss", "hinge_embedding_loss", "poisson_nll_loss", "triplet_margin_loss", "ctc_loss",
               "bilinear", "alpha_dropout", "feature_alpha_dropout"]

# in-place Tensor methods PyTorch also offers as functions: torch.abs_(x) is x.abs_()
_INPLACE = ["abs_", "acos_", "acosh_", "addmv_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_",
            "arctanh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "celu_", "clamp_", "clamp_max_", "clamp_min_",
            "clip_", "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fill_",
            "fix_", "floor_", "frac_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_", "neg_",
            "negative_", "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_", "selu_", "sigmoid_", "sin_",
            "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_", "threshold_", "trunc_", "xlogy_"]

__all__ = _FUNCTIONAL + _INPLACE + ["is_complex", "is_inference", "conv_tbc"]

def _functional(name):
    # resolved at call time: nn.functional is imported after the op modules
    def f(*args, **kwargs):
        return getattr(importlib.import_module("oneflow.nn.functional"), name)(*args, **kwargs)
    f.__name__ = name
    f.__doc__ = f"``oneflow.nn.functional.{name}``, also at the top level as in PyTorch."
    return f

def _method(name):
    def f(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    f.__name__ = name
    f.__doc__ = f"``input.{name}(...)``, the in-place method, as a function as in PyTorch."
    return f

for _n in _FUNCTIONAL:
    globals()[_n] = _functional(_n)
for _n in _INPLACE:
    globals()[_n] = _method(_n)
del _n

def is_complex(input):
    """Whether ``input`` has a complex dtype: always False (there are no complex dtypes yet)."""
    if not isinstance(input, _C.TensorBase):
        raise TypeError(f"is_complex(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return False

def is_inference(input):
    """Whether ``input`` was created in inference mode."""
    return input.is_inference()

def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution over a (time, batch, in_channels) input with a (kernel_width, in_channels, out_channels)
    weight and an (out_channels,) bias, padding ``pad`` steps on both ends of time; gives (time', batch,
    out_channels)."""
    for i, (name, t) in enumerate((("input", input), ("weight", weight), ("bias", bias))):
        if not isinstance(t, _C.TensorBase):
            raise TypeError(f"conv_tbc(): argument '{name}' (position {i + 1}) must be Tensor, not "
                            f"{type(t).__name__}")
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    ops = _C.ops
    pad = int(pad)
    t, b, k, c_out = input.shape[0], input.shape[1], weight.shape[0], weight.shape[2]
    olen = t + 2 * pad - k + 1
    if olen < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {olen}: [{olen}, {b}, {c_out}]")
    x = ops.permute(input, [1, 2, 0])
    if pad < 0:  # PyTorch's kernel reads a negative pad as cropping both ends of time
        x = ops.slice(x, 2, -pad, t + pad, 1)
    if olen == 0:
        from .creation import zeros

        return zeros([0, b, c_out], dtype=input.dtype, device=input.device)
    out = ops.convolution(x, ops.permute(weight, [2, 1, 0]), bias, [1], [max(pad, 0)], [1], False, [0], 1)
    return ops.permute(out, [2, 0, 1])
