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

__all__ = _FUNCTIONAL + _INPLACE + ["is_complex", "is_inference"]

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

