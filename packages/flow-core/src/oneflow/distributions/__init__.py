"""Probability distributions (PyTorch's ``torch.distributions``): Normal, Uniform, Exponential, Laplace,
Bernoulli, Categorical and MultivariateNormal, with sampling (reparameterized where the distribution allows), log densities,
CDFs, entropies, argument validation, and closed-form KL divergences."""
from . import constraints  # noqa: F401
from .continuous import Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Categorical
from .distribution import Distribution
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal

__all__ = ["Distribution", "Normal", "Uniform", "Exponential", "Laplace", "Bernoulli", "Categorical",
           "MultivariateNormal",
           "kl_divergence", "register_kl", "constraints"]
