"""linalg.qr / qr / geqrf / householder_product (orgqr), matrix_exp, the LU family (lu_factor[_ex], lu,
lu_unpack, lu_solve) and the composites (solve_ex, inv_ex, cholesky_ex, vander, tensorinv, tensorsolve, cond,
cholesky_solve, cholesky_inverse) against torch: values, gradients (float64), batches, non-square shapes, the
error types and messages."""
import math

import numpy as np
import pytest
import torch

import oneflow as flow
from helpers import check_vs_torch

rng = np.random.default_rng(23)
GRAD = dict(rtol=1e-9, atol=1e-10, grad_rtol=1e-7, grad_atol=1e-9)


def mat(*shape, shift=True):
    """Random matrices, square ones shifted towards the identity to be well conditioned."""
    a = rng.standard_normal(shape)
    if shift and shape[-1] == shape[-2]:
        a = a + 3 * np.eye(shape[-1])
    return a


def spd(*batch, n=4):
    a = rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def raises_like(flow_fn, torch_fn, same_message=True):
    """Both raise, with the same exception type name (LinAlgError for torch's _LinAlgError) and message."""
    with pytest.raises(Exception) as want:
        torch_fn()
    with pytest.raises(Exception) as got:
        flow_fn()
    expected = type(want.value)
    if issubclass(expected, torch.linalg.LinAlgError):
        assert isinstance(got.value, flow.linalg.LinAlgError)
    else:
        assert type(got.value).__name__ == expected.__name__, (got.value, want.value)
    if same_message:
        assert str(got.value) == str(want.value)


# ---- QR ---------------------------------------------------------------------------------------------------
SHAPES = [(5, 3), (3, 5), (4, 4), (2, 5, 3), (2, 3, 3, 5)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_values_match_torch(shape, mode):
    a = mat(*shape)
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
        fq, fr = flow.linalg.qr(flow.tensor(a.astype(dtype)), mode=mode)
        tq, tr = torch.linalg.qr(torch.tensor(a.astype(dtype)), mode=mode)
        assert fq.shape == tuple(tq.shape) and fr.shape == tuple(tr.shape)
        assert fq.dtype == (flow.float64 if dtype == np.float64 else flow.float32)
        np.testing.assert_allclose(fr.numpy(), tr.numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(fq.numpy(), tq.numpy(), rtol=tol, atol=tol)


# complete mode on a tall matrix has no gradient in torch (its error is checked below)
@pytest.mark.parametrize("shape,mode", [(s, m) for s in SHAPES for m in ("reduced", "complete")
                                        if not (m == "complete" and s[-2] > s[-1])])
def test_qr_gradients_match_torch(shape, mode):
    check_vs_torch(lambda x: tuple(flow.linalg.qr(x, mode)), lambda x: tuple(torch.linalg.qr(x, mode)),
                   [mat(*shape)], **GRAD)
    # Q alone and R alone (the other gradient undefined)
    check_vs_torch(lambda x: flow.linalg.qr(x, mode).Q, lambda x: torch.linalg.qr(x, mode).Q, [mat(*shape)], **GRAD)
    check_vs_torch(lambda x: flow.linalg.qr(x, mode).R, lambda x: torch.linalg.qr(x, mode).R, [mat(*shape)], **GRAD)


def test_qr_top_level_method_and_named_tuple():
    a = mat(5, 3)
    for some in (True, False):
        f, t = flow.qr(flow.tensor(a), some=some), torch.qr(torch.tensor(a), some=some)
        assert type(f).__name__ == "qr" and f._fields == ("Q", "R")
        np.testing.assert_allclose(f.Q.numpy(), t.Q.numpy(), atol=1e-12)
        np.testing.assert_allclose(flow.tensor(a).qr(some).R.numpy(), t.R.numpy(), atol=1e-12)
    res = flow.linalg.qr(flow.tensor(a))
    assert type(res).__name__ == "linalg_qr" and res._fields == ("Q", "R")
    assert flow.linalg.qr(flow.tensor(a), mode="r").Q.shape == (0,)


def test_qr_errors():
    for flow_fn, torch_fn in [
        (lambda: flow.linalg.qr(flow.ones(3, 3), mode="foo"), lambda: torch.linalg.qr(torch.ones(3, 3), mode="foo")),
        (lambda: flow.linalg.qr(flow.ones(3)), lambda: torch.linalg.qr(torch.ones(3))),
        (lambda: flow.linalg.qr(flow.ones(3, 3, dtype=flow.int32)),
         lambda: torch.linalg.qr(torch.ones(3, 3, dtype=torch.int32))),
    ]:
        raises_like(flow_fn, torch_fn)

    def backward(lib, mode, shape):
        x = lib.tensor(mat(*shape), requires_grad=True)
        lib.linalg.qr(x, mode=mode).R.sum().backward()

    raises_like(lambda: backward(flow, "r", (4, 3)), lambda: backward(torch, "r", (4, 3)))
    raises_like(lambda: backward(flow, "complete", (4, 3)), lambda: backward(torch, "complete", (4, 3)))


def test_geqrf_and_householder_product():
    for shape in [(5, 3), (3, 3), (2, 6, 4)]:
        a = mat(*shape)
        fa, ftau = flow.geqrf(flow.tensor(a))
        ta, ttau = torch.geqrf(torch.tensor(a))
        np.testing.assert_allclose(fa.numpy(), ta.numpy(), atol=1e-12)
        np.testing.assert_allclose(ftau.numpy(), ttau.numpy(), atol=1e-12)
        # householder_product(geqrf) is the reduced Q, with gradients w.r.t. both arguments
        np.testing.assert_allclose(flow.linalg.householder_product(fa, ftau).numpy(),
                                   torch.linalg.qr(torch.tensor(a)).Q.numpy(), atol=1e-12)
        tau = rng.standard_normal(ttau.shape[:-1] + (ttau.shape[-1] - 1,))  # fewer reflectors than columns
        for f, t in ((flow.linalg.householder_product, torch.linalg.householder_product), (flow.orgqr, torch.orgqr)):
            check_vs_torch(f, t, [a, tau], **GRAD)
    assert type(flow.geqrf(flow.ones(3, 2))).__name__ == "geqrf"
    x = flow.tensor(mat(3, 3), requires_grad=True)
    with pytest.raises(NotImplementedError, match="the derivative for 'geqrf' is not implemented"):
        flow.geqrf(x)[0].sum().backward()


def test_householder_product_errors():
    cases = [((3, 4), (2,)), ((4, 3), (4,)), ((4,), (4,)), ((2, 4, 3), (3, 2))]
    for a, tau in cases:
        raises_like(lambda: flow.linalg.householder_product(flow.ones(*a), flow.ones(*tau)),
                    lambda: torch.linalg.householder_product(torch.ones(*a), torch.ones(*tau)))
    raises_like(lambda: flow.linalg.householder_product(flow.ones(4, 3), flow.ones(2, dtype=flow.float64)),
                lambda: torch.linalg.householder_product(torch.ones(4, 3), torch.ones(2, dtype=torch.float64)))


# ---- matrix_exp ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,scale", [((4, 4), 1.0), ((3, 5, 5), 0.1), ((2, 6, 6), 4.0), ((1, 1), 2.0),
                                         ((0, 0), 1.0)])
def test_matrix_exp_values(shape, scale):
    a = rng.standard_normal(shape) * scale
    for dtype, rtol in ((np.float64, 1e-12), (np.float32, 1e-6)):
        f = flow.linalg.matrix_exp(flow.tensor(a.astype(dtype))).numpy()
        t = torch.linalg.matrix_exp(torch.tensor(a.astype(dtype))).numpy()
        assert f.dtype == t.dtype and f.shape == t.shape
        if f.size:  # relative to each matrix's largest entry
            ref = np.abs(t).max(axis=(-2, -1), keepdims=True)
            assert (np.abs(f - t) / ref).max() < rtol * 10
    np.testing.assert_allclose(flow.matrix_exp(flow.tensor(a)).numpy(), flow.tensor(a).matrix_exp().numpy())


def test_matrix_exp_gradient_and_errors():
    check_vs_torch(flow.linalg.matrix_exp, torch.linalg.matrix_exp, [rng.standard_normal((2, 4, 4))], **GRAD)
    check_vs_torch(flow.matrix_exp, torch.matrix_exp, [rng.standard_normal((3, 3)) * 3], **GRAD)
    raises_like(lambda: flow.linalg.matrix_exp(flow.ones(3, 4)), lambda: torch.linalg.matrix_exp(torch.ones(3, 4)))
    raises_like(lambda: flow.linalg.matrix_exp(flow.ones(3)), lambda: torch.linalg.matrix_exp(torch.ones(3)))
    raises_like(lambda: flow.linalg.matrix_exp(flow.ones(3, 3, dtype=flow.int32)),
                lambda: torch.linalg.matrix_exp(torch.ones(3, 3, dtype=torch.int32)))


# ---- LU -----------------------------------------------------------------------------------------------------
LU_SHAPES = [(4, 4), (3, 5), (5, 3), (2, 4, 4), (2, 3, 4, 2)]


@pytest.mark.parametrize("shape", LU_SHAPES)
def test_lu_factor_values_pivots_and_gradients(shape):
    a = mat(*shape, shift=False)
    f = flow.linalg.lu_factor(flow.tensor(a))
    t = torch.linalg.lu_factor(torch.tensor(a))
    assert type(f).__name__ == "linalg_lu_factor" and f._fields == ("LU", "pivots")
    assert f.pivots.dtype == flow.int32
    np.testing.assert_array_equal(f.pivots.numpy(), t.pivots.numpy())
    np.testing.assert_allclose(f.LU.numpy(), t.LU.numpy(), atol=1e-12)
    check_vs_torch(lambda x: flow.linalg.lu_factor(x).LU, lambda x: torch.linalg.lu_factor(x).LU, [a], **GRAD)
    fx = flow.linalg.lu_factor_ex(flow.tensor(a.astype(np.float32)))
    tx = torch.linalg.lu_factor_ex(torch.tensor(a.astype(np.float32)))
    assert fx._fields == ("LU", "pivots", "info") and fx.info.dtype == flow.int32
    np.testing.assert_array_equal(fx.info.numpy(), tx.info.numpy())
    np.testing.assert_allclose(fx.LU.numpy(), tx.LU.numpy(), atol=1e-5)


@pytest.mark.parametrize("shape", LU_SHAPES)
def test_lu_and_lu_unpack_match_torch(shape):
    a = mat(*shape, shift=False)
    res = flow.linalg.lu(flow.tensor(a))
    assert type(res).__name__ == "linalg_lu" and res._fields == ("P", "L", "U")
    check_vs_torch(lambda x: tuple(flow.linalg.lu(x)), lambda x: tuple(torch.linalg.lu(x)), [a], **GRAD)
    check_vs_torch(lambda x: flow.linalg.lu(x).L, lambda x: torch.linalg.lu(x).L, [a], **GRAD)
    check_vs_torch(lambda x: flow.linalg.lu(x).U, lambda x: torch.linalg.lu(x).U, [a], **GRAD)
    LU, piv = flow.linalg.lu_factor(flow.tensor(a))
    tLU, tpiv = torch.linalg.lu_factor(torch.tensor(a))
    for data, pivots in ((True, True), (True, False), (False, True)):
        f = flow.lu_unpack(LU, piv, unpack_data=data, unpack_pivots=pivots)
        t = torch.lu_unpack(tLU, tpiv, unpack_data=data, unpack_pivots=pivots)
        assert type(f).__name__ == "lu_unpack"
        for x, y in zip(f, t):
            assert x.shape == tuple(y.shape)
            np.testing.assert_allclose(x.numpy(), y.numpy(), atol=1e-12)


def test_lu_singular_and_errors():
    z = np.zeros((2, 3, 3))
    f, t = flow.linalg.lu_factor_ex(flow.tensor(z)), torch.linalg.lu_factor_ex(torch.tensor(z))
    np.testing.assert_array_equal(f.info.numpy(), t.info.numpy())
    np.testing.assert_array_equal(f.pivots.numpy(), t.pivots.numpy())
    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    for arr in (s, z):
        raises_like(lambda: flow.linalg.lu_factor(flow.tensor(arr)), lambda: torch.linalg.lu_factor(torch.tensor(arr)))
        raises_like(lambda: flow.linalg.lu_factor_ex(flow.tensor(arr), check_errors=True),
                    lambda: torch.linalg.lu_factor_ex(torch.tensor(arr), check_errors=True))
    P, L, U = flow.linalg.lu(flow.tensor(s))  # the factorization of a singular matrix still exists
    np.testing.assert_allclose((P @ L @ U).numpy(), s)
    raises_like(lambda: flow.linalg.lu_factor(flow.ones(3, 3), pivot=False),
                lambda: torch.linalg.lu_factor(torch.ones(3, 3), pivot=False))
    raises_like(lambda: flow.linalg.lu(flow.ones(3, 3), pivot=False),
                lambda: torch.linalg.lu(torch.ones(3, 3), pivot=False))
    raises_like(lambda: flow.linalg.lu_factor(flow.ones(3)), lambda: torch.linalg.lu_factor(torch.ones(3)))
    raises_like(lambda: flow.linalg.lu_factor(flow.ones(3, 3, dtype=flow.int32)),
                lambda: torch.linalg.lu_factor(torch.ones(3, 3, dtype=torch.int32)))
    raises_like(lambda: flow.lu_unpack(flow.ones(3, 3), flow.ones(3, dtype=flow.int64)),
                lambda: torch.lu_unpack(torch.ones(3, 3), torch.ones(3, dtype=torch.int64)))
    with pytest.raises(RuntimeError, match="pivots must be between 1 and 3"):
        flow.lu_unpack(flow.ones(3, 3), flow.tensor([1, 7, 3], dtype=flow.int32))


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve_matches_torch(left, adjoint):
    a = mat(2, 4, 4)
    b = rng.standard_normal((2, 4, 3) if left else (2, 3, 4))

    def run(lib):
        def fn(A, B):
            LU, piv = lib.linalg.lu_factor(A)
            return lib.linalg.lu_solve(LU, piv, B, left=left, adjoint=adjoint)
        return fn

    check_vs_torch(run(flow), run(torch), [a, b], **GRAD)

    def run_lu(lib):  # the gradient w.r.t. LU itself
        def fn(LU, B):
            return lib.linalg.lu_solve(LU, piv[lib], B, left=left, adjoint=adjoint)
        return fn

    tLU, tpiv = torch.linalg.lu_factor(torch.tensor(a))
    piv = {flow: flow.tensor(tpiv.numpy()), torch: tpiv}
    check_vs_torch(run_lu(flow), run_lu(torch), [tLU.numpy(), b], **GRAD)
    # broadcast batch dims: one LU against a batch of right-hand sides
    lu1, p1 = flow.linalg.lu_factor(flow.tensor(a[0]))
    tlu1, tp1 = torch.linalg.lu_factor(torch.tensor(a[0]))
    np.testing.assert_allclose(flow.linalg.lu_solve(lu1, p1, flow.tensor(b), left=left, adjoint=adjoint).numpy(),
                               torch.linalg.lu_solve(tlu1, tp1, torch.tensor(b), left=left, adjoint=adjoint).numpy(),
                               rtol=1e-10, atol=1e-12)


def test_lu_solve_errors():
    i32 = dict(dtype=flow.int32)
    cases = [
        (lambda: flow.linalg.lu_solve(flow.ones(3, 4), flow.ones(3, **i32), flow.ones(3, 2)),
         lambda: torch.linalg.lu_solve(torch.ones(3, 4), torch.ones(3, dtype=torch.int32), torch.ones(3, 2))),
        (lambda: flow.linalg.lu_solve(flow.ones(3, 3), flow.ones(3, **i32), flow.ones(4, 2)),
         lambda: torch.linalg.lu_solve(torch.ones(3, 3), torch.ones(3, dtype=torch.int32), torch.ones(4, 2))),
        (lambda: flow.linalg.lu_solve(flow.ones(3, 3), flow.ones(3, dtype=flow.int64), flow.ones(3, 2)),
         lambda: torch.linalg.lu_solve(torch.ones(3, 3), torch.ones(3, dtype=torch.int64), torch.ones(3, 2))),
        (lambda: flow.linalg.lu_solve(flow.ones(3, 3), flow.ones(3, **i32), flow.ones(3)),
         lambda: torch.linalg.lu_solve(torch.ones(3, 3), torch.ones(3, dtype=torch.int32), torch.ones(3))),
    ]
    for flow_fn, torch_fn in cases:
        raises_like(flow_fn, torch_fn)


# ---- the *_ex forms and the composites ----------------------------------------------------------------------
def test_solve_ex_inv_ex_cholesky_ex():
    a, b = mat(3, 4, 4), rng.standard_normal((3, 4, 2))
    check_vs_torch(lambda x, y: tuple(flow.linalg.solve_ex(x, y)), lambda x, y: tuple(torch.linalg.solve_ex(x, y)),
                   [a, b], **GRAD)
    check_vs_torch(lambda x, y: flow.linalg.solve_ex(x, y, left=False).result,
                   lambda x, y: torch.linalg.solve_ex(x, y, left=False).result, [a, np.swapaxes(b, -1, -2)], **GRAD)
    check_vs_torch(lambda x, y: flow.linalg.solve_ex(x, y).result, lambda x, y: torch.linalg.solve_ex(x, y).result,
                   [a, b[..., 0]], **GRAD)  # a batch of vectors
    check_vs_torch(lambda x: tuple(flow.linalg.inv_ex(x)), lambda x: tuple(torch.linalg.inv_ex(x)), [a], **GRAD)
    p = spd(2)
    for upper in (False, True):
        check_vs_torch(lambda x: tuple(flow.linalg.cholesky_ex(x, upper=upper)),
                       lambda x: tuple(torch.linalg.cholesky_ex(x, upper=upper)), [p], **GRAD)
    assert type(flow.linalg.solve_ex(flow.tensor(a), flow.tensor(b))).__name__ == "linalg_solve_ex"
    assert flow.linalg.inv_ex(flow.tensor(a))._fields == ("inverse", "info")
    assert flow.linalg.cholesky_ex(flow.tensor(p))._fields == ("L", "info")

    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    f, t = flow.linalg.solve_ex(flow.tensor(s), flow.ones(2, 1, dtype=flow.float64)), \
        torch.linalg.solve_ex(torch.tensor(s), torch.ones(2, 1, dtype=torch.float64))
    assert f.info.dtype == flow.int32 and f.info.item() == t.info.item()
    assert not np.isfinite(f.result.numpy()).all()
    assert flow.linalg.inv_ex(flow.tensor(s)).info.item() == torch.linalg.inv_ex(torch.tensor(s)).info.item()
    raises_like(lambda: flow.linalg.solve_ex(flow.tensor(s), flow.ones(2, 1, dtype=flow.float64), check_errors=True),
                lambda: torch.linalg.solve_ex(torch.tensor(s), torch.ones(2, 1, dtype=torch.float64),
                                              check_errors=True))
    bs = np.stack([np.eye(2), s])
    raises_like(lambda: flow.linalg.inv_ex(flow.tensor(bs), check_errors=True),
                lambda: torch.linalg.inv_ex(torch.tensor(bs), check_errors=True))
    not_pd = np.array([[4.0, 2, 1], [2, 1, 0], [1, 0, 3]])
    f, t = flow.linalg.cholesky_ex(flow.tensor(not_pd)), torch.linalg.cholesky_ex(torch.tensor(not_pd))
    assert f.info.dtype == flow.int32 and f.info.item() == t.info.item() == 2
    np.testing.assert_allclose(f.L.numpy(), t.L.numpy())
    neg = np.stack([np.eye(3), -np.eye(3)])
    raises_like(lambda: flow.linalg.cholesky_ex(flow.tensor(neg), check_errors=True),
                lambda: torch.linalg.cholesky_ex(torch.tensor(neg), check_errors=True))


def test_vander_tensorinv_tensorsolve():
    x = rng.standard_normal((2, 4))
    check_vs_torch(flow.linalg.vander, torch.linalg.vander, [x], **GRAD)
    check_vs_torch(lambda t: flow.linalg.vander(t, N=6), lambda t: torch.linalg.vander(t, N=6), [x], **GRAD)
    check_vs_torch(flow.linalg.vander, torch.linalg.vander, [np.array([0.0, 1.0, 2.0])], **GRAD)
    np.testing.assert_array_equal(flow.linalg.vander(flow.tensor([1, 2, 3])).numpy(),
                                  torch.linalg.vander(torch.tensor([1, 2, 3])).numpy())
    raises_like(lambda: flow.linalg.vander(flow.ones(3), N=1), lambda: torch.linalg.vander(torch.ones(3), N=1))

    a = (np.eye(24) * 5 + rng.standard_normal((24, 24))).reshape(4, 6, 8, 3)
    check_vs_torch(lambda t: flow.linalg.tensorinv(t, ind=2), lambda t: torch.linalg.tensorinv(t, ind=2), [a], **GRAD)
    check_vs_torch(lambda t: flow.linalg.tensorinv(t, ind=1), lambda t: torch.linalg.tensorinv(t, ind=1),
                   [a.reshape(24, 4, 6)], **GRAD)
    raises_like(lambda: flow.linalg.tensorinv(flow.ones(2, 3, 6), ind=1),
                lambda: torch.linalg.tensorinv(torch.ones(2, 3, 6), ind=1))
    raises_like(lambda: flow.linalg.tensorinv(flow.ones(2, 3, 6), ind=0),
                lambda: torch.linalg.tensorinv(torch.ones(2, 3, 6), ind=0))

    A = (np.eye(6) * 4 + rng.standard_normal((6, 6))).reshape(2, 3, 6)
    B = rng.standard_normal((2, 3))
    check_vs_torch(flow.linalg.tensorsolve, torch.linalg.tensorsolve, [A, B], **GRAD)
    A2 = np.moveaxis(A, 2, 0)  # (6, 2, 3): dims=(0,) moves the solved-for dim back to the end
    check_vs_torch(lambda x, y: flow.linalg.tensorsolve(x, y, dims=(0,)),
                   lambda x, y: torch.linalg.tensorsolve(x, y, dims=(0,)), [A2, B], **GRAD)
    raises_like(lambda: flow.linalg.tensorsolve(flow.ones(2, 3, 6), flow.ones(5)),
                lambda: torch.linalg.tensorsolve(torch.ones(2, 3, 6), torch.ones(5)))


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", math.inf, -math.inf, 1, -1])
def test_cond_matches_torch(p):
    a = mat(3, 4, 4)
    # torch's backward of the norms other than 2 fails (an in-place write on inv_ex's output): values only
    check_vs_torch(lambda x: flow.linalg.cond(x, p), lambda x: torch.linalg.cond(x, p), [a],
                   grad=p in (None, 2, -2), **GRAD)
    if p in (None, 2, -2):
        check_vs_torch(lambda x: flow.linalg.cond(x, p), lambda x: torch.linalg.cond(x, p), [mat(3, 5)], **GRAD)
    else:
        s = np.array([[1.0, 2.0], [2.0, 4.0]])
        assert flow.linalg.cond(flow.tensor(s), p).item() == math.inf
        if p != "nuc":  # torch's 'nuc' gets a rounding-sized pivot here and a huge finite number
            assert torch.linalg.cond(torch.tensor(s), p).item() == math.inf
        raises_like(lambda: flow.linalg.cond(flow.ones(3, 4), p), lambda: torch.linalg.cond(torch.ones(3, 4), p))


def test_cond_errors():
    raises_like(lambda: flow.linalg.cond(flow.ones(3, 3), 3), lambda: torch.linalg.cond(torch.ones(3, 3), 3))
    raises_like(lambda: flow.linalg.cond(flow.ones(3)), lambda: torch.linalg.cond(torch.ones(3)))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse(upper):
    p = spd(2)
    L = np.linalg.cholesky(p)
    factor = np.swapaxes(L, -1, -2) if upper else L
    b = rng.standard_normal((2, 4, 3))
    check_vs_torch(lambda x, y: flow.cholesky_solve(x, y, upper), lambda x, y: torch.cholesky_solve(x, y, upper),
                   [b, factor], **GRAD)
    check_vs_torch(lambda x, y: x.cholesky_solve(y, upper=upper), lambda x, y: x.cholesky_solve(y, upper=upper),
                   [b[0], factor], **GRAD)  # broadcast: one right-hand side, a batch of factors
    check_vs_torch(lambda x: flow.cholesky_inverse(x, upper), lambda x: torch.cholesky_inverse(x, upper), [factor],
                   **GRAD)
    check_vs_torch(lambda x: x.cholesky_inverse(upper), lambda x: x.cholesky_inverse(upper), [factor[0]], **GRAD)


def test_cholesky_solve_errors():
    raises_like(lambda: flow.cholesky_solve(flow.ones(3, 2), flow.ones(4, 4)),
                lambda: torch.cholesky_solve(torch.ones(3, 2), torch.ones(4, 4)))
    raises_like(lambda: flow.cholesky_solve(flow.ones(3), flow.ones(3, 3)),
                lambda: torch.cholesky_solve(torch.ones(3), torch.ones(3, 3)))
    raises_like(lambda: flow.cholesky_solve(flow.ones(3, 2), flow.ones(3)),
                lambda: torch.cholesky_solve(torch.ones(3, 2), torch.ones(3)))
    raises_like(lambda: flow.cholesky_inverse(flow.ones(3, 4)), lambda: torch.cholesky_inverse(torch.ones(3, 4)))
    raises_like(lambda: flow.cholesky_inverse(flow.ones(3)), lambda: torch.cholesky_inverse(torch.ones(3)))
