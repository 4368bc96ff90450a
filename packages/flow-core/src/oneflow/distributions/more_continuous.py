"""More continuous distributions (PyTorch's formulas): Cauchy, HalfNormal, Gumbel, StudentT and Dirichlet, with
reparameterized sampling (StudentT and Dirichlet through the gamma sampler's implicit gradients; HalfNormal and
Gumbel as transformed distributions)."""
import math

import oneflow as flow

from . import constraints
from .continuous import Normal, Uniform, _LocScale
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import _standard_gamma
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform, AffineTransform, ExpTransform
from .utils import broadcast_all

__all__ = ["Cauchy", "HalfNormal", "Gumbel", "StudentT", "Dirichlet"]

_EULER_GAMMA = 0.57721566490153286060


def _full_like(t, fill):
    return flow.full(tuple(t.shape), fill, dtype=t.dtype)


class Cauchy(_LocScale):
    """The Cauchy (Lorentz) distribution with median ``loc`` and half width at half maximum ``scale``."""

    @property
    def mean(self):
        return _full_like(self.loc, float("nan"))

    @property
    def variance(self):
        return _full_like(self.loc, float("inf"))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        u = flow.rand(shape, dtype=self.loc.dtype)
        return self.loc + flow.tan(math.pi * (u - 0.5)) * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -math.log(math.pi) - self.scale.log() - (((value - self.loc) / self.scale) ** 2).log1p()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return flow.atan((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return flow.tan(math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class _FoldedAtZero:
    """|X| for X ~ ``_base(0, scale)``, symmetric about 0: construction, density, CDF, quantiles and entropy
    from the base's. Subclasses set ``_base``."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _base = None

    def __init__(self, scale, validate_args=None):
        super().__init__(self._base(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    def _expand_as(self, cls, batch_shape, _instance):
        new = self._get_checked_instance(cls, _instance)  # a subclass with its own __init__ must override
        return super().expand(batch_shape, _instance=new)

    @property
    def scale(self):
        return self.base_dist.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        # both preimages +-value have the base's density
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return flow.where(value >= 0, log_prob, flow.full_like(log_prob, float("-inf")))

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)


class HalfNormal(_FoldedAtZero, TransformedDistribution):
    """|X| for X ~ N(0, scale^2) (a :class:`TransformedDistribution` of :class:`Normal` by
    :class:`~oneflow.distributions.transforms.AbsTransform`).

    Args:
        scale (float or Tensor): the scale of the full Normal distribution.
    """

    _base = Normal

    def expand(self, batch_shape, _instance=None):
        return self._expand_as(HalfNormal, batch_shape, _instance)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def mode(self):
        return flow.zeros_like(self.scale)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)



class Gumbel(TransformedDistribution):
    """The Gumbel (type-I extreme value) distribution with location ``loc`` and scale ``scale``: the
    :class:`TransformedDistribution` ``loc - scale * log(-log(U))`` of ``U ~ Uniform(tiny, 1 - eps)``.

    Args:
        loc (float or Tensor): the location.
        scale (float or Tensor): the scale.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        finfo = flow.finfo(self.loc.dtype)
        # the bounds keep both logs finite
        base_dist = Uniform(flow.full_like(self.loc, finfo.tiny), flow.full_like(self.loc, 1 - finfo.eps),
                            validate_args=validate_args)
        transforms = [ExpTransform().inv, AffineTransform(loc=0, scale=-flow.ones_like(self.scale)),
                      ExpTransform().inv, AffineTransform(loc=self.loc, scale=-self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc, new.scale = self.loc.expand(batch_shape), self.scale.expand(batch_shape)
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self):
        return self.loc + self.scale * _EULER_GAMMA

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + _EULER_GAMMA)


class StudentT(Distribution):
    """Student's t-distribution with ``df`` degrees of freedom, location ``loc`` and scale ``scale``."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = flow.Size(batch_shape)
        new.df, new.loc, new.scale = (t.expand(batch_shape) for t in (self.df, self.loc, self.scale))
        return self._finish_expand(new, StudentT, batch_shape)

    @property
    def mean(self):
        return flow.where(self.df <= 1, _full_like(self.loc, float("nan")), self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        finite = self.scale.pow(2) * df / flow.where(df > 2, df - 2, flow.ones_like(df))
        var = flow.where(df > 2, finite, _full_like(df, float("inf")))
        return flow.where(df <= 1, _full_like(df, float("nan")), var)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        x = flow.randn(shape, dtype=self.df.dtype)
        chi2 = 2 * _standard_gamma(0.5 * self.df.expand(shape))
        return self.loc + self.scale * x * flow.rsqrt(chi2 / self.df)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi) + flow.lgamma(0.5 * self.df)
             - flow.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * flow.log1p(y ** 2 / self.df) - z

    def entropy(self):
        lbeta = flow.lgamma(0.5 * self.df) + math.lgamma(0.5) - flow.lgamma(0.5 * (self.df + 1))
        return (self.scale.log() + 0.5 * (self.df + 1) * (flow.digamma(0.5 * (self.df + 1))
                - flow.digamma(0.5 * self.df)) + 0.5 * self.df.log() + lbeta)


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution on the simplex with concentrations ``concentration`` in the last dim."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = flow.Size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self._event_shape))
        return self._finish_expand(new, Dirichlet, batch_shape)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        cm1 = (self.concentration - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, keepdim=True)
        # all concentrations below one: PyTorch picks the first vertex (argmax of an all-NaN row)
        first = flow.zeros_like(mode)
        first[..., 0] = 1
        mask = (self.concentration < 1).all(dim=-1).unsqueeze(-1)
        return flow.where(mask, first, mode)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, keepdim=True)
        return self.concentration * (con0 - self.concentration) / (con0.pow(2) * (con0 + 1))

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        gammas = _standard_gamma(self.concentration.expand(shape))
        return gammas / gammas.sum(-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return flow.xlogy(c - 1.0, value).sum(-1) + flow.lgamma(c.sum(-1)) - flow.lgamma(c).sum(-1)

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        a0 = c.sum(-1)
        return (flow.lgamma(c).sum(-1) - flow.lgamma(a0) - (k - a0) * flow.digamma(a0)
                - ((c - 1.0) * flow.digamma(c)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - flow.lgamma(x.sum(-1))
