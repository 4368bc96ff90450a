"""Probability distributions (PyTorch's ``torch.distributions``): Normal, Uniform, Exponential, Laplace,
LogNormal, Gamma, Beta, Cauchy, HalfNormal, Gumbel, StudentT, Dirichlet, Bernoulli, Categorical, Geometric,
Poisson, Binomial, OneHotCategorical, Multinomial, MultivariateNormal and Independent, with sampling
(reparameterized where the distribution allows), log densities, CDFs, entropies, argument validation,
and closed-form KL divergences."""
from . import constraints  # noqa: F401
from .continuous import Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Categorical
from .distribution import Distribution
from .gamma import Beta, Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .log_normal import LogNormal
from .more_continuous import Cauchy, Dirichlet, Gumbel, HalfNormal, StudentT
from .more_discrete import Binomial, Geometric, Multinomial, OneHotCategorical, Poisson
from .multivariate_normal import MultivariateNormal

__all__ = ["Distribution", "Normal", "Uniform", "Exponential", "Laplace", "Bernoulli", "Categorical",
           "MultivariateNormal", "Independent", "LogNormal", "Gamma", "Beta",
           "Cauchy", "HalfNormal", "Gumbel", "StudentT", "Dirichlet", "Geometric", "Poisson", "Binomial",
           "OneHotCategorical", "Multinomial",
           "kl_divergence", "register_kl", "constraints"]
