"""``oneflow.func`` (PyTorch's ``torch.func``): ``functional_call``. The transforms (grad, vmap, jacrev)
are not here."""
from .nn.utils.stateless import _functional_call as functional_call

__all__ = ["functional_call"]
