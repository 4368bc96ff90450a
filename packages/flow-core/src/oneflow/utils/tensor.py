"""``oneflow.utils.tensor``: zero-copy exchange with PyTorch tensors (OneFlow's ``from_torch``/``to_torch``)."""
import sys

__all__ = ["from_torch", "to_torch"]


def _real_torch():
    """The PyTorch module, even while ``oneflow.mock_torch`` makes ``import torch`` give oneflow."""
    mock = sys.modules.get("oneflow_torchcompat.mock_torch")
    real = mock.real_torch() if mock is not None else None
    if real is not None:
        return real
    torch = sys.modules.get("torch")
    if torch is None or getattr(torch, "_is_oneflow_mock", False):
        try:
            import torch
        except ImportError as e:
            raise ModuleNotFoundError("to_torch needs PyTorch, which is not installed (pip install torch)") from e
    if getattr(torch, "_is_oneflow_mock", False):
        raise RuntimeError("to_torch needs the real PyTorch, but `import torch` gives oneflow's mock_torch; call "
                           "oneflow.mock_torch.disable() first")
    return torch


def from_torch(torch_tensor):
    r"""A oneflow tensor sharing memory with a PyTorch CPU tensor (through DLPack, no copy).

    Shape, strides, storage offset and dtype (bool included) are kept; writes through either tensor are seen by
    the other. Gradients are not shared: the result is a leaf that does not require grad, whatever
    ``torch_tensor.requires_grad`` is.

    Args:
        torch_tensor (torch.Tensor): a dense (strided) tensor in CPU memory.

    Raises:
        TypeError: for anything but a ``torch.Tensor``, and for dtypes oneflow lacks (complex, float8, ...).
        RuntimeError: for CUDA (or other non-CPU) tensors and for sparse or other non-strided layouts.
    """
    cls = type(torch_tensor)
    if not any(c.__module__.split(".")[0] == "torch" and c.__name__ == "Tensor" for c in cls.__mro__):
        raise TypeError(f"from_torch: expected a torch.Tensor, got {cls.__module__}.{cls.__qualname__}")
    layout = str(torch_tensor.layout)
    if layout != "torch.strided":
        raise RuntimeError(f"from_torch: can't share a {layout} torch tensor; only dense (torch.strided) tensors can "
                           "be shared (convert it with .to_dense() first)")
    dev = torch_tensor.device
    if dev.type != "cpu":
        raise RuntimeError(f"from_torch: can't share a torch tensor on '{dev}': this build of oneflow reaches CPU "
                           "memory only (copy it with .cpu() first)")
    t = torch_tensor.detach()
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    from .._dlpack_protocol import from_dlpack

    return from_dlpack(t)


def to_torch(tensor):
    r"""A PyTorch tensor sharing memory with a oneflow CPU tensor (through DLPack, no copy).

    Shape, strides and dtype are kept; writes through either tensor are seen by the other. Gradients are not
    shared: the PyTorch tensor does not require grad.

    Args:
        tensor (oneflow.Tensor): a tensor in CPU memory.
    """
    from .._tensor import is_tensor

    if not is_tensor(tensor):
        raise TypeError(f"to_torch: expected a oneflow.Tensor, got {type(tensor).__name__}")
    torch = _real_torch()
    return torch.utils.dlpack.from_dlpack(tensor.detach())
