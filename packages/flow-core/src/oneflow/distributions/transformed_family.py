"""Distributions defined by transforming a simpler one (PyTorch's formulas): Weibull, Kumaraswamy, HalfCauchy
and LogisticNormal, all :class:`TransformedDistribution` subclasses with reparameterized sampling."""
import oneflow as flow

from . import constraints
from .continuous import Exponential, Normal, Uniform
from .more_continuous import Cauchy, _FoldedAtZero
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, PowerTransform, StickBreakingTransform
from .utils import broadcast_all

__all__ = ["Weibull", "Kumaraswamy", "HalfCauchy", "LogisticNormal"]

_EULER_GAMMA = 0.57721566490153286060


class Weibull(TransformedDistribution):
    """The two-parameter Weibull distribution: ``scale * X ** (1 / concentration)`` for ``X ~ Exponential(1)``.

    Args:
        scale (float or Tensor): the scale (positive).
        concentration (float or Tensor): the shape (positive).
    """

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base_dist = Exponential(flow.ones_like(self.scale), validate_args=validate_args)
        super().__init__(base_dist, self._transforms(), validate_args=validate_args)

    def _transforms(self):
        return [PowerTransform(exponent=self.concentration_reciprocal), AffineTransform(loc=0, scale=self.scale)]

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Weibull, _instance)
        new.scale, new.concentration = self.scale.expand(batch_shape), self.concentration.expand(batch_shape)
        new.concentration_reciprocal = new.concentration.reciprocal()
        TransformedDistribution.__init__(new, self.base_dist.expand(batch_shape), new._transforms(),
                                         validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.scale * flow.exp(flow.lgamma(1 + self.concentration_reciprocal))

    @property
    def mode(self):
        k = self.concentration
        # the density decreases from 0 when concentration <= 1
        mode = self.scale * ((k - 1).clamp(min=0) / k) ** self.concentration_reciprocal
        return flow.where(k > 1, mode, flow.zeros_like(mode))

    @property
    def variance(self):
        r = self.concentration_reciprocal
        return self.scale.pow(2) * (flow.exp(flow.lgamma(1 + 2 * r)) - flow.exp(2 * flow.lgamma(1 + r)))

    def entropy(self):
        r = self.concentration_reciprocal
        return _EULER_GAMMA * (1 - r) + flow.log(self.scale * r) + 1


def _kumaraswamy_moment(a, b, n):
    """E[X^n] = b B(1 + n / a, b)."""
    arg1 = 1 + n / a
    return b * flow.exp(flow.lgamma(arg1) + flow.lgamma(b) - flow.lgamma(arg1 + b))


class Kumaraswamy(TransformedDistribution):
    """The Kumaraswamy distribution on [0, 1], with density ``a b x^(a-1) (1 - x^a)^(b-1)``: a beta-like
    distribution with a closed-form CDF, sampled as ``(1 - U^(1/b))^(1/a)`` for ``U ~ Uniform(0, 1)``.

    Args:
        concentration1 (float or Tensor): ``a`` (positive).
        concentration0 (float or Tensor): ``b`` (positive).
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        base_dist = Uniform(flow.zeros_like(self.concentration0), flow.ones_like(self.concentration0),
                            validate_args=validate_args)
        transforms = [PowerTransform(exponent=self.concentration0.reciprocal()), AffineTransform(loc=1.0, scale=-1.0),
                      PowerTransform(exponent=self.concentration1.reciprocal())]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Kumaraswamy, _instance)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 1)

    @property
    def mode(self):
        # ((a - 1) / (a b - 1)) ** (1 / a), defined for a >= 1, b >= 1 (not both 1)
        a, b = self.concentration1, self.concentration0
        mode = ((a - 1) / (a * b - 1)).pow(a.reciprocal())
        return flow.where((a < 1) | (b < 1), flow.full_like(mode, float("nan")), mode)

    @property
    def variance(self):
        return _kumaraswamy_moment(self.concentration1, self.concentration0, 2) - self.mean.pow(2)

    def entropy(self):
        t1 = 1 - self.concentration1.reciprocal()
        t0 = 1 - self.concentration0.reciprocal()
        harmonic = flow.digamma(self.concentration0 + 1) + _EULER_GAMMA  # the harmonic number H_b
        return t0 + t1 * harmonic - flow.log(self.concentration1) - flow.log(self.concentration0)


class HalfCauchy(_FoldedAtZero, TransformedDistribution):
    """|X| for X ~ Cauchy(0, scale).

    Args:
        scale (float or Tensor): the scale of the full Cauchy distribution (positive).
    """

    _base = Cauchy

    def expand(self, batch_shape, _instance=None):
        return self._expand_as(HalfCauchy, batch_shape, _instance)

    @property
    def mean(self):
        return flow.full(tuple(self._extended_shape()), float("inf"), dtype=self.scale.dtype)

    @property
    def mode(self):
        return flow.zeros_like(self.scale)

    @property
    def variance(self):
        return self.base_dist.variance



class LogisticNormal(TransformedDistribution):
    """The distribution on the simplex of ``StickBreakingTransform()(X)`` for ``X ~ Normal(loc, scale)``, whose
    last batch dim (of size K - 1) becomes an event dim of size K.

    Args:
        loc (float or Tensor): the mean of the base Normal.
        scale (float or Tensor): the standard deviation of the base Normal (positive).
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])  # a scalar is a 1-vector: the distribution on the 2-simplex
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.base_dist.scale
