"""``oneflow.nn.attention`` (PyTorch's ``torch.nn.attention``): the names code uses to choose a
scaled_dot_product_attention backend.

Every backend runs the same CPU implementation here (softmax(q k^T * scale + mask) v, with zeros for a query
that may attend to no key, as PyTorch's fused kernels give), so ``sdpa_kernel`` checks its argument and
otherwise changes nothing: results do not depend on the backends chosen.
"""
import contextlib
import enum

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """The attention backends PyTorch names, with its values."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Context manager selecting the backends scaled_dot_product_attention may use (one ``SDPBackend`` or a list
    of them; with ``set_priority`` the list is also their order of preference). All run the same implementation
    here, so only the argument is checked."""
    listed = [backends] if isinstance(backends, SDPBackend) else backends
    if not isinstance(listed, (list, tuple)) or not all(isinstance(b, SDPBackend) for b in listed):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    yield
