"""``oneflow.nn.utils``: gradient clipping, parameter/vector conversion, weight and spectral normalization
(hook-based here, parametrization-based in ``parametrizations``), ``parametrize`` (and any other submodule
found here, e.g. ``rnn``, imported so that ``oneflow.nn.utils.<name>`` resolves like torch's)."""
import importlib as _importlib
import os as _os

from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .init import skip_init
from .memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters", "weight_norm", "remove_weight_norm", "spectral_norm",
           "remove_spectral_norm", "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights", "skip_init", "convert_conv2d_weight_memory_format",
           "convert_conv3d_weight_memory_format", "parametrizations", "parametrize", "rnn", "stateless"]

for _f in sorted(_os.listdir(_os.path.dirname(__file__))):
    if _f.endswith(".py") and not _f.startswith("_") and _f[:-3] not in globals():
        globals()[_f[:-3]] = _importlib.import_module(f"{__name__}.{_f[:-3]}")
