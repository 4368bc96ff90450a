"""oneflow.distributions against torch.distributions: Cauchy, HalfNormal, Gumbel, Geometric, Poisson, Binomial,
OneHotCategorical, Multinomial, StudentT, Dirichlet (values, gradients, expand, sample statistics, KL, validation)."""
import numpy as np
import pytest
import torch

import oneflow as flow

FD, TD = flow.distributions, torch.distributions
g = np.random.default_rng(2)
A = g.uniform(0.5, 3.0, 4)
B = g.uniform(0.5, 3.0, 4)
LOC = g.standard_normal(4)
P = g.uniform(0.2, 0.8, 4)
PROBS = g.dirichlet(np.ones(3), 4)
CONC = g.uniform(0.5, 3.0, (4, 3))
COUNTS = np.array([[1.0, 2.0, 0.0], [0.0, 0.0, 3.0], [1.0, 1.0, 1.0], [3.0, 0.0, 0.0]])
ONE_HOT = np.eye(3)[[0, 2, 1, 1]]

# name -> (constructor keyword args, a value in the support, methods beyond log_prob)
SPECS = {
    "Cauchy": (dict(loc=LOC, scale=A), LOC + B, ("entropy", "cdf", "icdf")),
    "HalfNormal": (dict(scale=A), B, ("entropy", "cdf", "icdf")),
    "Gumbel": (dict(loc=LOC, scale=A), B, ("entropy", "cdf", "icdf")),
    "Geometric": (dict(probs=P), np.array([0.0, 1.0, 3.0, 7.0]), ("entropy",)),
    "Poisson": (dict(rate=A * 2), np.array([0.0, 1.0, 3.0, 7.0]), ()),
    "Binomial": (dict(total_count=10.0, probs=P), np.array([0.0, 1.0, 3.0, 10.0]), ("entropy",)),
    "OneHotCategorical": (dict(probs=PROBS), ONE_HOT, ("entropy",)),
    "Multinomial": (dict(total_count=3, probs=PROBS), COUNTS, ("entropy",)),
    "StudentT": (dict(df=A * 2, loc=LOC, scale=B), LOC + P, ("entropy",)),
    "Dirichlet": (dict(concentration=CONC), PROBS, ("entropy",)),
}
FLOAT_ARGS = {"loc", "scale", "probs", "logits", "rate", "df", "concentration", "low", "high", "concentration1",
              "concentration0"}


def build(lib, name, kwargs, requires_grad=True):
    made, params = {}, []
    for k, v in kwargs.items():
        if k in FLOAT_ARGS:
            made[k] = lib.tensor(v, requires_grad=requires_grad)
            params.append(made[k])
        else:
            made[k] = v
    return getattr(FD if lib is flow else TD, name)(**made), params


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_values_and_gradients_match_torch(name):
    kwargs, value, methods = SPECS[name]
    fd, fp = build(flow, name, kwargs)
    td, tp = build(torch, name, kwargs)
    assert tuple(fd.batch_shape) == tuple(td.batch_shape) and tuple(fd.event_shape) == tuple(td.event_shape)
    assert fd.has_rsample == td.has_rsample
    for attr in ("mean", "variance", "mode"):
        try:
            expected = getattr(td, attr)
        except NotImplementedError:
            continue
        close(getattr(fd, attr), expected)
    fl, tl = fd.log_prob(flow.tensor(value)), td.log_prob(torch.tensor(value))
    close(fl, tl)
    if "entropy" in methods:
        fl, tl = fl.sum() + fd.entropy().sum(), tl.sum() + td.entropy().sum()
        # PyTorch's Multinomial entropy takes lgamma(n + 1) of an integer tensor, in float32
        close(fd.entropy(), td.entropy(), 1e-7 if name == "Multinomial" else 1e-10)
    fl.sum().backward()
    tl.sum().backward()
    for a, b in zip(fp, tp):
        close(a.grad, b.grad)
    if "cdf" in methods:
        close(fd.cdf(flow.tensor(value)), td.cdf(torch.tensor(value)))
        close(fd.icdf(flow.tensor(P)), td.icdf(torch.tensor(P)))


@pytest.mark.parametrize("name", sorted(SPECS))
def test_expand_matches_torch(name):
    kwargs, value, _ = SPECS[name]
    fd = build(flow, name, kwargs, False)[0].expand((2, 4))
    td = build(torch, name, kwargs, False)[0].expand((2, 4))
    assert tuple(fd.batch_shape) == (2, 4) and tuple(fd.event_shape) == tuple(td.event_shape)
    close(fd.log_prob(flow.tensor(value)), td.log_prob(torch.tensor(value)))
    assert tuple(fd.sample((3,)).shape) == tuple(td.sample((3,)).shape)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_sample_shapes_and_statistics(name):
    kwargs = SPECS[name][0]
    fd, _ = build(flow, name, kwargs, False)
    n = 100_000
    flow.manual_seed(0)
    x = fd.sample((n,))
    assert tuple(x.shape) == (n,) + tuple(fd.batch_shape) + tuple(fd.event_shape)
    assert bool(fd.support.check(x).all())
    x = x.numpy()
    if name == "Cauchy":  # no moments: compare the median and the quartiles instead
        q = np.quantile(x, [0.25, 0.5, 0.75], axis=0)
        np.testing.assert_allclose(q[1], LOC, atol=0.05 * A.max())
        np.testing.assert_allclose(q[2] - q[0], 2 * A, rtol=0.05)
        return
    mean, var = fd.mean.numpy(), fd.variance.numpy()
    se = np.sqrt(var / n)
    assert np.all(np.abs(x.mean(0) - mean) < 5 * se + 1e-12), (x.mean(0), mean)
    if name != "StudentT":  # heavy tails make its sample variance too noisy
        assert np.allclose(x.var(0), var, rtol=0.05, atol=1e-12), (x.var(0), var)


@pytest.mark.parametrize("name", ["Cauchy", "HalfNormal", "Gumbel", "StudentT"])
def test_rsample_gradients(name):
    kwargs = SPECS[name][0]
    if name == "StudentT":  # df's gradient goes through igamma, which is slow: the Dirichlet test below covers it
        params = [flow.tensor(kwargs["loc"], requires_grad=True), flow.tensor(kwargs["scale"], requires_grad=True)]
        fd = FD.StudentT(flow.tensor(kwargs["df"]), *params)
    else:
        fd, params = build(flow, name, kwargs)
    flow.manual_seed(1)
    fd.rsample((50,)).sum().backward()
    for p in params:
        assert p.grad is not None and bool(flow.isfinite(p.grad).all())


def test_rsample_mean_gradient_statistics():
    # d/dscale E[HalfNormal] = sqrt(2/pi); d/dloc E[Gumbel] = 1, d/dscale E[Gumbel] = Euler's constant
    scale = flow.tensor([1.5], dtype=flow.float64, requires_grad=True)
    flow.manual_seed(2)
    FD.HalfNormal(scale).rsample((50_000,)).mean().backward()
    assert abs(scale.grad.item() - np.sqrt(2 / np.pi)) < 0.02
    conc = flow.tensor([2.0, 3.0], dtype=flow.float64, requires_grad=True)
    FD.Dirichlet(conc).rsample((3000,))[..., 0].mean().backward()
    # E[X_0] = a0 / (a0 + a1): gradient (a1, -a0) / (a0 + a1)^2
    np.testing.assert_allclose(conc.grad.numpy(), [3 / 25, -2 / 25], atol=0.01)


KL_PAIRS = [("Cauchy", "Cauchy"), ("HalfNormal", "HalfNormal"), ("Gumbel", "Gumbel"), ("Geometric", "Geometric"),
            ("Poisson", "Poisson"), ("Binomial", "Binomial"), ("OneHotCategorical", "OneHotCategorical"),
            ("Dirichlet", "Dirichlet")]

OTHER = {
    "Cauchy": dict(loc=LOC[::-1].copy(), scale=B), "HalfNormal": dict(scale=B), "Gumbel": dict(loc=-LOC, scale=B),
    "Geometric": dict(probs=P[::-1].copy()), "Poisson": dict(rate=B), "Binomial": dict(total_count=10.0, probs=1 - P),
    "OneHotCategorical": dict(probs=PROBS[::-1].copy()), "Dirichlet": dict(concentration=CONC[::-1].copy()),
    "Normal": dict(loc=LOC, scale=B), "Exponential": dict(rate=A), "Gamma": dict(concentration=A, rate=B),
    "Uniform": dict(low=LOC - 1, high=LOC + A), "Bernoulli": dict(probs=P), "Beta": dict(concentration1=A,
                                                                                          concentration0=B),
}
CROSS = [("Bernoulli", "Poisson"), ("Poisson", "Bernoulli"), ("Poisson", "Binomial"), ("Gumbel", "Normal"),
         ("Normal", "Gumbel"), ("Exponential", "Gumbel"), ("Gamma", "Gumbel"), ("Uniform", "Gumbel"),
         ("Gumbel", "Exponential"), ("Gumbel", "Gamma"), ("Gumbel", "Uniform"), ("Gumbel", "Beta")]


def _kwargs(name):
    return SPECS[name][0] if name in SPECS else OTHER[name]


@pytest.mark.parametrize("pair", KL_PAIRS + CROSS)
def test_kl_matches_torch(pair):
    p_name, q_name = pair
    q_kwargs = OTHER[q_name] if p_name == q_name else _kwargs(q_name)
    fp, fq = build(flow, p_name, _kwargs(p_name), False)[0], build(flow, q_name, q_kwargs, False)[0]
    tp, tq = build(torch, p_name, _kwargs(p_name), False)[0], build(torch, q_name, q_kwargs, False)[0]
    close(FD.kl_divergence(fp, fq), TD.kl_divergence(tp, tq))


def test_special_cases_match_torch():
    # StudentT moments for df <= 1 (NaN) and 1 < df <= 2 (infinite variance)
    df = np.array([0.5, 1.5, 3.0])
    close(FD.StudentT(flow.tensor(df)).mean, TD.StudentT(torch.tensor(df)).mean)
    close(FD.StudentT(flow.tensor(df)).variance, TD.StudentT(torch.tensor(df)).variance)
    # Dirichlet with all concentrations below one: the first vertex
    conc = np.array([[0.5, 0.7, 0.9], [2.0, 0.5, 3.0]])
    close(FD.Dirichlet(flow.tensor(conc)).mode, TD.Dirichlet(torch.tensor(conc)).mode)
    # Geometric with a sure success and Binomial from logits
    pr, v = np.array([1.0, 0.5]), np.array([0.0, 2.0])
    fg, tg = FD.Geometric(flow.tensor(pr)), TD.Geometric(torch.tensor(pr))
    close(fg.log_prob(flow.tensor(v)), tg.log_prob(torch.tensor(v)))
    lg, k = np.array([-2.0, 0.3, 4.0]), np.array([0.0, 2.0, 5.0])
    fb, tb = FD.Binomial(5, logits=flow.tensor(lg)), TD.Binomial(5, logits=torch.tensor(lg))
    close(fb.log_prob(flow.tensor(k)), tb.log_prob(torch.tensor(k)))
    close(fb.entropy(), tb.entropy())
    close(fb.enumerate_support(), tb.enumerate_support())
    fo = FD.OneHotCategorical(flow.tensor(PROBS))
    close(fo.enumerate_support(), TD.OneHotCategorical(torch.tensor(PROBS)).enumerate_support())
    # a large Poisson rate takes the split-piece path
    flow.manual_seed(3)
    x = FD.Poisson(flow.tensor([1200.0], dtype=flow.float64)).sample((2000,)).numpy()
    assert abs(x.mean() - 1200) < 5 * np.sqrt(1200 / 2000)


def test_validation_errors():
    bad = [
        lambda: FD.Cauchy(flow.tensor([0.0]), flow.tensor([-1.0])),
        lambda: FD.HalfNormal(flow.tensor([0.0])),
        lambda: FD.Gumbel(flow.tensor([float("nan")]), flow.tensor([1.0])),
        lambda: FD.Geometric(flow.tensor([0.0])),
        lambda: FD.Geometric(flow.tensor([1.5])),
        lambda: FD.Poisson(flow.tensor([-1.0])),
        lambda: FD.Binomial(flow.tensor([2.5]), flow.tensor([0.5])),
        lambda: FD.Binomial(flow.tensor([3.0]), flow.tensor([1.5])),
        lambda: FD.OneHotCategorical(flow.tensor([0.5, -0.5, 1.0])),
        lambda: FD.Multinomial(3, flow.tensor([0.5, -0.5, 1.0])),
        lambda: FD.StudentT(flow.tensor([0.0])),
        lambda: FD.Dirichlet(flow.tensor([1.0, 0.0])),
        lambda: FD.Dirichlet(flow.tensor(1.0)),
        lambda: FD.HalfNormal(flow.tensor([1.0])).log_prob(flow.tensor([-1.0])),
        lambda: FD.Poisson(flow.tensor([1.0])).log_prob(flow.tensor([1.5])),
        lambda: FD.Geometric(flow.tensor([0.5])).log_prob(flow.tensor([-1.0])),
        lambda: FD.Binomial(3, flow.tensor([0.5])).log_prob(flow.tensor([4.0])),
        lambda: FD.OneHotCategorical(flow.tensor([0.5, 0.5])).log_prob(flow.tensor([1.0, 1.0])),
        lambda: FD.Multinomial(2, flow.tensor([0.5, 0.5])).log_prob(flow.tensor([2.0, 1.0])),
        lambda: FD.Dirichlet(flow.tensor([1.0, 2.0])).log_prob(flow.tensor([0.5, 0.6])),
    ]
    for i, fn in enumerate(bad):
        with pytest.raises(ValueError):
            fn()
            pytest.fail(f"case {i} did not raise")
    with pytest.raises(NotImplementedError):
        FD.Multinomial(flow.tensor(3), flow.tensor([0.5, 0.5]))
    with pytest.raises(NotImplementedError):
        FD.kl_divergence(FD.Binomial(2, flow.tensor([0.5])), FD.Binomial(3, flow.tensor([0.5])))
    FD.StudentT(flow.tensor([0.0]), validate_args=False)  # validation off: no error
