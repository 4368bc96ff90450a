"""``oneflow.cpu.amp``: PyTorch's deprecated CPU spellings of ``oneflow.autocast("cpu")`` and
``oneflow.amp.GradScaler("cpu")``, with the same deprecation warnings."""
from ..amp._device_spellings import device_amp

__all__ = ["autocast", "GradScaler"]

autocast, GradScaler = device_amp("cpu")
