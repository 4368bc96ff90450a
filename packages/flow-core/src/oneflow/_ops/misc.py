"""Small tensor utilities from PyTorch's API: new_* constructors, zero_, broadcasting helpers, type queries."""
import builtins

from .. import _C
from . import creation

__all__ = ["numel", "result_type", "can_cast", "broadcast_shapes", "broadcast_tensors", "broadcast_to",
           "is_floating_point", "is_nonzero", "clone", "detach", "atleast_1d", "atleast_2d", "atleast_3d",
           "is_same_size", "zero_", "is_signed", "diff"]


def numel(input):
    """Number of elements of ``input``."""
    return input.numel()


def result_type(tensor, other):
    r"""The dtype PyTorch's promotion rules give an arithmetic op on ``tensor`` and ``other``.

    Args:
        tensor (Tensor or Number): the first operand.
        other (Tensor or Number): the second operand.
    """
    return _C._result_type([tensor, other])


def can_cast(from_, to):
    r"""Whether a value of dtype ``from_`` may be cast to ``to`` by an in-place op (PyTorch's casting rule: no
    floating -> integral and no non-bool -> bool).

    Args:
        from_ (oneflow.dtype): the source dtype.
        to (oneflow.dtype): the target dtype.
    """
    for name, pos, d in (("from_", 1, from_), ("to", 2, to)):
        if not isinstance(d, _C.dtype):
            raise TypeError(f"can_cast(): argument '{name}' (position {pos}) must be oneflow.dtype, not "
                            f"{type(d).__name__}")
    if from_.is_floating_point and not to.is_floating_point:
        return False
    if from_ != _C.bool and to == _C.bool:
        return False
    return True


def broadcast_shapes(*shapes):
    """The shape ``shapes`` broadcast to; raises RuntimeError if they cannot be."""
    out = []
    for s in shapes:
        s = [s] if isinstance(s, builtins.int) else list(s)
        out = _C._broadcast_shapes(out, s)
    from .._tensor import Size

    return Size(out)


def broadcast_to(input, shape):
    """broadcast_to(input, shape) -> Tensor

    A view of ``input`` broadcast to ``shape`` (-1 keeps a dimension); same as ``input.expand(shape)``."""
    return _C.ops.expand(input, list(shape))


def broadcast_tensors(*tensors):
    """Views of ``tensors`` expanded to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    shape = broadcast_shapes(*[t.shape for t in tensors])
    return tuple(_C.ops.expand(t, list(shape)) for t in tensors)


def is_floating_point(input):
    """is_floating_point(input) -> bool

    Whether ``input`` has a floating-point dtype (float16, bfloat16, float32 or float64)."""
    return input.dtype.is_floating_point


def is_nonzero(input):
    """is_nonzero(input) -> bool

    Whether the single element of a one-element tensor is nonzero; other sizes raise ``RuntimeError``."""
    if input.numel() != 1:
        what = "no values" if input.numel() == 0 else "more than one value"
        raise RuntimeError(f"Boolean value of Tensor with {what} is ambiguous")
    return builtins.bool(input.item())


def is_signed(input):
    """Whether ``input``'s dtype is a signed type (every dtype but ``bool`` and ``uint8``)."""
    return input.dtype not in (_C.bool, _C.uint8)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference along ``dim`` (``out[i] = x[i + 1] - x[i]``, applied ``n`` times), after
    concatenating ``prepend`` / ``append`` to ``input`` along ``dim``. Bool tensors give ``x[i + 1] != x[i]``."""
    if input.dim() == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    nd = input.dim()
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    x = input
    if prepend is not None or append is not None:
        parts = [prepend] if prepend is not None else []
        parts += [input] + ([append] if append is not None else [])
        if any(p.dim() != nd for p in parts):
            raise RuntimeError("diff expects prepend or append to be the same dimension as input")
        x = _C.ops.cat(parts, dim)
    for _ in range(n):
        size = x.shape[dim]
        if size == 0:
            break
        hi = _C.ops.slice(x, dim, 1, size, 1)
        lo = _C.ops.slice(x, dim, 0, size - 1, 1)
        x = _C.ops.logical_xor(hi, lo) if x.dtype == _C.bool else _C.ops.sub(hi, lo)
    return x


def is_same_size(a, b):
    """is_same_size(input, other) -> bool

    Whether the two tensors have the same shape."""
    return tuple(a.shape) == tuple(b.shape)


def clone(input, *, memory_format=None):
    """A copy of ``input`` (row-major; laid out in ``memory_format`` when one other than preserve is given)."""
    out = _C.ops.clone(input)
    if memory_format is not None:
        from .memory_format import to_format

        out = to_format(out, memory_format)
    return out


def detach(input):
    """detach(input) -> Tensor

    A view of ``input`` outside the autograd graph: it shares the data and never requires grad."""
    return input.detach()


def zero_(input):
    """Fills ``input`` with zeros in place."""
    return _C.ops.fill_(input, 0)


def _dim_order(self):
    """dim_order() -> tuple of ints

    The dimensions ordered from the outermost in memory to the innermost (largest stride first):
    ``(0, 1, ..., n-1)`` for a contiguous tensor."""
    return tuple(sorted(range(self.dim()), key=lambda d: -self.stride(d)))


def _atleast(n):
    def f(*tensors):
        ts = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) else tensors
        out = []
        for t in ts:
            while t.dim() < n:
                t = _C.ops.unsqueeze(t, 0 if t.dim() == 0 or n == 2 or t.dim() == 2 else -1) if t.dim() != 1 or n != 3 \
                    else _C.ops.unsqueeze(_C.ops.unsqueeze(t, 0), -1)
            out.append(t)
        return out[0] if len(out) == 1 else tuple(out)
    f.__name__ = f.__qualname__ = f"atleast_{n}d"
    f.__doc__ = (f"atleast_{n}d(*tensors) -> Tensor or tuple of Tensors\n\n"
                 f"    Each tensor (given separately or as one sequence) with leading or trailing size-1 dimensions "
                 f"added\n    until it has at least {n} dimension{'s' if n > 1 else ''}; tensors with enough are "
                 f"returned as they are.")
    return f


atleast_1d, atleast_2d, atleast_3d = _atleast(1), _atleast(2), _atleast(3)


def _new(kind):
    def method(self, *size, dtype=None, device=None, requires_grad=False, **kw):
        dt = dtype or self.dtype
        dev = self.device if device is None else device  # as PyTorch: self's device unless given
        if kind == "full":
            shape, value = size[0], size[1] if len(size) > 1 else kw.pop("fill_value")
            return creation.full(list(shape), value, dtype=dt, device=dev, requires_grad=requires_grad)
        fn = {"zeros": creation.zeros, "ones": creation.ones, "empty": creation.empty}[kind]
        return fn(*size, dtype=dt, device=dev, requires_grad=requires_grad)
    method.__name__ = f"new_{kind}"
    method.__doc__ = f"A new tensor of ``size`` like ``torch.Tensor.new_{kind}`` (dtype defaults to self's)."
    return method


TENSOR_METHODS = {
    "new_zeros": _new("zeros"), "new_ones": _new("ones"), "new_empty": _new("empty"), "new_full": _new("full"),
    "zero_": zero_, "clone": clone, "is_signed": is_signed, "diff": diff, "is_nonzero": is_nonzero,
    "is_same_size": is_same_size,
    "broadcast_to": broadcast_to, "dim_order": _dim_order,
}
