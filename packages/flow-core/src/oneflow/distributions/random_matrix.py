"""Distributions over matrices (PyTorch's formulas): LKJCholesky over Cholesky factors of correlation matrices and
Wishart over positive definite matrices."""
import math
import numbers
import warnings

import oneflow as flow

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Beta
from .gamma_derived import Chi2
from .utils import broadcast_all, lazy_property, vec_to_tril_matrix

__all__ = ["LKJCholesky", "Wishart"]

_LOG_2 = math.log(2)


class LKJCholesky(Distribution):
    """The LKJ distribution over Cholesky factors ``L`` of ``dim x dim`` correlation matrices, with density
    proportional to ``det(L L^T) ** (concentration - 1)``; sampled by the onion method (Lewandowski, Kurowicka
    and Joe, 2009; Ghosh and Henderson, 2003).

    Args:
        dim (int): the dimension of the matrices (at least 2).
        concentration (float or Tensor): the shape (positive); 1 is uniform over correlation matrices.
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # the onion method: the squared norm of the below-diagonal part of row i >= 1 is
        # Beta(i / 2, concentration + (dim - 1 - i) / 2); row 0 has none (its draw is unused). PyTorch 2.13 uses
        # i - 1/2 as the first parameter, which skews the rows i >= 2 (their correlations come out too spread).
        offset = flow.cat([flow.zeros(1, dtype=self.concentration.dtype),
                           flow.arange(self.dim - 1, dtype=self.concentration.dtype)])
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        self._beta = Beta(0.5 * offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.shape, (dim, dim), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = flow.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(tuple(batch_shape) + (self.dim,))
        return self._finish_expand(new, LKJCholesky, batch_shape)

    def sample(self, sample_shape=()):
        with flow.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u = flow.randn(tuple(self._extended_shape(sample_shape)), dtype=y.dtype).tril(-1)
            # directions uniform on the sphere; the first row has no below-diagonal part
            norms = u.norm(dim=-1, keepdim=True)
            u = u / flow.where(norms > 0, norms, flow.ones_like(norms))
            w = y.sqrt() * u
            eps = flow.finfo(w.dtype).tiny
            diag = (1 - w.pow(2).sum(-1)).clamp(min=eps).sqrt()
            return w + flow.diag_embed(diag)

    def log_prob(self, value):
        # the density of L is that of L L^T times the Jacobian: prod_i L_ii^(2 (conc - 1) + dim - i), i = 2..dim
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = flow.arange(2, self.dim + 1, dtype=self.concentration.dtype)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = (order * diag.log()).sum(-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        normalize_term = 0.5 * dm1 * math.log(math.pi) + flow.mvlgamma(alpha - 0.5, dm1) - flow.lgamma(alpha) * dm1
        return unnormalized - normalize_term


def _mvdigamma(x, p):
    """The multivariate digamma: sum_i digamma(x - i / 2), i = 0..p-1."""
    return flow.digamma(x.unsqueeze(-1) - flow.arange(p, dtype=x.dtype) / 2).sum(-1)


class Wishart(ExponentialFamily):
    """The Wishart distribution over ``p x p`` positive definite matrices with ``df`` degrees of freedom and
    scale matrix given by exactly one of ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``; sampled
    by the Bartlett decomposition, reparameterized.

    Args:
        df (float or Tensor): the degrees of freedom (greater than p - 1).
        covariance_matrix (Tensor): the positive definite scale matrix.
        precision_matrix (Tensor): its inverse.
        scale_tril (Tensor): its lower triangular Cholesky factor.
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite, "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky, "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args=None):
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril) if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional leading batch dimensions")
        if isinstance(df, numbers.Number):
            batch_shape = tuple(param.shape[:-2])
            self.df = flow.tensor(float(df), dtype=param.dtype)
        else:
            batch_shape = tuple(flow.broadcast_shapes(tuple(param.shape[:-2]), tuple(df.shape)))
            self.df = df.expand(batch_shape)
        event_shape = tuple(param.shape[-2:])
        p = event_shape[-1]
        if bool(self.df.le(p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        expanded = param.expand(batch_shape + event_shape)
        if scale_tril is not None:
            self.scale_tril = expanded
        elif covariance_matrix is not None:
            self.covariance_matrix = expanded
        else:
            self.precision_matrix = expanded
        if bool(self.df.lt(p).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to occur for ndim - 1 < df < "
                          "ndim.")
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = flow.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = flow.linalg.cholesky(flow.linalg.inv(precision_matrix))
        self._dist_chi2 = self._bartlett_chi2(batch_shape)

    def _bartlett_chi2(self, batch_shape):
        # the squared diagonal of the Bartlett factor: chi2 with df, df - 1, ..., df - p + 1 degrees of freedom
        p = self._event_shape[-1]
        steps = flow.arange(p, dtype=self._unbroadcasted_scale_tril.dtype).expand(tuple(batch_shape) + (-1,))
        return Chi2(df=self.df.unsqueeze(-1) - steps)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = flow.Size(batch_shape)
        cov_shape = tuple(batch_shape) + tuple(self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        new._event_shape = self._event_shape
        new._dist_chi2 = new._bartlett_chi2(batch_shape)
        return self._finish_expand(new, Wishart, batch_shape)

    def _full_shape(self):
        return tuple(self._batch_shape) + tuple(self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._full_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.transpose(-2, -1)).expand(self._full_shape())

    @lazy_property
    def precision_matrix(self):
        identity = flow.eye(self._event_shape[-1], dtype=self._unbroadcasted_scale_tril.dtype)
        return flow.cholesky_solve(identity, self._unbroadcasted_scale_tril).expand(self._full_shape())

    def _df_matrix(self):
        return self.df.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix() * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = flow.where(factor <= 0, flow.full_like(factor, float("nan")), factor)
        return factor.reshape(tuple(self._batch_shape) + (1, 1)) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix() * (V.pow(2) + diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=()):
        # X = L A A^T L^T with A lower triangular: sqrt(chi2) on the diagonal, standard normals below it
        p = self._event_shape[-1]
        diag = self._dist_chi2.rsample(sample_shape).sqrt()
        diag = diag.clamp(min=flow.finfo(diag.dtype).eps)
        below = flow.randn(tuple(sample_shape) + tuple(self._batch_shape) + (p * (p - 1) // 2,), dtype=diag.dtype)
        noise = flow.diag_embed(diag) + vec_to_tril_matrix(below, diag=-1)
        chol = self._unbroadcasted_scale_tril @ noise
        return chol @ chol.transpose(-2, -1)

    def rsample(self, sample_shape=(), max_try_correction=None):
        """A reparameterized sample; samples that are numerically singular (possible for df close to p - 1) are
        redrawn up to ``max_try_correction`` (default 10) times."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample = self._bartlett_sampling(sample_shape)
        event_dims = (-2, -1)
        for _ in range(max_try_correction):
            singular = ~self.support.check(sample)
            if not bool(singular.any()):
                break
            warnings.warn("Singular sample detected.")
            sample = flow.where(singular.reshape(tuple(singular.shape) + (1,) * len(event_dims)),
                                self._bartlett_sampling(sample_shape), sample)
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu, p = self.df, self._event_shape[-1]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        trace = flow.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (-nu * (p * _LOG_2 / 2 + half_log_det) - flow.mvlgamma(nu / 2, p)
                + (nu - p - 1) / 2 * flow.linalg.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        nu, p = self.df, self._event_shape[-1]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return ((p + 1) * (p * _LOG_2 / 2 + half_log_det) + flow.mvlgamma(nu / 2, p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self):
        nu, p = self.df, self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-flow.linalg.slogdet(-2 * x).logabsdet + _LOG_2 * p)
                + flow.mvlgamma(y + (p + 1) / 2, p))
