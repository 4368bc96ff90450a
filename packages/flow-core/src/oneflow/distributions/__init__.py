"""Probability distributions (PyTorch's ``torch.distributions``).

Distributions: Normal, Uniform, Exponential, Laplace, LogNormal, Gamma, Chi2, InverseGamma, Beta, Kumaraswamy,
ContinuousBernoulli, Cauchy, HalfCauchy, HalfNormal, Gumbel, Weibull, Pareto, GeneralizedPareto, StudentT,
FisherSnedecor, VonMises, Dirichlet, LogisticNormal, MultivariateNormal, LowRankMultivariateNormal, Wishart,
LKJCholesky, Bernoulli, Categorical, Geometric, Poisson, Binomial, NegativeBinomial, OneHotCategorical,
OneHotCategoricalStraightThrough, Multinomial, RelaxedBernoulli, LogitRelaxedBernoulli, RelaxedOneHotCategorical,
MixtureSameFamily, Independent and TransformedDistribution, with ExponentialFamily as the base of the exponential
families (entropies and KL divergences from Bregman divergences).

Each has sampling (reparameterized ``rsample`` where the distribution allows), log densities, CDFs, entropies and
moments where defined, and argument and sample validation (ValueError). ``kl_divergence`` looks up closed forms
registered with ``register_kl``. ``transforms`` holds the invertible maps used by TransformedDistribution, and
``biject_to`` / ``transform_to`` (``constraint_registry``) map unconstrained space onto a ``constraints`` space.
"""
from . import constraint_registry, constraints, transforms  # noqa: F401
from .constraint_registry import biject_to, transform_to
from .continuous import Exponential, Laplace, Normal, Uniform
from .continuous_bernoulli import ContinuousBernoulli
from .discrete import Bernoulli, Categorical
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .gamma import Beta, Gamma
from .gamma_derived import Chi2, FisherSnedecor, InverseGamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .log_normal import LogNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .more_continuous import Cauchy, Dirichlet, Gumbel, HalfNormal, StudentT
from .more_discrete import Binomial, Geometric, Multinomial, NegativeBinomial, OneHotCategorical, Poisson
from .multivariate_normal import MultivariateNormal
from .pareto import GeneralizedPareto, Pareto
from .random_matrix import LKJCholesky, Wishart
from .relaxed import (LogitRelaxedBernoulli, OneHotCategoricalStraightThrough, RelaxedBernoulli,
                      RelaxedOneHotCategorical)
from .transformed_distribution import TransformedDistribution
from .transformed_family import HalfCauchy, Kumaraswamy, LogisticNormal, Weibull
from .transforms import (AbsTransform, AffineTransform, CatTransform, ComposeTransform, CorrCholeskyTransform,
                         CumulativeDistributionTransform, ExpTransform, IndependentTransform, LowerCholeskyTransform,
                         PositiveDefiniteTransform, PowerTransform, ReshapeTransform, SigmoidTransform,
                         SoftmaxTransform, SoftplusTransform, StackTransform, StickBreakingTransform, TanhTransform,
                         Transform, identity_transform)
from .von_mises import VonMises

__all__ = ["Distribution", "ExponentialFamily", "TransformedDistribution", "Independent",
           "Normal", "Uniform", "Exponential", "Laplace", "LogNormal", "Gamma", "Chi2", "InverseGamma", "Beta",
           "Kumaraswamy", "ContinuousBernoulli", "Cauchy", "HalfCauchy", "HalfNormal", "Gumbel", "Weibull", "Pareto",
           "GeneralizedPareto", "StudentT", "FisherSnedecor", "VonMises", "Dirichlet", "LogisticNormal",
           "MultivariateNormal", "LowRankMultivariateNormal", "Wishart", "LKJCholesky",
           "Bernoulli", "Categorical", "Geometric", "Poisson", "Binomial", "NegativeBinomial", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "Multinomial", "RelaxedBernoulli", "LogitRelaxedBernoulli",
           "RelaxedOneHotCategorical", "MixtureSameFamily",
           "AbsTransform", "AffineTransform", "CatTransform", "ComposeTransform", "CorrCholeskyTransform",
           "CumulativeDistributionTransform", "ExpTransform", "IndependentTransform", "LowerCholeskyTransform",
           "PositiveDefiniteTransform", "PowerTransform", "ReshapeTransform", "SigmoidTransform", "SoftmaxTransform",
           "SoftplusTransform", "StackTransform", "StickBreakingTransform", "TanhTransform", "Transform",
           "identity_transform", "biject_to", "transform_to", "kl_divergence", "register_kl", "constraints",
           "transforms", "constraint_registry"]
