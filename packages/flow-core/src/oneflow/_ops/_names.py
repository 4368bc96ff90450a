"""PyTorch's scalar-type names (``Long``, ``Float``, ...) for error messages that match torch's."""
from .. import _C

TORCH_NAMES = {_C.bool: "Bool", _C.uint8: "Byte", _C.int8: "Char", _C.int16: "Short", _C.int32: "Int",
               _C.int64: "Long", _C.float16: "Half", _C.bfloat16: "BFloat16", _C.float32: "Float",
               _C.float64: "Double"}


def torch_dtype_name(dtype):
    """PyTorch's name of ``dtype`` in error messages (``int64`` -> ``Long``), else oneflow's short name."""
    return TORCH_NAMES.get(dtype, str(dtype).split(".")[-1])
