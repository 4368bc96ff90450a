"""The continuous Bernoulli distribution (PyTorch's ``torch.distributions.ContinuousBernoulli``)."""
import math
import numbers

import oneflow as flow
from oneflow.nn.functional import binary_cross_entropy_with_logits

from . import constraints
from .discrete import _one_of
from .exp_family import ExponentialFamily
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli"]


class ContinuousBernoulli(ExponentialFamily):
    """The continuous Bernoulli distribution on [0, 1] (Loaiza-Ganem and Cunningham, 2019), with density
    ``C(probs) * probs^x * (1 - probs)^(1 - x)``. Unlike a Bernoulli's, ``probs`` is not a probability (nor
    ``logits`` log-odds), but the names are kept for the similarity.

    Near ``probs = 0.5`` the closed forms divide by zero, so within ``lims`` Taylor expansions replace them.

    Args:
        probs (float or Tensor): parameters in (0, 1).
        logits (float or Tensor): real parameters whose sigmoid is ``probs``.
        lims (tuple of float): the interval of ``probs`` evaluated by Taylor expansion.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            scalar = isinstance(probs, numbers.Number)
            (probs,) = broadcast_all(probs)
            check = self._validate_args if validate_args is None else validate_args
            if check and not bool(constraints.unit_interval.check(probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(probs)  # endpoints would make the normalizer infinite
            self._param = self.probs
        else:
            scalar = isinstance(logits, numbers.Number)
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        self._lims = lims
        super().__init__(() if scalar else self._param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ContinuousBernoulli, _instance)
        new._lims = self._lims
        batch_shape = flow.Size(batch_shape)
        for name in ("probs", "logits"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(batch_shape))
                new._param = new.__dict__[name]
        return self._finish_expand(new, ContinuousBernoulli, batch_shape)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    @property
    def param_shape(self):
        return self._param.shape

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        # inside the unstable region the closed forms see a harmless stand-in; Taylor series replace their result
        return flow.where(self._outside_unstable_region(), self.probs,
                          flow.full_like(self.probs, self._lims[0]))

    def _cont_bern_log_norm(self):
        """log C(probs), the log normalizing constant."""
        cut = self._cut_probs()
        below_half = flow.where(cut <= 0.5, cut, flow.zeros_like(cut))
        above_half = flow.where(cut >= 0.5, cut, flow.ones_like(cut))
        log_norm = (flow.log(flow.abs(flow.log1p(-cut) - flow.log(cut)))
                    - flow.where(cut <= 0.5, flow.log1p(-2.0 * below_half), flow.log(2.0 * above_half - 1.0)))
        x = (self.probs - 0.5).pow(2)
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return flow.where(self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / (flow.log1p(-cut) - flow.log(cut))
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x.pow(2)) * x
        return flow.where(self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        cut = self._cut_probs()
        variances = (cut * (cut - 1.0) / (1.0 - 2.0 * cut).pow(2)
                     + 1.0 / (flow.log1p(-cut) - flow.log(cut)).pow(2))
        x = (self.probs - 0.5).pow(2)
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return flow.where(self._outside_unstable_region(), variances, taylor)

    def sample(self, sample_shape=()):
        with flow.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        u = flow.rand(tuple(self._extended_shape(sample_shape)), dtype=self.probs.dtype)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none") + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut.pow(value) * (1.0 - cut).pow(1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = flow.where(self._outside_unstable_region(), cdfs, value)
        return flow.where(value <= 0.0, flow.zeros_like(unbounded),
                          flow.where(value >= 1.0, flow.ones_like(unbounded), unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        inverted = ((flow.log1p(-cut + value * (2.0 * cut - 1.0)) - flow.log1p(-cut))
                    / (flow.log(cut) - flow.log1p(-cut)))
        return flow.where(self._outside_unstable_region(), inverted, value)

    def entropy(self):
        log_probs0, log_probs1 = flow.log1p(-self.probs), flow.log(self.probs)
        return self.mean * (log_probs0 - log_probs1) - self._cont_bern_log_norm() - log_probs0

    @property
    def _natural_params(self):
        return (self.logits,)

    def _log_normalizer(self, x):
        # log((e^x - 1) / x), with its Taylor series near x = 0
        outside = (x <= self._lims[0] - 0.5) | (x > self._lims[1] - 0.5)
        cut = flow.where(outside, x, flow.full_like(x, self._lims[0] - 0.5))
        log_norm = flow.log(flow.abs(flow.expm1(cut))) - flow.log(flow.abs(cut))
        taylor = 0.5 * x + x.pow(2) / 24.0 - x.pow(4) / 2880.0
        return flow.where(outside, log_norm, taylor)
