"""``oneflow.utils.dlpack`` (PyTorch's ``torch.utils.dlpack``): exchanging tensors through DLPack."""
from .._ops.creation import from_dlpack

__all__ = ["from_dlpack", "to_dlpack"]


def to_dlpack(tensor):
    r"""Returns a DLPack capsule sharing ``tensor``'s memory (legacy API; prefer passing the tensor itself to the
    consumer's ``from_dlpack``, which calls ``tensor.__dlpack__()``).

    Args:
        tensor (Tensor): a tensor that does not require grad.
    """
    return tensor.__dlpack__()
