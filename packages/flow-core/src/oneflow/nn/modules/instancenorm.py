"""``oneflow.nn.modules.instancenorm``: PyTorch's module path for the instance-norm classes (defined in
``normalization.py``)."""
from .normalization import (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d, LazyInstanceNorm1d,  # noqa: F401
                            LazyInstanceNorm2d, LazyInstanceNorm3d, _InstanceNorm, _LazyInstanceNorm)

__all__ = []  # exported as oneflow.nn.<Name> from normalization.py
