"""``oneflow.nn.modules.batchnorm``: PyTorch's module path for the batch-norm classes (defined, with the other
normalisation layers, in ``normalization.py``), for code that imports them or their bases from here."""
from .normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, LazyBatchNorm1d, LazyBatchNorm2d,  # noqa: F401
                            LazyBatchNorm3d, SyncBatchNorm, _BatchNorm, _LazyNormBase, _NormBase)

__all__ = []  # exported as oneflow.nn.<Name> from normalization.py
