"""Matrix products with PyTorch's Python signatures (``einsum(eq, *operands)``, ``Tensor.__matmul__``)."""
import collections
import warnings

from .. import _C
from ._names import reject_dtype, torch_dtype_name
from .creation import _finish
from ..amp._policy import autocast_policy

ops = _C.ops

__all__ = ["einsum", "matmul", "mm", "bmm", "dot", "vdot", "mv", "outer", "ger", "addmm", "baddbmm", "addmv",
           "inner", "trace", "kron", "diag", "diagflat", "diag_embed", "cross", "dist", "cov", "corrcoef",
           "chain_matmul", "tensordot", "addr", "addbmm", "inverse", "det", "logdet", "slogdet", "cholesky",
           "matrix_power", "svd", "pinverse", "qr", "geqrf", "orgqr", "matrix_exp", "lu_unpack",
           "cholesky_inverse"]


def einsum(equation, *operands):
    """Sums the product of the operands' elements over the indices given by the Einstein-summation
    ``equation`` (e.g. ``'bij,bjk->bik'``); supports ``...``, repeated indices and implicit output."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return ops.einsum(equation, list(operands))


def matmul(input, other, *, out=None):
    """Matrix product with PyTorch's broadcasting rules (dot, mv, mm, batched)."""
    return ops.matmul(input, other, out=out)


def mm(input, mat2, *, out=None):
    """Matrix product of two 2-D tensors."""
    return ops.mm(input, mat2, out=out)


def bmm(input, mat2, *, out=None):
    """Batched matrix product of two 3-D tensors."""
    return ops.bmm(input, mat2, out=out)


def dot(input, tensor, *, out=None):
    """Dot product of two 1-D tensors."""
    return ops.dot(input, tensor, out=out)


def vdot(input, other, *, out=None):
    """Dot product of two 1-D tensors (conjugating the first; real dtypes only)."""
    return ops.vdot(input, other, out=out)


def mv(input, vec, *, out=None):
    """Matrix-vector product."""
    return ops.mv(input, vec, out=out)


def outer(input, vec2, *, out=None):
    """Outer product of two 1-D tensors."""
    return ops.outer(input, vec2, out=out)


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


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat1 @ mat2)``."""
    return ops.addmm(input, mat1, mat2, beta=beta, alpha=alpha, out=out)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * bmm(batch1, batch2)``."""
    return ops.baddbmm(input, batch1, batch2, beta=beta, alpha=alpha, out=out)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * (mat @ vec)``."""
    return ops.addmv(input, mat, vec, beta=beta, alpha=alpha, out=out)


def chain_matmul(*matrices, out=None):
    """The matrix product of the 2-D ``matrices``, left to right (deprecated in PyTorch in favour of
    ``linalg.multi_dot``; warns likewise). One matrix is returned as a copy."""
    warnings.warn("oneflow.chain_matmul is deprecated and will be removed in a future PyTorch release. Use "
                  "successive oneflow.matmul calls instead.", UserWarning, stacklevel=2)
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    result = ops.clone(matrices[0])
    for m in matrices[1:]:
        result = ops.mm(result, m)
    if out is not None:
        return ops.copy_(out, result)
    return result


@autocast_policy("fp32")
def trace(input):
    """The sum of the main diagonal of a 2-D tensor."""
    if input.dim() != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.dim()}")
    reject_dtype("trace", input, bool_ok=False)
    return ops.sum(ops.diagonal(input, 0, 0, 1))


def kron(input, other):
    """The Kronecker product: ``out[i*B + j] = input[i] * other[j]`` in every dim (the fewer-dim operand gets
    leading 1s)."""
    nd = max(input.dim(), other.dim())
    sa = [1] * (nd - input.dim()) + list(input.shape)
    sb = [1] * (nd - other.dim()) + list(other.shape)
    a = ops.reshape(input, [x for s in sa for x in (s, 1)])
    b = ops.reshape(other, [x for s in sb for x in (1, s)])
    return ops.reshape(ops.mul(a, b), [x * y for x, y in zip(sa, sb)])


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor whose diagonals (``offset`` from the main one, in the planes of ``dim1`` and ``dim2`` of the
    result) hold the last dim of ``input``; zeros elsewhere."""
    nd = input.dim() + 1
    d1, d2 = (dim1 + nd if dim1 < 0 else dim1), (dim2 + nd if dim2 < 0 else dim2)
    for d in (dim1, dim2):
        if not -nd <= d < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})")
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    m = (input.shape[-1] if input.dim() else 1) + abs(offset)
    rest = iter(list(input.shape[:-1]))
    shape = [m if i in (d1, d2) else next(rest) for i in range(nd)]
    from .creation import zeros

    out = zeros(shape, dtype=input.dtype)
    ops.copy_(ops.diagonal(out, offset, d1, d2), input)
    return out


def diag(input, diagonal=0):
    """1-D ``input``: a square matrix with ``input`` on its ``diagonal``-th diagonal. 2-D ``input``: a copy of
    its ``diagonal``-th diagonal."""
    if input.dim() == 1:
        return diag_embed(input, diagonal, 0, 1)
    if input.dim() == 2:
        return ops.clone(ops.diagonal(input, diagonal, 0, 1))
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.dim()}D")


def diagflat(input, offset=0):
    """``diag`` of the flattened ``input``: a square matrix with its elements on the ``offset``-th diagonal."""
    return diag_embed(ops.reshape(input, [-1]), offset, 0, 1)


def cross(input, other, dim=None):
    """The 3-D cross product of vectors along ``dim`` (broadcast); ``dim=None`` takes the first dim of size 3."""
    reject_dtype("cross", input, bool_ok=False)
    shape = list(_broadcast(input, other))
    if dim is None:
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    nd = len(shape)
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    if input.shape[dim] != 3 or other.shape[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. "
                           f"Got {input.shape[dim]} and {other.shape[dim]}")
    a = ops.expand(input, shape)
    b = ops.expand(other, shape)
    a0, a1, a2 = (ops.slice(a, dim, i, i + 1, 1) for i in range(3))
    b0, b1, b2 = (ops.slice(b, dim, i, i + 1, 1) for i in range(3))
    return ops.cat([ops.sub(ops.mul(a1, b2), ops.mul(a2, b1)), ops.sub(ops.mul(a2, b0), ops.mul(a0, b2)),
                    ops.sub(ops.mul(a0, b1), ops.mul(a1, b0))], dim)


def _broadcast(a, b):
    return _C._broadcast_shapes(list(a.shape), list(b.shape))


def dist(input, other, p=2):
    """The ``p``-norm of ``input - other`` (broadcast)."""
    return ops.linalg_vector_norm(ops.sub(input, other), float(p))


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the variables in the rows of ``input`` (observations in columns; a 1-D input is
    one variable), with optional integer frequency weights ``fweights`` and observation weights ``aweights``."""
    if input.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.dim()} dimensions")
    if input.dtype == _C.bool:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input if input.dim() == 2 else ops.reshape(input, [1, -1])
    if not x.dtype.is_floating_point:
        x = ops.to_dtype(x, _C.get_default_dtype())
    n_obs = x.shape[1]
    w = None
    for name, wt in (("fweights", fweights), ("aweights", aweights)):
        if wt is None:
            continue
        if wt.dim() > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                               f"{wt.dim()} dimensions")
        if wt.numel() != n_obs:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                               f"input but got {wt.numel()} != {n_obs}")
        if name == "fweights" and wt.dtype.is_floating_point:
            raise RuntimeError("cov(): expected fweights to have integral dtype but got fweights with "
                               f"{torch_dtype_name(wt.dtype)} dtype")
        w = wt if w is None else ops.mul(w, wt)
    if w is None:
        avg = ops.mean(x, [1])
        w_sum = float(n_obs)
        norm = w_sum - correction
    else:
        w = ops.to_dtype(w, x.dtype)
        w_sum_t = ops.sum(w)
        avg = ops.div(ops.sum(ops.mul(x, w), [1]), w_sum_t)
        w_sum = w_sum_t
        if correction == 0:
            norm = w_sum_t
        elif aweights is None:
            norm = ops.sub(w_sum_t, correction)
        else:
            norm = ops.sub(w_sum_t, ops.div(ops.mul(ops.sum(ops.mul(w, ops.to_dtype(aweights, x.dtype))),
                                                    correction), w_sum_t))
    if isinstance(norm, _C.TensorBase):
        norm = ops.clamp_min(norm, 0)
    else:
        norm = max(norm, 0)
    xm = ops.sub(x, ops.unsqueeze(avg, 1))
    xw = xm if w is None else ops.mul(xm, w)
    c = ops.div(ops.mm(xm, ops.transpose(xw, 0, 1)), norm)
    return ops.squeeze(c)


def corrcoef(input):
    """The Pearson correlation coefficients of the variables in the rows of ``input`` (see ``cov``), clipped
    to [-1, 1]."""
    c = cov(input)
    if c.dim() == 0:
        return ops.div(c, c)
    std = ops.sqrt(ops.diagonal(c, 0, 0, 1))
    c = ops.div(ops.div(c, ops.unsqueeze(std, 1)), ops.unsqueeze(std, 0))
    return ops.clamp(c, -1, 1)


def tensordot(a, b, dims=2, out=None):
    """Contracts ``a``'s dims ``dims[0]`` with ``b``'s dims ``dims[1]`` (an int ``n``: ``a``'s last ``n`` with
    ``b``'s first ``n``), as one matrix product; the result has ``a``'s free dims, then ``b``'s."""
    if isinstance(dims, _C.TensorBase):
        dims = dims.tolist() if dims.dim() > 0 else int(dims.item())
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(a.dim() - dims, a.dim())), list(range(dims))
    else:
        if len(dims) != 2:
            raise RuntimeError("tensordot expects dims to be an int or a pair of lists of dims")
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, int) else list(dims_b)
        if len(dims_a) != len(dims_b):
            raise RuntimeError("both dimension lists should have same length")
    dims_a = [d % a.dim() if a.dim() else d for d in dims_a]
    dims_b = [d % b.dim() if b.dim() else d for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[da]} in dim {da} "
                               f"and second has size {b.shape[db]} in dim {db}")
    free_a = [d for d in range(a.dim()) if d not in dims_a]
    free_b = [d for d in range(b.dim()) if d not in dims_b]
    k = 1
    for d in dims_a:
        k *= a.shape[d]
    fa = [a.shape[d] for d in free_a]
    fb = [b.shape[d] for d in free_b]
    ma = ops.reshape(ops.permute(a, free_a + dims_a), [-1 if fa else 1, k])
    mb = ops.reshape(ops.permute(b, dims_b + free_b), [k, -1 if fb else 1])
    return _finish(ops.reshape(ops.mm(ma, mb), fa + fb), False, out)


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * outer(vec1, vec2)`` (``beta = 0`` ignores ``input``, NaN included)."""
    for name, v in (("vec1", vec1), ("vec2", vec2)):
        if v.dim() != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.dim()}-D")
    # addr is on none of PyTorch's autocast lists, so it runs in its inputs' dtypes: the addmm it is built on
    # must not autocast
    autocast = _C._autocast_enabled()
    if autocast:
        _C._set_autocast_enabled(False)
    try:
        return addmm(input, ops.unsqueeze(vec1, 1), ops.unsqueeze(vec2, 0), beta=beta, alpha=alpha, out=out)
    finally:
        if autocast:
            _C._set_autocast_enabled(True)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``, as one matrix product over the joined batch."""
    if batch1.dim() != 3 or batch2.dim() != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if batch1.dim() != 3 else "batch2 must be a 3D tensor")
    bsz, n, m = batch1.shape
    if batch2.shape[0] != bsz or batch2.shape[1] != m:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{bsz}, {m}] but got: "
                           f"[{batch2.shape[0]}, {batch2.shape[1]}].")
    a = ops.reshape(ops.transpose(batch1, 0, 1), [n, bsz * m])
    b = ops.reshape(batch2, [bsz * m, batch2.shape[2]])
    return addmm(input, a, b, beta=beta, alpha=alpha, out=out)


# ---- factorizations (kernels in csrc/ops/linalg_decomp.cpp) -------------------------------------------------
slogdet_return = collections.namedtuple("slogdet", ["sign", "logabsdet"])


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (a singular or non-positive-definite matrix), as
    ``torch.linalg.LinAlgError``."""


def _linalg_call(fn, *args, **kw):
    try:
        return fn(*args, **kw)
    except RuntimeError as e:
        msg = str(e)
        if "singular" in msg or "positive-definite" in msg or "failed to converge" in msg:
            raise LinAlgError(msg) from None
        raise


def inverse(input, *, out=None):
    """The inverse of each square matrix in ``input`` (..., n, n); LinAlgError when one is singular."""
    return _finish(_linalg_call(ops.linalg_inv, input), False, out)


def det(input):
    """The determinant of each square matrix in ``input`` (..., n, n)."""
    return ops.linalg_det(input)


def slogdet(input):
    """``(sign, logabsdet)`` of each square matrix: det = sign * exp(logabsdet), without overflow; a singular
    matrix gives (0, -inf)."""
    return slogdet_return(*ops.linalg_slogdet(input))


def logdet(input):
    """``log(det(input))``: NaN for a negative determinant, -inf for a singular matrix."""
    sign, logabs = ops.linalg_slogdet(input)
    # a NaN constant, not logabs * NaN: where() sends the masked branch a zero gradient, and 0 * NaN = NaN
    nan = logabs.new_full([], float("nan"))
    return ops.where(ops.lt(sign, 0), nan, logabs)


def cholesky(input, upper=False, *, out=None):
    """The Cholesky factor of each symmetric positive-definite matrix (lower, or upper with ``upper``);
    LinAlgError when one is not positive-definite. Only the lower triangle of ``input`` is read."""
    return _finish(_linalg_call(ops.linalg_cholesky, input, upper=upper), False, out)


def _common_batch(A, B):
    """A and B with their batch dims (all but the last two) broadcast to one shape."""
    from .misc import broadcast_shapes
    batch = list(broadcast_shapes(tuple(A.shape[:-2]), tuple(B.shape[:-2])))
    return ops.expand(A, batch + list(A.shape[-2:])), ops.expand(B, batch + list(B.shape[-2:]))


def solve(A, B, *, left=True, out=None):
    """The solution X of ``A X = B`` (``X A = B`` with ``left=False``) for square ``A`` (..., n, n); ``B`` is
    a batch of matrices or, when shaped ``A.shape[:-1]`` (or 1-D), of vectors. Batch dims broadcast."""
    vector = B.dim() == 1 or (left and B.dim() == A.dim() - 1 and list(B.shape) == list(A.shape[:-1]))
    if vector:
        B = ops.unsqueeze(B, -1)
    if not left:
        A, B = ops.transpose(A, -2, -1), ops.transpose(B, -2, -1)
    X = _linalg_call(ops.linalg_solve, *_common_batch(A, B))
    if not left:
        X = ops.transpose(X, -2, -1)
    if vector:
        X = ops.squeeze(X, -1)
    return _finish(X, False, out)


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    """The solution X of ``A X = B`` (``X A = B`` with ``left=False``) for triangular ``A`` (only its upper
    or lower triangle is read; ``unitriangular``: its diagonal is taken as ones). Batch dims broadcast."""
    if B.dim() < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    if not left:
        A, B, upper = ops.transpose(A, -2, -1), ops.transpose(B, -2, -1), not upper
    X = ops.linalg_solve_triangular(*_common_batch(A, B), upper=upper, unitriangular=unitriangular)
    return _finish(X if left else ops.transpose(X, -2, -1), False, out)


def matrix_power(input, n):
    """``input`` (..., m, m) to the integer power ``n`` by repeated squaring (the inverse's power for n < 0;
    the identity for n = 0)."""
    if input.dim() < 2 or input.shape[-1] != input.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{input.shape[-2] if input.dim() >= 2 else 1} by {input.shape[-1] if input.dim() else 1} "
                           "matrices")
    if n == 0:
        eye = ops.eye(input.shape[-1], dtype=input.dtype)
        return ops.add(ops.mul(input, 0), eye) if input.dim() > 2 else eye
    base = inverse(input) if n < 0 else input
    n = abs(n)
    result = None
    while n:
        if n & 1:
            result = base if result is None else ops.matmul(result, base)
        n >>= 1
        if n:
            base = ops.matmul(base, base)
    return result


svd_return = collections.namedtuple("svd", ["U", "S", "V"])


def svd(input, some=True, compute_uv=True, *, out=None):
    """``(U, S, V)`` with ``input = U diag(S) V^T`` (torch.svd, whose V is linalg.svd's Vh transposed): the
    reduced factors with ``some``, square U and V otherwise; with ``compute_uv=False`` U and V are zero
    (m x m and n x n)."""
    U, S, Vh = _linalg_call(ops.linalg_svd, input, not some and compute_uv)
    if not compute_uv:
        m, n = input.shape[-2], input.shape[-1]
        batch = list(input.shape[:-2])
        U, Vh = input.new_zeros(batch + [m, m]), input.new_zeros(batch + [n, n])
    res = (U, S, ops.transpose(Vh, -2, -1) if compute_uv else Vh)
    return svd_return(*(res if out is None else (_finish(r, False, o) for r, o in zip(res, out))))


@autocast_policy("fp32")
def pinverse(input, rcond=1e-15):
    """The pseudo-inverse, singular values at or below ``rcond`` times the largest treated as zero."""
    from ..linalg import pinv

    return pinv(input, rtol=rcond)


# ---- QR, matrix_exp and LU unpacking (kernels in csrc/ops/linalg_qr.cpp and linalg_decomp.cpp) ------------
qr_return = collections.namedtuple("qr", ["Q", "R"])
geqrf_return = collections.namedtuple("geqrf", ["a", "tau"])
lu_unpack_return = collections.namedtuple("lu_unpack", ["P", "L", "U"])


def _finish_all(results, out):
    return results if out is None else tuple(_finish(r, False, o) for r, o in zip(results, out))


def qr(input, some=True, *, out=None):
    """``(Q, R)`` of each matrix in ``input``: the reduced factorization with ``some``, the complete one
    otherwise (``linalg.qr`` with mode 'reduced' / 'complete')."""
    return qr_return(*_finish_all(ops.linalg_qr(input, "reduced" if some else "complete"), out))


def geqrf(input, *, out=None):
    """LAPACK's geqrf: ``(a, tau)`` with R on and above the diagonal of ``a`` and the Householder vectors below
    it (see ``linalg.householder_product``). Not differentiable."""
    return geqrf_return(*_finish_all(ops.geqrf(input), out))


def orgqr(input, tau):
    """The first n columns of the product of the Householder reflectors ``I - tau_i v_i v_i^T`` (v_i: column i
    of ``input`` (..., m, n) below the diagonal, with a 1 on it), as ``linalg.householder_product``. Built from
    matmuls, one rank-1 update per reflector, so autograd differentiates it w.r.t. both arguments."""
    fn = "torch.linalg.householder_product"
    if input.dim() < 2:
        raise RuntimeError(f"{fn}: input must have at least 2 dimensions.")
    if tau.dim() < 1:
        raise RuntimeError(f"{fn}: tau must have at least 1 dimension.")
    m, n = input.shape[-2], input.shape[-1]
    if m < n:
        raise RuntimeError(f"{fn}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if n < tau.shape[-1]:
        raise RuntimeError(f"{fn}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if input.dim() - tau.dim() != 1 or list(tau.shape[:-1]) != list(input.shape[:-2]):
        raise RuntimeError(f"{fn}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got "
                           f"{list(tau.shape[:-1])}")
    if tau.dtype != input.dtype:
        raise RuntimeError(f"{fn}: tau dtype {torch_dtype_name(tau.dtype)} does not match input dtype "
                           f"{torch_dtype_name(input.dtype)}")
    eye = ops.eye(m, n, dtype=input.dtype)
    V = ops.add(ops.tril(input, -1), eye)
    Q = ops.expand(eye, list(input.shape))
    # right to left on the thin identity: Q <- (I - tau_i v_i v_i^T) Q, never an m x m product
    for i in range(tau.shape[-1] - 1, -1, -1):
        v = ops.slice(V, -1, i, i + 1)
        t = ops.unsqueeze(ops.slice(tau, -1, i, i + 1), -1)
        Q = ops.sub(Q, ops.mul(t, ops.matmul(v, ops.matmul(ops.transpose(v, -2, -1), Q))))
    return Q


def matrix_exp(input):
    """The matrix exponential of each square matrix in ``input`` (differentiable)."""
    return ops.linalg_matrix_exp(input)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True, *, out=None):
    """``(P, L, U)`` with A = P L U from ``linalg.lu_factor``'s ``(LU, pivots)``; the parts not asked for
    (``unpack_data`` for L and U, ``unpack_pivots`` for P) are empty."""
    return lu_unpack_return(*_finish_all(ops.lu_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots), out))


def _cholesky_factor_check(fn, L):
    if L.dim() < 2:
        raise RuntimeError(f"{fn}: The input tensor A must have at least 2 dimensions.")
    if L.shape[-1] != L.shape[-2]:
        raise RuntimeError(f"{fn}: A must be batches of square matrices, but they are {L.shape[-2]} by "
                           f"{L.shape[-1]} matrices")


def cholesky_inverse(input, upper=False, *, out=None):
    """The inverse of A from its Cholesky factor ``input`` (lower: A = L L^T, or upper: A = U^T U)."""
    _cholesky_factor_check("cholesky_inverse", input)
    eye = ops.expand(ops.eye(input.shape[-1], dtype=input.dtype), list(input.shape))
    return ops.cholesky_solve(eye, input, upper, out=out)


TENSOR_METHODS = {
    "matmul": matmul, "mm": mm, "bmm": bmm, "dot": dot,
    "vdot": vdot, "mv": mv, "outer": outer, "ger": outer, "inner": inner, "addmm": addmm, "baddbmm": baddbmm,
    "addmv": addmv, "trace": trace, "kron": kron, "diag": diag, "diagflat": diagflat, "diag_embed": diag_embed,
    "cross": cross, "dist": dist, "cov": cov, "corrcoef": corrcoef, "addr": addr, "addbmm": addbmm,
    "inverse": inverse, "det": det, "logdet": logdet, "slogdet": slogdet, "cholesky": cholesky,
    "matrix_power": matrix_power, "svd": svd, "pinverse": pinverse, "qr": qr, "geqrf": geqrf, "orgqr": orgqr,
    "matrix_exp": matrix_exp, "lu_unpack": lu_unpack,
    "cholesky_inverse": cholesky_inverse,
}
