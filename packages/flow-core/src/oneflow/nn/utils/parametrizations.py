"""Parametrizations built on ``nn.utils.parametrize`` (PyTorch's ``torch.nn.utils.parametrizations``):
``weight_norm`` and ``spectral_norm``, the successors of the forward-pre-hook versions in ``nn.utils``."""
import oneflow as flow

from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize
from .spectral_norm import weight_matrix
from .weight_norm import norm_except_dim

__all__ = ["weight_norm", "spectral_norm"]


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Weight normalization: ``module.<name>`` becomes ``g * v / ||v||`` (the norm over every dim but ``dim``;
    ``dim=None``: over all), with ``g`` stored as ``parametrizations.<name>.original0`` and ``v`` as
    ``original1``. State dicts saved by the older ``nn.utils.weight_norm`` (``<name>_g``, ``<name>_v``) load
    into it. Returns ``module``."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def compat_hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(compat_hook)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = weight_matrix(weight, self.dim)
            h, w = mat.shape
            self.register_buffer("_u", F.normalize(mat.new_empty(h).normal_(0, 1), dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(mat.new_empty(w).normal_(0, 1), dim=0, eps=self.eps))
            self._power_method(mat, 15)

    @flow.no_grad()
    def _power_method(self, mat, n_power_iterations):
        # in place, so that the buffers stay the same tensors (and in the state dict)
        for _ in range(n_power_iterations):
            self._u.copy_(F.normalize(flow.mv(mat, self._v), dim=0, eps=self.eps))
            self._v.copy_(F.normalize(flow.mv(mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = weight_matrix(weight, self.dim)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        # clones: a second forward's power iteration must not change what this one's backward uses
        u, v = self._u.clone(), self._v.clone()
        sigma = flow.dot(u, flow.mv(mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Spectral normalization: ``module.<name>`` becomes the weight divided by its largest singular value,
    estimated by ``n_power_iterations`` steps of power iteration per training forward (buffers ``_u``, ``_v``
    of ``parametrizations.<name>[0]``). ``dim`` defaults to 1 for transposed convolutions, else 0.
    Returns ``module``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, flow.Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
