"""The von Mises distribution on the circle (PyTorch's ``torch.distributions.VonMises``)."""
import math

import oneflow as flow

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]

# Polynomial approximations of the modified Bessel functions I0 and I1 (Abramowitz and Stegun 9.8.1-9.8.4):
# in (x / 3.75)^2 below 3.75, and of sqrt(x) e^-x I(x) in 3.75 / x above.
_I0_SMALL = [1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.0360768, 0.0045813]
_I0_LARGE = [0.39894228, 0.01328592, 0.00225319, -0.00157565, 0.00916281, -0.02057706, 0.02635537, -0.01647633,
             0.00392377]
_I1_SMALL = [0.5, 0.87890594, 0.51498869, 0.15084934, 0.02658733, 0.00301532, 0.00032411]
_I1_LARGE = [0.39894228, -0.03988024, -0.00362018, 0.00163801, -0.01031555, 0.02282967, -0.02895312, 0.01787654,
             -0.00420059]


def _polyval(y, coefs):
    result = coefs[-1]
    for c in reversed(coefs[:-1]):  # Horner's rule
        result = c + y * result
    return result


def _log_bessel_i(x, order=0):
    """log I_order(x) for order 0 or 1 and x > 0."""
    if order not in (0, 1):
        raise ValueError(f"order must be 0 or 1, got {order}")
    small_coefs, large_coefs = (_I0_SMALL, _I0_LARGE) if order == 0 else (_I1_SMALL, _I1_LARGE)
    small = _polyval((x / 3.75).pow(2), small_coefs)
    if order == 1:
        small = x.abs() * small
    large = x - 0.5 * x.log() + _polyval(3.75 / x, large_coefs).log()
    return flow.where(x < 3.75, small.log(), large)


def _rejection_sample(loc, concentration, proposal_r, shape):
    """Best and Fisher's (1979) wrapped-Cauchy rejection sampler, in the dtype of ``loc``."""
    x = flow.zeros(shape, dtype=loc.dtype)
    done = flow.zeros(shape, dtype=flow.bool)
    while not bool(done.all()):
        u1, u2, u3 = flow.rand((3,) + tuple(shape), dtype=loc.dtype).unbind()
        z = flow.cos(math.pi * u1)
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2 > 0) | ((c / u2).log() + 1 - c >= 0)) & ~done
        x = flow.where(accept, (u3 - 0.5).sign() * f.acos(), x)
        done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi  # wrapped to [-pi, pi)


class VonMises(Distribution):
    """The von Mises (circular normal) distribution, with density ``exp(concentration * cos(x - loc)) /
    (2 pi I0(concentration))``. Samples lie in [-pi, pi); the support is the reals, the density being
    2 pi-periodic.

    Args:
        loc (Tensor): the angular mean.
        concentration (Tensor): the concentration (positive).
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, (), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(VonMises, _instance)
        batch_shape = flow.Size(batch_shape)
        new.loc, new.concentration = self.loc.expand(batch_shape), self.concentration.expand(batch_shape)
        return self._finish_expand(new, VonMises, batch_shape)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * flow.cos(value - self.loc) - math.log(2 * math.pi)
                - _log_bessel_i(self.concentration, order=0))

    @lazy_property
    def _proposal_r(self):
        # the wrapped Cauchy envelope's parameter, in float64 since it cancels badly for small concentrations
        kappa = self.concentration.double()
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        return flow.where(kappa < 1e-5, 1 / kappa + kappa, (1 + rho ** 2) / (2 * rho))

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with flow.no_grad():
            x = _rejection_sample(self.loc.double(), self.concentration.double(), self._proposal_r, shape)
        return x.to(self.loc.dtype)

    @property
    def mean(self):
        """The circular mean."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance 1 - I1(concentration) / I0(concentration)."""
        return 1 - (_log_bessel_i(self.concentration, order=1) - _log_bessel_i(self.concentration, order=0)).exp()
