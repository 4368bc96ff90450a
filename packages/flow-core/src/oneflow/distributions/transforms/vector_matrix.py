"""Transforms onto structured supports: the simplex (softmax, stick-breaking) and matrices (lower-triangular
with positive diagonal, positive definite, correlation Cholesky factors)."""
import math

import oneflow as flow
import oneflow.nn.functional as F

from .. import constraints
from ..utils import tril_matrix_to_vec, vec_to_tril_matrix
from .base import Transform, _as_size, _SameType
from .elementwise import _clipped_sigmoid


def _need_dims(shape, n):
    if len(shape) < n:
        raise ValueError("Too few dimensions on input")


class CorrCholeskyTransform(Transform):
    """Maps a vector of D(D-1)/2 reals to the Cholesky factor of a D x D correlation matrix: each entry is
    squashed by tanh into (-1, 1), then the rows are filled below the diagonal by stick breaking so that each
    row has unit norm (the LKJ parameterization)."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = flow.finfo(x.dtype).eps
        r = vec_to_tril_matrix(flow.tanh(x).clamp(min=-1 + eps, max=1 - eps), diag=-1)
        # row i gets r_ij * sqrt(1 - sum_{k<j} y_ik^2): the remaining length of the row's unit "stick"
        remaining = (1 - r ** 2).sqrt().cumprod(-1)
        r = r + flow.eye(r.shape[-1], dtype=r.dtype)
        return r * F.pad(remaining[..., :-1], [1, 0], value=1.0)

    def _inverse(self, y):
        remaining = 1 - flow.cumsum(y * y, dim=-1)
        remaining = F.pad(remaining[..., :-1], [1, 0], value=1.0)
        t = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(remaining, diag=-1).sqrt()
        return (t.log1p() - t.neg().log1p()) / 2  # atanh

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        remaining = tril_matrix_to_vec(1 - (y * y).cumsum(dim=-1), diag=-2)
        stick_breaking_logdet = 0.5 * remaining.log().sum(-1)
        tanh_logdet = -2 * (x + F.softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        _need_dims(shape, 1)
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return _as_size(tuple(shape[:-1]) + (d, d))

    def inverse_shape(self, shape):
        _need_dims(shape, 2)
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return _as_size(tuple(shape[:-2]) + (d * (d - 1) // 2,))


class SoftmaxTransform(_SameType, Transform):
    """y = softmax(x) over the last dim (not injective: the inverse returns log(y), one of the preimages)."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x):
        probs = (x - x.max(-1, True)[0]).exp()
        return probs / probs.sum(-1, True)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        _need_dims(shape, 1)
        return shape

    def inverse_shape(self, shape):
        _need_dims(shape, 1)
        return shape


def _stick_offset(k, dtype):
    # log(K - i) for i = 0..K-1 centres the sigmoid so that x = 0 maps to the simplex's centre
    return (k - flow.arange(k, dtype=dtype)).log()


class StickBreakingTransform(_SameType, Transform):
    """A bijection from K - 1 reals to the K-simplex: each coordinate, through a sigmoid, takes its fraction of
    what remains of a unit stick. Unlike :class:`SoftmaxTransform` it is bijective, so it suits HMC."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x):
        z = _clipped_sigmoid(x - _stick_offset(x.shape[-1], x.dtype))
        remaining = (1 - z).cumprod(-1)
        return F.pad(z, [0, 1], value=1.0) * F.pad(remaining, [1, 0], value=1.0)

    def _inverse(self, y):
        y_crop = y[..., :-1]
        remaining = (1 - y_crop.cumsum(-1)).clamp(min=flow.finfo(y.dtype).tiny)
        return y_crop.log() - remaining.log() + _stick_offset(y_crop.shape[-1], y.dtype)

    def log_abs_det_jacobian(self, x, y):
        x = x - _stick_offset(x.shape[-1], x.dtype)
        return (-x + F.logsigmoid(x) + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape):
        _need_dims(shape, 1)
        return _as_size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape):
        _need_dims(shape, 1)
        return _as_size(tuple(shape[:-1]) + (shape[-1] - 1,))


class LowerCholeskyTransform(_SameType, Transform):
    """From square matrices to lower triangular ones with a positive diagonal: keeps the strictly lower part and
    exponentiates the diagonal (the upper part is dropped, so it is not injective)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x):
        return x.tril(-1) + x.diagonal(dim1=-2, dim2=-1).exp().diag_embed()

    def _inverse(self, y):
        return y.tril(-1) + y.diagonal(dim1=-2, dim2=-1).log().diag_embed()


class PositiveDefiniteTransform(_SameType, Transform):
    """From square matrices to positive definite ones: L L^T with L from :class:`LowerCholeskyTransform`."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x):
        x = LowerCholeskyTransform()(x)
        return x @ x.transpose(-1, -2)

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(flow.linalg.cholesky(y))
