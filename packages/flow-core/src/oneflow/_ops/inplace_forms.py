"""In-place Tensor methods of ops whose out-of-place forms are Python-level: heaviside_, addbmm_, addr_,
mvlgamma_, polygamma_ (computed out of place, checked and copied into ``self``)."""
from .. import _C
from ._inplace_util import _inplace

ops = _C.ops



def _heaviside(self, values):
    from .binary import heaviside

    return heaviside(self, values)


def _addbmm(self, batch1, batch2, *, beta=1, alpha=1):
    from .linalg import addbmm

    return addbmm(self, batch1, batch2, beta=beta, alpha=alpha)


def _addr(self, vec1, vec2, *, beta=1, alpha=1):
    from .linalg import addr

    return addr(self, vec1, vec2, beta=beta, alpha=alpha)


def _mvlgamma(self, p):
    from ..special import multigammaln

    return multigammaln(self, p)


def _polygamma(self, n):
    from ..special import polygamma

    return polygamma(n, self)


_heaviside.__name__, _addbmm.__name__, _addr.__name__ = "heaviside", "addbmm", "addr"
_mvlgamma.__name__, _polygamma.__name__ = "mvlgamma", "polygamma"


TENSOR_METHODS = {
    "heaviside_": _inplace(_heaviside), "addbmm_": _inplace(_addbmm), "addr_": _inplace(_addr),
    "mvlgamma_": _inplace(_mvlgamma, "mvlgamma"), "polygamma_": _inplace(_polygamma),
}
