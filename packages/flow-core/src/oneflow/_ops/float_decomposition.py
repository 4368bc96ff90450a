"""Floating-point decomposition: ``ldexp`` (``input * 2 ** other``) and ``frexp`` (mantissa and exponent)."""
import collections

import numpy as np

from .. import _C
from ._inplace_util import _float_dtype, _from_np, _inplace, _need_tensor, _np
from ._names import torch_dtype_name
from .misc import can_cast

ops = _C.ops

__all__ = ["ldexp", "ldexp_", "frexp"]


def ldexp(input, other):
    """``input * 2 ** other``; integer inputs give the default float dtype."""
    _need_tensor("ldexp", "other", 2, other)
    dtype = _float_dtype(_C._result_type([input, other]))
    x = ops.to_dtype(input, dtype) if input.dtype != dtype else input
    e = ops.to_dtype(other, dtype) if other.dtype != dtype else other
    return ops.mul(x, ops.exp2(e))


_ldexp_inplace = _inplace(ldexp)


def ldexp_(input, other):
    """In-place :func:`ldexp`."""
    if not can_cast(_float_dtype(_C._result_type([input, other])), input.dtype):
        raise RuntimeError(f"ldexp can't be cast to the desired output type {torch_dtype_name(input.dtype)}")
    return _ldexp_inplace(input, other)


frexp_return = collections.namedtuple("frexp", ["mantissa", "exponent"])


def frexp(input):
    """Decomposes ``input`` into ``mantissa * 2 ** exponent`` with ``0.5 <= |mantissa| < 1`` (int32 exponent);
    returns the named tuple ``(mantissa, exponent)``."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    _, e = np.frexp(_np(input))
    exponent = _from_np(e.astype(np.int32), _C.int32)
    # mantissa = input * 2**-exponent exactly, which also gives PyTorch's gradient 2**-exponent; half types
    # scale in float32, where 2**-exponent of their subnormals does not overflow
    wide = _C.float32 if input.dtype in (_C.float16, _C.bfloat16) else input.dtype
    x = ops.to_dtype(input, wide) if wide != input.dtype else input
    mantissa = ops.mul(x, ops.exp2(ops.neg(ops.to_dtype(exponent, wide))))
    if wide != input.dtype:
        mantissa = ops.to_dtype(mantissa, input.dtype)
    return frexp_return(mantissa, exponent)


TENSOR_METHODS = {"ldexp": ldexp, "ldexp_": ldexp_, "frexp": frexp}
