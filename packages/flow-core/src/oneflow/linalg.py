"""``oneflow.linalg`` (PyTorch's ``torch.linalg``): vector and matrix norms, products and the
factorization-based functions (inv, det, slogdet, solve, solve_triangular, cholesky, matrix_power, svd,
svdvals, pinv, matrix_rank, eigh, eigvalsh, lstsq). The kernels are registry ops; these are the
torch.linalg names and signatures."""
from ._ops.linalg import LinAlgError, cholesky as _cholesky, cross as _cross, det, inverse, matmul
from ._ops.linalg import matrix_power, slogdet, solve, solve_triangular
import builtins
import collections
import math

from . import _C
from ._ops._names import torch_dtype_name
from ._ops.dtype_info import finfo
from ._ops.creation import _finish
from ._ops.linalg import _linalg_call
from ._ops.reduce import vector_norm
from .autograd.function import Function as _Function

__all__ = ["LinAlgError", "inv", "det", "slogdet", "solve", "solve_triangular", "cholesky", "matrix_power",
           "matmul", "vector_norm", "matrix_norm", "norm", "svd", "svdvals", "pinv", "matrix_rank", "eigh",
           "eigvalsh", "lstsq", "cross", "multi_dot", "vecdot", "diagonal"]


def inv(A, *, out=None):
    """The inverse of each square matrix in ``A``; LinAlgError when one is singular."""
    return inverse(A, out=out)


def cholesky(A, *, upper=False, out=None):
    """The Cholesky factor L (A = L L^H) of each Hermitian positive-definite matrix; ``upper`` gives L^H."""
    return _cholesky(A, upper, out=out)


svd_return = collections.namedtuple("linalg_svd", ["U", "S", "Vh"])


def svd(A, full_matrices=True, *, driver=None, out=None):
    """The singular value decomposition ``A = U diag(S) Vh`` of each matrix in ``A`` (..., m, n): S
    descending, U (..., m, m) and Vh (..., n, n), or with ``full_matrices=False`` only their first min(m, n)
    columns / rows. Computed by one-sided Jacobi rotations in double precision; like torch, gradients ignore
    the extra columns of a full U / Vh (any basis of the complement), and are undefined (inf/NaN) at repeated
    singular values."""
    _no_driver("svd", driver)
    kw = {} if out is None else {"out": tuple(out)}  # the registry op writes (U, S, Vh) into out
    return svd_return(*_linalg_call(_C.ops.linalg_svd, A, full_matrices, **kw))


def svdvals(A, *, driver=None, out=None):
    """The singular values of each matrix in ``A``, in descending order."""
    _no_driver("svdvals", driver)
    return _finish(_linalg_call(_C.ops.linalg_svd, A, False)[1], False, out)


def _no_driver(fn, driver):
    if driver is not None:
        raise RuntimeError(f"torch.linalg.{fn}: keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")


eigh_return = collections.namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])


def eigh(A, UPLO="L", *, out=None):
    """The eigenvalues (ascending) and orthonormal eigenvectors (columns) of each symmetric matrix in ``A``,
    of which only the lower (``UPLO='L'``) or upper triangle is read. Computed by Jacobi rotations in double
    precision; gradients are undefined (inf/NaN) at repeated eigenvalues, as in torch."""
    kw = {} if out is None else {"out": tuple(out)}
    return eigh_return(*_C.ops.linalg_eigh(A, UPLO.upper() if isinstance(UPLO, str) else UPLO, **kw))


def eigvalsh(A, UPLO="L", *, out=None):
    """The eigenvalues (ascending) of each symmetric matrix in ``A``; see ``eigh``."""
    return _finish(_C.ops.linalg_eigh(A, UPLO.upper() if isinstance(UPLO, str) else UPLO)[0], False, out)


def _rank_tolerance(A, S, atol, rtol):
    """torch's cut-off for pinv / matrix_rank, per matrix (shaped (..., 1)): max(atol, rtol * the largest
    singular value); rtol defaults to eps * max(m, n), or to 0 where atol is given and positive."""
    default = finfo(A.dtype).eps * builtins.max(A.shape[-2], A.shape[-1])
    if isinstance(atol, _C.TensorBase):
        atol = atol.unsqueeze(-1)
    if rtol is None:
        if atol is None:
            rtol = default
        elif isinstance(atol, _C.TensorBase):
            rtol = _C.ops.where(atol > 0, atol * 0, atol * 0 + default)
        else:
            rtol = 0.0 if atol > 0 else default
    elif isinstance(rtol, _C.TensorBase):
        rtol = rtol.unsqueeze(-1)
    smax = S.amax(-1, keepdim=True) if S.shape[-1] else S.sum(-1, keepdim=True)
    tol = smax * rtol
    if atol is not None:
        tol = _C.ops.maximum(tol, atol if isinstance(atol, _C.TensorBase) else tol * 0 + atol)
    return tol


def _pinv_parts(A, atol, rtol):
    """(pinv(A), A's singular values, how many of them the tolerance kept)."""
    U, S, Vh = svd(A, full_matrices=False)
    keep = S > _rank_tolerance(A, S, atol, rtol)
    s_inv = _C.ops.where(keep, 1 / _C.ops.where(keep, S, S * 0 + 1), S * 0)
    return _C.ops.matmul(Vh.transpose(-2, -1) * s_inv.unsqueeze(-2), U.transpose(-2, -1)), S, keep.sum(-1)


def _pinv_grad(g, P, A):
    """The derivative of the pseudo-inverse at constant rank (Golub & Pereyra), as torch's; arranged so
    that the products stay min(m, n)-sized."""
    mT = lambda t: t.transpose(-2, -1)  # noqa: E731
    mm = _C.ops.matmul
    gT, PT = mT(g), mT(P)
    if A.shape[-2] <= A.shape[-1]:
        K = mm(gT, P)
        KPT = mm(K, PT)
        return -mT(mm(P, K)) + KPT - mm(mm(A, P), KPT) + mm(mm(PT, P), gT - mm(K, A))
    K = mm(P, gT)
    PTK = mm(PT, K)
    return -mT(mm(K, P)) + mm(mm(gT - mm(A, K), P), PT) + PTK - mm(mm(PTK, P), A)


class _Pinv(_Function):
    """The pseudo-inverse, with the singular values and rank of the one decomposition behind it (not
    differentiable), so that lstsq needs no second SVD."""

    @staticmethod
    def forward(ctx, A, atol, rtol):
        P, S, rank = _pinv_parts(A.detach(), atol, rtol)
        ctx.mark_non_differentiable(S, rank)
        ctx.save_for_backward(A, P)
        ctx.tolerances = (atol, rtol)
        return P, S, rank

    @staticmethod
    def backward(ctx, g, _g_singular_values, _g_rank):
        A, P = ctx.saved_tensors
        if _C.is_grad_enabled():  # double backward: the formula must see P as a function of A
            P = _pinv_parts(A, *ctx.tolerances)[0]
        return _pinv_grad(g, P, A), None, None


def _lower_symmetric(A):
    """The symmetric matrix of A's lower triangle (what hermitian=True reads)."""
    low = A.tril(-1)
    return low + low.transpose(-2, -1) + A.diagonal(dim1=-2, dim2=-1).diag_embed()


def pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The Moore-Penrose pseudo-inverse of each matrix in ``A``: V diag(1/s) U^T over the singular values
    above the tolerance (see ``matrix_rank``); with ``hermitian`` only the lower triangle of the (symmetric)
    matrix is read. Its gradient is the constant-rank derivative of the pseudo-inverse, as torch's."""
    if A.dim() < 2 or A.dtype not in (_C.float32, _C.float64):
        shape = ", ".join(map(str, A.shape))
        raise RuntimeError(f"linalg.pinv({torch_dtype_name(A.dtype)}{{[{shape}]}}): expected a tensor with 2 or more "
                           "dimensions of float, double, cfloat or cdouble types")
    return _finish(_Pinv.apply(_lower_symmetric(A) if hermitian else A, atol, rtol)[0], False, out)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """The numerical rank of each matrix in ``A``: how many singular values exceed max(atol, rtol * the
    largest), rtol defaulting to eps * max(m, n) when neither is given."""
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least 2 dimensions.")
    if A.dtype not in (_C.float32, _C.float64):
        raise RuntimeError("This function doesn't handle types other than float and double")
    S = svdvals(_lower_symmetric(A.detach()) if hermitian else A.detach())
    return _finish((S > _rank_tolerance(A, S, atol, rtol)).sum(-1), False, out)


lstsq_return = collections.namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution X of A X = B for each matrix of ``A`` (..., m, n) and ``B`` (..., m, k) or
    (..., m): the minimum-norm one, ``pinv(A) @ B`` with singular values below ``rcond`` times the largest
    (default eps * max(m, n)) dropped, so its gradient is the pseudo-inverse's. Returns (solution, residuals,
    rank, singular_values) as torch fills them for ``driver`` ('gelsy' by default): residuals (squared,
    per column) only for tall full-rank systems and not for gelsy, rank except for gels, singular values
    for gelsd and gelss."""
    driver = driver or "gelsy"
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss)")
    if A.dim() < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    vector = B.dim() == A.dim() - 1
    Bm = B.unsqueeze(-1) if vector else B
    if Bm.dim() < 2 or Bm.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    if A.dtype not in (_C.float32, _C.float64):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if B.dtype != A.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {torch_dtype_name(A.dtype)} and other's dtype {torch_dtype_name(B.dtype)}")
    m, n = A.shape[-2], A.shape[-1]
    if rcond is None:
        rcond = finfo(A.dtype).eps * builtins.max(m, n)
    P, S, rank = _Pinv.apply(A, None, rcond)
    X = _C.ops.matmul(P, Bm)
    empty = A.new_zeros([0])
    residuals = empty
    if m > n and driver != "gelsy" and bool((rank == n).all()):
        residuals = (_C.ops.matmul(A, X) - Bm).pow(2).sum(-2)
    return lstsq_return(X.squeeze(-1) if vector else X, residuals,
                        rank if driver != "gels" else rank.new_zeros([0]),
                        S if driver in ("gelsd", "gelss") else empty)


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
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    return d0, d1


def _to_norm_dtype(A, dtype, fn="matrix_norm"):
    if A.dtype.itemsize > dtype.itemsize or not dtype.is_floating_point:
        raise RuntimeError(f"linalg.{fn}: the dtype of the input ({torch_dtype_name(A.dtype)}) should be "
                           f"convertible without narrowing to the specified dtype ({torch_dtype_name(dtype)})")
    return A.to(dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """The matrix norm of each matrix in ``A`` (over the two dims ``dim``): ``'fro'`` (Frobenius), ``'nuc'``
    (sum of the singular values), ``2`` / ``-2`` (largest / smallest singular value), ``inf`` / ``-inf`` (max /
    min absolute row sum) or ``1`` / ``-1`` (max / min absolute column sum)."""
    return _finish(_matrix_norm(A, ord, dim, keepdim, dtype), False, out)


def _matrix_norm(A, ord, dim, keepdim, dtype):
    d0, d1 = _matrix_dims(A, dim)
    if not A.dtype.is_floating_point:
        raise RuntimeError("linalg.matrix_norm: Expected a floating point or complex tensor as input. Got "
                           f"{torch_dtype_name(A.dtype)}")
    if ord == "fro":
        if dtype is not None:
            _to_norm_dtype(A, dtype)
        return vector_norm(A, 2, (d0, d1), keepdim, dtype=dtype)
    if ord == "nuc" or (not isinstance(ord, str) and ord in (2, -2)):
        if dtype is not None:
            A = _to_norm_dtype(A, dtype)
        rest = [d for d in range(A.dim()) if d not in (d0, d1)]
        S = svdvals(A.permute(*rest, d0, d1))
        if ord == "nuc" or (ord == 2 and S.shape[-1] == 0):  # as torch: 0 for no elements (amin raises)
            out = S.sum(-1)
        else:
            out = S.amax(-1) if ord == 2 else S.amin(-1)
        if keepdim:
            out = out.unsqueeze(builtins.min(d0, d1)).unsqueeze(builtins.max(d0, d1))
        return out
    if isinstance(ord, str) or ord not in (math.inf, -math.inf, 1, -1):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if dtype is not None:
        A = _to_norm_dtype(A, dtype)
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
    return _finish(_norm(A, ord, dim, keepdim, dtype), False, out)


def _norm(A, ord, dim, keepdim, dtype):
    if dtype is not None and A.dtype.is_floating_point:
        _to_norm_dtype(A, dtype, "vector_norm")
    if dim is not None:
        dims = (dim,) if isinstance(dim, builtins.int) else tuple(dim)
        if len(dims) not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}")
        if len(dims) == 1:
            if isinstance(ord, str):
                raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dims[0]}")
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        return _matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.dim() not in (1, 2):
        raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A.dim()}D.")
    if A.dim() == 1 and not isinstance(ord, str):
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    return _matrix_norm(A, ord, (-2, -1), keepdim, dtype)


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
