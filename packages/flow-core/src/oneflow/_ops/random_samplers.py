"""Samplers parameterised elementwise by tensors: ``poisson(rates)``, ``binomial(count, prob)`` and
``_standard_gamma(alpha)`` (PyTorch's private Gamma sampler, differentiable through its implicit
reparameterization gradient). Each takes an optional ``generator``."""
from .. import _C
from .creation_random import _gen

ops = _C.ops

__all__ = ["poisson", "binomial", "_standard_gamma"]


def poisson(input, generator=None):
    """Poisson counts with rates ``input`` (same shape and floating dtype); the gradient with respect to the
    rates is zero, as in PyTorch."""
    return ops.poisson(input, generator=_gen(generator, "poisson"))


def binomial(count, prob, generator=None):
    """Binomial(``count``, ``prob``) samples, broadcasting ``count`` and ``prob``; 0 where ``count <= 0`` or
    ``prob <= 0`` and ``count`` where ``prob >= 1``."""
    return ops.binomial(count, prob, generator=_gen(generator, "binomial"))


def _standard_gamma(input, generator=None):
    """Gamma(``input``, 1) samples, clamped to the dtype's smallest normal value; differentiable in ``input``."""
    return ops._standard_gamma(input, generator=_gen(generator, "_standard_gamma"))
