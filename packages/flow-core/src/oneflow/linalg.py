"""``oneflow.linalg`` (PyTorch's ``torch.linalg``): vector and matrix norms, products and the
factorization-based functions (inv, det, slogdet, solve, solve_triangular, cholesky, matrix_power, svd,
svdvals, pinv, matrix_rank, eigh, eigvalsh, lstsq, qr, the LU family, matrix_exp and their composites). The
kernels are registry ops; these are the torch.linalg names and signatures."""
from ._ops.linalg import LinAlgError, cholesky as _cholesky, cross as _cross, det, inverse, matmul
from ._ops.linalg import matrix_exp, matrix_power, slogdet, solve, solve_triangular
from ._ops.linalg import orgqr as householder_product
import builtins
import collections
import math

from . import _C
from ._ops._names import torch_dtype_name
from ._ops.dtype_info import finfo
from ._ops.creation import _finish
from ._ops.linalg import _linalg_call
from ._ops.reduce import _check_norm_dtype, vector_norm
from .autograd.function import Function as _Function
from .amp._policy import autocast_policy

__all__ = ["LinAlgError", "inv", "det", "slogdet", "solve", "solve_triangular", "cholesky", "matrix_power",
           "matmul", "vector_norm", "matrix_norm", "norm", "svd", "svdvals", "pinv", "matrix_rank", "eigh",
           "eigvalsh", "lstsq", "cross", "multi_dot", "vecdot", "diagonal", "qr", "householder_product", "matrix_exp",
           "lu_factor", "lu_factor_ex", "lu", "lu_solve", "solve_ex", "inv_ex", "cholesky_ex", "vander", "tensorinv",
           "tensorsolve", "cond"]


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
    differentiable), so that lstsq needs no second SVD. With ``hermitian`` the forward reads only A's lower
    triangle, but the gradient is still the general formula at A itself, as torch's (whose backward ignores
    ``hermitian``): both triangles of A get gradient."""

    @staticmethod
    def forward(ctx, A, atol, rtol, hermitian=False):
        P, S, rank = _pinv_parts(_lower_symmetric(A.detach()) if hermitian else A.detach(), atol, rtol)
        ctx.mark_non_differentiable(S, rank)
        ctx.save_for_backward(A, P)
        ctx.options = (atol, rtol, hermitian)
        return P, S, rank

    @staticmethod
    def backward(ctx, g, _g_singular_values, _g_rank):
        A, P = ctx.saved_tensors
        if _C.is_grad_enabled():  # double backward: the formula must see P as a function of A, with this
            P = _Pinv.apply(A, *ctx.options)[0]  # same derivative (torch's, for hermitian too)
        return _pinv_grad(g, P, A), None, None, None


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
    return _finish(_Pinv.apply(A, atol, rtol, hermitian)[0], False, out)


@autocast_policy("fp32")
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
    if not 0 <= A.dim() - B.dim() <= 1:  # batch dims broadcast, but B may not have more of them
        raise RuntimeError("torch.linalg.lstsq: input.dim() must be greater or equal to other.dim() and "
                           "(input.dim() - other.dim()) <= 1")
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
    if isinstance(dim, builtins.int):  # torch's parser has no overload with an int dim
        raise TypeError("linalg_matrix_norm(): argument 'dim' must be tuple of ints, not int")
    if A.dim() < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    nd = A.dim()
    for d in dim:
        if not -nd <= d < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})")
    d0, d1 = dim[0] % nd, dim[1] % nd
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    return d0, d1


def _to_norm_dtype(A, dtype, fn="matrix_norm"):
    if not dtype.is_floating_point:
        raise RuntimeError(f"linalg.{fn}: the dtype of the input ({torch_dtype_name(A.dtype)}) should be "
                           f"convertible without narrowing to the specified dtype ({torch_dtype_name(dtype)})")
    _check_norm_dtype(A, dtype, fn)
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
        if len(dims) == 1 or ord is None:  # no ord: the 2-norm of the elements in dim, as torch (vector_norm)
            if isinstance(ord, str):
                raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dims[0]}")
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        return _matrix_norm(A, ord, dims, keepdim, dtype)
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


def _multi_dot_check(tensors):
    """torch's argument checks: 2-D matrices, except that the first and last may be 1-D; one dtype."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    last = len(tensors) - 1
    for i, t in enumerate(tensors):
        if i in (0, last) and t.dim() not in (1, 2):
            which = "first" if i == 0 else "last"
            raise RuntimeError(f"multi_dot(): the {which} tensor must be 1D or 2D but got {t.dim()}D")
        if 0 < i < last and t.dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
        if t.dtype != tensors[0].dtype:
            raise RuntimeError(f"multi_dot(): all tensors must have be the same dtype but tensor 0 is "
                               f"{torch_dtype_name(tensors[0].dtype).lower()} and tensor {i} "
                               f"{torch_dtype_name(t.dtype).lower()}")


def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices (the first may be 1-D, a row vector; the last 1-D, a column)."""
    _multi_dot_check(tensors)
    return _finish(_multi_dot(tensors), False, out)


def _multi_dot(tensors):
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


def vecdot(x, y, *, dim=-1, out=None):
    """The dot product of ``x`` and ``y`` along ``dim`` (broadcasting the other dims): floating point inputs
    of one dtype, as torch requires."""
    return _finish(_vecdot(x, y, dim), False, out)  # out stays outside autocast, which would cast it


@autocast_policy("lower")
def _vecdot(x, y, dim):
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as input. Got "
                           f"{torch_dtype_name(x.dtype)}")
    if x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{torch_dtype_name(x.dtype)} and y of type {torch_dtype_name(y.dtype)} instead")
    return (x * y).sum(dim)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """The diagonals of the matrices in ``A`` (by default its last two dims)."""
    return A.diagonal(offset=offset, dim1=dim1, dim2=dim2)


# ---- QR, LU and the *_ex forms ------------------------------------------------------------------------------
qr_return = collections.namedtuple("linalg_qr", ["Q", "R"])


def qr(A, mode="reduced", *, out=None):
    """``A = Q R`` for each matrix in ``A`` (..., m, n), by Householder reflections: ``mode`` 'reduced' gives
    Q (..., m, k) and R (..., k, n) with k = min(m, n), 'complete' Q (..., m, m) and R (..., m, n), 'r' only R
    (Q empty, and no gradient). R's diagonal may be negative, as LAPACK's."""
    kw = {} if out is None else {"out": tuple(out)}
    return qr_return(*_C.ops.linalg_qr(A, mode, **kw))


lu_factor_ex_return = collections.namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
lu_factor_return = collections.namedtuple("linalg_lu_factor", ["LU", "pivots"])
lu_return = collections.namedtuple("linalg_lu", ["P", "L", "U"])


def _outs(results, out):
    return results if out is None else tuple(_finish(r, False, o) for r, o in zip(results, out))


def _failures(info):
    """(batch index, info) of the first matrix whose info is not 0, or None."""
    for i, v in enumerate(info.reshape(-1).tolist()):
        if v:
            return i, v
    return None


def _batch_prefix(A, i):
    return f"(Batch element {i}): " if A.dim() > 2 else ""


def lu_factor_ex(A, *, pivot=True, check_errors=False, out=None):
    """``(LU, pivots, info)``: the LU factorization with partial pivoting of each matrix in ``A`` (..., m, n)
    packed as LAPACK's getrf packs it (L's strict lower part, U's upper part), the 1-based int32 row swaps, and
    per matrix 0 or the (1-based) index of the first zero pivot, raised with ``check_errors``."""
    return lu_factor_ex_return(*_outs(_C.ops.linalg_lu_factor_ex(A, pivot=pivot, check_errors=check_errors), out))


def lu_factor(A, *, pivot=True, out=None):
    """``(LU, pivots)`` as ``lu_factor_ex``, raising when a matrix has a zero pivot (it could not be used by
    ``lu_solve``)."""
    LU, pivots, info = _C.ops.linalg_lu_factor_ex(A, pivot=pivot)
    bad = _failures(info)
    if bad is not None:
        raise RuntimeError(f"torch.linalg.lu_factor: {_batch_prefix(A, bad[0])}U[{bad[1]},{bad[1]}] is zero and "
                           "using it on lu_solve would result in a division by zero. If you still want to perform "
                           "the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)")
    return lu_factor_return(*_outs((LU, pivots), out))


def lu(A, *, pivot=True, out=None):
    """``(P, L, U)`` with ``A = P L U`` for each matrix in ``A`` (..., m, n): P (..., m, m) a permutation, L
    (..., m, k) unit lower triangular, U (..., k, n) upper triangular, k = min(m, n)."""
    LU, pivots, _ = _C.ops.linalg_lu_factor_ex(A, pivot=pivot)
    return lu_return(*_outs(_C.ops.lu_unpack(LU, pivots), out))


def _lu_solve(LU, pivots, B, left, adjoint):
    """lu_solve on matrices B, the batch dims of (LU, pivots) and B broadcast."""
    from ._ops.misc import broadcast_shapes

    if LU.dim() < 2 or B.dim() < 2 or list(pivots.shape[:-1]) != list(LU.shape[:-2]):
        return _C.ops.linalg_lu_solve(LU, pivots, B, left=left, adjoint=adjoint)  # raises the error
    batch = list(broadcast_shapes(tuple(LU.shape[:-2]), tuple(B.shape[:-2])))
    LU = LU.expand(*batch, *LU.shape[-2:])
    pivots = pivots.expand(*batch, pivots.shape[-1])
    return _C.ops.linalg_lu_solve(LU, pivots, B.expand(*batch, *B.shape[-2:]), left=left, adjoint=adjoint)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """The solution X of ``A X = B`` (``X A = B`` with ``left=False``; A^T in place of A with ``adjoint``) from
    A's ``lu_factor`` ``(LU, pivots)``. Batch dims broadcast; differentiable w.r.t. LU and B."""
    return _finish(_lu_solve(LU, pivots, B, left, adjoint), False, out)


def _square(fn, A):
    if A.dim() < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are {A.shape[-2]} by "
                           f"{A.shape[-1]} matrices")


solve_ex_return = collections.namedtuple("linalg_solve_ex", ["result", "info"])
inv_ex_return = collections.namedtuple("linalg_inv_ex", ["inverse", "info"])
cholesky_ex_return = collections.namedtuple("linalg_cholesky_ex", ["L", "info"])


def solve_ex(A, B, *, left=True, check_errors=False, out=None):
    """``(result, info)``: ``solve``'s solution from one LU factorization of A, with info (per matrix of A) 0
    or the index of the first zero pivot; a singular matrix raises only with ``check_errors`` (its result is
    then inf/NaN)."""
    _square("linalg.solve", A)
    LU, pivots, info = _C.ops.linalg_lu_factor_ex(A)
    bad = _failures(info) if check_errors else None
    if bad is not None:
        raise LinAlgError(f"torch.linalg.solve_ex: {_batch_prefix(A, bad[0])}The solver failed because the input "
                          "matrix is singular.")
    vector = B.dim() == 1 or (left and B.dim() == A.dim() - 1 and list(B.shape) == list(A.shape[:-1]))
    X = _lu_solve(LU, pivots, B.unsqueeze(-1) if vector else B, left, False)
    return solve_ex_return(*_outs((X.squeeze(-1) if vector else X, info), out))


def inv_ex(A, *, check_errors=False, out=None):
    """``(inverse, info)``: ``inv`` from one LU factorization, with info (per matrix) 0 or the index of the
    first zero pivot; a singular matrix raises only with ``check_errors`` (its inverse is then inf/NaN)."""
    _square("linalg.inv", A)
    LU, pivots, info = _C.ops.linalg_lu_factor_ex(A)
    bad = _failures(info) if check_errors else None
    if bad is not None:
        raise LinAlgError(f"linalg.inv_ex: {_batch_prefix(A, bad[0])}The diagonal element {bad[1]} is zero, the "
                          "inversion could not be completed because the input matrix is singular.")
    eye = _C.ops.eye(A.shape[-1], dtype=A.dtype).expand(*A.shape)
    return inv_ex_return(*_outs((_C.ops.linalg_lu_solve(LU, pivots, eye), info), out))


def cholesky_ex(A, *, upper=False, check_errors=False, out=None):
    """``(L, info)``: ``cholesky``'s factor with info (per matrix) 0 or the order of the first leading minor
    that is not positive-definite, raised only with ``check_errors``."""
    return cholesky_ex_return(*_outs(_linalg_call(_C.ops.linalg_cholesky_ex, A, upper=upper,
                                                  check_errors=check_errors), out))


def vander(x, *, N=None):
    """The Vandermonde matrix of ``x`` (..., n): columns ``x**0, x**1, ..., x**(N-1)`` (N defaults to n), by a
    cumulative product so that the gradient is defined at 0."""
    if N is None:
        N = x.shape[-1] if x.dim() else 1
    if N <= 1:
        raise RuntimeError("N must be greater than 1.")
    col = x.unsqueeze(-1)
    powers = col.expand(*x.shape, N - 1).cumprod(-1)
    return _C.ops.cat([powers.new_ones(list(col.shape)), powers], -1)


def tensorinv(A, ind=2, *, out=None):
    """The inverse of ``A`` as a tensor product: ``tensordot(tensorinv(A, ind), A, ind)`` is the identity of
    shape ``A.shape[ind:]``; the products of ``A.shape[:ind]`` and ``A.shape[ind:]`` must agree."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = math.prod(A.shape[:ind]), math.prod(A.shape[ind:])
    if rows != cols:
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    X = inverse(A.reshape(rows, cols)).reshape(*A.shape[ind:], *A.shape[:ind])
    return _finish(X, False, out)


def tensorsolve(A, B, dims=None, *, out=None):
    """The X with ``tensordot(A, X, X.ndim) == B``, X of shape ``A.shape[B.ndim:]``; ``dims`` (of A) are
    moved to the end first."""
    if dims is not None:
        dims = [dims] if isinstance(dims, builtins.int) else list(dims)
        A = A.movedim(dims, list(range(A.dim() - len(dims), A.dim())))
    result_shape = list(A.shape[B.dim():])
    n = math.prod(result_shape)
    if n != B.numel():
        raise RuntimeError("Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {n} != {B.numel()}")
    X = solve(A.reshape(n, n), B.reshape(n)).reshape(*result_shape)
    return _finish(X, False, out)


@autocast_policy("fp32")
def cond(A, p=None, *, out=None):
    """The condition number of each matrix in ``A`` for the norm ``p``: with None / 2 / -2 the ratio of the
    extreme singular values (any shape); with 'fro', 'nuc', inf, -inf, 1, -1 ``norm(A) * norm(inv(A))``
    (square A), inf for a singular matrix."""
    if A.dim() < 2:
        raise RuntimeError("linalg.cond: The input tensor must have at least 2 dimensions.")
    if A.numel() == 0 and (p is None or (not isinstance(p, str) and p in (2, -2)) or A.shape[-1] == A.shape[-2]):
        return _finish(A.new_zeros(list(A.shape[:-2])), False, out)  # as torch: 0 for empty matrices
    if p is None or (not isinstance(p, str) and p in (2, -2)):
        S = svdvals(A)
        big, small = S[..., 0], S[..., -1]
        return _finish(small / big if p == -2 else big / small, False, out)
    if p not in ("fro", "nuc") and (isinstance(p, str) or p not in (math.inf, -math.inf, 1, -1)):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    _square(f"linalg.cond(ord={p})", A)
    Ainv, info = inv_ex(A)
    singular = info > 0
    # a singular matrix's inverse (inf/NaN) is replaced by zeros for the norms (an SVD refuses non-finite input)
    Ainv = _C.ops.where(singular.unsqueeze(-1).unsqueeze(-1), Ainv.new_zeros([]), Ainv)
    c = _matrix_norm(A, p, (-2, -1), False, None) * _matrix_norm(Ainv, p, (-2, -1), False, None)
    return _finish(_C.ops.where(singular, c.new_full([], math.inf), c), False, out)
