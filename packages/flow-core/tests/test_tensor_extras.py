"""Layout/kind queries, the complex API on real tensors, gcd/ldexp/frexp/nextafter/i0/igamma, random fills,
put/index_reduce and legacy helpers (oneflow/_ops/tensor_extras.py) against PyTorch."""
import pickle
import warnings

import numpy as np
import pytest
import torch

import oneflow as flow
from helpers import assert_close

F2T = {flow.float32: torch.float32, flow.float64: torch.float64, flow.float16: torch.float16,
       flow.int64: torch.int64, flow.int32: torch.int32, flow.int16: torch.int16, flow.int8: torch.int8,
       flow.uint8: torch.uint8, flow.bool: torch.bool, flow.bfloat16: torch.bfloat16}


@pytest.fixture(autouse=True)
def _keep_global_rng():
    # leave the default generator as found, so that later files see the random stream they were written for
    state = flow.get_rng_state()
    yield
    flow.set_rng_state(state)


def pair(data, dtype=flow.float32, requires_grad=False):
    a = np.asarray(data)
    f = flow.tensor(a, dtype=dtype, requires_grad=requires_grad)
    t = torch.tensor(a, dtype=F2T[dtype], requires_grad=requires_grad)
    return f, t


def same_error(fn_flow, fn_torch):
    with pytest.raises(Exception) as et:
        fn_torch()
    with pytest.raises(type(et.value)) as ef:
        fn_flow()
    return str(ef.value), str(et.value)


# ---- 1. layouts, kinds, complex API --------------------------------------------------------------------------
def test_layouts():
    for n in ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"):
        assert isinstance(getattr(flow, n), flow.layout)
        assert repr(getattr(flow, n)) == f"oneflow.{n}"
    assert flow.randn(2).layout is flow.strided
    assert flow.strided != flow.sparse_coo
    assert pickle.loads(pickle.dumps(flow.strided)) is flow.strided
    with pytest.raises(TypeError):
        flow.layout()
    assert flow.zeros(2, layout=flow.strided).shape == (2,)


@pytest.mark.parametrize("name", ["is_sparse", "is_sparse_csr", "is_quantized", "is_mkldnn", "is_nested", "is_xpu",
                                  "is_mps", "is_ipu", "is_xla", "is_vulkan", "is_mtia", "is_maia"])
def test_kind_properties(name):
    assert getattr(flow.randn(2), name) is False
    assert getattr(torch.randn(2), name) is False


def test_complex_api_on_real():
    f, t = pair([1.0, -2.0])
    for name in ("conj", "conj_physical", "resolve_conj", "resolve_neg"):
        assert getattr(f, name)() is f and getattr(t, name)() is t
        assert getattr(flow, name)(f) is f
    assert f.real is f and flow.real(f) is f
    assert not f.is_conj() and not f.is_neg() and not flow.is_conj(f) and not flow.is_neg(f)
    msg_f, msg_t = same_error(lambda: f.imag, lambda: t.imag)
    assert msg_f == msg_t
    same_error(lambda: flow.imag(f), lambda: torch.imag(t))
    assert_close(flow.isreal(f), torch.isreal(t))
    assert_close(flow.isreal(flow.tensor([1, 2])), torch.isreal(torch.tensor([1, 2])))


@pytest.mark.parametrize("dtype", [flow.float32, flow.float64, flow.int64, flow.bool, flow.uint8])
def test_angle(dtype):
    data = [1, -2, 0, 3] if dtype != flow.bool else [True, False]
    f, t = pair(data, dtype)
    assert_close(flow.angle(f), torch.angle(t))
    assert_close(f.angle(), t.angle())


def test_angle_nan_and_grad():
    f, t = pair([1.0, -2.0, np.nan, np.inf, -np.inf], requires_grad=True)
    yf, yt = flow.angle(f), torch.angle(t)
    assert_close(yf, yt)
    yf.sum().backward()
    yt.sum().backward()
    assert_close(f.grad, t.grad)


def test_adjoint_and_H():
    f, t = pair(np.arange(24.0).reshape(2, 3, 4))
    assert_close(f.adjoint(), t.adjoint())
    assert_close(flow.adjoint(f), torch.adjoint(t))
    assert_close(f[0].H, t[0].H)
    for fx, tx in ((f, t), (f[0, 0], t[0, 0])):
        msg_f, msg_t = same_error(lambda: fx.H, lambda: tx.H)
        assert msg_f == msg_t
    same_error(lambda: f[0, 0].adjoint(), lambda: t[0, 0].adjoint())
    z, tz = f[0, 0, 0], t[0, 0, 0]
    with pytest.warns(UserWarning, match="deprecated on 0-D"):
        assert z.H is z
    with pytest.warns(UserWarning, match="deprecated on 0-D"):
        assert tz.H is tz
    g, u = pair(np.ones((2, 3)), requires_grad=True)
    (g.H * flow.arange(6.0).reshape(3, 2)).sum().backward()
    (u.H * torch.arange(6.0).reshape(3, 2)).sum().backward()
    assert_close(g.grad, u.grad)


def test_output_nr():
    leaf_f = flow.tensor([1.0], requires_grad=True)
    leaf_t = torch.tensor([1.0], requires_grad=True)
    assert leaf_f.output_nr == leaf_t.output_nr == 0
    assert (leaf_f * 2).output_nr == (leaf_t * 2).output_nr == 0
    pf = flow.split(leaf_f * flow.ones(3), [1, 2])
    pt = torch.split(leaf_t * torch.ones(3), [1, 2])
    assert [p.output_nr for p in pf] == [p.output_nr for p in pt] == [0, 1]
    assert flow.tensor(1.0).output_nr == 0


# ---- 2. elementwise math ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [flow.int64, flow.int32, flow.int16, flow.int8, flow.uint8])
@pytest.mark.parametrize("op", ["gcd", "lcm"])
def test_gcd_lcm(op, dtype):
    rng = np.random.default_rng(0)
    lo = 0 if dtype == flow.uint8 else -30
    a = rng.integers(lo, 30, size=(4, 5))
    b = rng.integers(lo, 30, size=(5,))
    a[0, :3] = 0
    b[1] = 0
    fa, ta = pair(a, dtype)
    fb, tb = pair(b, dtype)
    assert_close(getattr(flow, op)(fa, fb), getattr(torch, op)(ta, tb))
    assert_close(getattr(fa, op)(fb), getattr(ta, op)(tb))
    r = getattr(fa.clone(), op + "_")(fb)
    assert_close(r, getattr(ta.clone(), op + "_")(tb))


def test_gcd_lcm_edges():
    a, b = [-128, -128, 6, 100], [0, -128, -4, 3]
    for op in ("gcd", "lcm"):
        fa, ta = pair(a, flow.int8)
        fb, tb = pair(b, flow.int8)
        assert_close(getattr(flow, op)(fa, fb), getattr(torch, op)(ta, tb))
    # mixed integer dtypes promote
    assert_close(flow.gcd(flow.tensor([4], dtype=flow.uint8), flow.tensor([6], dtype=flow.int8)),
                 torch.gcd(torch.tensor([4], dtype=torch.uint8), torch.tensor([6], dtype=torch.int8)))
    for d in (flow.float32, flow.bool):
        x, tx = pair([1, 2], d)
        msg_f, msg_t = same_error(lambda: flow.gcd(x, x), lambda: torch.gcd(tx, tx))
        assert msg_f.replace("oneflow", "torch") == msg_t
    same_error(lambda: flow.gcd(flow.tensor([4]), 6), lambda: torch.gcd(torch.tensor([4]), 6))
    same_error(lambda: flow.tensor([4]).gcd_(flow.tensor([6, 8])), lambda: torch.tensor([4]).gcd_(torch.tensor([6, 8])))


@pytest.mark.parametrize("xd,ed", [(flow.float32, flow.int64), (flow.int64, flow.int64), (flow.float64, flow.float64),
                                   (flow.float32, flow.float64), (flow.float16, flow.int64)])
def test_ldexp(xd, ed):
    fx, tx = pair([1, -2, 3, 0], xd)
    fe, te = pair([3, 4, -2, 5] if ed != flow.float64 else [0.5, 4, -2.5, 1], ed)
    assert_close(flow.ldexp(fx, fe), torch.ldexp(tx, te))
    assert_close(fx.ldexp(fe), tx.ldexp(te))


def test_ldexp_grad_and_inplace():
    fx, tx = pair([3.0, -2.0], flow.float64, requires_grad=True)
    fe, te = pair([1.0, 2.5], flow.float64, requires_grad=True)
    flow.ldexp(fx, fe).sum().backward()
    torch.ldexp(tx, te).sum().backward()
    assert_close(fx.grad, tx.grad)
    assert_close(fe.grad, te.grad)
    assert_close(flow.tensor([1.0]).ldexp_(flow.tensor([3])), torch.tensor([1.0]).ldexp_(torch.tensor([3])))
    msg_f, msg_t = same_error(lambda: flow.tensor([1, 2]).ldexp_(flow.tensor([3, 4])),
                              lambda: torch.tensor([1, 2]).ldexp_(torch.tensor([3, 4])))
    assert msg_f == msg_t


@pytest.mark.parametrize("dtype", [flow.float32, flow.float64, flow.float16, flow.bfloat16])
def test_frexp(dtype):
    data = [8.0, 0.0, -3.5, np.inf, -np.inf, np.nan, 1e-3, 7.0, -0.0, 6e-8, 1e-38, 60000.0]
    f, t = pair(data, dtype)
    rf, rt = flow.frexp(f), torch.frexp(t)
    assert type(rf).__name__ == "frexp"
    assert_close(rf.mantissa, rt.mantissa)
    assert_close(rf.exponent, rt.exponent)
    m, e = f.frexp()
    assert_close(m, rt[0])
    assert_close(e, rt[1])


def test_frexp_grad_and_errors():
    f, t = pair([3.0, -2.0, 100.0], requires_grad=True)
    flow.frexp(f).mantissa.sum().backward()
    torch.frexp(t).mantissa.sum().backward()
    assert_close(f.grad, t.grad)
    msg_f, msg_t = same_error(lambda: flow.frexp(flow.tensor([1])), lambda: torch.frexp(torch.tensor([1])))
    assert msg_f == msg_t


@pytest.mark.parametrize("dtype", [flow.float32, flow.float64, flow.float16])
def test_nextafter(dtype):
    a = [1.0, 2.0, 0.0, -1.0, np.inf, np.nan, 1.0]
    b = [2.0, 1.0, 1.0, -np.inf, 0.0, 1.0, 1.0]
    fa, ta = pair(a, dtype)
    fb, tb = pair(b, dtype)
    out = flow.nextafter(fa, fb)
    ref = torch.nextafter(ta, tb)
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    assert out.dtype == dtype
    np.testing.assert_array_equal(fa.clone().nextafter_(fb).numpy(), ta.clone().nextafter_(tb).numpy())


def test_nextafter_grad_and_errors():
    fa, ta = pair([1.0, 3.0], requires_grad=True)
    fb, tb = pair([2.0], requires_grad=True)
    flow.nextafter(fa, fb).sum().backward()
    torch.nextafter(ta, tb).sum().backward()
    assert_close(fa.grad, ta.grad)
    assert_close(fb.grad, tb.grad)
    assert flow.nextafter(flow.tensor([1.0]), flow.tensor([2.0], dtype=flow.float64)).dtype == flow.float64
    msg_f, msg_t = same_error(lambda: flow.nextafter(flow.tensor([1]), flow.tensor([2])),
                              lambda: torch.nextafter(torch.tensor([1]), torch.tensor([2])))
    assert msg_f == msg_t
    same_error(lambda: flow.nextafter(flow.tensor([1.0]), 2.0), lambda: torch.nextafter(torch.tensor([1.0]), 2.0))


@pytest.mark.parametrize("dtype", [flow.float32, flow.float64, flow.int64, flow.int32, flow.bool, flow.float16])
def test_i0(dtype):
    data = [0, 1, 2, 5, -3, 9, 30] if dtype != flow.bool else [True, False]
    f, t = pair(data, dtype)
    assert_close(flow.i0(f), torch.i0(t), rtol=1e-3 if dtype == flow.float16 else 1e-6)


def test_i0_wide_range_grad_and_inplace():
    x = np.concatenate([np.linspace(-50, 50, 41), [700.0, -700.0, 800.0, np.nan]])
    f, t = pair(x, flow.float64, requires_grad=True)
    yf, yt = flow.i0(f), torch.i0(t)
    assert_close(yf, yt, rtol=1e-12)
    w = np.linspace(0.1, 1, x.size)
    (yf * flow.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    assert_close(f.grad, t.grad, rtol=1e-12)
    assert_close(flow.tensor([1.0, 2.0]).i0_(), torch.tensor([1.0, 2.0]).i0_())
    msg_f, msg_t = same_error(lambda: flow.tensor([1]).i0_(), lambda: torch.tensor([1]).i0_())
    assert msg_f.endswith(msg_t)  # the registry's in-place check names the op first ("i0_: ...")


@pytest.mark.parametrize("op", ["igamma", "igammac"])
def test_igamma(op):
    a = np.array([0.5, 1.0, 2.0, 5.0, 30.0, 100.0, 0.1, 3.0, 1000.0, 0.0, 0.0, 2.0, -1.0, np.inf, 2.0])
    x = np.array([0.2, 1.0, 3.0, 4.0, 29.0, 120.0, 10.0, 0.01, 990.0, 1.0, 0.0, np.inf, 1.0, 2.0, 0.0])
    fa, ta = pair(a, flow.float64)
    fx, tx = pair(x, flow.float64)
    # PyTorch's own values are off by ~1e-9 relative at (30, 29) and (1000, 990) (checked against mpmath)
    assert_close(getattr(flow, op)(fa, fx), getattr(torch, op)(ta, tx), rtol=1e-8, atol=1e-14)
    assert_close(getattr(fa, op)(fx), getattr(ta, op)(tx), rtol=1e-8, atol=1e-14)
    f32a, t32a = pair([1.0, 2.0])
    assert_close(getattr(flow, op)(f32a, fx[:2]), getattr(torch, op)(t32a, tx[:2]))
    assert_close(getattr(f32a.clone(), op + "_")(fx[:2]), getattr(t32a.clone(), op + "_")(tx[:2]))


@pytest.mark.parametrize("op", ["igamma", "igammac"])
def test_igamma_grad_and_errors(op):
    fa, ta = pair([[1.0, 2.5]], flow.float64)
    fx, tx = pair([[0.5], [2.0]], flow.float64, requires_grad=True)
    getattr(flow, op)(fa, fx).sum().backward()
    getattr(torch, op)(ta, tx).sum().backward()
    assert_close(fx.grad, tx.grad, rtol=1e-10)
    ga, ua = pair([1.0, 2.0], requires_grad=True)
    gx, ux = pair([1.0, 2.0])
    same_error(lambda: getattr(flow, op)(ga, gx).sum().backward(), lambda: getattr(torch, op)(ua, ux).sum().backward())
    msg_f, msg_t = same_error(lambda: getattr(flow, op)(flow.tensor([1]), flow.tensor([1])),
                              lambda: getattr(torch, op)(torch.tensor([1]), torch.tensor([1])))
    assert msg_f == msg_t
    same_error(lambda: getattr(flow, op)(flow.tensor([1.0]), 2.0), lambda: getattr(torch, op)(torch.tensor([1.0]), 2.0))


def test_inplace_forms_of_existing_ops():
    f, t = pair([-1.0, 0.0, 2.0])
    fv, tv = pair([0.5, 0.5, 0.5])
    assert_close(f.clone().heaviside_(fv), t.clone().heaviside_(tv))
    same_error(lambda: flow.tensor([1, 2]).heaviside_(flow.tensor([1.0, 2.0])),
               lambda: torch.tensor([1, 2]).heaviside_(torch.tensor([1.0, 2.0])))
    rng = np.random.default_rng(1)
    m, b1, b2 = rng.standard_normal((3, 4)), rng.standard_normal((2, 3, 5)), rng.standard_normal((2, 5, 4))
    fm, tm = pair(m)
    fb1, tb1 = pair(b1)
    fb2, tb2 = pair(b2)
    assert_close(fm.clone().addbmm_(fb1, fb2, beta=0.5, alpha=2), tm.clone().addbmm_(tb1, tb2, beta=0.5, alpha=2),
                 rtol=1e-5, atol=1e-5)
    fv1, tv1 = pair(rng.standard_normal(3))
    fv2, tv2 = pair(rng.standard_normal(4))
    assert_close(fm.clone().addr_(fv1, fv2, alpha=3), tm.clone().addr_(tv1, tv2, alpha=3))
    fp, tp = pair([2.5, 3.0, 4.0])
    assert_close(fp.clone().mvlgamma_(2), tp.clone().mvlgamma_(2))
    assert_close(fp.clone().polygamma_(1), tp.clone().polygamma_(1))
    msg_f, msg_t = same_error(lambda: flow.tensor([1, 2]).polygamma_(1), lambda: torch.tensor([1, 2]).polygamma_(1))
    assert msg_f == msg_t
    same_error(lambda: flow.tensor([1, 2]).mvlgamma_(1), lambda: torch.tensor([1, 2]).mvlgamma_(1))
    # the in-place result keeps autograd history, as PyTorch's does
    g, u = pair([1.5, 2.5], requires_grad=True)
    (g * 1).polygamma_(0).sum().backward()
    (u * 1).polygamma_(0).sum().backward()
    assert_close(g.grad, u.grad)


# ---- 3. random fills ---------------------------------------------------------------------------------------------
def test_cauchy():
    g = flow.Generator().manual_seed(0)
    x = flow.empty(200000).cauchy_(median=1.5, sigma=2.0, generator=g)
    q = np.quantile(x.numpy(), [0.25, 0.5, 0.75])
    # quartiles of Cauchy(m, s) are m - s, m, m + s
    np.testing.assert_allclose(q, [-0.5, 1.5, 3.5], atol=0.05)
    assert flow.empty(3, dtype=flow.float64).cauchy_().dtype == flow.float64
    for kw in ({"sigma": 0}, {"sigma": -1}):
        msg_f, msg_t = same_error(lambda: flow.zeros(3).cauchy_(**kw), lambda: torch.zeros(3).cauchy_(**kw))
        assert msg_f == msg_t
    msg_f, msg_t = same_error(lambda: flow.zeros(3, dtype=flow.int64).cauchy_(),
                              lambda: torch.zeros(3, dtype=torch.int64).cauchy_())
    assert msg_f == msg_t
    same_error(lambda: flow.zeros(3, requires_grad=True).cauchy_(),
               lambda: torch.zeros(3, requires_grad=True).cauchy_())


def test_geometric():
    g = flow.Generator().manual_seed(3)
    for dtype in (flow.float32, flow.int64):
        x = flow.empty(200000, dtype=dtype).geometric_(0.3, generator=g)
        v = x.numpy().astype(np.float64)
        assert v.min() >= 1 and np.all(v == np.round(v))
        np.testing.assert_allclose(v.mean(), 1 / 0.3, rtol=0.02)
        np.testing.assert_allclose(v.var(), 0.7 / 0.09, rtol=0.05)
        np.testing.assert_allclose((v == 1).mean(), 0.3, atol=0.01)
    g1, g2 = flow.Generator().manual_seed(5), flow.Generator().manual_seed(5)
    assert flow.equal(flow.empty(10).geometric_(0.5, generator=g1), flow.empty(10).geometric_(0.5, generator=g2))
    for p in (0, 1, 1.5):
        msg_f, msg_t = same_error(lambda: flow.zeros(3).geometric_(p), lambda: torch.zeros(3).geometric_(p))
        assert msg_f == msg_t
    same_error(lambda: flow.zeros(3, dtype=flow.bool).geometric_(0.5),
               lambda: torch.zeros(3, dtype=torch.bool).geometric_(0.5))


def test_log_normal():
    g = flow.Generator().manual_seed(1)
    x = flow.empty(200000, dtype=flow.float64).log_normal_(0.5, 0.4, generator=g)
    lv = np.log(x.numpy())
    np.testing.assert_allclose([lv.mean(), lv.std()], [0.5, 0.4], atol=0.01)
    x = flow.empty(100000).log_normal_(generator=g)
    np.testing.assert_allclose(np.median(x.numpy()), np.e, rtol=0.05)
    for kw in ({"std": 0}, {"std": -1}):
        msg_f, msg_t = same_error(lambda: flow.zeros(3).log_normal_(**kw), lambda: torch.zeros(3).log_normal_(**kw))
        assert msg_f == msg_t
    msg_f, msg_t = same_error(lambda: flow.zeros(3, dtype=flow.int64).log_normal_(),
                              lambda: torch.zeros(3, dtype=torch.int64).log_normal_())
    assert msg_f == msg_t


# ---- 4. put / index_reduce ---------------------------------------------------------------------------------------
def test_put_values():
    f, t = pair([[1.0, 2.0], [3.0, 4.0]])
    for idx, src, acc in (([0, -1, 2], [9.0, 8.0, 7.0], False), ([0, 0, 1], [9.0, 8.0, 7.0], True),
                          ([[3], [0]], [5.0, 6.0], False)):
        fi, ti = pair(idx, flow.int64)
        fs, ts = pair(src)
        assert_close(f.put(fi, fs, accumulate=acc), t.put(ti, ts, accumulate=acc))
        assert_close(flow.put(f, fi, fs, acc), torch.put(t, ti, ts, acc))
        assert_close(f.clone().put_(fi, fs, acc), t.clone().put_(ti, ts, acc))
    assert_close(flow.tensor(1.0).put_(flow.tensor([0]), flow.tensor([9.0])),
                 torch.tensor(1.0).put_(torch.tensor([0]), torch.tensor([9.0])))
    # non-contiguous self: flat indices follow the logical (row-major) order
    assert_close(f.t().put(flow.tensor([1]), flow.tensor([7.0])), t.t().put(torch.tensor([1]), torch.tensor([7.0])))


def test_put_errors():
    f, t = pair([[1.0, 2.0], [3.0, 4.0]])
    cases = [([0, -1, 5], [9.0, 8, 7], flow.int64, flow.float32), ([0, -5], [9.0, 8], flow.int64, flow.float32),
             ([0, 1], [9.0, 8, 7], flow.int64, flow.float32), ([0, 1], [9.0, 8], flow.int32, flow.float32),
             ([0, 1], [9.0, 8], flow.float32, flow.float32), ([0, 1], [9, 8], flow.int64, flow.int64)]
    for idx, src, idt, sdt in cases:
        fi, ti = pair(idx, idt)
        fs, ts = pair(src, sdt)
        msg_f, msg_t = same_error(lambda: f.put(fi, fs), lambda: t.put(ti, ts))
        assert msg_f == msg_t


@pytest.mark.parametrize("acc", [False, True])
def test_put_grad(acc):
    fs, ts = pair([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    fv, tv = pair([5.0, 6.0, 7.0], requires_grad=True)
    w = np.arange(4.0).reshape(2, 2)
    (fs.put(flow.tensor([0, 3, -4]), fv, accumulate=acc) * flow.tensor(w, dtype=flow.float32)).sum().backward()
    (ts.put(torch.tensor([0, 3, -4]), tv, accumulate=acc) * torch.tensor(w, dtype=torch.float32)).sum().backward()
    assert_close(fs.grad, ts.grad)
    assert_close(fv.grad, tv.grad)
    gs, us = pair([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = gs * 1
    y.put_(flow.tensor([1]), flow.tensor([9.0]), acc)
    z = us * 1
    z.put_(torch.tensor([1]), torch.tensor([9.0]), acc)
    (y * y).sum().backward()
    (z * z).sum().backward()
    assert_close(gs.grad, us.grad)


SELF = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
SRC = [[2.0, -1.0], [7.0, 8.0], [3.0, 6.0]]


@pytest.mark.filterwarnings("ignore:index_reduce")
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    fs, ts = pair(SELF, requires_grad=True)
    fv, tv = pair(SRC, requires_grad=True)
    fi, ti = pair([0, 2, 0], flow.int64)
    yf = fs.index_reduce(0, fi, fv, reduce, include_self=include_self)
    yt = ts.index_reduce(0, ti, tv, reduce, include_self=include_self)
    assert_close(yf, yt)
    w = np.arange(6.0).reshape(3, 2)
    (yf * flow.tensor(w, dtype=flow.float32) + yf ** 2).sum().backward()
    (yt * torch.tensor(w, dtype=torch.float32) + yt ** 2).sum().backward()
    assert_close(fs.grad, ts.grad)
    assert_close(fv.grad, tv.grad)
    # in place on a non-leaf keeps the history (and the values the backward needs)
    gs, us = pair(SELF, requires_grad=True)
    yf = (gs * 1).index_reduce_(0, fi, fv.detach(), reduce, include_self=include_self)
    yt = (us * 1).index_reduce_(0, ti, tv.detach(), reduce, include_self=include_self)
    (yf * yf).sum().backward()
    (yt * yt).sum().backward()
    assert_close(gs.grad, us.grad)
    # along dim 1, int32 index, in place, functional form
    f2, t2 = pair(np.arange(12.0).reshape(3, 4) + 1)
    s2, u2 = pair(np.arange(9.0).reshape(3, 3) - 2)
    i2, j2 = pair([3, 0, 3], flow.int32)
    assert_close(flow.index_reduce(f2, 1, i2, s2, reduce, include_self=include_self),
                 torch.index_reduce(t2, 1, j2, u2, reduce, include_self=include_self))
    assert_close(f2.clone().index_reduce_(-1, i2, s2, reduce, include_self=include_self),
                 t2.clone().index_reduce_(-1, j2, u2, reduce, include_self=include_self))


@pytest.mark.filterwarnings("ignore:index_reduce")
def test_index_reduce_int_and_scalar():
    for inc in (True, False):
        f, t = pair([[1, 2], [3, 4]], flow.int64)
        s, u = pair([[4, 5], [6, 7]], flow.int64)
        i = flow.tensor([0, 0])
        assert_close(f.index_reduce(0, i, s, "mean", include_self=inc),
                     t.index_reduce(0, torch.tensor([0, 0]), u, "mean", include_self=inc))
    assert_close(flow.tensor(5.0).index_reduce(0, flow.tensor([0]), flow.tensor(2.0), "prod"),
                 torch.tensor(5.0).index_reduce(0, torch.tensor([0]), torch.tensor(2.0), "prod"))


@pytest.mark.filterwarnings("ignore:index_reduce")
def test_index_reduce_errors():
    f, t = pair(SELF)
    cases = [(0, [0, 2, 0], np.ones((3, 2)), "sum", flow.int64, flow.float32),
             (0, [0, 3, 0], np.ones((3, 2)), "prod", flow.int64, flow.float32),
             (0, [0, -1, 0], np.ones((3, 2)), "prod", flow.int64, flow.float32),
             (0, [0, 1, 0], np.ones((3, 2)), "prod", flow.float32, flow.float32),
             (0, [0, 1], np.ones((3, 2)), "prod", flow.int64, flow.float32),
             (0, [0, 1, 0], np.ones((3, 2)), "mean", flow.int64, flow.float64),
             (0, [[0, 1]], np.ones((2, 2)), "prod", flow.int64, flow.float32),
             (2, [0, 1], np.ones((2, 2)), "prod", flow.int64, flow.float32),
             (1, [0, 1, 0], np.ones((2, 3)), "prod", flow.int64, flow.float32)]
    for dim, idx, src, red, idt, sdt in cases:
        fi, ti = pair(idx, idt)
        fs, ts = pair(src, sdt)
        msg_f, msg_t = same_error(lambda: f.index_reduce(dim, fi, fs, red), lambda: t.index_reduce(dim, ti, ts, red))
        assert msg_f == msg_t, (msg_f, msg_t)


# ---- 5. legacy helpers ---------------------------------------------------------------------------------------------
def test_apply_and_map():
    f, t = pair([[1.0, 2.0], [3.0, 4.0]])
    assert_close(f.clone().apply_(lambda v: v * 2 + 1), t.clone().apply_(lambda v: v * 2 + 1))
    fi, ti = pair([1, 2, 3], flow.int64)
    assert_close(fi.clone().apply_(lambda v: v / 2), ti.clone().apply_(lambda v: v / 2))
    x = f.clone()
    assert x.apply_(lambda v: -v) is x
    same_error(lambda: fi.clone().apply_(lambda v: "a"), lambda: ti.clone().apply_(lambda v: "a"))
    same_error(lambda: flow.ones(2, requires_grad=True).apply_(abs),
               lambda: torch.ones(2, requires_grad=True).apply_(abs))
    fo, to = pair([10.0, 20.0])
    assert_close(f.clone().map_(fo, lambda a, b: a * b - 1), t.clone().map_(to, lambda a, b: a * b - 1))
    msg_f, msg_t = same_error(lambda: f.clone().map_(fi, max), lambda: t.clone().map_(ti, max))
    assert msg_f.replace("oneflow", "torch") == msg_t
    same_error(lambda: fo.clone().map_(f, max), lambda: to.clone().map_(t, max))


def test_as_subclass():
    class Sub(flow.Tensor):
        pass

    class TSub(torch.Tensor):
        pass

    leaf = flow.tensor([1.0, 2.0], requires_grad=True)
    tleaf = torch.tensor([1.0, 2.0], requires_grad=True)
    s, ts = leaf.as_subclass(Sub), tleaf.as_subclass(TSub)
    assert type(s) is Sub and s.requires_grad and s.is_leaf == ts.is_leaf is False
    (s * 3).sum().backward()
    (ts * 3).sum().backward()
    assert_close(leaf.grad, tleaf.grad)
    mid = leaf * 2
    s2 = mid.as_subclass(Sub)
    assert s2.grad_fn is not None
    plain = flow.tensor([1.0, 2.0])
    s3 = plain.as_subclass(Sub)
    s3[0] = 7.0  # shares memory with the original
    assert plain[0].item() == 7.0 and not s3.requires_grad
    same_error(lambda: plain.as_subclass(int), lambda: torch.tensor([1.0]).as_subclass(int))


def test_new():
    f, t = pair([1.0, 2.0, 3.0])
    assert f.new(2, 3).shape == t.new(2, 3).shape and f.new(2, 3).dtype == flow.float32
    assert_close(f.new([1, 2]), t.new([1, 2]))
    assert_close(f.new((2, 3)), t.new((2, 3)))
    assert tuple(f.new(flow.Size([2, 3])).shape) == tuple(t.new(torch.Size([2, 3])).shape)
    assert_close(f.new(), t.new())
    fi, ti = pair([1, 2], flow.int64)
    assert_close(fi.new([1.5, 2.7]), ti.new([1.5, 2.7]))
    other = flow.tensor([4.0, 5.0])
    assert_close(f.new(other), t.new(torch.tensor([4.0, 5.0])))
    same_error(lambda: f.new(fi), lambda: t.new(ti))
    same_error(lambda: f.new(3.5), lambda: t.new(3.5))
    same_error(lambda: f.new(2, 3, dtype=flow.int64), lambda: t.new(2, 3, dtype=torch.int64))


def test_resize_out_of_place():
    f, t = pair([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        yf = f.resize(2, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yt = t.resize(2, 2)
        assert_close(yf, yt)
        (yf * flow.arange(4.0).reshape(2, 2)).sum().backward()
        (yt * torch.arange(4.0).reshape(2, 2)).sum().backward()
        assert_close(f.grad, t.grad)
        msg_f, msg_t = same_error(lambda: f.resize(3), lambda: t.resize(3))
        assert msg_f == msg_t
        assert_close(f.resize_as(flow.zeros(1, 4)), t.resize_as(torch.zeros(1, 4)))
        same_error(lambda: f.resize_as(flow.zeros(3)), lambda: t.resize_as(torch.zeros(3)))
    with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
        f.resize_as(flow.zeros(2, 2))


def test_empty_strided():
    f = flow.tensor([1.0])
    x = f.new_empty_strided((2, 3), (1, 2))
    assert x.stride() == (1, 2) and x.shape == (2, 3) and x.dtype == flow.float32
    assert f.new_empty_strided((2, 3), (1, 2), dtype=flow.int64).dtype == flow.int64
    y = flow.empty_strided((2, 3), (1, 2), requires_grad=True)
    assert y.requires_grad and y.stride() == torch.empty_strided((2, 3), (1, 2)).stride()
    assert flow.empty_strided([4], [1], dtype=flow.float64).dtype == flow.float64
    for size, stride in (((2, 3), (1,)), ((2, -3), (1, 2))):
        msg_f, msg_t = same_error(lambda: flow.empty_strided(size, stride), lambda: torch.empty_strided(size, stride))
        assert msg_f == msg_t
