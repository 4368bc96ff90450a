"""Discrete distributions: Bernoulli and Categorical, parameterized by probabilities or logits (PyTorch's
formulas; the other parameterization is computed lazily)."""
import oneflow as flow

from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli", "Categorical"]


def _one_of(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _expand_params(old, new, shape):
    # only the parameterizations already computed travel; the other one stays lazy
    for name in ("probs", "logits"):
        if name in old.__dict__:
            setattr(new, name, old.__dict__[name].expand(shape))
    new._param = new.__dict__["probs"] if "probs" in old.__dict__ else new.__dict__["logits"]


class _BinaryParams:
    """The success probability of distributions built on Bernoulli trials (Bernoulli, Geometric, Binomial), given
    as ``probs`` or log-odds ``logits``; whichever was not given is computed on first use."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)


class Bernoulli(_BinaryParams, ExponentialFamily):
    """0/1 outcomes with probability ``probs`` of 1 (or log-odds ``logits``)."""

    _mean_carrier_measure = 0

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            param = self.probs
        else:
            (self.logits,) = broadcast_all(logits)
            param = self.logits
        self._param = param
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = flow.Size(batch_shape)
        _expand_params(self, new, tuple(batch_shape))
        return self._finish_expand(new, Bernoulli, batch_shape)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return flow.where(self.probs == 0.5, flow.full_like(mode, float("nan")), mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with flow.no_grad():
            return flow.bernoulli(self.probs.expand(tuple(shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = flow.broadcast_tensors(self.logits, value)
        return -flow.nn.functional.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return flow.nn.functional.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    @property
    def _natural_params(self):
        return (flow.log(self.probs) - flow.log1p(-self.probs),)

    def _log_normalizer(self, x):
        return flow.log1p(flow.exp(x))

    def enumerate_support(self, expand=True):
        values = flow.arange(2, dtype=self._param.dtype).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class Categorical(Distribution):
    """One of ``K`` categories, with (unnormalized) probabilities ``probs`` or log-probabilities ``logits`` in
    the last dim."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        super().__init__(self._param.shape[:-1], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = flow.Size(batch_shape)
        _expand_params(self, new, tuple(batch_shape) + (self._num_events,))
        new._num_events = self._num_events
        return self._finish_expand(new, Categorical, batch_shape)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.shape

    @property
    def mean(self):
        return flow.full(tuple(self._extended_shape()), float("nan"), dtype=self.probs.dtype)

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return flow.full(tuple(self._extended_shape()), float("nan"), dtype=self.probs.dtype)

    def sample(self, sample_shape=()):
        if not isinstance(sample_shape, flow.Size):
            sample_shape = flow.Size(sample_shape)
        n = 1
        for s in sample_shape:
            n *= s
        with flow.no_grad():
            probs_2d = self.probs.reshape(-1, self._num_events)
            samples_2d = flow.multinomial(probs_2d, n, True).t()
        return samples_2d.reshape(tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = flow.broadcast_tensors(value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        min_real = flow.finfo(self.logits.dtype).min
        logits = flow.clamp(self.logits, min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = flow.arange(self._num_events, dtype=flow.int64).view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values

