"""The multivariate normal distribution (PyTorch's ``torch.distributions.MultivariateNormal``),
parameterized by a covariance matrix, a precision matrix or the Cholesky factor of the covariance."""
import math

import oneflow as flow

from . import constraints
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["MultivariateNormal"]


def _broadcast_batch(*shapes):
    return tuple(flow.broadcast_shapes(*[tuple(s) for s in shapes]))


class MultivariateNormal(Distribution):
    """N(loc, Sigma) over vectors of ``loc.shape[-1]``: exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril`` (lower triangular, positive diagonal, Sigma = L L^T)."""

    arg_constraints = {"loc": constraints.real_vector, "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite, "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        matrix = next(m for m in (scale_tril, covariance_matrix, precision_matrix) if m is not None)
        if matrix.dim() < 2:
            name = ("scale_tril" if scale_tril is not None else
                    "covariance_matrix" if covariance_matrix is not None else "precision_matrix")
            raise ValueError(f"{name} matrix must be at least two-dimensional, with optional leading batch dimensions")
        batch_shape = _broadcast_batch(matrix.shape[:-2], loc.shape[:-1])
        event = tuple(matrix.shape[-2:])
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(batch_shape + event)
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(batch_shape + event)
        else:
            self.precision_matrix = precision_matrix.expand(batch_shape + event)
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = flow.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = flow.linalg.cholesky(flow.linalg.inv(precision_matrix))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = flow.Size(batch_shape)
        loc_shape = tuple(batch_shape) + tuple(self._event_shape)
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(loc_shape + tuple(self._event_shape)))
        return self._finish_expand(new, MultivariateNormal, batch_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.transpose(-1, -2)).expand(tuple(self._batch_shape) + tuple(self._event_shape) * 2)

    @lazy_property
    def precision_matrix(self):
        return flow.linalg.inv(self.covariance_matrix)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return (self._unbroadcasted_scale_tril.pow(2).sum(-1)).expand(tuple(self._batch_shape) +
                                                                      tuple(self._event_shape))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        eps = flow.randn(tuple(shape), dtype=self.loc.dtype)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        L = self._unbroadcasted_scale_tril
        z = flow.linalg.solve_triangular(L, diff.unsqueeze(-1), upper=False)
        m = z.squeeze(-1).pow(2).sum(-1)  # the squared Mahalanobis distance
        k = self._event_shape[0]
        return -0.5 * (k * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self):
        k = self._event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(tuple(self._batch_shape)) if len(self._batch_shape) else h
