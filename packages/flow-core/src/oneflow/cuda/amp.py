"""``oneflow.cuda.amp``: PyTorch's deprecated CUDA spellings of ``oneflow.autocast("cuda")`` and
``oneflow.amp.GradScaler("cuda")``, with the same deprecation warnings."""
from ..amp._device_spellings import device_amp

__all__ = ["autocast", "GradScaler"]

autocast, GradScaler = device_amp("cuda")
