"""``oneflow.linalg`` (PyTorch's ``torch.linalg``): norms, products and the factorization-based functions
(inv, det, slogdet, solve, solve_triangular, cholesky, matrix_power). The kernels are registry ops; these are the torch.linalg
names and signatures."""
from ._ops.linalg import LinAlgError, cholesky as _cholesky, cross as _cross, det, inverse, matmul
from ._ops.linalg import matrix_power, slogdet, solve, solve_triangular
from ._ops.reduce import vector_norm

__all__ = ["LinAlgError", "inv", "det", "slogdet", "solve", "solve_triangular", "cholesky", "matrix_power",
           "matmul", "vector_norm", "cross", "multi_dot", "vecdot", "diagonal"]


def inv(A, *, out=None):
    """The inverse of each square matrix in ``A``; LinAlgError when one is singular."""
    return inverse(A, out=out)


def cholesky(A, *, upper=False, out=None):
    """The Cholesky factor L (A = L L^H) of each Hermitian positive-definite matrix; ``upper`` gives L^H."""
    return _cholesky(A, upper, out=out)


def cross(input, other, *, dim=-1):
    """The cross product of 3-vectors along ``dim`` (default the last dim, unlike ``oneflow.cross``)."""
    return _cross(input, other, dim=dim)


def multi_dot(tensors):
    """The product of a chain of matrices (the first may be 1-D, a row vector; the last 1-D, a column)."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first_1d, last_1d = tensors[0].dim() == 1, tensors[-1].dim() == 1
    ts = list(tensors)
    if first_1d:
        ts[0] = ts[0].unsqueeze(0)
    if last_1d:
        ts[-1] = ts[-1].unsqueeze(1)
    out = ts[0]
    for t in ts[1:]:
        out = matmul(out, t)
    if first_1d:
        out = out.squeeze(0)
    if last_1d:
        out = out.squeeze(-1)
    return out


def vecdot(x, y, *, dim=-1):
    """The dot product of ``x`` and ``y`` along ``dim`` (broadcasting the other dims)."""
    return (x * y).sum(dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonals of the matrices in ``A`` (by default its last two dims)."""
    return A.diagonal(offset=offset, dim1=dim1, dim2=dim2)
