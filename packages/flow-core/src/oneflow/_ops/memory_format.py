"""Memory formats (PyTorch's ``torch.memory_format``): ``contiguous_format`` (row-major), ``channels_last``
(NHWC strides for a 4-D NCHW tensor), ``channels_last_3d`` (NDHWC for 5-D) and ``preserve_format``.

A tensor in channels_last is an ordinary strided view (sizes stay N, C, H, W), so every op accepts it; kernels
that want row-major inputs make a copy, so the format is about layout compatibility here, not speed, and
results come back in the default format.
"""
import builtins

from .. import _C

ops = _C.ops

__all__ = ["memory_format", "contiguous_format", "channels_last", "channels_last_3d", "preserve_format"]


class memory_format:
    """A memory layout a tensor can be asked for (``x.contiguous(memory_format=oneflow.channels_last)``)."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return f"oneflow.{self._name}"

    def __reduce__(self):  # pickles as the module-level singleton
        return self._name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")

# the permutation taking (N, C, spatial...) to the order the format stores, by rank
_ORDER = {channels_last: (4, (0, 2, 3, 1)), channels_last_3d: (5, (0, 2, 3, 4, 1))}


def _order(t, fmt):
    rank, perm = _ORDER[fmt]
    if t.dim() != rank:
        name = "channels_last" if fmt is channels_last else "channels_last_3d"
        raise RuntimeError(f"required rank {rank} tensor to use {name} format")
    return perm


def _check(fmt):
    if fmt is not None and not isinstance(fmt, memory_format):
        raise TypeError(f"memory_format must be a oneflow.memory_format, not {type(fmt).__name__}")


def is_contiguous(self, memory_format=contiguous_format):
    """Whether the tensor is laid out densely in ``memory_format`` (row-major by default)."""
    _check(memory_format)
    if memory_format in (None, contiguous_format, preserve_format):
        return _C.TensorBase.is_contiguous(self)
    perm = _order(self, memory_format)
    return _C.TensorBase.is_contiguous(ops.permute(self, list(perm)))


def to_format(t, fmt):
    """``t`` laid out in ``fmt`` (itself when it already is; ``preserve_format`` keeps it as it is)."""
    _check(fmt)
    if fmt is None or fmt is preserve_format:
        return t
    if fmt is contiguous_format:
        return ops.contiguous(t)
    perm = _order(t, fmt)
    if is_contiguous(t, fmt):
        return t
    return laid_out_in(t, perm)


def laid_out_in(t, order):
    """A copy of ``t`` with the same sizes whose memory runs through its dims in ``order`` (outermost first)."""
    inverse = [order.index(i) for i in builtins.range(len(order))]
    return ops.permute(ops.contiguous(ops.permute(t, list(order))), inverse)


def contiguous(self, memory_format=contiguous_format):
    """The tensor itself if it is contiguous in ``memory_format``, else a copy laid out that way."""
    if memory_format is preserve_format:  # torch returns a row-major tensor before looking at the format
        if _C.TensorBase.is_contiguous(self):
            return self
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return to_format(self, memory_format)


TENSOR_METHODS = {"contiguous": contiguous, "is_contiguous": is_contiguous}
