"""The multivariate normal with a low-rank plus diagonal covariance (PyTorch's
``torch.distributions.LowRankMultivariateNormal``), computed through the Woodbury identities."""
import math

import oneflow as flow

from . import constraints
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["LowRankMultivariateNormal"]


def _batch_mv(bmat, bvec):
    return flow.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """x^T (L L^T)^-1 x for lower triangular ``bL``, broadcasting the batch dims of both."""
    batch = tuple(flow.broadcast_shapes(tuple(bL.shape[:-2]), tuple(bx.shape[:-1])))
    n = bx.shape[-1]
    z = flow.linalg.solve_triangular(bL.expand(batch + (n, n)), bx.expand(batch + (n,)).unsqueeze(-1), upper=False)
    return z.squeeze(-1).pow(2).sum(-1)


def _batch_trace_XXT(bmat):
    """tr(X X^T) per matrix of the batch."""
    return bmat.pow(2).sum((-2, -1))


def _batch_capacitance_tril(W, D):
    """The Cholesky factor of the capacitance matrix I + W^T D^-1 W (m x m, m the rank)."""
    m = W.shape[-1]
    K = flow.matmul(W.transpose(-1, -2) / D.unsqueeze(-2), W)
    return flow.linalg.cholesky(K + flow.eye(m, dtype=K.dtype))


def _batch_lowrank_logdet(W, D, capacitance_tril):
    """log det(W W^T + D) = log det(capacitance) + log det(D) (matrix determinant lemma)."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    """x^T (W W^T + D)^-1 x through the Woodbury identity, without forming the n x n covariance."""
    Wt_Dinv_x = _batch_mv(W.transpose(-1, -2) / D.unsqueeze(-2), x)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)


class LowRankMultivariateNormal(Distribution):
    """N(loc, cov_factor @ cov_factor.T + diag(cov_diag)): a multivariate normal whose covariance is low rank
    plus diagonal, so that sampling, densities and entropies cost O(n m^2) for rank m instead of O(n^3).

    Args:
        loc (Tensor): the mean, of shape ``batch_shape + event_shape``.
        cov_factor (Tensor): the low-rank factor, of shape ``batch_shape + event_shape + (rank,)``.
        cov_diag (Tensor): the diagonal part, of shape ``batch_shape + event_shape`` (positive).
    """

    arg_constraints = {"loc": constraints.real_vector, "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = tuple(loc.shape[-1:])
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if tuple(cov_factor.shape[-2:-1]) != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if tuple(cov_diag.shape[-1:]) != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {flow.Size(event_shape)}")
        try:
            loc_, self.cov_factor, cov_diag_ = flow.broadcast_tensors(loc.unsqueeze(-1), cov_factor,
                                                                      cov_diag.unsqueeze(-1))
        except RuntimeError as e:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, "
                             f"cov_diag {cov_diag.shape}") from e
        self.loc, self.cov_diag = loc_[..., 0], cov_diag_[..., 0]
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        # validated first: a nonpositive cov_diag is a ValueError rather than a failed Cholesky factorization
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = flow.Size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self.event_shape)
        new.loc, new.cov_diag = self.loc.expand(loc_shape), self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + tuple(self.cov_factor.shape[-1:]))
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        return self._finish_expand(new, LowRankMultivariateNormal, batch_shape)

    def _full_shape(self, *event_dims):
        return tuple(self._batch_shape) + tuple(self._event_shape) * len(event_dims)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag).expand(
            self._full_shape(1))

    @lazy_property
    def scale_tril(self):
        # cov = D^1/2 (I + D^-1/2 W W^T D^-1/2) D^1/2: factor the middle, which is well conditioned
        n = self._event_shape[0]
        sqrt_diag = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / sqrt_diag
        K = flow.matmul(Dinvsqrt_W, Dinvsqrt_W.transpose(-1, -2)) + flow.eye(n, dtype=sqrt_diag.dtype)
        return (sqrt_diag * flow.linalg.cholesky(K)).expand(self._full_shape(1, 1))

    @lazy_property
    def covariance_matrix(self):
        W = self._unbroadcasted_cov_factor
        cov = flow.matmul(W, W.transpose(-1, -2)) + flow.diag_embed(self._unbroadcasted_cov_diag)
        return cov.expand(self._full_shape(1, 1))

    @lazy_property
    def precision_matrix(self):
        # Woodbury: (W W^T + D)^-1 = D^-1 - D^-1 W C^-1 W^T D^-1, C the capacitance
        Wt_Dinv = self._unbroadcasted_cov_factor.transpose(-1, -2) / self._unbroadcasted_cov_diag.unsqueeze(-2)
        A = flow.linalg.solve_triangular(self._capacitance_tril, Wt_Dinv, upper=False)
        precision = flow.diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - A.transpose(-1, -2) @ A
        return precision.expand(self._full_shape(1, 1))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        eps_W = flow.randn(shape[:-1] + tuple(self.cov_factor.shape[-1:]), dtype=self.loc.dtype)
        eps_D = flow.randn(shape, dtype=self.loc.dtype)
        return (self.loc + _batch_mv(self._unbroadcasted_cov_factor, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def _log_det(self):
        return _batch_lowrank_logdet(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                     self._capacitance_tril)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        M = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag,
                                       value - self.loc, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + M)

    def entropy(self):
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return H.expand(tuple(self._batch_shape)) if len(self._batch_shape) else H
