"""oneflow.special's registry-backed functions (i0/i0e/i1/i1e, ndtri, erfcx, log_ndtr, xlog1py, zeta,
gammainc/gammaincc), igamma at large shape parameters, the Gamma sampler's reparameterization gradient,
and gcd/lcm/nextafter edge cases: values and gradients against torch."""
import math

import numpy as np
import pytest
import torch

import oneflow as flow

WIDE = np.array([-800.0, -700.0, -30.0, -20.5, -20.0, -3.0, -1e-3, -0.0, 0.0, 1e-8, 0.5, 1.0, 7.5, 19.9, 20.0,
                 20.1, 45.0, 700.0, 709.0, 800.0, np.inf, -np.inf, np.nan])


def both(values, dtype=np.float64, requires_grad=False):
    a = np.asarray(values, dtype=dtype)
    return flow.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def close(f, t, rtol=1e-12, atol=0.0):
    np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol, equal_nan=True)


def check_grad(fn_flow, fn_torch, values, rtol=1e-10, atol=0.0):
    f, t = both(values, requires_grad=True)
    w = np.linspace(0.5, 1.5, len(values))
    (fn_flow(f) * flow.tensor(w)).sum().backward()
    (fn_torch(t) * torch.tensor(w)).sum().backward()
    close(f.grad, t.grad, rtol, atol)


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e"])
def test_bessel_values(name):
    f, t = both(WIDE)
    close(getattr(flow.special, name)(f), getattr(torch.special, name)(t), rtol=1e-13)
    f32, t32 = both(WIDE, np.float32)
    out = getattr(flow.special, name)(f32)
    assert out.dtype == flow.float32
    close(out, getattr(torch.special, name)(t32), rtol=2e-6)


def test_bessel_finite_past_exp_overflow():
    # I0(713) = e^713 / sqrt(2 pi 713) (1 + 1/(8 x) + 9/(2 (8 x)^2) + ...) is below the double maximum, though
    # e^713 alone is not; torch returns inf there (it forms e^x first), ours the value
    x = 713.0
    series = 1 + 1 / (8 * x) + 9 / (2 * (8 * x) ** 2) + 225 / (6 * (8 * x) ** 3)
    expected = x - 0.5 * math.log(2 * math.pi * x) + math.log(series)
    got = flow.special.i0(flow.tensor([x, -x], dtype=flow.float64)).numpy()
    np.testing.assert_allclose(np.log(got), expected, rtol=1e-15)
    assert np.isinf(flow.special.i0(flow.tensor([716.0], dtype=flow.float64)).numpy()).all()


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e"])
def test_bessel_gradients(name):
    values = [-40.0, -21.0, -3.0, -0.5, 0.0, 0.25, 2.0, 19.0, 25.0, 300.0]
    check_grad(getattr(flow.special, name), getattr(torch.special, name), values, rtol=1e-11, atol=1e-15)


def test_bessel_integer_input_noncontiguous_and_empty():
    x = flow.tensor([[0, 1], [2, 3]])
    assert flow.special.i1(x).dtype == flow.float32
    close(flow.special.i1e(x.t()), torch.special.i1e(torch.tensor([[0, 1], [2, 3]]).t()), rtol=1e-6)
    assert flow.special.i0e(flow.zeros(0, 3)).shape == (0, 3)
    assert float(flow.special.i1(flow.tensor(0.0))) == 0.0
    # I1 is odd, I0 even
    f, _ = both([-3.5, 3.5])
    y1, y0 = flow.special.i1(f).numpy(), flow.special.i0(f).numpy()
    assert y1[0] == -y1[1] and y0[0] == y0[1]


def test_i0_inplace_method():
    f, t = both([0.5, -2.0, 10.0])
    close(f.clone().i0_(), t.clone().i0_())


def test_ndtri():
    p = [0.0, 1e-300, 1e-30, 1e-8, 0.001, 0.1, 0.3, 0.5, 0.5 + 1e-12, 0.7, 0.975, 1 - 1e-10, 1.0, -0.1, 1.5,
         np.nan]
    f, t = both(p)
    close(flow.special.ndtri(f), torch.special.ndtri(t), rtol=1e-14, atol=1e-15)
    # round trip through ndtr
    q = flow.tensor(np.linspace(0.01, 0.99, 99))
    close(flow.special.ndtr(flow.special.ndtri(q)), q, rtol=1e-14)
    check_grad(flow.special.ndtri, torch.special.ndtri, [1e-6, 0.02, 0.5, 0.9, 0.999], rtol=1e-10)
    f32, t32 = both([1e-30, 0.2, 0.9], np.float32)
    close(flow.special.ndtri(f32), torch.special.ndtri(t32), rtol=1e-6)


def test_erfcx():
    x = [-30.0, -26.0, -5.0, -1.0, -1e-9, 0.0, 0.5, 1.99, 2.0, 2.01, 3.0, 4.99, 5.0, 26.0, 27.0, 1e3, 1e10, 1e300,
         np.inf, -np.inf, np.nan]
    f, t = both(x)
    close(flow.special.erfcx(f), torch.special.erfcx(t), rtol=1e-13)
    check_grad(flow.special.erfcx, torch.special.erfcx, [-3.0, -0.5, 0.0, 1.0, 2.5, 6.0, 40.0], rtol=1e-10,
               atol=1e-14)


def test_log_ndtr_tail_and_gradient():
    x = [-1e5, -1e3, -40.0, -38.5, -10.0, -1.0001, -1.0, -0.5, 0.0, 3.0, 9.0, 40.0, -np.inf, np.inf, np.nan]
    f, t = both(x)
    close(flow.special.log_ndtr(f), torch.special.log_ndtr(t), rtol=1e-13, atol=1e-300)
    check_grad(flow.special.log_ndtr, torch.special.log_ndtr, [-200.0, -30.0, -5.0, -1.5, -0.5, 2.0], rtol=1e-10)
    f32, t32 = both([-60.0, -12.0, -2.0, 1.0], np.float32)
    close(flow.special.log_ndtr(f32), torch.special.log_ndtr(t32), rtol=1e-6)


def test_xlog1py():
    a = [0.0, 0.0, 0.0, 2.0, -1.5, 3.0, 0.0]
    b = [-1.0, np.nan, 5.0, -0.5, 1e-10, -1.0, -2.0]
    fa, ta = both(a, requires_grad=True)
    fb, tb = both(b, requires_grad=True)
    yf, yt = flow.special.xlog1py(fa, fb), torch.special.xlog1py(ta, tb)
    close(yf, yt)
    yf.nansum().backward()
    yt.nansum().backward()
    close(fa.grad, ta.grad)
    close(fb.grad, tb.grad)
    # broadcasting and a Python number on either side
    fm, tm = both(np.arange(6.0).reshape(2, 3))
    close(flow.special.xlog1py(fm, flow.tensor([0.5, 1.0, 2.0])), torch.special.xlog1py(tm, torch.tensor([.5, 1., 2.])))
    close(flow.special.xlog1py(fm, 2), torch.special.xlog1py(tm, 2))
    close(flow.special.xlog1py(3, fm), torch.special.xlog1py(3, tm))
    assert flow.special.xlog1py(flow.tensor([1, 2]), flow.tensor([3, 4])).dtype == flow.float32


def test_zeta():
    x = [2.0, 3.0, 1.0, 0.5, 4.0, 2.0, 3.0, 2.5, 6.0]
    q = [1.0, 2.0, 1.0, 1.0, -2.0, -1.5, -1.5, 0.3, 1e-3]
    fx, tx = both(x)
    fq, tq = both(q, requires_grad=True)
    yf, yt = flow.special.zeta(fx, fq), torch.special.zeta(tx, tq)
    close(yf, yt, rtol=1e-13)
    good = [0, 1, 7, 8]
    yf[good].sum().backward()
    yt[good].sum().backward()
    close(fq.grad, tq.grad, rtol=1e-12)
    assert flow.special.zeta(flow.tensor([2, 3]), flow.tensor([1, 2])).dtype == flow.float32
    close(flow.special.zeta(2.0, fq.detach()), torch.special.zeta(2.0, tq.detach()), rtol=1e-13)
    with pytest.raises(NotImplementedError, match="the derivative for 'zeta' is not implemented"):
        flow.special.zeta(flow.tensor([2.0], requires_grad=True), flow.tensor([1.0])).sum().backward()


@pytest.mark.parametrize("a", [0.01, 1.0, 37.5, 1e3, 1e4, 1e6])
def test_gammainc_across_shapes(a):
    x = a * np.array([1e-3, 0.5, 0.9, 0.99, 1.0, 1.01, 1.1, 2.0, 10.0]) + np.array([0, 0, 0, 0, 0, 0, 0, 0, 1])
    fa, ta = both(np.full(x.shape, a))
    fx, tx = both(x)
    p, q = flow.special.gammainc(fa, fx), flow.special.gammaincc(fa, fx)
    close(p, torch.special.gammainc(ta, tx), rtol=1e-9, atol=1e-300)
    close(q, torch.special.gammaincc(ta, tx), rtol=1e-9, atol=1e-300)
    np.testing.assert_allclose(p.numpy() + q.numpy(), 1.0, rtol=1e-14)
    close(p, flow.igamma(fa, fx), rtol=0)


def test_igamma_refuses_numbers_like_torch():
    x = flow.tensor([1.0, 2.0])
    for op in ("igamma", "igammac", "gcd", "lcm", "nextafter"):
        with pytest.raises(TypeError, match=rf"{op}\(\): argument 'other' \(position 2\) must be Tensor, not float"):
            getattr(flow, op)(x, 2.0)
        with pytest.raises(TypeError):
            getattr(torch, op)(torch.tensor([1.0, 2.0]), 2.0)
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        x.igamma(2)


def numeric_gamma_grad(a, x):
    """-(dP/da) / pdf by quadrature of the integral for dP/da (trapezoid on a fine grid)."""
    t = np.linspace(0.0, x, 400001)[1:]
    log_base = (a - 1) * np.log(t) - t - math.lgamma(a)
    dpda = np.trapezoid(np.exp(log_base) * (np.log(t) - float(torch.digamma(torch.tensor(a)))), t)
    return -dpda / math.exp((a - 1) * math.log(x) - x - math.lgamma(a))


def test_standard_gamma_grad():
    alpha = np.array([1.5, 2.0, 3.0, 10.0])
    x = np.array([0.7, 1.5, 5.0, 12.0])
    got = flow._standard_gamma_grad(flow.tensor(alpha), flow.tensor(x)).numpy()
    expected = [numeric_gamma_grad(a, v) for a, v in zip(alpha, x)]
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    # torch's own approximation agrees to its accuracy, across small and large shapes and tails
    a = np.array([0.01, 0.3, 0.5, 2.0, 8.0, 50.0, 1e4, 1e4], dtype=np.float32)
    v = np.array([1e-30, 0.01, 3.0, 1.5, 30.0, 40.0, 9.9e3, 1.01e4], dtype=np.float32)
    np.testing.assert_allclose(flow._standard_gamma_grad(flow.tensor(a), flow.tensor(v)).numpy(),
                               torch._standard_gamma_grad(torch.tensor(a), torch.tensor(v)).numpy(), rtol=2e-3)
    assert float(flow._standard_gamma_grad(flow.tensor([2.0]), flow.tensor([0.0]))) == 0.0
    assert math.isnan(float(flow._standard_gamma_grad(flow.tensor([-1.0]), flow.tensor([1.0]))))


def test_gamma_rsample_gradient_is_the_implicit_one():
    flow.manual_seed(0)
    alpha = flow.full((2000,), 2.5, dtype=flow.float64, requires_grad=True)
    s = flow.distributions.Gamma(alpha, flow.tensor(1.0, dtype=flow.float64)).rsample()
    s.sum().backward()
    ref = flow._standard_gamma_grad(alpha.detach(), s.detach())
    np.testing.assert_allclose(alpha.grad.numpy(), ref.numpy(), rtol=1e-12)
    # E[dX/dalpha] = d E[X] / dalpha = 1 for the unit-rate Gamma
    assert abs(alpha.grad.mean().item() - 1.0) < 0.05


@pytest.mark.parametrize("dtype", [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8])
def test_gcd_lcm_extremes(dtype):
    info = torch.iinfo(dtype)
    vals = [info.min, info.min + 1, -1, 0, 1, 6, 4, info.max, info.max - 1, 12, -18]
    a = np.array([[v for v in vals for _ in vals]], dtype=np.int64).reshape(-1)
    b = np.array([v for _ in vals for v in vals], dtype=np.int64)
    ta, tb = torch.tensor(a).to(dtype), torch.tensor(b).to(dtype)
    fa, fb = flow.tensor(ta.numpy()), flow.tensor(tb.numpy())
    g = torch.gcd(ta, tb)
    np.testing.assert_array_equal(flow.gcd(fa, fb).numpy(), g.numpy())
    # torch's lcm divides by the gcd, which is -1 for (min, max) pairs: min / -1 kills it with SIGFPE at 32
    # and 64 bits. Ours wraps there (the product of min and max wraps to min); elsewhere both agree.
    ok = g != -1 if dtype.is_signed else torch.ones_like(g, dtype=torch.bool)
    np.testing.assert_array_equal(flow.lcm(fa, fb).numpy()[ok.numpy()], torch.lcm(ta[ok], tb[ok]).numpy())
    if not ok.all():
        wrapped = flow.lcm(fa[~flow.tensor(ok.numpy())], fb[~flow.tensor(ok.numpy())]).numpy()
        assert (wrapped == info.min).all()


def test_nextafter_half():
    a = np.array([0.0, -0.0, 1.0, 1.0, -2.0, 65504.0, 6e-8, np.inf, np.nan, 3.0], dtype=np.float16)
    b = np.array([1.0, -1.0, 2.0, 0.0, -3.0, np.inf, 0.0, 0.0, 1.0, 3.0], dtype=np.float16)
    out = flow.nextafter(flow.tensor(a), flow.tensor(b))
    ref = torch.nextafter(torch.tensor(a), torch.tensor(b))
    np.testing.assert_array_equal(out.numpy().view(np.uint16)[:8], ref.numpy().view(np.uint16)[:8])
    assert np.isnan(out.numpy()[8]) and out.numpy()[9] == 3.0
    with pytest.raises(NotImplementedError, match="nextafter_cpu"):
        flow.nextafter(flow.tensor([1.0], dtype=flow.bfloat16), flow.tensor([2.0], dtype=flow.bfloat16))


# ---- samplers: poisson, binomial, _standard_gamma -------------------------------------------------------
def test_poisson_moments_generator_and_errors():
    rates = flow.tensor([0.0, 0.5, 3.0, 9.99, 10.0, 42.0, 1e4], dtype=flow.float64)
    g = flow.Generator().manual_seed(7)
    draws = flow.stack([flow.poisson(rates, generator=g) for _ in range(4000)])
    assert draws.dtype == flow.float64 and (draws == draws.round()).all() and (draws >= 0).all()
    mean, var = draws.mean(0).numpy(), draws.var(0).numpy()
    np.testing.assert_allclose(mean[1:], rates.numpy()[1:], rtol=0.05)
    np.testing.assert_allclose(var[1:], rates.numpy()[1:], rtol=0.12)
    assert (draws[:, 0] == 0).all()
    # a generator's seed fixes the draw, whatever the thread count
    many = flow.rand(5000, dtype=flow.float64) * 30
    threads = flow.get_num_threads()
    try:
        flow.set_num_threads(1)
        a = flow.poisson(many, generator=flow.Generator().manual_seed(3))
        flow.set_num_threads(2)
        b = flow.poisson(many, generator=flow.Generator().manual_seed(3))
    finally:
        flow.set_num_threads(threads)
    assert flow.equal(a, b)
    with pytest.raises(RuntimeError, match="invalid Poisson rate, expected rate to be non-negative"):
        flow.poisson(flow.tensor([1.0, -1.0]))
    with pytest.raises(NotImplementedError, match="poisson_cpu"):
        flow.poisson(flow.tensor([3]))
    r = flow.tensor([3.0], requires_grad=True)
    flow.poisson(r).sum().backward()
    assert r.grad.tolist() == [0.0]


def test_binomial_moments_broadcast_and_edges():
    count = flow.tensor([[5.0], [40.0], [1000.0]], dtype=flow.float64)
    prob = flow.tensor([0.05, 0.5, 0.93], dtype=flow.float64)
    flow.manual_seed(0)
    draws = flow.stack([flow.binomial(count, prob) for _ in range(3000)])
    assert draws.shape == (3000, 3, 3)
    n, p = count.numpy(), prob.numpy()
    np.testing.assert_allclose(draws.mean(0).numpy(), n * p, rtol=0.06, atol=0.02)
    np.testing.assert_allclose(draws.var(0).numpy(), n * p * (1 - p), rtol=0.15, atol=0.02)
    assert ((draws >= 0) & (draws <= count)).all()
    edge = flow.binomial(flow.tensor([10.0, 0.0, 5.0, 7.0, -1.0, 2.5]), flow.tensor([0.5, 0.3, 0.0, 1.0, 0.5, 1.5]))
    ref = torch.binomial(torch.tensor([10.0, 0.0, 5.0, 7.0, -1.0, 2.5]), torch.tensor([0.5, 0.3, 0.0, 1.0, 0.5, 1.5]))
    np.testing.assert_array_equal(edge.numpy()[1:], ref.numpy()[1:])
    c = flow.tensor([3.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for aten::binomial is not implemented"):
        flow.binomial(c, flow.tensor([0.3])).sum().backward()


def test_standard_gamma_sampler():
    alpha = flow.tensor([0.05, 0.7, 1.0, 4.5, 300.0], dtype=flow.float64)
    flow.manual_seed(1)
    draws = flow.stack([flow._standard_gamma(alpha) for _ in range(4000)])
    np.testing.assert_allclose(draws.mean(0).numpy(), alpha.numpy(), rtol=0.08)
    np.testing.assert_allclose(draws.var(0).numpy(), alpha.numpy(), rtol=0.2)
    edge = flow._standard_gamma(flow.tensor([0.0, -1.0, float("nan"), float("inf")]))
    ref = torch._standard_gamma(torch.tensor([0.0, -1.0, float("nan"), float("inf")]))
    np.testing.assert_array_equal(edge.numpy(), ref.numpy())
    a = flow.tensor([2.0, 0.3], requires_grad=True)
    y = flow._standard_gamma(a)
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), flow._standard_gamma_grad(a.detach(), y.detach()).numpy())


# ---- orthogonal polynomials -----------------------------------------------------------------------------
POLYNOMIALS = [n for n in flow.special.__all__ if n.endswith(("_t", "_u", "_v", "_w", "_h", "_he", "_l", "_p"))
               and "polynomial" in n]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_orthogonal_polynomials_match_torch(name):
    assert len(POLYNOMIALS) == 12
    x = np.array([-2.0, -1.0, -0.5, 0.0, 0.3, 1.0, 1.5, 0.99, -0.7])
    for n in [-1, 0, 1, 2.5, 3, 7, 20, 150]:  # degrees past 6 take the trigonometric form inside (-1, 1)
        f, t = both(x)
        close(getattr(flow.special, name)(f, n), getattr(torch.special, name)(t, n), rtol=1e-9, atol=1e-9)
    # a tensor of degrees broadcasts against x; integer inputs give the default float dtype
    fx, tx = flow.tensor(x[:, None]), torch.tensor(x[:, None])
    degrees = np.array([0, 1, 4, 9])
    fn, tn = getattr(flow.special, name), getattr(torch.special, name)
    close(fn(fx, flow.tensor(degrees)), tn(tx, torch.tensor(degrees)), rtol=1e-9, atol=1e-9)
    assert getattr(flow.special, name)(flow.tensor([1, 2]), 3).dtype == flow.float32
    out = flow.empty(9, dtype=flow.float64)
    assert getattr(flow.special, name)(flow.tensor(x), 3, out=out) is out


def test_orthogonal_polynomials_nan_and_no_gradient():
    # a NaN argument gives NaN (torch returns a neighbouring element's value for some families)
    assert np.isnan(flow.special.legendre_polynomial_p(flow.tensor([float("nan")]), 3).numpy()).all()
    y = flow.special.hermite_polynomial_h(flow.tensor([0.3], requires_grad=True), 3)
    assert not y.requires_grad
