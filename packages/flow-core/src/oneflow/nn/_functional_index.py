"""nn.functional entries of the index family."""
from .. import _C

__all__ = ["one_hot"]


def one_hot(tensor, num_classes=-1):
    """One-hot encodes an int64 tensor: a new last dim of size ``num_classes`` (max + 1 when -1), int64."""
    return _C.ops.one_hot(tensor, num_classes)
