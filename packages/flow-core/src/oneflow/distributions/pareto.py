"""Power-law tails (PyTorch's formulas): the Pareto distribution (a transformed Exponential) and the generalized
Pareto distribution of peaks-over-threshold models."""
import numbers

import oneflow as flow

from . import constraints
from .continuous import Exponential
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .utils import broadcast_all

__all__ = ["Pareto", "GeneralizedPareto"]


class Pareto(TransformedDistribution):
    """The Pareto type I distribution: ``scale * exp(X)`` for ``X ~ Exponential(alpha)``.

    Args:
        scale (float or Tensor): the minimum value (positive).
        alpha (float or Tensor): the tail index (positive).
    """

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Pareto, _instance)
        new.scale, new.alpha = self.scale.expand(batch_shape), self.alpha.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)  # infinite for alpha <= 1
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)  # infinite for alpha <= 2
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution, with survival function ``(1 + concentration * z) ** (-1 /
    concentration)`` for ``z = (x - loc) / scale`` (``exp(-z)`` at ``concentration == 0``). Its support is
    ``[loc, inf)`` for ``concentration >= 0`` and ``[loc, loc - scale / concentration]`` otherwise.

    Args:
        loc (float or Tensor): the location (lower bound).
        scale (float or Tensor): the scale (positive).
        concentration (float or Tensor): the shape (tail index).
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        scalar = all(isinstance(v, numbers.Number) for v in (loc, scale, concentration))
        super().__init__(() if scalar else self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = flow.Size(batch_shape)
        new.loc, new.scale, new.concentration = (t.expand(batch_shape) for t in
                                                 (self.loc, self.scale, self.concentration))
        return self._finish_expand(new, GeneralizedPareto, batch_shape)

    def _safe_concentration(self):
        # the concentration == 0 limit has its own formulas; a stand-in of 1 keeps the other branch finite
        eq_zero = flow.isclose(self.concentration, flow.zeros_like(self.concentration))
        return eq_zero, flow.where(eq_zero, flow.ones_like(self.concentration), self.concentration)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        return self.icdf(flow.rand(shape, dtype=self.loc.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, safe_conc = self._safe_concentration()
        y = 1 / safe_conc + flow.ones_like(z)
        nonzero = flow.where(y == 0, y, y * flow.log1p(safe_conc * z))
        return -self.scale.log() - flow.where(eq_zero, z, nonzero)

    def log_survival_function(self, value):
        """log P(X > value)."""
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        eq_zero, safe_conc = self._safe_concentration()
        return flow.where(eq_zero, -z, -flow.log1p(safe_conc * z) / safe_conc)

    def log_cdf(self, value):
        """log P(X <= value)."""
        return flow.log1p(-flow.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return flow.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe_conc = self._safe_concentration()
        logu = flow.log1p(-value)
        nonzero = self.loc + self.scale / safe_conc * flow.expm1(-safe_conc * logu)
        return flow.where(eq_zero, self.loc - self.scale * logu, nonzero)

    @property
    def mean(self):
        valid = self.concentration < 1
        safe_conc = flow.where(valid, self.concentration, flow.full_like(self.concentration, 0.5))
        result = self.loc + self.scale / (1 - safe_conc)
        return flow.where(valid, result, flow.full_like(result, float("nan")))

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe_conc = flow.where(valid, self.concentration, flow.full_like(self.concentration, 0.25))
        result = self.scale ** 2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc))
        return flow.where(valid, result, flow.full_like(result, float("nan")))

    @property
    def mode(self):
        return self.loc

    def entropy(self):
        return (flow.log(self.scale) + self.concentration + 1).expand(tuple(self._batch_shape))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        upper = flow.where(self.concentration < 0, self.loc - self.scale / self.concentration,
                           flow.full_like(self.loc, float("inf")))
        return constraints.interval(self.loc, upper)
