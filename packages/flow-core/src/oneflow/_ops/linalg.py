"""Matrix products with PyTorch's Python signatures (``einsum(eq, *operands)``, ``Tensor.__matmul__``)."""
from .. import _C

ops = _C.ops

__all__ = ["einsum", "matmul", "mm", "bmm", "dot", "vdot", "mv", "outer", "ger", "addmm", "baddbmm", "addmv",
           "inner"]


def einsum(equation, *operands):
    """Sums the product of the operands' elements over the indices given by the Einstein-summation
    ``equation`` (e.g. ``'bij,bjk->bik'``); supports ``...``, repeated indices and implicit output."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return ops.einsum(equation, list(operands))


def matmul(input, other):
    """Matrix product with PyTorch's broadcasting rules (dot, mv, mm, batched)."""
    return ops.matmul(input, other)


def mm(input, mat2):
    """Matrix product of two 2-D tensors."""
    return ops.mm(input, mat2)


def bmm(input, mat2):
    """Batched matrix product of two 3-D tensors."""
    return ops.bmm(input, mat2)


def dot(input, tensor):
    """Dot product of two 1-D tensors."""
    return ops.dot(input, tensor)


def vdot(input, other):
    """Dot product of two 1-D tensors (conjugating the first; real dtypes only)."""
    return ops.vdot(input, other)


def mv(input, vec):
    """Matrix-vector product."""
    return ops.mv(input, vec)


def outer(input, vec2):
    """Outer product of two 1-D tensors."""
    return ops.outer(input, vec2)


ger = outer


def inner(input, other):
    """Inner product over the last dims (a scalar product for 0-D operands)."""
    if input.dim() == 0 or other.dim() == 0:
        return input * other
    return _inner(input, other)


def _inner(a, b):
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(a.shape)} and {list(b.shape)}")
    ra = ops.reshape(a, [-1, a.shape[-1]])
    rb = ops.reshape(b, [-1, b.shape[-1]])
    out = ops.mm(ra, ops.transpose(rb, 0, 1))
    return ops.reshape(out, list(a.shape[:-1]) + list(b.shape[:-1]))


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)``."""
    return ops.addmm(input, mat1, mat2, beta=beta, alpha=alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    return ops.baddbmm(input, batch1, batch2, beta=beta, alpha=alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat @ vec)``."""
    return ops.addmv(input, mat, vec, beta=beta, alpha=alpha)


TENSOR_METHODS = {
    "matmul": matmul, "mm": mm, "bmm": bmm, "dot": dot,
    "vdot": vdot, "mv": mv, "outer": outer, "ger": outer, "inner": inner, "addmm": addmm, "baddbmm": baddbmm,
    "addmv": addmv,
}
