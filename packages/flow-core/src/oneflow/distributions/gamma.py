"""The gamma and beta distributions (PyTorch's ``torch.distributions.Gamma`` and ``Beta``), sampled by
Marsaglia and Tsang's method (the ``_standard_gamma`` op) with implicit reparameterization gradients."""
import oneflow as flow

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma", "Beta"]


def _standard_gamma(alpha):
    """One Gamma(alpha, 1) sample per entry of ``alpha``, differentiable with respect to ``alpha``: the registry
    sampler, whose backward is the implicit reparameterization gradient ``-(dP/dalpha) / (dP/dx)``."""
    return flow._standard_gamma(alpha)


class Gamma(ExponentialFamily):
    """The gamma distribution with shape ``concentration`` and inverse scale ``rate``."""

    _mean_carrier_measure = 0

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        batch_shape = flow.Size(batch_shape)
        new.concentration, new.rate = self.concentration.expand(batch_shape), self.rate.expand(batch_shape)
        return self._finish_expand(new, Gamma, batch_shape)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        value = _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value.clamp(min=flow.finfo(value.dtype).tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c, r = self.concentration, self.rate
        return flow.xlogy(c, r) + flow.xlogy(c - 1, value) - r * value - flow.lgamma(c)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return flow.igamma(self.concentration, self.rate * value)

    def entropy(self):
        c = self.concentration
        return c - flow.log(self.rate) + flow.lgamma(c) + (1.0 - c) * flow.digamma(c)

    @property
    def _natural_params(self):
        return self.concentration - 1, -self.rate

    def _log_normalizer(self, x, y):
        return flow.lgamma(x + 1) + (x + 1) * flow.log(-y.reciprocal())


class Beta(ExponentialFamily):
    """The beta distribution on [0, 1] with concentrations ``concentration1`` (alpha) and ``concentration0``
    (beta)."""

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        self.concentration1, self.concentration0 = broadcast_all(concentration1, concentration0)
        super().__init__(self.concentration1.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = flow.Size(batch_shape)
        new.concentration1 = self.concentration1.expand(batch_shape)
        new.concentration0 = self.concentration0.expand(batch_shape)
        return self._finish_expand(new, Beta, batch_shape)

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        c1m1, c0m1 = (self.concentration1 - 1).clamp(min=0), (self.concentration0 - 1).clamp(min=0)
        # PyTorch's Dirichlet puts the mode of a U-shaped density (both concentrations < 1) at the first vertex
        both_below_one = (self.concentration1 < 1) & (self.concentration0 < 1)
        return flow.where(both_below_one, flow.ones_like(c1m1), c1m1 / (c1m1 + c0m1))

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        x = _standard_gamma(self.concentration1.expand(shape))
        y = _standard_gamma(self.concentration0.expand(shape))
        eps = flow.finfo(x.dtype).tiny
        return (x / (x + y)).clamp(min=eps, max=1 - flow.finfo(x.dtype).eps / 2)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c1, c0 = self.concentration1, self.concentration0
        return (flow.xlogy(c1 - 1, value) + flow.xlogy(c0 - 1, 1 - value) + flow.lgamma(c1 + c0)
                - flow.lgamma(c1) - flow.lgamma(c0))

    def entropy(self):
        c1, c0 = self.concentration1, self.concentration0
        total = c1 + c0
        return (flow.lgamma(c1) + flow.lgamma(c0) - flow.lgamma(total) - (2 - total) * flow.digamma(total)
                - (c1 - 1) * flow.digamma(c1) - (c0 - 1) * flow.digamma(c0))

    @property
    def _natural_params(self):
        return self.concentration1, self.concentration0

    def _log_normalizer(self, x, y):
        return flow.lgamma(x) + flow.lgamma(y) - flow.lgamma(x + y)
