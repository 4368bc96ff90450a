"""Top-level in-place functions PyTorch exposes next to their Tensor methods (``torch.i0_(x)`` is
``x.i0_()``): ``i0_``, ``gcd_``, ``lcm_``, ``resize_as_``, ``as_strided_``, ``conj_physical_``, the in-place
dropouts and ``rrelu_``; and ``as_strided_scatter`` (function and method), the out-of-place inverse of
``as_strided``."""
from .. import _C
from ._inplace_util import _inplace

ops = _C.ops

__all__ = ["i0_", "gcd_", "lcm_", "resize_as_", "as_strided_", "conj_physical_", "dropout_", "alpha_dropout_",
           "feature_dropout_", "feature_alpha_dropout_", "rrelu_", "as_strided_scatter"]


def _need_tensor(fn, value, name="input", pos=1):
    if not isinstance(value, _C.TensorBase):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not {type(value).__name__}")


def i0_(input):
    """In-place :func:`oneflow.i0`; same as ``input.i0_()``."""
    _need_tensor("i0_", input)
    return input.i0_()


def gcd_(input, other):
    """In-place :func:`oneflow.gcd`; same as ``input.gcd_(other)``."""
    _need_tensor("gcd_", input)
    return input.gcd_(other)


def lcm_(input, other):
    """In-place :func:`oneflow.lcm`; same as ``input.lcm_(other)``."""
    _need_tensor("lcm_", input)
    return input.lcm_(other)


def resize_as_(input, the_template, *, memory_format=None):
    """Resizes ``input`` in place to the size of ``the_template``; same as ``input.resize_as_(the_template)``."""
    _need_tensor("resize_as_", input)
    return input.resize_as_(the_template, memory_format=memory_format)


def as_strided_(input, size, stride, storage_offset=None):
    """In-place :func:`oneflow.as_strided`: ``input`` takes the given geometry over its own storage."""
    _need_tensor("as_strided_", input)
    return input.as_strided_(size, stride, storage_offset)


def conj_physical_(input):
    """In-place :func:`oneflow.conj_physical`. Tensors here are real (complex dtypes are not supported), so
    the conjugate is the tensor itself: only the in-place checks apply."""
    _need_tensor("conj_physical_", input)
    if input.is_leaf and input.requires_grad and _C.is_grad_enabled():
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    return input


def dropout_(input, p, train):
    """In-place :func:`oneflow.dropout`: zeroes elements with probability ``p`` and scales the rest by
    ``1 / (1 - p)`` when ``train``."""
    from ..nn import functional as F

    return F.dropout(input, p, train, inplace=True)


def alpha_dropout_(input, p, train):
    """In-place alpha dropout (keeps a SELU network's mean and variance); see
    :func:`oneflow.nn.functional.alpha_dropout`."""
    from ..nn import functional as F

    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout_(input, p, train):
    """In-place alpha dropout of whole channels (dim 1); see
    :func:`oneflow.nn.functional.feature_alpha_dropout`."""
    from ..nn import functional as F

    return F.feature_alpha_dropout(input, p, train, inplace=True)


def _feature_dropout(input, p, train):
    return ops.feature_dropout(input, p, train)


_feature_dropout.__name__ = "feature_dropout"
_feature_dropout_inplace = _inplace(_feature_dropout)


def feature_dropout_(input, p, train):
    """In-place :func:`oneflow.feature_dropout`: zeroes whole channels (dim 1) with probability ``p``."""
    if not train:
        return input  # nothing to drop: no checks apply, as in PyTorch
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return _feature_dropout_inplace(input, p, train)


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False, generator=None):
    """rrelu_(input, lower=1./8, upper=1./3, training=False) -> Tensor

    In-place :func:`oneflow.nn.functional.rrelu`. ``generator`` is accepted for PyTorch's signature; the
    slopes are drawn from the default generator."""
    from ..nn import functional as F

    return F.rrelu_(input, lower, upper, training)


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """as_strided_scatter(input, src, size, stride, storage_offset=None) -> Tensor

    A copy of ``input`` with ``src`` written into the elements that ``input.as_strided(size, stride,
    storage_offset)`` would view, the strides and offset being taken in the memory of a clone of ``input``
    (which keeps ``input``'s strides when it is dense, and starts at offset 0). Differentiable in ``input``
    and ``src``.

    Args:
        input (Tensor): the tensor to copy.
        src (Tensor): the values to embed, of shape ``size``.
        size (tuple or ints): the shape of the strided view.
        stride (tuple or ints): the strides of the strided view.
        storage_offset (int, optional): the offset of the view in the clone's memory (default 0).
    """
    _need_tensor("as_strided_scatter", input)
    _need_tensor("as_strided_scatter", src, "src", 2)
    size, stride = [int(s) for s in size], [int(s) for s in stride]
    if list(src.shape) != size:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {size}")
    # Where each memory slot of the clone holds which element: copying the logical flat indices into a tensor
    # with the clone's strides stores, at every slot, the index of the element living there. The strided view
    # of that map names the elements to overwrite, and a scatter (differentiable in both tensors) writes them.
    geometry = ops.clone(input.detach()) if input.numel() else input.detach()
    from .creation import empty_strided

    slots = empty_strided(list(input.shape), list(geometry.stride()), dtype=_C.int64)
    slots.copy_(ops.reshape(ops.arange(0, input.numel(), 1, dtype=_C.int64), list(input.shape)))
    offset = 0 if storage_offset is None else int(storage_offset)
    if all(n > 0 for n in size):
        # checked here, in the input's item size, since the slot map below is int64
        needed = (offset + sum((n - 1) * st for n, st in zip(size, stride)) + 1) * input.element_size()
        have = input.numel() * input.element_size()
        if needed > have:
            raise RuntimeError(f"setStorage: sizes {size}, strides {stride}, storage offset {offset}, and itemsize "
                               f"{input.element_size()} requiring a storage size of {needed} are out of bounds for "
                               f"storage of size {have}")
    target = ops.reshape(ops.contiguous(slots.as_strided(size, stride, offset)), [-1])
    flat = ops.reshape(input, [-1])
    values = ops.reshape(src if src.dtype == input.dtype else ops.to_dtype(src, input.dtype), [-1])
    return ops.reshape(flat.scatter(0, target, values), list(input.shape))


TENSOR_METHODS = {"as_strided_scatter": as_strided_scatter, "conj_physical_": conj_physical_}
