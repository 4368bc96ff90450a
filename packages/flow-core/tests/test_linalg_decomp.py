"""linalg.inv/det/slogdet/solve/cholesky/matrix_power (and inverse/det/logdet/slogdet/cholesky at the top
level and as Tensor methods) against torch: values and gradients, batches, float32, and the errors."""
import numpy as np
import pytest
import torch

import oneflow as flow
from helpers import check_vs_torch

rng = np.random.default_rng(17)


def well_conditioned(*batch, n=4):
    a = rng.standard_normal(batch + (n, n))
    return a + 3 * np.eye(n)


def spd(*batch, n=4):
    a = rng.standard_normal(batch + (n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


@pytest.mark.parametrize("batch", [(), (3,), (2, 2)])
def test_inv_det_slogdet_logdet_match_torch(batch):
    a = well_conditioned(*batch)
    check_vs_torch(lambda x: flow.linalg.inv(x), lambda x: torch.linalg.inv(x), [a], rtol=1e-10, atol=1e-12)
    check_vs_torch(lambda x: flow.linalg.det(x), lambda x: torch.linalg.det(x), [a], rtol=1e-10, atol=1e-12)
    check_vs_torch(lambda x: flow.linalg.slogdet(x)[1], lambda x: torch.linalg.slogdet(x)[1], [a], rtol=1e-10,
                   atol=1e-12)
    fs, ts = flow.linalg.slogdet(flow.tensor(a)), torch.linalg.slogdet(torch.tensor(a))
    np.testing.assert_array_equal(fs.sign.numpy(), ts.sign.numpy())
    np.testing.assert_allclose(flow.tensor(a).logdet().numpy(), torch.tensor(a).logdet().numpy(), rtol=1e-12)
    np.testing.assert_allclose(flow.inverse(flow.tensor(a)).numpy(), torch.inverse(torch.tensor(a)).numpy(),
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(flow.tensor(a).det().numpy(), torch.tensor(a).det().numpy(), rtol=1e-12)


def test_singular_matrices():
    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert flow.linalg.det(flow.tensor(s)).item() == 0
    sign, logabs = flow.linalg.slogdet(flow.tensor(s))
    assert sign.item() == 0 and logabs.item() == -np.inf
    assert np.isnan(flow.logdet(flow.tensor([[0.0, 1.0], [1.0, 0.0]])).item())  # det -1
    with pytest.raises(flow.linalg.LinAlgError) as got:
        flow.linalg.inv(flow.tensor(s))
    with pytest.raises(torch.linalg.LinAlgError) as want:
        torch.linalg.inv(torch.tensor(s))
    assert str(got.value) == str(want.value)
    batch = np.stack([np.eye(2), s])
    with pytest.raises(flow.linalg.LinAlgError, match=r"\(Batch element 1\): The diagonal element 2 is zero"):
        flow.linalg.inv(flow.tensor(batch))
    assert isinstance(flow.linalg.LinAlgError("x"), RuntimeError)


def test_solve_matches_torch():
    a = well_conditioned(3)
    check_vs_torch(lambda x, y: flow.linalg.solve(x, y), lambda x, y: torch.linalg.solve(x, y),
                   [a, rng.standard_normal((3, 4, 2))], rtol=1e-10, atol=1e-12)
    check_vs_torch(lambda x, y: flow.linalg.solve(x, y), lambda x, y: torch.linalg.solve(x, y),
                   [a, rng.standard_normal((3, 4))], rtol=1e-10, atol=1e-12)  # a batch of vectors
    check_vs_torch(lambda x, y: flow.linalg.solve(x, y, left=False), lambda x, y: torch.linalg.solve(x, y, left=False),
                   [a, rng.standard_normal((3, 2, 4))], rtol=1e-10, atol=1e-12)
    check_vs_torch(lambda x, y: flow.linalg.solve(x, y), lambda x, y: torch.linalg.solve(x, y),
                   [well_conditioned(), rng.standard_normal((5, 4, 1))], rtol=1e-10, atol=1e-12)  # broadcast A
    with pytest.raises(flow.linalg.LinAlgError, match="The solver failed because the input matrix is singular"):
        flow.linalg.solve(flow.zeros(3, 3), flow.ones(3))


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_matches_torch(upper):
    a = spd(2)
    check_vs_torch(lambda x: flow.linalg.cholesky(x, upper=upper), lambda x: torch.linalg.cholesky(x, upper=upper),
                   [a], rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(flow.tensor(a).cholesky(upper).numpy(), torch.linalg.cholesky(torch.tensor(a),
                                                                                            upper=upper).numpy(),
                               rtol=1e-12)
    bad = np.diag([1.0, -1.0, 2.0])
    with pytest.raises(flow.linalg.LinAlgError) as got:
        flow.linalg.cholesky(flow.tensor(bad))
    with pytest.raises(torch.linalg.LinAlgError) as want:
        torch.linalg.cholesky(torch.tensor(bad))
    assert str(got.value) == str(want.value)


def test_float32_and_matrix_power_and_products():
    a = well_conditioned(2).astype(np.float32)
    np.testing.assert_allclose(flow.linalg.inv(flow.tensor(a)).numpy(), torch.linalg.inv(torch.tensor(a)).numpy(),
                               rtol=1e-5, atol=1e-6)
    assert flow.linalg.inv(flow.tensor(a)).dtype == flow.float32
    for n in (0, 1, 3, -2):
        check_vs_torch(lambda x: flow.linalg.matrix_power(x, n), lambda x: torch.linalg.matrix_power(x, n),
                       [well_conditioned(2)], rtol=1e-9, atol=1e-10)
    mats = [rng.standard_normal(4), rng.standard_normal((4, 3)), rng.standard_normal((3, 5)), rng.standard_normal(5)]
    check_vs_torch(lambda *m: flow.linalg.multi_dot(list(m)), lambda *m: torch.linalg.multi_dot(list(m)), mats,
                   rtol=1e-10, atol=1e-12)
    x, y = rng.standard_normal((3, 4)), rng.standard_normal(4)
    np.testing.assert_allclose(flow.linalg.vecdot(flow.tensor(x), flow.tensor(y)).numpy(),
                               torch.linalg.vecdot(torch.tensor(x), torch.tensor(y)).numpy(), rtol=1e-12)


def test_shape_errors():
    with pytest.raises(RuntimeError, match="A must be batches of square matrices, but they are 2 by 3 matrices"):
        flow.linalg.inv(flow.ones(2, 3))
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        flow.linalg.det(flow.ones(3))
    with pytest.raises(RuntimeError, match="Incompatible shapes of A and B"):
        flow.linalg.solve(flow.eye(3), flow.ones(2, 2))


@pytest.mark.parametrize("upper,left,unit", [(False, True, False), (True, True, False), (False, False, True),
                                             (True, False, True)])
def test_solve_triangular_matches_torch(upper, left, unit):
    a = rng.standard_normal((2, 4, 4)) + 4 * np.eye(4)  # the other triangle is ignored, so leave it filled
    b = rng.standard_normal((2, 4, 3) if left else (2, 3, 4))
    check_vs_torch(lambda x, y: flow.linalg.solve_triangular(x, y, upper=upper, left=left, unitriangular=unit),
                   lambda x, y: torch.linalg.solve_triangular(x, y, upper=upper, left=left, unitriangular=unit),
                   [a, b], rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="The input tensor B must have at least 2 dimensions"):
        flow.linalg.solve_triangular(flow.eye(3), flow.ones(3), upper=False)


def test_det_gradient_at_singular_matrices():
    # a singular matrix in a batch: det's gradient is 0 there (as torch's), the others' are unaffected;
    # log|det|'s gradient is undefined there (NaN; torch gives infinities)
    b = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 1.0], [1.0, 3.0]]])
    f, t = flow.tensor(b, requires_grad=True), torch.tensor(b, requires_grad=True)
    flow.linalg.det(f).sum().backward()
    torch.linalg.det(t).sum().backward()
    np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), atol=1e-12)
    f2 = flow.tensor(b, requires_grad=True)
    flow.linalg.slogdet(f2).logabsdet.sum().backward()
    assert np.isnan(f2.grad.numpy()[0]).all()
    np.testing.assert_allclose(f2.grad.numpy()[1], np.linalg.inv(b[1]).T, rtol=1e-12)
    z = flow.zeros(2, 3, 3, requires_grad=True)
    flow.linalg.det(z).sum().backward()
    np.testing.assert_array_equal(z.grad.numpy(), np.zeros((2, 3, 3)))


# ---- matrix_norm / norm ------------------------------------------------------------------------------------
_INF = float("inf")


@pytest.mark.parametrize("ord", ["fro", _INF, -_INF, 1, -1, "nuc", 2, -2])
@pytest.mark.parametrize("dim", [(-2, -1), (0, 2), (2, 0)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_matrix_norm_values_and_grads_match_torch(ord, dim, keepdim):
    x = np.random.default_rng(4).standard_normal((2, 3, 4))
    check_vs_torch(lambda a: flow.linalg.matrix_norm(a, ord, dim, keepdim),
                   lambda a: torch.linalg.matrix_norm(a, ord, dim, keepdim), [x], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("args,kwargs", [
    ((None,), {}), ((None,), {"keepdim": True}), ((1,), {}), ((-_INF,), {"keepdim": True}), (("fro",), {}),
    ((3,), {"dim": 1}), ((None,), {"dim": (0, 1)}), ((_INF,), {"dim": (1, 0)}), ((0.5,), {"dim": 0}),
])
def test_linalg_norm_dispatches_like_torch(args, kwargs):
    # 2-D input: ord without dim is a matrix norm; an int dim a vector norm; a 2-tuple a matrix norm
    x = np.random.default_rng(5).standard_normal((3, 5))
    check_vs_torch(lambda a: flow.linalg.norm(a, *args, **kwargs), lambda a: torch.linalg.norm(a, *args, **kwargs),
                   [x], rtol=1e-10, atol=1e-12)
    v = np.random.default_rng(6).standard_normal(7)
    if kwargs.get("dim") in (None, 0) and not isinstance(args[0], str):
        check_vs_torch(lambda a: flow.linalg.norm(a, *args, **kwargs),
                       lambda a: torch.linalg.norm(a, *args, **kwargs), [v], rtol=1e-10, atol=1e-12)


def test_matrix_norm_dtype_and_empty():
    x = np.random.default_rng(7).standard_normal((3, 4)).astype(np.float32)
    got = flow.linalg.matrix_norm(flow.tensor(x), 1, dtype=flow.float64)
    assert got.dtype == flow.float64
    np.testing.assert_allclose(got.numpy(), np.abs(x.astype(np.float64)).sum(0).max(), rtol=1e-12)
    for shape, ord in [((0, 3), _INF), ((0, 3), 1), ((3, 0), _INF), ((0, 3), -1), ((2, 0, 3), "fro")]:
        want = torch.linalg.matrix_norm(torch.zeros(shape), ord)
        np.testing.assert_array_equal(flow.linalg.matrix_norm(flow.zeros(*shape), ord).numpy(), want.numpy())


@pytest.mark.parametrize("call,exc,msg", [
    (lambda: flow.linalg.matrix_norm(flow.randn(3), "fro"), RuntimeError, "at least 2 dimensions"),
    (lambda: flow.linalg.matrix_norm(flow.randn(3, 4), 3), RuntimeError, "Order 3 not supported"),
    (lambda: flow.linalg.matrix_norm(flow.randn(3, 4), "abc"), RuntimeError, "Order abc not supported"),
    (lambda: flow.linalg.matrix_norm(flow.randn(3, 4), dim=(0, 0)), RuntimeError,
     r"dims must be different. Got \(0, 0\)"),
    (lambda: flow.linalg.matrix_norm(flow.randn(3, 4), dim=(0,)), RuntimeError, "dim must be a 2-tuple. Got 0"),
    (lambda: flow.linalg.matrix_norm(flow.randn(3, 4), dim=(0, 5)), IndexError, "Dimension out of range"),
    (lambda: flow.linalg.matrix_norm(flow.arange(6).view(2, 3), 1), RuntimeError, "floating point .* Got Long"),
    (lambda: flow.linalg.matrix_norm(flow.randn(3, 4, dtype=flow.float64), 1, dtype=flow.float32), RuntimeError,
     r"input \(Double\) should be convertible without narrowing to the specified dtype \(Float\)"),
    (lambda: flow.linalg.norm(flow.randn(2, 3, 4), 2), RuntimeError, "must be 1D or 2D. Got 3D"),
    (lambda: flow.linalg.norm(flow.randn(3, 4), dim=(0, 1, 1)), RuntimeError, r"length 1 or 2. Got \[0, 1, 1\]"),
    (lambda: flow.linalg.norm(flow.randn(3, 4), "fro", dim=1), RuntimeError, "dim must be a 2-tuple. Got 1"),
    (lambda: flow.linalg.matrix_norm(flow.zeros(0, 3), -_INF), IndexError, "non-zero size"),
])
def test_matrix_norm_errors_like_torch(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


# ---- svd, svdvals, pinv, matrix_rank -----------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3), (1, 4), (5, 1), (2, 1, 6, 4)])
@pytest.mark.parametrize("full", [True, False])
def test_svd_factors(shape, full):
    a = np.random.default_rng(sum(shape)).standard_normal(shape)
    U, S, Vh = flow.linalg.svd(flow.tensor(a), full_matrices=full)
    tU, tS, tVh = torch.linalg.svd(torch.tensor(a), full_matrices=full)
    assert (U.shape, S.shape, Vh.shape) == (tuple(tU.shape), tuple(tS.shape), tuple(tVh.shape))
    np.testing.assert_allclose(S.numpy(), tS.numpy(), rtol=1e-12, atol=1e-13)
    k = min(shape[-2:])
    u, vh = U.numpy(), Vh.numpy()
    np.testing.assert_allclose(u[..., :k] @ (S.numpy()[..., None] * vh[..., :k, :]), a, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, np.eye(u.shape[-1]) + 0 * u[..., :1, :1], atol=1e-12)
    np.testing.assert_allclose(vh @ np.swapaxes(vh, -1, -2), np.eye(vh.shape[-2]) + 0 * vh[..., :1, :1], atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
def test_svd_gradients_match_torch(shape):
    # losses invariant to each singular pair's sign (which LAPACK and Jacobi may choose differently)
    rng = np.random.default_rng(len(shape))
    a = rng.standard_normal(shape)
    k = min(shape[-2:])
    wu, wv = rng.standard_normal(shape[:-1] + (k,)), rng.standard_normal(shape[:-2] + (k, shape[-1]))

    def loss(L, U, S, Vh):
        return (S ** 2).sum() + S.sum() + (U * U * L.tensor(wu)).sum() + (Vh * Vh * L.tensor(wv)).sum()

    check_vs_torch(lambda x: loss(flow, *flow.linalg.svd(x, full_matrices=False)),
                   lambda x: loss(torch, *torch.linalg.svd(x, full_matrices=False)), [a], rtol=1e-9, atol=1e-11)
    # with full_matrices the extra columns carry no gradient, as in torch
    check_vs_torch(lambda x: flow.linalg.svd(x)[1].sum() + flow.linalg.svd(x)[0].pow(2).sum(),
                   lambda x: torch.linalg.svd(x)[1].sum() + torch.linalg.svd(x)[0].pow(2).sum(), [a], rtol=1e-9,
                   atol=1e-11)


def test_svd_rank_deficient_float32_and_errors():
    a = np.random.default_rng(3).standard_normal((5, 3))
    a[:, 2] = a[:, 0] - a[:, 1]  # rank 2: one zero singular value, its U column completed orthonormally
    U, S, Vh = flow.linalg.svd(flow.tensor(a.astype(np.float32)))
    assert U.dtype == flow.float32 and S.dtype == flow.float32
    assert float(S[2]) < 1e-5
    u = U.numpy().astype(np.float64)
    np.testing.assert_allclose(u.T @ u, np.eye(5), atol=1e-6)
    np.testing.assert_allclose(flow.linalg.svdvals(flow.tensor(a)).numpy(), torch.linalg.svdvals(torch.tensor(a)),
                               atol=1e-12)
    for shape in [(0, 3), (3, 0)]:
        got = flow.linalg.svd(flow.zeros(*shape))
        want = torch.linalg.svd(torch.zeros(*shape))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        flow.linalg.svd(flow.randn(3))
    with pytest.raises(RuntimeError, match="floating point .* Got Long"):
        flow.linalg.svd(flow.arange(6).view(2, 3))


@pytest.mark.parametrize("kw", [{}, {"atol": 0.01}, {"rtol": 0.5}, {"atol": 0.3, "rtol": 0.1}, {"atol": 0.0}])
def test_pinv_and_matrix_rank_tolerances(kw):
    a = np.random.default_rng(8).standard_normal((3, 4, 3))
    a[0] *= 1e-3
    a[1, :, 2] = a[1, :, 0]
    check_vs_torch(lambda x: flow.linalg.pinv(x, **kw), lambda x: torch.linalg.pinv(x, **kw), [a], rtol=1e-9,
                   atol=1e-10)
    np.testing.assert_array_equal(flow.linalg.matrix_rank(flow.tensor(a), **kw).numpy(),
                                  torch.linalg.matrix_rank(torch.tensor(a), **kw).numpy())


def test_torch_svd_and_pinverse_forms():
    a = np.random.default_rng(9).standard_normal((4, 3))
    for kw in [{}, {"some": False}, {"compute_uv": False}]:
        got, want = flow.svd(flow.tensor(a), **kw), torch.svd(torch.tensor(a), **kw)
        assert [tuple(x.shape) for x in got] == [tuple(x.shape) for x in want]
        np.testing.assert_allclose(got.S.numpy(), want.S.numpy(), atol=1e-12)
        if kw.get("compute_uv", True):
            k = 3
            rec = got.U.numpy()[:, :k] @ np.diag(got.S.numpy()) @ got.V.numpy()[:, :k].T
            np.testing.assert_allclose(rec, a, atol=1e-12)
        else:
            assert float(got.U.abs().sum()) == 0 and float(got.V.abs().sum()) == 0
    np.testing.assert_allclose(flow.tensor(a).pinverse().numpy(), torch.tensor(a).pinverse().numpy(), atol=1e-12)
    np.testing.assert_allclose(flow.tensor(a).svd().S.numpy(), torch.tensor(a).svd().S.numpy(), atol=1e-12)


# ---- eigh / eigvalsh ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 5, 5), (3, 1, 2, 2)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_factors(shape, uplo):
    a = np.random.default_rng(shape[-1]).standard_normal(shape)  # not symmetric: only one triangle is read
    L, V = flow.linalg.eigh(flow.tensor(a), UPLO=uplo)
    tL, _ = torch.linalg.eigh(torch.tensor(a), UPLO=uplo)
    np.testing.assert_allclose(L.numpy(), tL.numpy(), rtol=1e-12, atol=1e-12)
    sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2) if uplo == "L" else \
        np.triu(a) + np.swapaxes(np.triu(a, 1), -1, -2)
    v = V.numpy()
    np.testing.assert_allclose(v @ (L.numpy()[..., None] * np.swapaxes(v, -1, -2)), sym, atol=1e-12)
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, np.eye(shape[-1]) + 0 * v[..., :1, :1], atol=1e-12)
    np.testing.assert_allclose(flow.linalg.eigvalsh(flow.tensor(a), uplo).numpy(), tL.numpy(), atol=1e-12)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
def test_eigh_gradients_match_torch(shape):
    rng = np.random.default_rng(11)
    a = rng.standard_normal(shape)
    w = rng.standard_normal(shape)

    def loss(L, lam, V):  # invariant to each eigenvector's sign
        return (lam ** 2).sum() + lam.sum() + (V * V * L.tensor(w)).sum()

    check_vs_torch(lambda x: loss(flow, *flow.linalg.eigh(x)), lambda x: loss(torch, *torch.linalg.eigh(x)), [a],
                   rtol=1e-9, atol=1e-11)


def test_eigh_float32_empty_and_errors():
    a = np.random.default_rng(12).standard_normal((3, 3)).astype(np.float32)
    L, V = flow.linalg.eigh(flow.tensor(a))
    assert L.dtype == flow.float32 and V.dtype == flow.float32
    np.testing.assert_allclose(L.numpy(), torch.linalg.eigh(torch.tensor(a)).eigenvalues.numpy(), atol=1e-5)
    L, V = flow.linalg.eigh(flow.zeros(0, 0))
    assert L.shape == (0,) and V.shape == (0, 0)
    with pytest.raises(RuntimeError, match="2 by 3 matrices"):
        flow.linalg.eigh(flow.randn(2, 3))
    with pytest.raises(RuntimeError, match="Expected UPLO argument to be 'L' or 'U', but got X"):
        flow.linalg.eigh(flow.randn(3, 3), UPLO="X")
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        flow.linalg.eigh(flow.arange(9).view(3, 3))
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        flow.linalg.eigvalsh(flow.randn(3))


# ---- lstsq -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sa,sb", [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((2, 5, 3), (2, 5, 2)), ((5, 3), (5,)),
                                   ((2, 5, 3), (2, 5))])
@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
def test_lstsq_outputs_as_torch_fills_them(sa, sb, driver):
    rng = np.random.default_rng(len(sa) + len(sb))
    a, b = rng.standard_normal(sa), rng.standard_normal(sb)
    got = flow.linalg.lstsq(flow.tensor(a), flow.tensor(b), driver=driver)
    want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    for name in ("solution", "residuals", "rank", "singular_values"):
        g, w = getattr(got, name), getattr(want, name)
        assert tuple(g.shape) == tuple(w.shape) and str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("sa,sb", [((6, 3), (6, 2)), ((3, 6), (3, 2))])
def test_lstsq_gradients_match_torch(sa, sb):
    rng = np.random.default_rng(13)
    check_vs_torch(lambda a, b: flow.linalg.lstsq(a, b).solution, lambda a, b: torch.linalg.lstsq(a, b).solution,
                   [rng.standard_normal(sa), rng.standard_normal(sb)], rtol=1e-9, atol=1e-10)


def test_lstsq_rank_deficient_and_errors():
    a = np.random.default_rng(14).standard_normal((6, 3))
    a[:, 2] = a[:, 0]
    b = np.random.default_rng(15).standard_normal((6, 2))
    got = flow.linalg.lstsq(flow.tensor(a), flow.tensor(b), driver="gelsd")
    want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver="gelsd")
    assert int(got.rank) == int(want.rank) == 2 and got.residuals.shape == (0,)
    np.testing.assert_allclose(got.solution.numpy(), want.solution.numpy(), atol=1e-10)
    assert int(flow.linalg.lstsq(flow.tensor(a), flow.tensor(b), rcond=0.9).rank) == \
        int(torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), rcond=0.9).rank)
    with pytest.raises(RuntimeError, match="input.size\\(-2\\) should match other.size\\(-2\\)"):
        flow.linalg.lstsq(flow.randn(5, 3), flow.randn(4, 2))
    with pytest.raises(RuntimeError, match="`driver` should be one of \\(gels, gelsy, gelsd, gelss\\)"):
        flow.linalg.lstsq(flow.randn(5, 3), flow.randn(5, 2), driver="xx")
    with pytest.raises(RuntimeError, match="types other than float and double"):
        flow.linalg.lstsq(flow.ones(3, 2, dtype=flow.int64), flow.ones(3, 1, dtype=flow.int64))


def test_spectral_extreme_magnitudes_and_special_inputs():
    # the Jacobi kernels scale each matrix by a power of two first: no overflow (1e154 and up) or underflow
    a = np.array([[2.0, 1.0], [1.0, 1.0]])
    for s in (1e300, 1e77, 1e-162, 1e-170):
        np.testing.assert_allclose(flow.linalg.svdvals(flow.tensor(a * s)).numpy() / s, [2.618034, 0.381966],
                                   rtol=1e-6)
        np.testing.assert_allclose(flow.linalg.eigvalsh(flow.tensor(a * s)).numpy() / s, [0.381966, 2.618034],
                                   rtol=1e-6)
    np.testing.assert_allclose(flow.linalg.pinv(flow.tensor(a * 1e100)).numpy() * 1e100, [[1, -1], [-1, 2]],
                               rtol=1e-12)
    np.testing.assert_allclose(flow.linalg.eigvalsh(flow.tensor(np.array([[0, 1e-200], [1e-200, 0]]))).numpy(),
                               [-1e-200, 1e-200], rtol=1e-12)
    # a tall-skinny full U is completed by reflectors (Gram-Schmidt on 1000 columns took seconds)
    U = flow.linalg.svd(flow.randn(1000, 2, dtype=flow.float64)).U.numpy()
    np.testing.assert_allclose(U.T @ U, np.eye(1000), atol=1e-12)
    with pytest.raises(flow.linalg.LinAlgError, match="failed to converge because the input matrix contained "
                       "non-finite values"):
        flow.linalg.svd(flow.tensor([[float("nan"), 1.0], [1.0, 1.0]]))
    with pytest.raises(NotImplementedError, match="linalg_svd_cpu\" not implemented for 'Half'"):
        flow.linalg.svd(flow.ones(2, 2, dtype=flow.float16))
    with pytest.raises(RuntimeError, match="`driver=` is only supported on CUDA"):
        flow.linalg.svd(flow.ones(2, 2), driver="gesvd")
    np.testing.assert_allclose(flow.linalg.eigh(flow.tensor(a), UPLO="u").eigenvalues.numpy(),
                               torch.linalg.eigh(torch.tensor(a), UPLO="u").eigenvalues.numpy(), rtol=1e-12)


def test_pinv_second_derivatives_hermitian_and_svd_values_grad():
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    res = []
    for L in (flow, torch):
        x = L.tensor(a, requires_grad=True)
        (g,) = L.autograd.grad(L.linalg.pinv(x).sum(), x, create_graph=True)
        (h,) = L.autograd.grad(g.sum(), x)
        s = L.svd(x, compute_uv=False).S
        (gs,) = L.autograd.grad(s.sum(), x)
        upper = L.tensor([[1.0, 2.0], [0.0, 1.0]])
        nilpotent = L.tensor([[0.0, 1.0], [0.0, 0.0]])
        res.append([h, gs, L.linalg.pinv(upper, hermitian=True), L.linalg.matrix_rank(nilpotent, hermitian=True)])
    for got, want in zip(*res):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_matrix_norm_empty_spectral_and_dtype_checks():
    for shape in [(0, 3), (3, 0), (2, 0, 0)]:
        for ord in (2, "nuc"):
            np.testing.assert_array_equal(flow.linalg.matrix_norm(flow.zeros(*shape), ord).numpy(),
                                          torch.linalg.matrix_norm(torch.zeros(*shape), ord).numpy())
        with pytest.raises(IndexError, match="amin\\(\\): Expected reduction dim .* to have non-zero size"):
            flow.linalg.matrix_norm(flow.zeros(*shape), -2)
    with pytest.raises(RuntimeError, match="without narrowing"):
        flow.linalg.matrix_norm(flow.randn(3, 3, dtype=flow.float64), dtype=flow.float32)
    with pytest.raises(RuntimeError, match="without narrowing"):
        flow.linalg.norm(flow.randn(3, 3, dtype=flow.float64), dtype=flow.float32)


@pytest.mark.parametrize("call,msg", [
    (lambda L: L.linalg.pinv(L.ones(3)), r"linalg.pinv\(Float\{\[3\]\}\): expected a tensor with 2 or more"),
    (lambda L: L.linalg.pinv(L.ones(2, 2, dtype=L.int64)), r"linalg.pinv\(Long\{\[2, 2\]\}\)"),
    (lambda L: L.linalg.matrix_rank(L.ones(3)), "must have at least 2 dimensions"),
    (lambda L: L.linalg.matrix_rank(L.ones(2, 2, dtype=L.int64)), "types other than float and double"),
    (lambda L: L.linalg.matrix_norm(L.ones(2, 3, 4), dim=(1, -2)), r"dims must be different. Got \(1, 1\)"),
])
def test_pinv_rank_norm_input_errors_like_torch(call, msg):
    for L in (torch, flow):
        with pytest.raises(RuntimeError, match=msg):
            call(L)


def test_out_arguments_are_written():
    # out= for the spectral functions and norms: the result lands in the given tensors (resized when empty)
    a = np.random.default_rng(16).standard_normal((4, 3))
    fa, sym = flow.tensor(a), flow.tensor(a[:3] + a[:3].T)
    outs = [flow.empty(0, dtype=flow.float64) for _ in range(3)]
    res = flow.linalg.svd(fa, full_matrices=False, out=tuple(outs))
    assert all(r is o for r, o in zip(res, outs))
    np.testing.assert_allclose(outs[1].numpy(), torch.linalg.svdvals(torch.tensor(a)).numpy(), atol=1e-12)
    eo = (flow.empty(0, dtype=flow.float64), flow.empty(0, dtype=flow.float64))
    assert flow.linalg.eigh(sym, out=eo)[0] is eo[0]
    np.testing.assert_allclose(eo[0].numpy(), torch.linalg.eigvalsh(torch.tensor(a[:3] + a[:3].T)), atol=1e-12)
    cases = [(flow.linalg.svdvals, torch.linalg.svdvals, {}), (flow.linalg.pinv, torch.linalg.pinv, {}),
             (flow.linalg.matrix_rank, torch.linalg.matrix_rank, {}),
             (flow.linalg.matrix_norm, torch.linalg.matrix_norm, {"ord": "nuc"}),
             (flow.linalg.norm, torch.linalg.norm, {"ord": 1})]
    for f, t, kw in cases:
        want = t(torch.tensor(a), **kw)
        o = flow.empty(0, dtype=flow.int64 if want.dtype == torch.int64 else flow.float64)
        assert f(fa, **kw, out=o) is o
        np.testing.assert_allclose(o.numpy(), want.numpy(), atol=1e-12)
    o = flow.empty(0, dtype=flow.float64)
    assert flow.linalg.eigvalsh(sym, out=o) is o
    U, S, V = (flow.empty(0, dtype=flow.float64) for _ in range(3))
    flow.svd(fa, out=(U, S, V))
    np.testing.assert_allclose((U.numpy() * S.numpy()) @ V.numpy().T, a, atol=1e-12)
