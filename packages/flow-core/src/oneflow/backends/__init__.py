"""``oneflow.backends``: backend switches with ``torch.backends``' names, so lines such as
``flow.backends.cudnn.benchmark = True`` run unchanged. This CPU-only build has no cuDNN; the flags are stored
and select nothing."""
from . import cpu, cuda, cudnn, mkldnn, mps  # noqa: F401

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps"]
