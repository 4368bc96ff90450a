"""Reparameterizable stand-ins for discrete distributions (PyTorch's formulas): the Concrete / Gumbel-softmax
relaxations of the Bernoulli (LogitRelaxedBernoulli, RelaxedBernoulli) and of the one-hot categorical
(ExpRelaxedCategorical, RelaxedOneHotCategorical), and the straight-through OneHotCategorical."""
import numbers

import oneflow as flow

from . import constraints
from .discrete import Categorical, _BinaryParams, _expand_params, _one_of
from .distribution import Distribution
from .more_discrete import OneHotCategorical
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform, SigmoidTransform
from .utils import broadcast_all, clamp_probs

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli", "ExpRelaxedCategorical", "RelaxedOneHotCategorical",
           "OneHotCategoricalStraightThrough"]


def _as_tensor(t, like):
    return t if isinstance(t, flow.Tensor) else flow.tensor(float(t), dtype=like.dtype)


class LogitRelaxedBernoulli(_BinaryParams, Distribution):
    """The logit of a :class:`RelaxedBernoulli` sample: ``(logit(U) + logits) / temperature`` for
    ``U ~ Uniform(0, 1)`` (Maddison et al., 2017).

    Args:
        temperature (Tensor): the relaxation temperature (positive).
        probs (float or Tensor): the probability of a 1 in the zero-temperature limit.
        logits (float or Tensor): its log-odds.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        _one_of(probs, logits)
        param = probs if probs is not None else logits
        (tensor,) = broadcast_all(param)
        setattr(self, "probs" if probs is not None else "logits", tensor)
        self._param = tensor
        super().__init__(() if isinstance(param, numbers.Number) else tensor.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogitRelaxedBernoulli, _instance)
        batch_shape = flow.Size(batch_shape)
        new.temperature = self.temperature
        _expand_params(self, new, tuple(batch_shape))
        return self._finish_expand(new, LogitRelaxedBernoulli, batch_shape)

    @property
    def param_shape(self):
        return self._param.shape

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        probs = clamp_probs(self.probs.expand(shape))
        uniforms = clamp_probs(flow.rand(shape, dtype=probs.dtype))
        return (uniforms.log() - (-uniforms).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        temperature = _as_tensor(self.temperature, logits)
        diff = logits - value * temperature
        return temperature.log() + diff - 2 * diff.exp().log1p()



class _RelaxedParams:
    """The temperature, logits and probs of a relaxed distribution, read from its base distribution."""

    @property
    def temperature(self):
        return self.base_dist.temperature

    @property
    def logits(self):
        return self.base_dist.logits

    @property
    def probs(self):
        return self.base_dist.probs

class RelaxedBernoulli(_RelaxedParams, TransformedDistribution):
    """The Concrete (binary Gumbel-softmax) relaxation of a Bernoulli: values in (0, 1) that approach 0/1 draws
    as ``temperature`` goes to 0, with reparameterized samples (the sigmoid of a
    :class:`LogitRelaxedBernoulli`).

    Args:
        temperature (Tensor): the relaxation temperature (positive).
        probs (float or Tensor): the probability of a 1 in the zero-temperature limit.
        logits (float or Tensor): its log-odds.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)


class ExpRelaxedCategorical(Distribution):
    """The log of a :class:`RelaxedOneHotCategorical` sample: ``log_softmax((logits + G) / temperature)`` for
    Gumbel noise ``G``, whose density is simpler in log space (Maddison et al., 2017).

    Args:
        temperature (Tensor): the relaxation temperature (positive).
        probs (Tensor): event probabilities (last dim).
        logits (Tensor): unnormalized log probabilities (last dim).
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        batch_shape = flow.Size(batch_shape)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        return self._finish_expand(new, ExpRelaxedCategorical, batch_shape)

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        uniforms = clamp_probs(flow.rand(shape, dtype=self.logits.dtype))
        gumbels = -((-(uniforms.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        k = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        temperature = _as_tensor(self.temperature, logits)
        log_scale = flow.full_like(temperature, float(k)).lgamma() + temperature.log() * (k - 1)
        score = logits - value * temperature
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(_RelaxedParams, TransformedDistribution):
    """The Concrete / Gumbel-softmax relaxation of a :class:`OneHotCategorical`: points of the simplex that
    approach one-hot draws as ``temperature`` goes to 0, with reparameterized samples (the exp of an
    :class:`ExpRelaxedCategorical`).

    Args:
        temperature (Tensor): the relaxation temperature (positive).
        probs (Tensor): event probabilities (last dim).
        logits (Tensor): unnormalized log probabilities (last dim).
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base_dist, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """A :class:`OneHotCategorical` whose ``rsample`` returns one-hot draws carrying the straight-through
    gradient estimator (Bengio et al., 2013): the forward value is the draw, the gradient that of ``probs``."""

    has_rsample = True

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
