"""Parametrizations built on ``nn.utils.parametrize`` (PyTorch's ``torch.nn.utils.parametrizations``):
``orthogonal``, and ``weight_norm`` and ``spectral_norm``, the successors of the forward-pre-hook versions in
``nn.utils``."""
from enum import Enum, auto

from ... import _C, linalg
from ..._ops.binary import allclose, where
from ..._ops.creation import eye, zeros_like
from ..._ops.creation_random import randn
from ..._ops.dtype_info import finfo
from ..._ops.index import cat
from ..._ops.linalg import dot, geqrf, matmul, mv
from ..._tensor import Tensor
from ...autograd import no_grad
from .. import functional as F
from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module
from . import parametrize
from .spectral_norm import weight_matrix
from .weight_norm import norm_except_dim

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


# ---- the linear algebra behind ``orthogonal``: flow.linalg.matrix_exp / householder_product and flow.geqrf
def _make_orthogonal(A):
    """The Q of ``A = QR`` (A tall) normalised so that diag(R) is non-negative, which makes it unique."""
    X, tau = geqrf(A)
    Q = linalg.householder_product(X, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _is_orthogonal(Q, eps=None):
    n, k = Q.shape[-2], Q.shape[-1]
    Id = eye(k, dtype=Q.dtype, device=Q.device)
    # a tolerance that grows with the size, but stays small
    eps = 10.0 * n * finfo(Q.dtype).eps
    return allclose(matmul(Q.mT, Q), Id, atol=eps)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        # a complex householder map would need n^2 real parameters, not the n(n-1) of its reflectors
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        # from here on X is tall (n >= k)
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            # only the n*k - k(k-1)/2 entries of the lower trapezoid are parameters
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = linalg.matrix_exp(A)
            else:
                # the Cayley retraction (I + A/2)(I - A/2)^{-1}
                Id = eye(n, dtype=A.dtype, device=A.device)
                Q = linalg.solve(_C.ops.add(Id, A, alpha=-0.5), _C.ops.add(Id, A, alpha=0.5))
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = linalg.householder_product(A, tau)
            # the diagonal of X holds the signs (+-1) of the columns; the int cast keeps it out of the gradient
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if hasattr(self, "base"):
            Q = matmul(self.base, Q)
        if transposed:
            Q = Q.mT
        return Q

    @no_grad()
    def right_inverse(self, Q):
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.shape[-2], Q.shape[-1]
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            # the exponential and Cayley maps of a trapezoid have no known inverse; householder inverts by QR
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix exponential "
                                          "or the Cayley parametrizations when use_trivialization=False.")
            A, tau = geqrf(Q)
            # diag(R) > 0 makes the decomposition unique; the forward reads those signs from the diagonal, and
            # flips the columns whose reflector geqrf skipped (tau == 0) since it always reflects
            signs = A.diagonal(dim1=-2, dim2=-1).sign()
            signs = where(tau == 0.0, -signs, signs)
            A.diagonal(dim1=-2, dim2=-1).copy_(signs)
            return A.mT if transpose else A
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:
            # complete Q to a full n x n orthogonal matrix
            N = randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(cat([Q, N], dim=-1))
        self.base = Q
        # -Id, because the householder map reads the diagonal: householder(-Id) == Id, as do the other maps
        neg_Id = zeros_like(Q_init)
        neg_Id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_Id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Orthogonal parametrization of a matrix (or batch of matrices) ``module.<name>`` of shape (..., m, n):
    ``Q^T Q = I`` if m >= n, else ``Q Q^T = I``.

    ``orthogonal_map``: ``"matrix_exp"`` or ``"cayley"`` (of a skew-symmetric matrix), or ``"householder"``
    (a product of reflectors); default ``"matrix_exp"`` for square matrices, ``"householder"`` otherwise.
    With ``use_trivialization`` (default) an extra orthogonal ``base`` (``parametrizations.<name>[0].base``)
    multiplies the map, and the initial value is the tensor itself when orthogonal, else the Q of its QR
    decomposition. Assigning ``module.<name> = Q`` sets it likewise. Returns ``module``.
    """
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    # on vectors the maps would act on the sphere, which surprises more than it helps
    if weight.ndim < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] or weight.is_complex() \
            else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                         f"Got: {orthogonal_map}")
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


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

    @no_grad()
    def _power_method(self, mat, n_power_iterations):
        # in place, so that the buffers stay the same tensors (and in the state dict)
        for _ in range(n_power_iterations):
            self._u.copy_(F.normalize(mv(mat, self._v), dim=0, eps=self.eps))
            self._v.copy_(F.normalize(mv(mat.t(), self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = weight_matrix(weight, self.dim)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        # clones: a second forward's power iteration must not change what this one's backward uses
        u, v = self._u.clone(), self._v.clone()
        sigma = dot(u, mv(mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Spectral normalization: ``module.<name>`` becomes the weight divided by its largest singular value,
    estimated by ``n_power_iterations`` steps of power iteration per training forward (buffers ``_u``, ``_v``
    of ``parametrizations.<name>[0]``). ``dim`` defaults to 1 for transposed convolutions, else 0.
    Returns ``module``."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
