"""``oneflow.framework.infer_compiler`` (OneFlow's name): run existing PyTorch modules on oneflow."""
from ._compile import CompiledModule, compile_from_torch
from ._convert import ConversionError

__all__ = ["compile_from_torch", "CompiledModule", "ConversionError"]
