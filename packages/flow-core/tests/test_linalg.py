"""Matrix products and einsum against PyTorch: forward, gradients, float64 gradchecks, broadcasting,
non-contiguous and zero-size operands, errors."""
import numpy as np
import pytest

import oneflow as flow
from helpers import assert_close, check_vs_torch, gradcheck, torch

rng = np.random.default_rng(0)


def r(*s, dtype=np.float32):
    return rng.standard_normal(s).astype(dtype)


MATMUL_SHAPES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3,)), ((5, 2, 3), (3, 4)),
    ((3,), (5, 3, 4)), ((2, 3), (5, 3, 4)), ((5, 2, 3), (5, 3, 4)), ((1, 2, 3), (5, 3, 4)), ((6, 1, 2, 3), (5, 3, 4)),
    ((2, 1, 2, 3), (1, 4, 3, 2)), ((0, 2, 3), (3, 4)), ((2, 0), (0, 3)), ((2, 3), (3, 0)), ((4, 2, 3), (4, 3, 1)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul_broadcasting_cases(sa, sb):
    check_vs_torch(lambda a, b: flow.matmul(a, b), lambda a, b: torch.matmul(a, b), [r(*sa), r(*sb)],
                   rtol=1e-4, atol=1e-5)


def test_matmul_operator_and_methods():
    a, b = r(2, 3), r(3, 4)
    check_vs_torch(lambda x, y: x @ y, lambda x, y: x @ y, [a, b], rtol=1e-4, atol=1e-5)
    check_vs_torch(lambda x, y: x.matmul(y) + x.mm(y), lambda x, y: x.matmul(y) + x.mm(y), [a, b], rtol=1e-4,
                   atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mm_transposed_and_sliced_inputs(dtype):
    a, b = r(5, 4, dtype=dtype), r(6, 5, dtype=dtype)
    check_vs_torch(lambda x, y: flow.mm(x.t(), y.t()), lambda x, y: torch.mm(x.t(), y.t()), [a, b], rtol=1e-4,
                   atol=1e-5)
    c = r(8, 10, dtype=dtype)
    # strided slices (built with slice ops: indexing belongs to another family)
    check_vs_torch(lambda x: flow.mm(flow.slice(flow.slice(x, 0, 0, 8, 2), 1, 1, 7), flow.slice(flow.slice(x, 0, 1, 7), 1, 0, 10, 3)),
                   lambda x: torch.mm(x[::2, 1:7], x[1:7, ::3]), [c], rtol=1e-4, atol=1e-5)


def test_mm_large_float64_and_float32_blocked_paths():
    a, b = r(130, 300, dtype=np.float64), r(300, 270, dtype=np.float64)
    assert_close(flow.mm(flow.tensor(a), flow.tensor(b)), a @ b, rtol=1e-10, atol=1e-9)
    assert_close(flow.mm(flow.tensor(a).t().contiguous().t(), flow.tensor(b)), a @ b, rtol=1e-10, atol=1e-9)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    assert_close(flow.mm(flow.tensor(a32), flow.tensor(b32)), a32 @ b32, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dt", ["int32", "int64", "float16", "bfloat16"])
def test_mm_other_dtypes(dt):
    a = np.arange(12).reshape(3, 4) % 5 - 2
    b = np.arange(20).reshape(4, 5) % 3 - 1
    fa, fb = flow.tensor(a, dtype=getattr(flow, dt)), flow.tensor(b, dtype=getattr(flow, dt))
    ta, tb = torch.tensor(a, dtype=getattr(torch, dt)), torch.tensor(b, dtype=getattr(torch, dt))
    assert_close(flow.mm(fa, fb), torch.mm(ta, tb))
    assert_close(flow.bmm(fa.unsqueeze(0), fb.unsqueeze(0)), torch.bmm(ta[None], tb[None]))


def test_bmm_and_baddbmm_addmm_addmv():
    check_vs_torch(lambda a, b: flow.bmm(a, b.transpose(1, 2)), lambda a, b: torch.bmm(a, b.transpose(1, 2)),
                   [r(3, 2, 4), r(3, 5, 4)], rtol=1e-4, atol=1e-5)
    check_vs_torch(lambda i, a, b: flow.addmm(i, a, b, beta=0.5, alpha=2.0),
                   lambda i, a, b: torch.addmm(i, a, b, beta=0.5, alpha=2.0), [r(4), r(2, 3), r(3, 4)],
                   rtol=1e-4, atol=1e-5)
    check_vs_torch(lambda i, a, b: flow.baddbmm(i, a, b, alpha=-1.5), lambda i, a, b: torch.baddbmm(i, a, b, alpha=-1.5),
                   [r(2, 1, 4), r(2, 3, 5), r(2, 5, 4)], rtol=1e-4, atol=1e-5)
    check_vs_torch(lambda i, a, b: flow.addmv(i, a, b, beta=2), lambda i, a, b: torch.addmv(i, a, b, beta=2),
                   [r(3), r(3, 4), r(4)], rtol=1e-4, atol=1e-5)


def test_addmm_beta_zero_ignores_nan():
    i = flow.tensor([[float("nan")] * 2] * 2)
    out = flow.addmm(i, flow.ones(2, 3), flow.ones(3, 2), beta=0)
    assert_close(out, np.full((2, 2), 3.0, np.float32))


@pytest.mark.parametrize("bias_shape,alpha", [((300,), 1.0), ((1, 300), -2.0), ("strided", 1.0)])
def test_addmm_bias_row_added_after_the_product(bias_shape, alpha):
    # float32 addmm with a bias row and beta = 1 (linear's forward) writes the product, then adds the row
    a, b = r(70, 50), r(50, 300)
    bias = r(300) if bias_shape == "strided" else r(*bias_shape)
    bias[..., 7] = np.inf
    bias[..., 9] = np.nan
    fb = flow.tensor(np.repeat(bias, 2))[::2] if bias_shape == "strided" else flow.tensor(bias)
    want = bias.astype(np.float64) + alpha * (a.astype(np.float64) @ b)
    assert_close(flow.addmm(fb, flow.tensor(a), flow.tensor(b), alpha=alpha), want, rtol=1e-5, atol=1e-5)
    out = flow.empty(70, 300)
    flow.addmm(fb, flow.tensor(a), flow.tensor(b), alpha=alpha, out=out)
    assert_close(out, want, rtol=1e-5, atol=1e-5)


def test_addmm_inplace():
    x = flow.zeros(2, 2)
    x.addmm_(flow.ones(2, 3), flow.ones(3, 2))
    assert_close(x, np.full((2, 2), 3.0, np.float32))


def test_dot_vdot_mv_outer_inner():
    check_vs_torch(lambda a, b: flow.dot(a, b), lambda a, b: torch.dot(a, b), [r(5), r(5)], rtol=1e-5, atol=1e-5)
    check_vs_torch(lambda a, b: flow.vdot(a, b), lambda a, b: torch.vdot(a, b), [r(5), r(5)], rtol=1e-5, atol=1e-5)
    check_vs_torch(lambda a, b: flow.mv(a, b), lambda a, b: torch.mv(a, b), [r(3, 5), r(5)], rtol=1e-5, atol=1e-5)
    check_vs_torch(lambda a, b: flow.outer(a, b), lambda a, b: torch.outer(a, b), [r(3), r(4)])
    check_vs_torch(lambda a, b: flow.inner(a, b), lambda a, b: torch.inner(a, b), [r(2, 3), r(4, 3)], rtol=1e-5,
                   atol=1e-5)
    assert flow.dot(flow.tensor([1, 2, 3]), flow.tensor([4, 5, 6])).item() == 32
    assert flow.dot(flow.zeros(0), flow.zeros(0)).item() == 0


def test_float64_gradchecks():
    a = flow.tensor(r(3, 4, dtype=np.float64), requires_grad=True)
    b = flow.tensor(r(4, 2, dtype=np.float64), requires_grad=True)
    gradcheck(lambda x, y: flow.mm(x, y), [a, b])
    gradcheck(lambda x, y: flow.matmul(x.t(), x) @ y, [a, b])
    c = flow.tensor(r(2, 3, 4, dtype=np.float64), requires_grad=True)
    gradcheck(lambda x, y: flow.matmul(x, y), [c, b])
    v = flow.tensor(r(4, dtype=np.float64), requires_grad=True)
    gradcheck(lambda x, y: flow.mv(x, y) * 2, [a, v])
    gradcheck(lambda x, y: flow.addmm(flow.slice(x, 1, 0, 2).sum(1, keepdim=True), x, y, beta=0.3, alpha=1.7), [a, b])
    gradcheck(lambda x, y: flow.einsum("bij,jk->bk", x, y), [c, b])
    # strided, broadcast batches (the _batch_matmul path) and their double backward
    d = flow.tensor(r(5, 3, 4, dtype=np.float64), requires_grad=True)
    gradcheck(lambda x, y: flow.matmul(x.transpose(0, 1), y.permute(1, 2, 0)), [c, d])
    e = flow.tensor(r(1, 3, 4, 2, dtype=np.float64), requires_grad=True)
    gradcheck(lambda x, y: flow.matmul(x.permute(1, 0, 2), y).square(), [c, e])
    x0 = flow.tensor(r(2, 3, 4, dtype=np.float64), requires_grad=True)
    (g,) = flow.autograd.grad(flow.matmul(x0, x0.transpose(1, 2)).square().sum(), [x0], create_graph=True)
    (gg,) = flow.autograd.grad(g.square().sum(), [x0])
    tx = torch.tensor(x0.detach().numpy(), requires_grad=True)
    (tg,) = torch.autograd.grad(torch.matmul(tx, tx.transpose(1, 2)).square().sum(), [tx], create_graph=True)
    (tgg,) = torch.autograd.grad(tg.square().sum(), [tx])
    assert_close(gg, tgg.numpy(), rtol=1e-9, atol=1e-9)


def test_double_backward_mm():
    a = flow.tensor(r(3, 3, dtype=np.float64), requires_grad=True)
    ta = torch.tensor(a.detach().numpy(), requires_grad=True)
    (g,) = flow.autograd.grad((a @ a).sum(), [a], create_graph=True)
    (tg,) = torch.autograd.grad((ta @ ta).sum(), [ta], create_graph=True)
    assert_close(g, tg, rtol=1e-10)
    (gg,) = flow.autograd.grad((g * g).sum(), [a])
    (tgg,) = torch.autograd.grad((tg * tg).sum(), [ta])
    assert_close(gg, tgg, rtol=1e-10)


EINSUM = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("bij,bjk", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]), ("i,j->ij", [(3,), (4,)]), ("i,i->", [(3,), (3,)]),
    ("ijk->kji", [(2, 3, 4)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("iij->j", [(3, 3, 2)]), ("Ab,ba", [(2, 3), (3, 2)]), ("i,i", [(0,), (0,)]), ("ij,kj->ik", [(2, 0), (3, 0)]),
    ("...", [(2, 3)]), ("i...->...", [(3, 2, 2)]), ("ij->", [(2, 3)]), ("b i j, b j k -> b i k", [(2, 3, 4), (2, 4, 5)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM)
def test_einsum_vs_torch(eq, shapes):
    check_vs_torch(lambda *xs: flow.einsum(eq, *xs), lambda *xs: torch.einsum(eq, *xs), [r(*s) for s in shapes],
                   rtol=1e-4, atol=1e-5)


def test_einsum_list_operands():
    a, b = r(2, 3), r(3, 4)
    assert_close(flow.einsum("ij,jk", [flow.tensor(a), flow.tensor(b)]), a @ b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn,msg", [
    (lambda: flow.mm(flow.ones(2, 3), flow.ones(4, 5)), r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    (lambda: flow.matmul(flow.ones(2, 3), flow.ones(4, 5)), r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"),
    (lambda: flow.matmul(flow.ones(3), flow.ones(4, 5)), r"\(1x3 and 4x5\)"),
    (lambda: flow.mm(flow.ones(2, 3, 1), flow.ones(4, 5)), "self must be a matrix"),
    (lambda: flow.mm(flow.ones(2, 3), flow.ones(3, 5, dtype=flow.float64)), "same dtype"),
    (lambda: flow.bmm(flow.ones(2, 2, 3), flow.ones(2, 4, 5)), "batch2 tensor"),
    (lambda: flow.bmm(flow.ones(2, 3), flow.ones(3, 3, 5)), "batch1 must be a 3D tensor"),
    (lambda: flow.matmul(flow.ones(()), flow.ones(4, 5)), "at least 1D"),
    (lambda: flow.matmul(flow.ones(2, 2, 3), flow.ones(3, 3, 5)), "must match the size"),
    (lambda: flow.mv(flow.ones(2, 3), flow.ones(4)), "size mismatch"),
    (lambda: flow.dot(flow.ones(3), flow.ones(4)), "inconsistent tensor size"),
    (lambda: flow.dot(flow.ones(3, 1), flow.ones(3)), "1D tensors expected"),
    (lambda: flow.outer(flow.ones(3, 1), flow.ones(3)), "Expected 1-D argument self"),
    (lambda: flow.einsum("ij,jk->ik", flow.ones(2, 3), flow.ones(4, 5)), "subscript j has size 4"),
    (lambda: flow.einsum("ij,jk", flow.ones(2, 3)), "fewer operands"),
    (lambda: flow.einsum("ij->k", flow.ones(2, 3)), "does not appear"),
    (lambda: flow.einsum("ijk", flow.ones(2, 3)), "number of subscripts"),
])
def test_errors(fn, msg):
    with pytest.raises(RuntimeError, match=msg):
        fn()


def test_bool_mm_not_implemented():
    with pytest.raises(NotImplementedError):
        flow.mm(flow.ones(2, 2, dtype=flow.bool), flow.ones(2, 2, dtype=flow.bool))


def test_mm_transposed_left_operand_with_power_of_two_leading_dim():
    # A^T with a leading dimension of 1024 floats takes sgemm's padded-copy path (see gemm.cpp).
    a, b, c = r(1024, 1024), r(1024, 256), r(1024, 256)
    want = a.T.astype(np.float64) @ b.astype(np.float64)
    fa, fb = flow.tensor(a), flow.tensor(b)
    assert_close(flow.mm(fa.t(), fb), want, rtol=1e-3, atol=1e-3)
    assert_close(flow.addmm(flow.tensor(c), fa.t(), fb, beta=0.5, alpha=2.0), 0.5 * c + 2.0 * want, rtol=1e-3,
                 atol=2e-3)
    # a transposed right operand with such a leading dimension (linear's forward from 1024 features)
    w = r(256, 1024)
    assert_close(flow.mm(fa, flow.tensor(w).t()), a.astype(np.float64) @ w.T, rtol=1e-3, atol=1e-3)
    # both operands transposed, and a batch of such products
    assert_close(flow.mm(fa.t(), flow.tensor(b.T.copy()).t()), want, rtol=1e-3, atol=1e-3)
    a3 = r(2, 1024, 512)
    b3 = r(2, 1024, 256)
    got = flow.bmm(flow.tensor(a3).transpose(1, 2), flow.tensor(b3))
    assert_close(got, np.einsum("bkm,bkn->bmn", a3.astype(np.float64), b3), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("m,n,k", [(64, 64, 64), (97, 131, 250), (301, 17, 513), (5, 600, 300), (768, 256, 1024)])
def test_mm_transposed_left_operand_packed_kernel(m, n, k):
    # float32 A^T @ B of at least 2^18 multiply-adds runs the own packed kernel (sgemm_packed.cpp): partial
    # 6x16 register tiles, K split into several blocks, alpha/beta, and a NaN-filled C with beta = 0.
    at, b, c = r(k, m), r(k, n), r(m, n)
    want = at.T.astype(np.float64) @ b.astype(np.float64)
    fa, fb = flow.tensor(at).t(), flow.tensor(b)
    assert_close(flow.mm(fa, fb), want, rtol=1e-3, atol=1e-3)
    assert_close(flow.addmm(flow.tensor(c), fa, fb, beta=0.5, alpha=-2.0), 0.5 * c - 2.0 * want, rtol=1e-3,
                 atol=2e-3)
    nan = flow.full((m, n), float("nan"))
    assert_close(flow.addmm(nan, fa, fb, beta=0.0), want, rtol=1e-3, atol=1e-3)
    # a strided A^T (every other row of a wider matrix) and an output written into a column slice
    wide = r(k, 2 * m)
    out = flow.zeros(m, n + 3)
    out[:, 1:n + 1].addmm_(flow.tensor(wide)[:, ::2].contiguous().t(), fb, beta=0.0)
    assert_close(out[:, 1:n + 1], wide[:, ::2].T.astype(np.float64) @ b, rtol=1e-3, atol=1e-3)
    assert_close(out[:, 0], np.zeros(m, np.float32))


@pytest.mark.parametrize("m,n,k", [(512, 256, 128), (1031, 70, 300), (600, 1030, 513), (2048, 17, 1000),
                                   (1030, 256, 1024)])
@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, True)])
def test_mm_tall_products_every_layout(m, n, k, ta, tb):
    # a transformer's tall products (1024+ tokens) in the layouts not covered above ((True, False) is the
    # packed TN kernel's): with a row-major A and N <= 256 they run the own row kernel (sgemm_packed.cpp),
    # else oneDNN. Off-tile sizes (a last partial 6-row panel), several K blocks, accumulation into C,
    # alpha/beta, NaN with beta = 0.
    a = r(k, m) if ta else r(m, k)
    b = r(n, k) if tb else r(k, n)
    fa = flow.tensor(a).t() if ta else flow.tensor(a)
    fb = flow.tensor(b).t() if tb else flow.tensor(b)
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    assert_close(flow.mm(fa, fb), want, rtol=1e-3, atol=1e-3)
    c = r(m, n)
    assert_close(flow.addmm(flow.tensor(c), fa, fb), c + want, rtol=1e-3, atol=2e-3)
    assert_close(flow.addmm(flow.tensor(c), fa, fb, beta=0.5, alpha=-2.0), 0.5 * c - 2.0 * want, rtol=1e-3,
                 atol=2e-3)
    nan = flow.full((m, n), float("nan"))
    assert_close(flow.addmm(nan, fa, fb, beta=0.0), want, rtol=1e-3, atol=1e-3)
    # row-strided operands (every other column of a wider matrix kept as a view) and a column-slice output
    wide = r(*a.shape[:-1], 2 * a.shape[-1])
    sa = flow.tensor(wide)[:, : a.shape[-1]]
    sa = sa.t() if ta else sa
    out = flow.zeros(m, n + 3)
    out[:, 1:n + 1].addmm_(sa, fb, beta=0.0)
    wa = wide[:, : a.shape[-1]]
    assert_close(out[:, 1:n + 1], (wa.T if ta else wa).astype(np.float64) @ (b.T if tb else b), rtol=1e-3,
                 atol=1e-3)
    assert_close(out[:, 0], np.zeros(m, np.float32))
    assert_close(out[:, n + 1:], np.zeros((m, 2), np.float32))


def test_mm_packed_kernel_threads_and_batches():
    # the batch split runs each product inside a parallel region (the kernel then stays serial); one thread
    # runs everything serial; results must not depend on either. Both own kernels: A^T @ B, and a tall
    # row-major A @ B (row kernel), here with a batch of 3 on 2 threads (one product per thread in turn).
    a3, b3 = r(4, 300, 97), r(4, 300, 130)
    want = np.einsum("bkm,bkn->bmn", a3.astype(np.float64), b3)
    r3, w3 = r(3, 700, 200), r(3, 200, 100)
    want_rows = np.matmul(r3.astype(np.float64), w3)
    got = flow.bmm(flow.tensor(a3).transpose(1, 2), flow.tensor(b3))
    assert_close(got, want, rtol=1e-3, atol=1e-3)
    assert_close(flow.bmm(flow.tensor(r3), flow.tensor(w3)), want_rows, rtol=1e-3, atol=1e-3)
    nt = flow.get_num_threads()
    try:
        flow.set_num_threads(1)
        assert_close(flow.bmm(flow.tensor(a3).transpose(1, 2), flow.tensor(b3)), want, rtol=1e-3, atol=1e-3)
        assert_close(flow.bmm(flow.tensor(r3), flow.tensor(w3)), want_rows, rtol=1e-3, atol=1e-3)
    finally:
        flow.set_num_threads(nt)


def _structured(rng, shape, kind):
    x = rng.standard_normal(shape).astype(np.float32)
    if kind == "tril":
        x = np.tril(x)
    elif kind == "triu":
        x = np.triu(x)
    elif kind == "band":  # zero runs at both ends of every row and column
        x = np.tril(np.triu(x, -3), 5)
    elif kind == "zero":
        x[:] = 0
    return x


def _operand(x, trans):
    # x as a tensor, stored transposed when trans (a transposed view of its transpose, as autograd hands
    # attention's products their operands)
    return flow.tensor(np.ascontiguousarray(np.swapaxes(x, -1, -2))).transpose(-2, -1) if trans else flow.tensor(x)


@pytest.mark.parametrize("m,n,k", [(128, 64, 128), (64, 128, 128), (13, 33, 17), (5, 20, 9), (6, 16, 1),
                                   (37, 100, 200), (2, 3, 500)])
@pytest.mark.parametrize("ta,tb", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("kinds", [("tril", "dense"), ("dense", "tril"), ("triu", "band"), ("band", "zero"),
                                   ("dense", "dense")])
def test_bmm_small_products_skip_zero_runs(m, n, k, ta, tb, kinds):
    # Batches of small products run one per thread; those with a transposed A or a zero corner go to the own
    # kernel (sgemm_small.cpp), which skips the k-runs where a panel of A or a tile of B is all zero (causal
    # attention's triangular operands). Partial 6-row panels (read overlapped or packed) and 16-column tiles,
    # every layout, alpha/beta, and a NaN-filled C with beta = 0.
    rng = np.random.default_rng(m * 1000 + n + k)
    a, b = _structured(rng, (4, m, k), kinds[0]), _structured(rng, (4, k, n), kinds[1])
    fa, fb = _operand(a, ta), _operand(b, tb)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert_close(flow.matmul(fa, fb), want, rtol=1e-4, atol=1e-4)
    c = rng.standard_normal((4, m, n)).astype(np.float32)
    assert_close(flow.baddbmm(flow.tensor(c), fa, fb, beta=0.5, alpha=-2.0), 0.5 * c - 2.0 * want, rtol=1e-4,
                 atol=2e-4)
    assert_close(flow.baddbmm(flow.tensor(c), fa, fb), c + want, rtol=1e-4, atol=2e-4)
    nan = flow.full((4, m, n), float("nan"))
    assert_close(flow.baddbmm(nan, fa, fb, beta=0.0), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("ta,tb", [(False, False), (True, False), (False, True)])
def test_bmm_small_products_zero_times_inf_is_nan(ta, tb):
    # Skipping a zero run of one operand is exact only where the other is finite: 0 * inf and 0 * NaN are NaN.
    rng = np.random.default_rng(7)
    a = np.tril(rng.standard_normal((4, 64, 64)).astype(np.float32))  # zero runs in every row but the last
    b = rng.standard_normal((4, 64, 32)).astype(np.float32)
    b[1, 63, 5] = np.inf  # meets only A's zeros above the diagonal, except in A's last row
    b[2, 40, 7] = np.nan
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    assert np.isnan(want[1, :63, 5]).all() and np.isnan(want[2, :, 7]).all()
    assert_close(flow.matmul(_operand(a, ta), _operand(b, tb)), want, rtol=1e-4, atol=1e-4)
    # and the other way round: a triangular B against an A with inf in B's zero run
    bt = np.tril(rng.standard_normal((4, 64, 64)).astype(np.float32))
    at = rng.standard_normal((4, 32, 64)).astype(np.float32)
    at[3, 4, 0] = -np.inf
    want = np.matmul(at.astype(np.float64), bt.astype(np.float64))
    assert_close(flow.matmul(_operand(at, ta), _operand(bt, tb)), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("case", ["small_transposed", "small_tril", "packed_tn", "packed_rows"])
def test_gemm_alpha_zero_does_not_read_the_operands(case):
    # BLAS semantics: alpha = 0 gives beta * C without reading A and B, so an inf there (0 * inf) is no NaN
    if case == "packed_rows":
        a = np.ones((512, 128), np.float32)
        a[7, 9] = np.inf
        c = r(512, 64)
        out = flow.addmm(flow.tensor(c), flow.tensor(a), flow.ones(64, 128).t(), alpha=0.0, beta=0.5)
    elif case == "packed_tn":
        b = np.ones((64, 256), np.float32)
        b[5, 5] = np.inf
        c = r(128, 256)
        out = flow.addmm(flow.tensor(c), flow.ones(64, 128).t(), flow.tensor(b), alpha=0.0, beta=0.5)
    else:
        a = np.tril(np.ones((4, 8, 8), np.float32))
        fa = flow.tensor(a).transpose(1, 2) if case == "small_transposed" else flow.tensor(a)
        b = np.ones((4, 8, 20), np.float32)
        b[:, 7, 3] = np.inf
        c = r(4, 8, 20)
        out = flow.baddbmm(flow.tensor(c), fa, flow.tensor(b), alpha=0.0, beta=0.5)
    assert_close(out, 0.5 * c)


def test_bmm_causal_attention_products_match_torch():
    # the six products of causal attention, forward and backward, against torch
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 4, 128, 64)).astype(np.float32) for _ in range(3))
    mask = np.triu(np.full((128, 128), -np.inf, np.float32), 1)
    outs = []
    for L in (flow, torch):
        tq, tk, tv = (L.tensor(x, requires_grad=True) for x in (q, k, v))
        att = L.softmax(L.matmul(tq, tk.transpose(-2, -1)) * 0.125 + L.tensor(mask), dim=-1)
        y = L.matmul(att, tv)
        y.backward(L.tensor(np.cos(np.arange(y.numel(), dtype=np.float32)).reshape(y.shape)))
        outs.append([t.detach().numpy() for t in (y, tq.grad, tk.grad, tv.grad)])
    for got, want in zip(*outs):
        assert_close(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("x_shape,o", [((8, 128, 256), 768), ((1024, 97), 300), ((700, 1000), 5), ((3, 4), 2)])
def test_linear_weight_and_bias_grads_from_one_pass(x_shape, o):
    # addmm's backward for linear computes the bias gradient (g's column sums) in the weight gradient's packing
    # pass (_mm_t_colsum) when the product is large enough for the packed kernel; both must equal torch's
    rng = np.random.default_rng(x_shape[-1] + o)
    x, w, b = r(*x_shape), r(o, x_shape[-1]), r(o)
    g = rng.standard_normal(x_shape[:-1] + (o,)).astype(np.float32)
    res = []
    for L in (flow, torch):
        X, W, B = (L.tensor(a, requires_grad=True) for a in (x, w, b))
        L.nn.functional.linear(X, W, B).backward(L.tensor(g))
        res.append((X.grad, W.grad, B.grad))
    for got, want in zip(*res):
        assert_close(got, want.numpy(), rtol=1e-4, atol=1e-4)


def test_addmm_bias_row_grads_with_scaling_and_double_backward():
    # a (1, N) bias with beta/alpha, then second derivatives through the fused op's own backward
    rng = np.random.default_rng(5)
    x, wt, b = r(512, 64), r(64, 256), r(1, 256)
    gy_np = rng.standard_normal((512, 256)).astype(np.float32)
    res = []
    for L in (flow, torch):
        X, Wt, B = (L.tensor(a, requires_grad=True) for a in (x, np.ascontiguousarray(wt.T), b))
        y = L.addmm(B, X, Wt.t(), beta=0.5, alpha=-2.0)
        gy = L.tensor(gy_np, requires_grad=True)
        gx, gw, gb = L.autograd.grad(y, (X, Wt, B), gy, create_graph=True)
        ((gw * gw).sum() + (gb * L.arange(256.0)).sum() + gx.pow(2).sum()).backward()
        res.append([t.detach() for t in (gx, gw, gb, X.grad, Wt.grad, gy.grad)])
    for got, want in zip(*res):
        want = want.numpy()
        assert_close(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())


def test_mm_t_colsum_long_sums_stay_accurate():
    # the fused bias gradient sums in float over one K block and in double across blocks: as accurate as a
    # reduction over a quarter of a million rows of offset data
    g = (np.random.default_rng(2).standard_normal((262144, 16)) + 3).astype(np.float32)
    _, s = flow._C.ops._mm_t_colsum(flow.tensor(g), flow.tensor(r(262144, 17)))
    want = g.astype(np.float64).sum(0)
    assert np.abs(s.numpy() - want).max() <= 2e-7 * np.abs(want).max()


def test_mm_t_colsum_op_fallback_layouts():
    # the registry op itself on operands the packed kernel does not take: float64, a strided grad, no rows
    ops = flow._C.ops
    wide = r(600, 640)
    cases = [(flow.tensor(r(50, 7, dtype=np.float64)), r(50, 3, dtype=np.float64)),
             (flow.tensor(wide)[:, ::2], r(600, 300)), (flow.tensor(r(0, 4)), r(0, 5))]
    for g, x in cases:
        w, s = ops._mm_t_colsum(g, flow.tensor(x))
        gn = g.numpy().astype(np.float64)
        assert_close(w, (gn.T @ x).astype(x.dtype), rtol=1e-4, atol=1e-4)
        assert_close(s, gn.sum(0).astype(x.dtype), rtol=1e-4, atol=1e-4)
    with pytest.raises(RuntimeError, match="_mm_t_colsum"):
        ops._mm_t_colsum(flow.ones(3, 4), flow.ones(2, 4))


@pytest.mark.parametrize("shape", [(4, 3, 6), (2, 2, 3, 6), (0, 3, 6), (6,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_leading_dims_fold_into_one_gemm(shape, bias):
    w, bvec = r(5, 6), r(5)
    x = r(*shape)

    def f(lib):
        def fn(x, w, *b):
            return lib.nn.functional.linear(x, w, b[0] if b else None)
        return fn

    check_vs_torch(f(flow), f(torch), [x, w] + ([bvec] if bias else []), rtol=1e-4, atol=1e-5)
    # a non-contiguous input (a transposed view) gives the same result
    if len(shape) == 3 and shape[0]:
        xt = r(shape[1], shape[0], 6)
        check_vs_torch(lambda x, w: flow.nn.functional.linear(x.transpose(0, 1), w),
                       lambda x, w: torch.nn.functional.linear(x.transpose(0, 1), w), [xt, w], rtol=1e-4, atol=1e-5)


def test_linear_shape_mismatch_error():
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(6x4 and 3x5\)"):
        flow.nn.functional.linear(flow.randn(2, 3, 4), flow.randn(5, 3))


def test_mm_gradient_keeps_the_operand_layout():
    # linear multiplies by weight.t(): the weight's gradient must come back contiguous (no copy in AccumulateGrad)
    x, w = r(7, 4), r(3, 4)
    fw = flow.tensor(w, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    for _ in range(2):  # accumulation into an existing .grad as well
        flow.mm(flow.tensor(x), fw.t()).square().sum().backward()
        torch.mm(torch.tensor(x), tw.t()).square().sum().backward()
    assert fw.grad.is_contiguous()
    assert_close(fw.grad, tw.grad.numpy(), rtol=1e-4, atol=1e-4)
    # a column-major left operand: its gradient is column-major as well, values equal
    a, b, m = r(4, 7), r(4, 3), r(7, 3)
    fa = flow.tensor(a, requires_grad=True)
    g = flow.autograd.grad(flow.mm(fa.t(), flow.tensor(b)).sum(), fa)[0]
    assert g.is_contiguous()  # computed column-major for fa.t(), so contiguous for fa
    fat = fa.t()
    fat.retain_grad()
    (flow.mm(fat, flow.tensor(b)) * flow.tensor(m)).sum().backward()
    ta = torch.tensor(a, requires_grad=True)
    tat = ta.t()
    tat.retain_grad()
    (torch.mm(tat, torch.tensor(b)) * torch.tensor(m)).sum().backward()
    assert fa.grad.is_contiguous()
    assert_close(fat.grad, tat.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert_close(fa.grad, ta.grad.numpy(), rtol=1e-5, atol=1e-5)


def _heads(lib, x, nh):
    """(b, t, c) -> (b, nh, t, c // nh): attention's head split, a strided (non-mergeable) batch layout."""
    b, t, c = x.shape
    return x.view(b, t, nh, c // nh).transpose(1, 2)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matmul_head_split_operands_forward_backward(dtype):
    qkv = r(2, 5, 24, dtype=dtype)

    def attn(lib):
        def fn(qkv):
            q, k, v = qkv.split(8, dim=2)
            q, k, v = _heads(lib, q, 2), _heads(lib, k, 2), _heads(lib, v, 2)
            att = lib.softmax(lib.matmul(q, k.transpose(-2, -1)), dim=-1)
            return lib.matmul(att, v).transpose(1, 2).reshape(2, 5, 8)
        return fn

    check_vs_torch(attn(flow), attn(torch), [qkv], rtol=1e-4, atol=1e-5)


def test_matmul_strided_batch_issues_no_copy():
    from oneflow._dispatch import DispatchMode

    class Log(DispatchMode):
        def __init__(self):
            self.names = []

        def __flow_dispatch__(self, op, inputs, attrs):
            out = op.redispatch(inputs, attrs)
            if op.name == "reshape" and out.data_ptr() != inputs[0].data_ptr():
                self.names.append("reshape (copied)")
            else:
                self.names.append(op.name)
            return out

    xq, xk = r(2, 5, 8), r(2, 5, 8)
    fq, fk = flow.tensor(xq, requires_grad=True), flow.tensor(xk, requires_grad=True)
    with Log() as log:
        y = flow.matmul(_heads(flow, fq, 2), _heads(flow, fk, 2).transpose(-2, -1))
        y.sum().backward()
    assert "_batch_matmul" in log.names
    # gradients come back in the operands' layout, so the views' backwards never copy
    for copying in ("reshape (copied)", "contiguous", "copy_"):
        assert copying not in log.names, log.names
    assert fq.grad.is_contiguous() and fk.grad.is_contiguous()
    tq, tk = torch.tensor(xq, requires_grad=True), torch.tensor(xk, requires_grad=True)
    torch.matmul(_heads(torch, tq, 2), _heads(torch, tk, 2).transpose(-2, -1)).sum().backward()
    assert_close(fq.grad, tq.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert_close(fk.grad, tk.grad.numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("order", [None, [0, 2, 1, 3], [0, 3, 1, 2], [1, 0, 2, 3], [3, 2, 1, 0]])
def test_batch_matmul_memory_order(order):
    a, b = r(2, 3, 4, 5), r(2, 3, 5, 6)
    want = a.astype(np.float64) @ b
    out = flow._C.ops._batch_matmul(flow.tensor(a), flow.tensor(b), order)
    assert_close(out, want, rtol=1e-4, atol=1e-4)
    strides = out.stride()
    if order is None or order == [1, 0, 2, 3]:
        inner = 3 if order is None else 3
        assert strides[inner] == 1
    if order == [0, 2, 1, 3]:
        assert strides == (72, 6, 18, 1)
    if order == [0, 3, 1, 2]:  # columns innermost: written column-major
        assert strides == (72, 4, 1, 12)
    if order == [3, 2, 1, 0]:  # a batch dim innermost cannot be written by a GEMM: contiguous
        assert out.is_contiguous()


def test_batch_matmul_errors_and_edge_cases():
    with pytest.raises(RuntimeError, match="_batch_matmul: shapes cannot be multiplied"):
        flow._C.ops._batch_matmul(flow.randn(2, 3, 4), flow.randn(3, 4, 5))
    with pytest.raises(RuntimeError, match="equal rank >= 3"):
        flow._C.ops._batch_matmul(flow.randn(3, 4), flow.randn(4, 5))
    # empty inner dimension gives zeros, empty batch gives an empty result
    assert_close(flow.matmul(flow.randn(2, 3, 0), flow.randn(2, 0, 4)), np.zeros((2, 3, 4)), rtol=0, atol=0)
    assert flow.matmul(flow.randn(0, 3, 2), flow.randn(0, 2, 4)).shape == (0, 3, 4)
    # integer and 16-bit batches with strided, broadcast batch dims
    a = np.arange(2 * 3 * 4).reshape(3, 2, 4) % 5 - 2
    b = np.arange(4 * 5).reshape(1, 4, 5) % 3 - 1
    for dt in ("int64", "bfloat16"):
        fa = flow.tensor(a, dtype=getattr(flow, dt)).transpose(0, 1)
        got = flow.matmul(fa, flow.tensor(b, dtype=getattr(flow, dt)))
        assert_close(got.float(), np.transpose(a, (1, 0, 2)) @ b, rtol=0, atol=0)
