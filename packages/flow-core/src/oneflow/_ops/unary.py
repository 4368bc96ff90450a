"""Python-level pieces of the unary family: PyTorch's aliases (``absolute``, ``arcsin``, ``fix``, ...) and
``positive``, which returns its input itself."""
import math

from .. import _C
from ._names import torch_dtype_name
from .creation import ones_like

ops = _C.ops

# alias -> registry op (each also gets the in-place ``alias_`` Tensor method)
_ALIASES = {
    "absolute": "abs", "negative": "neg", "arccos": "acos", "arcsin": "asin", "arctan": "atan",
    "arccosh": "acosh", "arcsinh": "asinh", "arctanh": "atanh", "fix": "trunc", "sgn": "sign",
}

__all__ = ["positive", "deg2rad", "rad2deg", "signbit", "logit", "sinc"] + list(_ALIASES)


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


def logit(input, eps=None):
    """``log(p / (1 - p))``, with ``p`` clamped to ``[eps, 1 - eps]`` when ``eps`` is given (else logit(0) is
    -inf and logit(1) inf); integers compute in the default float dtype."""
    x = input if input.dtype.is_floating_point else ops.to_dtype(input, _C.get_default_dtype())
    if eps is not None:
        x = ops.clamp(x, eps, 1 - eps)
    return ops.log(x / (1 - x))


def sinc(input):
    """The normalised sinc ``sin(pi x) / (pi x)``, 1 at 0 (gradient 0 there, no NaN from the 0/0 branch)."""
    x = input if input.dtype.is_floating_point else ops.to_dtype(input, _C.get_default_dtype())
    zero = x == 0
    one = ones_like(x)
    safe = ops.where(zero, one, x)  # the masked branch must not see 0/0 in backward either
    px = safe * math.pi
    return ops.where(zero, one, ops.sin(px) / px)


TENSOR_METHODS = {"positive": positive, "deg2rad": deg2rad, "rad2deg": rad2deg, "signbit": signbit, "logit": logit,
                  "sinc": sinc, "logit_": _in_place(logit), "sinc_": _in_place(sinc),
                  "deg2rad_": _in_place(deg2rad), "rad2deg_": _in_place(rad2deg)}
for _alias, _name in _ALIASES.items():
    globals()[_alias] = getattr(ops, _name)
    TENSOR_METHODS[_alias] = getattr(ops, _name)
    TENSOR_METHODS[_alias + "_"] = getattr(ops, _name + "_")
del _alias, _name
