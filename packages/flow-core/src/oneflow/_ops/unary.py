"""Python-level pieces of the unary family: PyTorch's aliases (``absolute``, ``arcsin``, ``fix``, ...) and
``positive``, which returns its input itself."""
from .. import _C

ops = _C.ops

# alias -> registry op (each also gets the in-place ``alias_`` Tensor method)
_ALIASES = {
    "absolute": "abs", "negative": "neg", "arccos": "acos", "arcsin": "asin", "arctan": "atan",
    "arccosh": "acosh", "arcsinh": "asinh", "arctanh": "atanh", "fix": "trunc", "sgn": "sign",
}

__all__ = ["positive"] + list(_ALIASES)


def positive(input):
    """Returns ``input`` itself (``+input``); not supported for bool tensors."""
    if input.dtype == _C.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


TENSOR_METHODS = {"positive": positive}
for _alias, _name in _ALIASES.items():
    globals()[_alias] = getattr(ops, _name)
    TENSOR_METHODS[_alias] = getattr(ops, _name)
    TENSOR_METHODS[_alias + "_"] = getattr(ops, _name + "_")
del _alias, _name
