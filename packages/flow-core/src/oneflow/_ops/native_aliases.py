"""ATen-level functions PyTorch exposes at its top level, built from this package's public ops:
``constant_pad_nd``, ``native_dropout`` (output and keep-mask), ``empty_permuted`` (a given physical dim
order) and ``nonzero_static`` (``nonzero`` with a fixed number of rows)."""
import builtins

from .. import _C
from ._names import torch_dtype_name
from .creation import full, ones_like

ops = _C.ops

__all__ = ["constant_pad_nd", "native_dropout", "empty_permuted", "nonzero_static"]


def constant_pad_nd(input, pad, value=0):
    """constant_pad_nd(input, pad, value=0) -> Tensor

    Pads the last ``len(pad) // 2`` dims of ``input`` with ``value``: ``pad`` lists (before, after) amounts
    from the last dim backwards; negative amounts crop. Same as ``nn.functional.pad(input, pad, "constant",
    value)``."""
    pad = [builtins.int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pad)}")
    if len(pad) // 2 > input.dim():
        # PyTorch's message, including its missing spaces
        raise RuntimeError(f"Length of pad should be no more than twice the number of dimensions of the input. "
                           f"Pad length is {len(pad)}while the input has {input.dim()}dimensions.")
    from ..nn import functional as F

    return F.pad(input, pad, mode="constant", value=value)


def native_dropout(input, p, train):
    """native_dropout(input, p, train) -> (Tensor, Tensor)

    Dropout returning the output and the boolean keep-mask. When ``train`` (``None`` counts as true) each
    element is kept with probability ``1 - p`` and scaled by ``1 / (1 - p)``; otherwise the output is a copy of
    ``input`` and the mask is all true. Differentiable in ``input``."""
    if train is not None and not train:
        return ops.clone(input), ones_like(input, dtype=_C.bool)
    keep = 1.0 - builtins.float(p)
    if not 0.0 <= keep <= 1.0:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={keep}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{torch_dtype_name(input.dtype)}")
    mask = ones_like(input.detach()).bernoulli_(keep)
    # with p == 1 nothing is kept; scaling by 0 rather than 1/0 keeps the output 0 instead of NaN
    scale = 1.0 / keep if keep > 0 else 0.0
    return ops.mul(input, ops.mul(mask, scale)), ops.to_dtype(mask, _C.bool)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
    pin_memory=False) -> Tensor

    An uninitialised tensor of shape ``size`` whose dims are laid out in memory in the order
    ``physical_layout`` (outermost first): ``empty_permuted((N, C, H, W), (0, 2, 3, 1))`` is channels-last.
    The result is dense and not a view."""
    from .creation import empty_strided

    size = [builtins.int(s) for s in size]
    order = [builtins.int(d) for d in physical_layout]
    n = len(size)
    if len(order) != n:
        raise RuntimeError(f"Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {n} is not equal to len(physical_layout) = {len(order)}")
    seen = set()
    for i, d in enumerate(order):
        if not 0 <= d < n:
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and {n - 1}, but got {d} at index "
                               f"{i}).  NB: negative dims not currently supported; file an issue if you want it.")
        if d in seen:
            raise RuntimeError("Duplicate dim not allowed")
        seen.add(d)
    strides, step = [0] * n, 1
    for d in reversed(order):
        strides[d] = step
        step *= builtins.max(size[d], 1)
    return empty_strided(size, strides, dtype=dtype, device=device, requires_grad=requires_grad,
                         pin_memory=pin_memory)


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero_static(input, *, size, fill_value=-1) -> Tensor

    The indices of ``input``'s nonzero elements as :func:`oneflow.nonzero` gives them (one row per element),
    but always ``size`` rows: truncated when there are more, padded with rows of ``fill_value`` when fewer."""
    if isinstance(size, builtins.bool) or not isinstance(size, builtins.int) or size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    idx = ops.nonzero(input)
    found = idx.shape[0]
    if found >= size:
        return ops.slice(idx, 0, 0, size, 1)
    pad = full([size - found, input.dim()], builtins.int(fill_value), dtype=_C.int64)
    return ops.cat([idx, pad], 0)


TENSOR_METHODS = {"nonzero_static": nonzero_static}
