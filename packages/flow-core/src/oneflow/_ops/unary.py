"""Python-level pieces of the unary family: PyTorch's aliases (``absolute``, ``arcsin``, ``fix``, ...) and
``positive``, which returns its input itself."""
import math

from .. import _C
from ._names import torch_dtype_name
from ..special import logit, multigammaln, polygamma, sinc  # one definition each, shared with oneflow.special

ops = _C.ops

# alias -> registry op (each also gets the in-place ``alias_`` Tensor method)
_ALIASES = {
    "absolute": "abs", "negative": "neg", "arccos": "acos", "arcsin": "asin", "arctan": "atan",
    "arccosh": "acosh", "arcsinh": "asinh", "arctanh": "atanh", "fix": "trunc", "sgn": "sign",
}

__all__ = ["positive", "deg2rad", "rad2deg", "signbit", "logit", "sinc", "polygamma", "mvlgamma"] + list(_ALIASES)

mvlgamma = multigammaln


def positive(input):
    """Returns ``input`` itself (``+input``); not supported for bool tensors."""
    if input.dtype == _C.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def _angle(name, factor):
    def f(input):
        if not input.dtype.is_floating_point:  # integer and bool inputs, as in PyTorch
            input = ops.to_dtype(input, _C.get_default_dtype())
        return ops.mul(input, factor)

    f.__name__ = name
    return f


deg2rad = _angle("deg2rad", math.pi / 180.0)
deg2rad.__doc__ = "Converts angles in degrees to radians (integer and bool inputs give the default float dtype)."
rad2deg = _angle("rad2deg", 180.0 / math.pi)
rad2deg.__doc__ = "Converts angles in radians to degrees (integer and bool inputs give the default float dtype)."


def _in_place(fn):
    def f(self):
        if not self.dtype.is_floating_point:
            raise RuntimeError(f"result type Float can't be cast to the desired output type "
                               f"{torch_dtype_name(self.dtype)}")
        return ops.copy_(self, fn(self))

    f.__name__ = fn.__name__ + "_"
    return f


def signbit(input):
    """True where the sign bit of ``input`` is set: negative numbers, ``-0.0`` and negative NaNs."""
    if input.dtype == _C.bool:
        return ops.ne(input, input)
    if not input.dtype.is_floating_point:
        return ops.lt(input, 0)
    from .creation import tensor

    return ops.lt(ops.copysign(tensor(1.0, dtype=input.dtype), input), 0)


TENSOR_METHODS = {"positive": positive, "deg2rad": deg2rad, "rad2deg": rad2deg, "signbit": signbit, "logit": logit,
                  "sinc": sinc, "logit_": _in_place(logit), "sinc_": _in_place(sinc),
                  "polygamma": lambda self, n: polygamma(n, self), "mvlgamma": multigammaln,
                  "deg2rad_": _in_place(deg2rad), "rad2deg_": _in_place(rad2deg)}
for _alias, _name in _ALIASES.items():
    globals()[_alias] = getattr(ops, _name)
    TENSOR_METHODS[_alias] = getattr(ops, _name)
    TENSOR_METHODS[_alias + "_"] = getattr(ops, _name + "_")
del _alias, _name
