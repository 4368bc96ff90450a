"""PyTorch's scalar-type names (``Long``, ``Float``, ...) for error messages that match torch's."""
from .. import _C

TORCH_NAMES = {_C.bool: "Bool", _C.uint8: "Byte", _C.int8: "Char", _C.int16: "Short", _C.int32: "Int",
               _C.int64: "Long", _C.float16: "Half", _C.bfloat16: "BFloat16", _C.float32: "Float",
               _C.float64: "Double"}


def torch_dtype_name(dtype):
    """PyTorch's name of ``dtype`` in error messages (``int64`` -> ``Long``), else oneflow's short name."""
    return TORCH_NAMES.get(dtype, str(dtype).split(".")[-1])


def reject_dtype(kernel, tensor, bool_ok=True, integral_ok=True):
    """Raise PyTorch's ``NotImplementedError: "<kernel>" not implemented for '<Type>'`` when ``tensor``'s dtype
    is one PyTorch's kernel of that name does not handle (bool and/or integral types)."""
    dt = tensor.dtype
    if (dt == _C.bool and not bool_ok) or (not dt.is_floating_point and dt != _C.bool and not integral_ok):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_dtype_name(dt)}'")
