"""oneflow.distributions extras against torch.distributions: expand, Independent, LogNormal, Gamma, Beta
(values, gradients, sample shapes and statistics, KL divergences, validation errors)."""
import numpy as np
import pytest
import torch

import oneflow as flow

FD, TD = flow.distributions, torch.distributions
g = np.random.default_rng(1)
A = g.uniform(0.5, 3.0, 4)
B = g.uniform(0.5, 3.0, 4)
LOC = g.standard_normal(4)
POS = g.uniform(0.2, 0.8, 4)

# name -> (constructor args, a value in the support, has cdf/icdf?)
SPECS = {
    "LogNormal": ((LOC, A), POS * 3, True),
    "Gamma": ((A, B), POS * 3, False),
    "Beta": ((A, B), POS, False),
}


def build(lib, name, args, requires_grad=True):
    ts = [lib.tensor(a, requires_grad=requires_grad) for a in args]
    return getattr(FD if lib is flow else TD, name)(*ts), ts


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_values_and_gradients_match_torch(name):
    args, value, has_cdf = SPECS[name]
    fd, fp = build(flow, name, args)
    td, tp = build(torch, name, args)
    assert tuple(fd.batch_shape) == tuple(td.batch_shape) and tuple(fd.event_shape) == tuple(td.event_shape)
    for attr in ("mean", "variance", "stddev", "mode"):
        close(getattr(fd, attr), getattr(td, attr))
    close(fd.entropy(), td.entropy())
    fl, tl = fd.log_prob(flow.tensor(value)), td.log_prob(torch.tensor(value))
    close(fl, tl)
    fl.sum().backward()
    tl.sum().backward()
    for a, b in zip(fp, tp):
        close(a.grad, b.grad)
    if has_cdf:
        close(fd.cdf(flow.tensor(value)), td.cdf(torch.tensor(value)))
        close(fd.icdf(flow.tensor(POS)), td.icdf(torch.tensor(POS)))


def test_gamma_cdf_and_float32():
    fd, _ = build(flow, "Gamma", (A, B), False)
    td, _ = build(torch, "Gamma", (A, B), False)
    close(fd.cdf(flow.tensor(POS * 3)), td.cdf(torch.tensor(POS * 3)), 1e-8)
    f32 = FD.Gamma(flow.tensor(A, dtype=flow.float32), flow.tensor(B, dtype=flow.float32))
    t32 = TD.Gamma(torch.tensor(A, dtype=torch.float32), torch.tensor(B, dtype=torch.float32))
    v = POS.astype(np.float32)
    np.testing.assert_allclose(f32.log_prob(flow.tensor(v)).numpy(), t32.log_prob(torch.tensor(v)).numpy(), rtol=1e-6,
                               atol=1e-6)


def test_beta_mode_u_shaped():
    c1, c0 = np.array([0.5, 0.5, 2.0, 1.0]), np.array([0.5, 2.0, 0.5, 1.0])
    fm = FD.Beta(flow.tensor(c1), flow.tensor(c0)).mode.numpy()
    tm = TD.Beta(torch.tensor(c1), torch.tensor(c0)).mode.numpy()
    np.testing.assert_allclose(fm, tm, equal_nan=True)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_sample_shapes_and_statistics(name):
    flow.manual_seed(0)
    args, _, _ = SPECS[name]
    fd, _ = build(flow, name, args, requires_grad=False)
    assert fd.has_rsample
    assert tuple(fd.sample().shape) == (4,)
    assert tuple(fd.rsample((2, 3)).shape) == (2, 3, 4)
    n = 100000
    s = fd.sample((n,))
    assert bool(fd.support.check(s).all())
    mean, var = fd.mean.numpy(), fd.variance.numpy()
    se = np.sqrt(var / n)
    if name == "LogNormal":  # heavy tails: compare log-samples with the Normal instead
        s, mean, se = s.log(), LOC, A / np.sqrt(n)
        var = A ** 2
    assert np.all(np.abs(s.mean(0).numpy() - mean) < 5 * se)
    assert np.all(np.abs(s.var(0).numpy() / var - 1) < 0.05)


@pytest.mark.parametrize("name", ["Gamma", "Beta"])
def test_rsample_gradients(name):
    # d E[x] / d params, estimated by the pathwise (implicit reparameterization) gradient
    flow.manual_seed(0)
    fd, fp = build(flow, name, (A[:2], B[:2]))
    fd.rsample((4000,)).mean(0).sum().backward()
    td, tp = build(torch, name, (A[:2], B[:2]))
    td.mean.sum().backward()
    for a, b in zip(fp, tp):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=0.1, atol=0.02)


def test_standard_gamma_implicit_gradient_matches_torch():
    x, a = g.uniform(0.1, 5.0, 20), g.uniform(0.3, 5.0, 20)
    ours = flow._standard_gamma_grad(flow.tensor(a), flow.tensor(x)).numpy()
    ref = torch._standard_gamma_grad(torch.tensor(a), torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours, ref, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("name", ["Gamma", "Beta", "LogNormal"])
def test_kl_matches_torch(name):
    fp_, _ = build(flow, name, SPECS[name][0])
    tp_, _ = build(torch, name, SPECS[name][0])
    other = (SPECS[name][0][0][::-1].copy(), SPECS[name][0][1][::-1].copy())
    fq, _ = build(flow, name, other)
    tq, _ = build(torch, name, other)
    close(FD.kl_divergence(fp_, fq), TD.kl_divergence(tp_, tq))


def _pairs():
    a, b = np.array([[0.3, -1.0]]), np.array([[1.5, 0.7]])
    return [
        ("Normal", (a, b)), ("Uniform", (a, a + b)), ("Exponential", (b,)), ("Laplace", (a, b)),
        ("LogNormal", (a, b)), ("Gamma", (b, b + 1)), ("Beta", (b, b + 1)),
    ]


@pytest.mark.parametrize("name,args", _pairs())
def test_expand_matches_torch(name, args):
    fd, _ = build(flow, name, args, False)
    td, _ = build(torch, name, args, False)
    fe, te = fd.expand((3, 2)), td.expand((3, 2))
    assert type(fe) is type(fd)
    assert tuple(fe.batch_shape) == tuple(te.batch_shape) == (3, 2)
    assert tuple(fe.event_shape) == tuple(te.event_shape)
    assert fe._validate_args == fd._validate_args
    assert tuple(fe.sample((5,)).shape) == (5, 3, 2)
    close(fe.mean, te.mean)
    close(fe.entropy(), te.entropy())
    v = te.sample()
    close(fe.log_prob(flow.tensor(v.numpy())), te.log_prob(v))


def test_expand_discrete_and_multivariate():
    p = g.uniform(0.1, 0.9, (1, 2))
    for kw in ("probs", "logits"):
        fe = FD.Bernoulli(**{kw: flow.tensor(p)}).expand((3, 2))
        te = TD.Bernoulli(**{kw: torch.tensor(p)}).expand((3, 2))
        close(fe.log_prob(flow.ones(3, 2, dtype=flow.float64)), te.log_prob(torch.ones(3, 2, dtype=torch.float64)))
    c = g.uniform(0.1, 1.0, (1, 5))
    fe, te = FD.Categorical(flow.tensor(c)).expand((4,)), TD.Categorical(torch.tensor(c)).expand((4,))
    assert tuple(fe.batch_shape) == (4,) and tuple(fe.sample((2,)).shape) == (2, 4)
    close(fe.entropy(), te.entropy())
    cov = np.array([[2.0, 0.3], [0.3, 1.0]])
    fe = FD.MultivariateNormal(flow.zeros(2, dtype=flow.float64), flow.tensor(cov)).expand((3,))
    te = TD.MultivariateNormal(torch.zeros(2, dtype=torch.float64), torch.tensor(cov)).expand((3,))
    assert tuple(fe.batch_shape) == (3,) and tuple(fe.event_shape) == (2,)
    close(fe.covariance_matrix, te.covariance_matrix)
    v = te.sample()
    close(fe.log_prob(flow.tensor(v.numpy())), te.log_prob(v))
    off = FD.Normal(flow.tensor([0.0]), flow.tensor([1.0]), validate_args=False).expand((2,))
    assert off._validate_args is False


def test_independent_matches_torch():
    loc, scale = g.standard_normal((3, 4)), g.uniform(0.5, 2, (3, 4))
    fl, fs = flow.tensor(loc, requires_grad=True), flow.tensor(scale, requires_grad=True)
    tl, ts = torch.tensor(loc, requires_grad=True), torch.tensor(scale, requires_grad=True)
    fd, td = FD.Independent(FD.Normal(fl, fs), 1), TD.Independent(TD.Normal(tl, ts), 1)
    assert tuple(fd.batch_shape) == (3,) and tuple(fd.event_shape) == (4,)
    assert fd.has_rsample and not fd.has_enumerate_support
    v = g.standard_normal((2, 3, 4))
    fv, tv = fd.log_prob(flow.tensor(v)), td.log_prob(torch.tensor(v))
    close(fv, tv)
    fv.sum().backward()
    tv.sum().backward()
    close(fl.grad, tl.grad)
    close(fs.grad, ts.grad)
    close(fd.entropy(), td.entropy())
    for attr in ("mean", "variance", "mode"):
        close(getattr(fd, attr), getattr(td, attr))
    assert tuple(fd.rsample((5,)).shape) == (5, 3, 4)
    fe, te = fd.expand((2, 3)), td.expand((2, 3))
    assert tuple(fe.batch_shape) == tuple(te.batch_shape) and tuple(fe.event_shape) == tuple(te.event_shape)
    close(fe.log_prob(flow.tensor(v)), te.log_prob(torch.tensor(v)))
    f2, t2 = FD.Independent(FD.Normal(fl, fs), 2), TD.Independent(TD.Normal(tl, ts), 2)
    assert tuple(f2.batch_shape) == () and tuple(f2.event_shape) == (3, 4)
    close(f2.log_prob(flow.tensor(v)), t2.log_prob(torch.tensor(v)))
    close(FD.kl_divergence(fd, FD.Independent(FD.Normal(fl * 0, fs * 2), 1)),
          TD.kl_divergence(td, TD.Independent(TD.Normal(tl * 0, ts * 2), 1)))
    assert bool(fd.support.check(flow.tensor(v)).all()) and tuple(fd.support.check(flow.tensor(v)).shape) == (2, 3)
    with pytest.raises(ValueError):
        FD.Independent(FD.Normal(fl, fs), 3)


def test_validation_errors():
    with pytest.raises(ValueError):
        FD.Gamma(flow.tensor([-1.0]), flow.tensor([1.0]))
    with pytest.raises(ValueError):
        FD.Beta(flow.tensor([1.0]), flow.tensor([0.0]))
    with pytest.raises(ValueError):
        FD.LogNormal(flow.tensor([0.0]), flow.tensor([-1.0]))
    with pytest.raises(ValueError):
        FD.Gamma(flow.tensor([1.0]), flow.tensor([1.0])).log_prob(flow.tensor([-1.0]))
    with pytest.raises(ValueError):
        FD.Beta(flow.tensor([1.0]), flow.tensor([1.0])).log_prob(flow.tensor([1.5]))
    with pytest.raises(ValueError):
        FD.LogNormal(flow.tensor([0.0]), flow.tensor([1.0])).log_prob(flow.tensor([0.0]))
    FD.Gamma(flow.tensor([-1.0]), flow.tensor([1.0]), validate_args=False)
    with pytest.raises(NotImplementedError):
        FD.Distribution().expand((2,))


def _cross_params():
    a, b = np.array([0.4, 1.7]), np.array([1.3, 0.6])
    return {
        "Normal": (np.array([-0.3, 0.8]), a), "Laplace": (np.array([0.2, -0.5]), b), "Exponential": (b,),
        "Gamma": (a, b), "Beta": (b, a), "Uniform": (np.array([0.1, 0.3]), np.array([0.6, 0.9])),
    }


CROSS = [("Beta", "Exponential"), ("Beta", "Gamma"), ("Beta", "Normal"), ("Beta", "Uniform"),
         ("Exponential", "Beta"), ("Exponential", "Uniform"), ("Exponential", "Gamma"), ("Exponential", "Normal"),
         ("Gamma", "Beta"), ("Gamma", "Uniform"), ("Gamma", "Exponential"), ("Gamma", "Normal"),
         ("Laplace", "Beta"), ("Laplace", "Exponential"), ("Laplace", "Gamma"), ("Laplace", "Uniform"),
         ("Laplace", "Normal"), ("Normal", "Beta"), ("Normal", "Exponential"), ("Normal", "Gamma"),
         ("Normal", "Uniform"), ("Normal", "Laplace"), ("Uniform", "Beta"), ("Uniform", "Exponential"),
         ("Uniform", "Gamma"), ("Uniform", "Normal")]


@pytest.mark.parametrize("p_name,q_name", CROSS)
def test_cross_kl_matches_torch(p_name, q_name):
    params = _cross_params()
    if (p_name, q_name) == ("Beta", "Uniform"):
        params["Uniform"] = (np.array([-0.5, 0.2]), np.array([1.5, 1.5]))  # second: +inf, support not covered
    fp_, fpp = build(flow, p_name, params[p_name])
    fq, fqp = build(flow, q_name, params[q_name])
    tp_, tpp = build(torch, p_name, params[p_name])
    tq, tqp = build(torch, q_name, params[q_name])
    fk, tk = FD.kl_divergence(fp_, fq), TD.kl_divergence(tp_, tq)
    close(fk, tk)
    if bool(flow.isfinite(fk).all()):
        fk.sum().backward()
        tk.sum().backward()
        for a, b in zip(fpp + fqp, tpp + tqp):
            close(a.grad, b.grad)


def test_expand_subclass_with_custom_init_needs_its_own_expand():
    class Shifted(FD.Normal):
        def __init__(self, loc):
            super().__init__(loc, flow.ones_like(loc))

    with pytest.raises(NotImplementedError):
        Shifted(flow.zeros(2)).expand((3, 2))

    class Plain(FD.Normal):
        pass

    assert type(Plain(flow.zeros(2), flow.ones(2)).expand((3, 2))) is Plain
