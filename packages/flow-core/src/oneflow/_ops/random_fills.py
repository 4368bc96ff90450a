"""Random in-place fills of PyTorch's Tensor API beyond the registry's: cauchy_, geometric_, log_normal_."""
import builtins
import math

from .. import _C
from ._names import torch_dtype_name
from .creation_random import _gen

ops = _C.ops



def _uniform_open(self, generator, op):
    """Uniform samples in (0, 1] of ``self``'s shape, in float64 for float64 tensors, else float32."""
    dt = _C.float64 if self.dtype == _C.float64 else _C.float32
    u = _C._empty(list(self.shape), dt, None)
    ops.uniform_(u, 0.0, 1.0, generator=_gen(generator, op))
    return ops.sub(1.0, u)


def _fill_random(self, values):
    prev = _C.is_grad_enabled()
    # like PyTorch's random fills: no history is recorded, but a leaf that requires grad is still refused
    if self.is_leaf and self.requires_grad and prev:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    _C._set_grad_enabled(False)
    try:
        return ops.copy_(self, values)
    finally:
        _C._set_grad_enabled(prev)


def _continuous(self, name, kernel):
    if not self.dtype.is_floating_point:
        if kernel:
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_dtype_name(self.dtype)}'")
        long_names = {_C.int64: "long int", _C.int32: "int", _C.int16: "short int", _C.int8: "signed char",
                      _C.uint8: "unsigned char", _C.bool: "bool"}
        raise RuntimeError(f"{name} distribution is a continuous probability distribution. dtype must be a floating "
                           f"point but you specified {long_names.get(self.dtype, str(self.dtype))}")


def _cauchy_(self, median=0, sigma=1, *, generator=None):
    """Fills ``self`` with samples of the Cauchy distribution ``median + sigma * tan(pi * (u - 1/2))``."""
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    _continuous(self, "Cauchy", None)
    u = _uniform_open(self, generator, "cauchy_")
    return _fill_random(self, ops.add(ops.mul(ops.tan(ops.mul(ops.sub(u, 0.5), math.pi)), sigma), median))


def _geometric_(self, p, *, generator=None):
    """Fills ``self`` with samples of the geometric distribution: the number of Bernoulli(``p``) trials up to
    and including the first success (1, 2, ...)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if self.dtype == _C.bool:
        raise NotImplementedError("\"geometric_cpu\" not implemented for 'Bool'")
    u = _uniform_open(self, generator, "geometric_")
    return _fill_random(self, ops.ceil(ops.div(ops.log(u), math.log1p(-p))))


def _log_normal_(self, mean=1, std=2, *, generator=None):
    """Fills ``self`` with samples of ``exp(N(mean, std^2))``."""
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    _continuous(self, "LogNormal", "log_normal_cpu")
    n = _C._empty(list(self.shape), _C.float64 if self.dtype == _C.float64 else _C.float32, None)
    ops.normal_(n, builtins.float(mean), builtins.float(std), generator=_gen(generator, "log_normal_"))
    return _fill_random(self, ops.exp(n))


TENSOR_METHODS = {"cauchy_": _cauchy_, "geometric_": _geometric_, "log_normal_": _log_normal_}
