"""Binary-family Python API: the Tensor operator dunders not bound in C++, PyTorch's aliases (``greater``,
``true_divide``, ...), ``where`` with its one-argument form, ``rsub``, and ``equal``/``allclose`` returning
Python bools. The ops themselves live in the C++ registry (binary.cpp, binary_math.cpp, compare.cpp,
ternary.cpp)."""
import math
import numbers
import sys

from .. import _C
from ._names import torch_dtype_name

ops = _C.ops

__all__ = ["where", "equal", "allclose", "rsub", "true_divide", "greater", "greater_equal", "less", "less_equal",
           "not_equal", "subtract", "multiply", "divide", "arctan2", "logaddexp", "logaddexp2", "heaviside",
           "float_power"]


def _is_ndarray(o):
    np = sys.modules.get("numpy")
    return np is not None and isinstance(o, np.ndarray)


def _operand(o):
    """Whether ``o`` can be the other side of a tensor operator (else the dunder returns NotImplemented)."""
    return isinstance(o, (_C.TensorBase, numbers.Number))


def where(condition, input=None, other=None):
    """``where(condition, input, other)``: elements of ``input`` where ``condition`` holds, else of ``other``
    (broadcast; either may be a Python number). ``where(condition)`` is ``nonzero(condition, as_tuple=True)``."""
    if input is None and other is None:
        import oneflow

        return oneflow.nonzero(condition, as_tuple=True)
    if input is None or other is None:
        raise TypeError("where() expects either 1 argument (condition) or 3 arguments (condition, input, other)")
    return ops.where(_bool_condition(condition), input, other)


def _bool_condition(condition):
    """A uint8 condition still works, with torch's deprecation warning; other dtypes fail in the op."""
    if isinstance(condition, _C.TensorBase) and condition.dtype == _C.uint8:
        import warnings

        warnings.warn("where received a uint8 condition tensor. This behavior is deprecated and will be removed in a "
                      "future version of PyTorch. Use a boolean condition instead.")
        return ops.to_dtype(condition, _C.bool)
    return condition


def _tensor_where(self, condition, y):
    """``x.where(condition, y)`` is ``where(condition, x, y)``."""
    return ops.where(_bool_condition(condition), self, y)


def equal(input, other):
    """True if both tensors have the same size and elements."""
    return ops.equal(input, other).item()


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """True if ``|input - other| <= atol + rtol * |other|`` holds elementwise (see ``isclose``)."""
    return ops.allclose(input, other, rtol, atol, equal_nan).item()


def rsub(input, other, *, alpha=1):
    """``other - alpha * input``."""
    return ops.sub(other, input, alpha=alpha)


def _logaddexp(name, input, other, exp, log1p_scale):
    # integer/bool operands promote when the other side is floating; an all-integer pair has no kernel
    import oneflow

    dt = oneflow.result_type(input, other)
    if not dt.is_floating_point:
        raise NotImplementedError(f"\"{name}_cpu\" not implemented for '{torch_dtype_name(dt)}'")
    input = ops.to_dtype(input, dt) if isinstance(input, _C.TensorBase) else input
    other = ops.to_dtype(other, dt) if isinstance(other, _C.TensorBase) else other
    m = ops.maximum(input, other)
    tail = ops.log1p(exp(ops.neg(ops.abs(ops.sub(input, other))))) if log1p_scale is None else \
        ops.mul(ops.log1p(exp(ops.neg(ops.abs(ops.sub(input, other))))), log1p_scale)
    # equal infinities: the difference is NaN, the answer is the infinity itself
    return ops.where(ops.logical_and(ops.isinf(m), ops.eq(input, other)), m, ops.add(m, tail))


def logaddexp(input, other):
    """``log(exp(input) + exp(other))``, computed without overflow (floating-point inputs)."""
    return _logaddexp("logaddexp", input, other, ops.exp, None)


def logaddexp2(input, other):
    """``log2(2**input + 2**other)``, computed without overflow (floating-point inputs)."""
    return _logaddexp("logaddexp2", input, other, ops.exp2, 1.0 / math.log(2.0))


def heaviside(input, values):
    """The Heaviside step function: 0 where ``input < 0``, ``values`` where ``input == 0``, 1 where
    ``input > 0``. ``input`` and ``values`` must have the same dtype."""
    if input.dtype != values.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    step = ops.to_dtype(ops.gt(input, 0), input.dtype)
    return ops.where(ops.eq(input, 0), values, step)


def float_power(input, exponent):
    """``input ** exponent`` computed in double precision (float64 result), either side may be a number."""
    def f64(v):
        return ops.to_dtype(v, _C.float64) if isinstance(v, _C.TensorBase) else float(v)

    if not isinstance(input, _C.TensorBase):
        from .creation import tensor

        input = tensor(float(input), dtype=_C.float64)
    return ops.pow(f64(input), f64(exponent))


def _float_power_(self, exponent):
    if self.dtype != _C.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {torch_dtype_name(self.dtype)}"
                           " but the operation's result requires dtype Double")
    return ops.pow_(self, ops.to_dtype(exponent, _C.float64) if isinstance(exponent, _C.TensorBase)
                    else float(exponent))


# PyTorch's aliases
true_divide = ops.div
greater = ops.gt
greater_equal = ops.ge
less = ops.lt
less_equal = ops.le
not_equal = ops.ne
subtract = ops.sub
multiply = ops.mul
divide = ops.div
arctan2 = ops.atan2


def _binop(name, reverse=False):
    def method(self, other):
        if name in ("eq", "ne") and _is_ndarray(other):
            # == and != take an array as a tensor, as in PyTorch (a bool tensor); other operators leave it to
            # NumPy's ufunc, whose result Tensor.__array_wrap__ makes a tensor
            from .creation import as_tensor

            other = as_tensor(other)
        if not _operand(other):
            return NotImplemented
        op = getattr(ops, name)
        return op(other, self) if reverse else op(self, other)

    method.__name__ = name
    return method


def _invert(self):
    if self.dtype == _C.bool:
        return ops.logical_not(self)
    if self.dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return ops.bitwise_not(self)


def _pos(self):
    if self.dtype == _C.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


def _abs(self):
    return ops.abs(self)


def _matmul(self, other):
    if not isinstance(other, _C.TensorBase):
        return NotImplemented
    import oneflow

    return oneflow.matmul(self, other)


def _rmatmul(self, other):
    if not isinstance(other, _C.TensorBase):
        return NotImplemented
    import oneflow

    return oneflow.matmul(other, self)


TENSOR_METHODS = {
    "__pow__": _binop("pow"), "__rpow__": _binop("pow", True), "__ipow__": _binop("pow_"),
    "__mod__": _binop("remainder"), "__rmod__": _binop("remainder", True), "__imod__": _binop("remainder_"),
    "__floordiv__": _binop("floor_divide"), "__rfloordiv__": _binop("floor_divide", True),
    "__ifloordiv__": _binop("floor_divide_"),
    "__eq__": _binop("eq"), "__ne__": _binop("ne"), "__lt__": _binop("lt"), "__le__": _binop("le"),
    "__gt__": _binop("gt"), "__ge__": _binop("ge"),
    "__and__": _binop("bitwise_and"), "__rand__": _binop("bitwise_and", True), "__iand__": _binop("bitwise_and_"),
    "__or__": _binop("bitwise_or"), "__ror__": _binop("bitwise_or", True), "__ior__": _binop("bitwise_or_"),
    "__xor__": _binop("bitwise_xor"), "__rxor__": _binop("bitwise_xor", True), "__ixor__": _binop("bitwise_xor_"),
    "__lshift__": _binop("bitwise_left_shift"), "__rlshift__": _binop("bitwise_left_shift", True),
    "__ilshift__": _binop("bitwise_left_shift_"),
    "__rshift__": _binop("bitwise_right_shift"), "__rrshift__": _binop("bitwise_right_shift", True),
    "__irshift__": _binop("bitwise_right_shift_"),
    "__invert__": _invert, "__pos__": _pos, "__abs__": _abs,
    "__matmul__": _matmul, "__rmatmul__": _rmatmul,
    # defining __eq__ must not make tensors unhashable (they are dict keys in optimizers and hooks)
    "__hash__": object.__hash__,
    "where": _tensor_where,
    "logaddexp": logaddexp, "logaddexp2": logaddexp2, "heaviside": heaviside, "float_power": float_power,
    "float_power_": _float_power_,
    "equal": equal,
    "allclose": allclose,
    "true_divide": ops.div, "true_divide_": ops.div_,
    "greater": ops.gt, "greater_": ops.gt_, "greater_equal": ops.ge, "greater_equal_": ops.ge_,
    "less": ops.lt, "less_": ops.lt_, "less_equal": ops.le, "less_equal_": ops.le_,
    "not_equal": ops.ne, "not_equal_": ops.ne_,
    "subtract": ops.sub, "subtract_": ops.sub_, "multiply": ops.mul, "multiply_": ops.mul_,
    "divide": ops.div, "divide_": ops.div_, "arctan2": ops.atan2, "arctan2_": ops.atan2_,
}
