"""Hooks on the autograd graph (PyTorch's ``torch.autograd.graph``): saved-tensor hooks, which decide how the
tensors kept for backward are stored (offloaded, compressed, recomputed) while a block of forward code runs."""
import contextlib
import threading

from .. import _C

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "Node", "increment_version"]

_state = threading.local()

Node = _C.Node  # the class of every ``grad_fn`` (PyTorch's abstract ``torch.autograd.graph.Node``)


def _handle_enter(handle):
    return handle


def _handle_exit(handle, *exc):
    handle.remove()
    return False


# hook handles remove their hook when a ``with`` block ends, as PyTorch's RemovableHandle
_C._HookHandle.__enter__ = _handle_enter
_C._HookHandle.__exit__ = _handle_exit


def increment_version(tensor):
    """Bumps the version counter of ``tensor`` (or of each tensor in an iterable), as an in-place change does,
    for code that modified the data behind autograd's back: saved copies of it then fail their version check."""
    tensors = (tensor,) if isinstance(tensor, _C.TensorBase) else tensor
    for t in tensors:
        t._bump_version()


def _packing_without_grad(pack_hook):
    """``pack_hook`` run with grad mode off, as PyTorch runs it (what it computes is not recorded)."""
    def pack(t):
        prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            return pack_hook(t)
        finally:
            _C._set_grad_enabled(prev)

    return pack


def _depth():
    """How many saved_tensors_hooks blocks are open on this thread."""
    return getattr(_state, "depth", 0)


class saved_tensors_hooks:
    """Context manager: every tensor saved for backward while it is active goes through ``pack_hook``, and
    only its result is kept; backward gets the tensor back from ``unpack_hook(packed)``.

    Args:
        pack_hook (Callable[[Tensor], Any]): called with each tensor as it is saved (with grad mode off).
        unpack_hook (Callable[[Any], Tensor]): called with what ``pack_hook`` returned when backward needs the
            tensor; must return a tensor with the same content.

    Hooks nest (the innermost pair applies) and are per thread. Like PyTorch's, saved tensors keep no version
    check: modifying a packed tensor in place before backward is not detected.

    Example::

        >>> def pack(x): return x.clone()
        >>> def unpack(x): return x
        >>> with oneflow.autograd.graph.saved_tensors_hooks(pack, unpack):
        ...     y = a * b
        >>> y.sum().backward()
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        msg = getattr(_state, "disabled", None)
        if msg is not None:
            raise RuntimeError(msg)
        _C._push_saved_tensors_hooks(_packing_without_grad(self.pack_hook), self.unpack_hook)
        _state.depth = _depth() + 1
        return self

    def __exit__(self, *exc):
        _state.depth = _depth() - 1
        _C._pop_saved_tensors_hooks()
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU and moved back to their device in backward (PyTorch's
    ``torch.autograd.graph.save_on_cpu``). On a CPU-only build they stay where they are; ``pin_memory`` is
    accepted and has no effect there."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(t):
            return (t.device, t.cpu())

        def unpack(packed):
            device, t = packed
            return t.to(device)

        super().__init__(pack, unpack)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Inside this block, installing saved-tensor hooks raises ``RuntimeError(error_message)`` (for code whose
    saved tensors must not be intercepted); entering it while hooks are installed raises it too."""
    if _depth():
        raise RuntimeError(error_message)
    prev = getattr(_state, "disabled", None)
    _state.disabled = error_message
    try:
        yield
    finally:
        _state.disabled = prev
