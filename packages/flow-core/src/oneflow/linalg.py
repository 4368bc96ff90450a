"""``oneflow.linalg`` (PyTorch's ``torch.linalg``): vector and matrix norms, products and the
factorization-based functions (inv, det, slogdet, solve, solve_triangular, cholesky, matrix_power). The
kernels are registry ops; these are the torch.linalg names and signatures."""
from ._ops.linalg import LinAlgError, cholesky as _cholesky, cross as _cross, det, inverse, matmul
from ._ops.linalg import matrix_power, slogdet, solve, solve_triangular
import builtins
import math

from ._ops._names import torch_dtype_name
from ._ops.reduce import vector_norm

__all__ = ["LinAlgError", "inv", "det", "slogdet", "solve", "solve_triangular", "cholesky", "matrix_power",
           "matmul", "vector_norm", "matrix_norm", "norm", "cross", "multi_dot", "vecdot", "diagonal"]


def inv(A, *, out=None):
    """The inverse of each square matrix in ``A``; LinAlgError when one is singular."""
    return inverse(A, out=out)


def cholesky(A, *, upper=False, out=None):
    """The Cholesky factor L (A = L L^H) of each Hermitian positive-definite matrix; ``upper`` gives L^H."""
    return _cholesky(A, upper, out=out)


def _matrix_dims(A, dim):
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if isinstance(dim, builtins.int) or len(dim) != 2:
        got = dim if isinstance(dim, builtins.int) else " ".join(map(str, dim))
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {got}")
    nd = A.dim()
    for d in dim:
        if not -nd <= d < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})")
    d0, d1 = dim[0] % nd, dim[1] % nd
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    return d0, d1


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The matrix norm of each matrix in ``A`` (over the two dims ``dim``): ``'fro'`` (Frobenius),
    ``inf`` / ``-inf`` (max / min absolute row sum) or ``1`` / ``-1`` (max / min absolute column sum).
    ``'nuc'``, ``2`` and ``-2`` need the singular values, which oneflow does not compute yet: they raise
    NotImplementedError."""
    d0, d1 = _matrix_dims(A, dim)
    if not A.dtype.is_floating_point:
        raise RuntimeError("linalg.matrix_norm: Expected a floating point or complex tensor as input. Got "
                           f"{torch_dtype_name(A.dtype)}")
    if ord == "fro":
        return vector_norm(A, 2, (d0, d1), keepdim, dtype=dtype)
    if ord == "nuc" or (not isinstance(ord, str) and ord in (2, -2)):
        raise NotImplementedError(f"linalg.matrix_norm: ord={ord!r} needs the singular values (linalg.svd), "
                                  "which oneflow does not compute yet; 'fro', inf, -inf, 1 and -1 are supported")
    if isinstance(ord, str) or ord not in (math.inf, -math.inf, 1, -1):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if dtype is not None:
        if A.dtype.itemsize > dtype.itemsize or not dtype.is_floating_point:
            raise RuntimeError(f"linalg.matrix_norm: the dtype of the input ({torch_dtype_name(A.dtype)}) should be "
                               f"convertible without narrowing to the specified dtype ({torch_dtype_name(dtype)})")
        A = A.to(dtype)
    # inf-norms take the extreme of the row sums (summing along d1), 1-norms that of the column sums
    summed, across = (d1, d0) if ord in (math.inf, -math.inf) else (d0, d1)
    sums = A.abs().sum(summed, keepdim=True)
    if ord > 0:  # a norm is >= 0, so the max over no rows (or columns) is 0, as in torch
        out = sums.amax(across, keepdim=True) if sums.shape[across] else sums.sum(across, keepdim=True)
    else:
        out = sums.amin(across, keepdim=True)
    return out if keepdim else out.squeeze(builtins.max(d0, d1)).squeeze(builtins.min(d0, d1))


def norm(A, ord=None, dim=None, keepdim=False, *, out=None, dtype=None):
    """A vector or matrix norm, as ``torch.linalg.norm``: with ``dim`` an int (or 1-tuple) the vector
    ``ord``-norm along it; with a 2-tuple the matrix norm over those dims; with no ``dim``, the matrix norm of
    a 2-D ``A`` or the vector norm of a 1-D one when ``ord`` is given, and the 2-norm of all elements
    otherwise."""
    if out is not None:
        raise TypeError("linalg.norm(): 'out' is not supported")
    if dim is not None:
        dims = (dim,) if isinstance(dim, builtins.int) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
        if len(dims) == 1:
            if isinstance(ord, str):
                raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dims[0]}")
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.dim() not in (1, 2):
        raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A.dim()}D.")
    if A.dim() == 1 and not isinstance(ord, str):
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)


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
