"""The oneflow.distributions with scalar or vector events (Chi2, InverseGamma, FisherSnedecor,
Pareto, GeneralizedPareto, Weibull, Kumaraswamy, HalfCauchy, VonMises, ContinuousBernoulli, NegativeBinomial, the
relaxed Bernoulli / categorical family and the straight-through OneHotCategorical) against torch.distributions:
values, gradients, expand, samples, pathwise gradients and validation errors."""
import numpy as np
import pytest
import torch

import oneflow as flow

FD, TD = flow.distributions, torch.distributions
g = np.random.default_rng(4)
A = g.uniform(0.5, 3.0, 4)
B = g.uniform(0.5, 3.0, 4)
LOC = g.standard_normal(4)
P = g.uniform(0.2, 0.8, 4)
PROBS = g.dirichlet(np.ones(3), 4)
CB_PROBS = np.array([0.2, 0.4995, 0.5004, 0.9])  # two inside the Taylor-expanded region around 0.5
GP_CONC = np.array([0.0, 0.3, -0.2, 0.1])  # the zero-concentration limit and a bounded support

# name -> (constructor keyword args, a value in the support, methods beyond log_prob, tolerance)
SPECS = {
    "Chi2": (dict(df=A * 3), A, ("entropy",), 1e-10),
    "InverseGamma": (dict(concentration=A + 2, rate=B), A, ("entropy",), 1e-10),
    "FisherSnedecor": (dict(df1=A * 3, df2=B * 3 + 4), A, (), 1e-10),
    "Pareto": (dict(scale=B, alpha=A * 2), B + A, ("entropy", "cdf", "icdf"), 1e-10),
    "Weibull": (dict(scale=B, concentration=A + 1), A, ("entropy", "cdf", "icdf"), 1e-10),
    "Kumaraswamy": (dict(concentration1=A, concentration0=B), P, ("entropy", "cdf", "icdf"), 1e-10),
    "HalfCauchy": (dict(scale=A), B, ("entropy", "cdf", "icdf"), 1e-10),
    "VonMises": (dict(loc=LOC, concentration=np.array([0.5, 2.0, 5.0, 10.0])), B, (), 1e-10),
    "ContinuousBernoulli": (dict(probs=CB_PROBS), P, ("entropy", "cdf", "icdf"), 1e-9),
    "NegativeBinomial": (dict(total_count=A * 3, probs=P), np.array([0.0, 1.0, 3.0, 7.0]), (), 1e-10),
    "RelaxedBernoulli": (dict(temperature=np.array(0.7), probs=P), P, (), 1e-10),
    "RelaxedOneHotCategorical": (dict(temperature=np.array(0.6), probs=PROBS), PROBS[::-1].copy(), (), 1e-10),
    "OneHotCategoricalStraightThrough": (dict(probs=PROBS), np.eye(3)[[0, 2, 1, 1]], ("entropy",), 1e-10),
    # PyTorch's GeneralizedPareto only works in float32 (it compares with a float32 zero)
    "GeneralizedPareto": (dict(loc=LOC, scale=B, concentration=GP_CONC), LOC + P, ("entropy", "cdf", "icdf"), 2e-5),
}
FLOAT32 = {"GeneralizedPareto"}
SKIP_ATTRS = {"Kumaraswamy": ("mode",)}  # PyTorch's Kumaraswamy mode is NaN everywhere (see test_modes)


def build(lib, name, kwargs, requires_grad=True):
    dtype = np.float32 if name in FLOAT32 else np.float64
    made = {k: lib.tensor(np.asarray(v, dtype=dtype), requires_grad=requires_grad) for k, v in kwargs.items()}
    return getattr(FD if lib is flow else TD, name)(**made), list(made.values())


def as_value(lib, name, v):
    return lib.tensor(np.asarray(v, dtype=np.float32 if name in FLOAT32 else np.float64))


def close(a, b, tol=1e-10):
    if a is None or b is None:  # gradients: both absent or both present
        assert a is None and b is None
        return
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=tol, atol=tol,
                               equal_nan=True)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_values_and_gradients_match_torch(name):
    kwargs, value, methods, tol = SPECS[name]
    fd, fp = build(flow, name, kwargs)
    td, tp = build(torch, name, kwargs)
    assert tuple(fd.batch_shape) == tuple(td.batch_shape) and tuple(fd.event_shape) == tuple(td.event_shape)
    assert fd.has_rsample == td.has_rsample
    assert type(fd.support).__name__ == type(td.support).__name__
    for attr in ("mean", "variance", "stddev", "mode"):
        try:
            expected = getattr(td, attr)
        except NotImplementedError:
            continue
        if attr not in SKIP_ATTRS.get(name, ()):
            close(getattr(fd, attr), expected, tol)
    fl, tl = fd.log_prob(as_value(flow, name, value)), td.log_prob(as_value(torch, name, value))
    close(fl, tl, tol)
    if "entropy" in methods:
        close(fd.entropy(), td.entropy(), tol)
        fl, tl = fl.sum() + fd.entropy().sum(), tl.sum() + td.entropy().sum()
    if "cdf" in methods:
        close(fd.cdf(as_value(flow, name, value)), td.cdf(as_value(torch, name, value)), tol)
        fl, tl = fl.sum() + fd.cdf(as_value(flow, name, value)).sum(), tl.sum() + td.cdf(
            as_value(torch, name, value)).sum()
    if "icdf" in methods:
        close(fd.icdf(as_value(flow, name, P)), td.icdf(as_value(torch, name, P)), tol)
    fl.sum().backward()
    tl.sum().backward()
    for a, b in zip(fp, tp):
        close(a.grad, b.grad, tol * 10)


def test_logits_parameterizations_match_torch():
    lg = np.array([-3.0, -0.001, 0.0015, 2.0])
    for name, extra in (("ContinuousBernoulli", {}), ("NegativeBinomial", {"total_count": 3.5}),
                        ("RelaxedBernoulli", {"temperature": np.array(0.4)})):
        fkw = {k: flow.tensor(v) if isinstance(v, np.ndarray) else v for k, v in extra.items()}
        tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in extra.items()}
        fd = getattr(FD, name)(logits=flow.tensor(lg), **fkw)
        td = getattr(TD, name)(logits=torch.tensor(lg), **tkw)
        value = np.array([0.0, 1.0, 4.0, 2.0]) if name == "NegativeBinomial" else P
        close(fd.log_prob(flow.tensor(value)), td.log_prob(torch.tensor(value)))
        close(fd.probs, td.probs)
        if name != "RelaxedBernoulli":  # it has no moments
            close(fd.mean, td.mean)
    # a wide Taylor-expanded region exposes its coefficients
    cbp = np.array([0.43, 0.47, 0.52, 0.58])
    fcb = FD.ContinuousBernoulli(flow.tensor(cbp), lims=(0.4, 0.6))
    tcb = TD.ContinuousBernoulli(torch.tensor(cbp), lims=(0.4, 0.6))
    for fv, tv in ((fcb.log_prob(flow.tensor(P)), tcb.log_prob(torch.tensor(P))), (fcb.mean, tcb.mean),
                   (fcb.variance, tcb.variance), (fcb.entropy(), tcb.entropy())):
        close(fv, tv, 1e-12)
    close(FD.ExponentialFamily.entropy(fcb), TD.ExponentialFamily.entropy(tcb), 1e-9)
    ld = FD.relaxed.LogitRelaxedBernoulli(flow.tensor(0.3, dtype=flow.float64), logits=flow.tensor(lg))
    tld = TD.relaxed_bernoulli.LogitRelaxedBernoulli(torch.tensor(0.3, dtype=torch.float64), logits=torch.tensor(lg))
    close(ld.log_prob(flow.tensor(LOC)), tld.log_prob(torch.tensor(LOC)))
    fr = FD.RelaxedOneHotCategorical(flow.tensor(0.5, dtype=flow.float64), logits=flow.tensor(np.log(PROBS)))
    tr = TD.RelaxedOneHotCategorical(torch.tensor(0.5, dtype=torch.float64), logits=torch.tensor(np.log(PROBS)))
    close(fr.log_prob(flow.tensor(PROBS)), tr.log_prob(torch.tensor(PROBS)))
    assert isinstance(fr.base_dist, FD.relaxed.ExpRelaxedCategorical)


def test_modes_and_special_cases():
    # Kumaraswamy: ((a - 1) / (a b - 1)) ** (1 / a) where a, b >= 1 (PyTorch returns NaN throughout)
    a, b = np.array([2.0, 3.0, 0.5, 2.0]), np.array([3.0, 2.0, 2.0, 0.7])
    mode = FD.Kumaraswamy(flow.tensor(a), flow.tensor(b)).mode.numpy()
    expected = ((a[:2] - 1) / (a[:2] * b[:2] - 1)) ** (1 / a[:2])
    np.testing.assert_allclose(mode[:2], expected, rtol=1e-12)
    assert np.isnan(mode[2:]).all()
    # the density at the mode is the largest
    k = FD.Kumaraswamy(flow.tensor(a[:2]), flow.tensor(b[:2]))
    at_mode = k.log_prob(flow.tensor(mode[:2])).numpy()
    for step in (-1e-3, 1e-3):
        assert np.all(k.log_prob(flow.tensor(mode[:2] + step)).numpy() < at_mode)
    # Weibull with concentration <= 1 has its mode at 0
    w = FD.Weibull(flow.tensor([1.0, 2.0]), flow.tensor([0.5, 1.0]))
    np.testing.assert_allclose(w.mode.numpy(), [0.0, 0.0])
    # moments that do not exist
    close(FD.InverseGamma(flow.tensor([0.5, 1.5]), flow.tensor([1.0, 1.0])).variance,
          TD.InverseGamma(torch.tensor([0.5, 1.5]), torch.tensor([1.0, 1.0])).variance)
    close(FD.InverseGamma(flow.tensor([0.5, 1.5]), flow.tensor([1.0, 1.0])).mean,
          TD.InverseGamma(torch.tensor([0.5, 1.5]), torch.tensor([1.0, 1.0])).mean)
    df = np.array([1.5, 3.0, 5.0])
    fs, ts = FD.FisherSnedecor(flow.tensor(df), flow.tensor(df)), TD.FisherSnedecor(torch.tensor(df), torch.tensor(df))
    for attr in ("mean", "mode", "variance"):
        close(getattr(fs, attr), getattr(ts, attr))
    pa = FD.Pareto(flow.tensor([1.0, 2.0]), flow.tensor([0.5, 1.5]))
    close(pa.variance, TD.Pareto(torch.tensor([1.0, 2.0]), torch.tensor([0.5, 1.5])).variance)
    gp, tgp = FD.GeneralizedPareto(0.0, 1.0, 0.7), TD.GeneralizedPareto(0.0, 1.0, 0.7)
    close(gp.variance, tgp.variance)
    close(gp.mean, tgp.mean)
    assert tuple(gp.batch_shape) == () and type(gp.support).__name__ == type(tgp.support).__name__
    nb = FD.NegativeBinomial(flow.tensor([0.0, 2.0]), flow.tensor([0.3, 0.3]))
    close(nb.log_prob(flow.tensor([0.0, 0.0])),
          TD.NegativeBinomial(torch.tensor([0.0, 2.0]), torch.tensor([0.3, 0.3])).log_prob(torch.tensor([0.0, 0.0])))
    close(FD.Chi2(flow.tensor(A)).df, torch.tensor(A))
    assert isinstance(FD.Chi2(flow.tensor(A)), FD.Gamma)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_expand_matches_torch(name):
    kwargs, value, _, tol = SPECS[name]
    fd = build(flow, name, kwargs, False)[0].expand((2, 4))
    td = build(torch, name, kwargs, False)[0].expand((2, 4))
    assert type(fd) is getattr(FD, name)
    assert tuple(fd.batch_shape) == (2, 4) and tuple(fd.event_shape) == tuple(td.event_shape)
    close(fd.log_prob(as_value(flow, name, value)), td.log_prob(as_value(torch, name, value)), tol)
    assert tuple(fd.sample((3,)).shape) == tuple(td.sample((3,)).shape)
    if fd.has_rsample:
        assert tuple(fd.rsample().shape) == tuple(td.rsample().shape)


MOMENT_CHECKED = ["Chi2", "InverseGamma", "FisherSnedecor", "Weibull", "Kumaraswamy", "ContinuousBernoulli",
                  "NegativeBinomial", "GeneralizedPareto", "OneHotCategoricalStraightThrough"]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_sample_shapes_and_statistics(name):
    kwargs = SPECS[name][0]
    fd, _ = build(flow, name, kwargs, False)
    n = 20_000
    flow.manual_seed(5)
    x = fd.sample((n,))
    assert tuple(x.shape) == (n,) + tuple(fd.batch_shape) + tuple(fd.event_shape)
    assert bool(fd.support.check(x).all())
    if name in MOMENT_CHECKED:
        xs = x.numpy().astype(np.float64)
        mean, var = fd.mean.numpy(), fd.variance.numpy()
        finite = np.isfinite(var)
        se = np.sqrt(var[finite] / n)
        assert np.all(np.abs(xs.mean(0)[finite] - mean[finite]) < 5 * se + 1e-12), (xs.mean(0), mean)
    elif "cdf" in SPECS[name][2]:  # heavy tails: the cdf of the samples is uniform
        u = fd.cdf(x).numpy()
        assert np.all(np.abs(u.mean(0) - 0.5) < 5 * np.sqrt(1 / 12 / n))
        assert np.all(np.abs((u < 0.25).mean(0) - 0.25) < 5 * np.sqrt(0.1875 / n))
    elif name == "VonMises":  # E[cos(x - loc)] = I1 / I0 = 1 - circular variance
        c = np.cos(x.numpy() - LOC).mean(0)
        np.testing.assert_allclose(c, 1 - fd.variance.numpy(), atol=0.02)
    elif name == "RelaxedBernoulli":  # P(X > 1/2) = probs
        np.testing.assert_allclose((x.numpy() > 0.5).mean(0), P, atol=0.02)
    elif name == "RelaxedOneHotCategorical":  # the argmax is a categorical draw
        freq = np.eye(3)[x.numpy().argmax(-1)].mean(0)
        np.testing.assert_allclose(freq, PROBS, atol=0.02)


OTHER_TRANSFORMED = {"LogNormal": dict(loc=LOC, scale=A), "Gumbel": dict(loc=LOC, scale=A), "HalfNormal": dict(scale=A)}


@pytest.mark.parametrize("name", ["Weibull", "Pareto", "Kumaraswamy", "HalfCauchy", "LogNormal", "Gumbel",
                                  "HalfNormal"])
def test_pathwise_gradients_match_torch(name):
    # the base sampled by inverse CDF from the same uniforms in both libraries, then pushed through each
    # library's transforms: rsample and its parameter gradients agree
    kwargs = SPECS[name][0] if name in SPECS else OTHER_TRANSFORMED[name]
    fd, fp = build(flow, name, kwargs)
    td, tp = build(torch, name, kwargs)
    u = g.uniform(0.05, 0.95, (5, 4))
    fd.base_dist.rsample = lambda sample_shape=(): fd.base_dist.icdf(flow.tensor(u))
    td.base_dist.rsample = lambda sample_shape=(): td.base_dist.icdf(torch.tensor(u))
    fy, ty = fd.rsample((5,)), td.rsample((5,))
    close(fy, ty, 1e-9)
    fy.pow(2).sum().backward()
    ty.pow(2).sum().backward()
    for a, b in zip(fp, tp):
        close(a.grad, b.grad, 1e-8)


@pytest.mark.parametrize("name", ["RelaxedBernoulli", "RelaxedOneHotCategorical"])
def test_relaxed_rsample_gradients_match_torch(name, monkeypatch):
    # both libraries draw their Gumbel / logistic noise from rand: fix its output
    kwargs = SPECS[name][0]
    fd, fp = build(flow, name, kwargs)
    td, tp = build(torch, name, kwargs)
    u = g.uniform(0.01, 0.99, (6,) + tuple(td.batch_shape) + tuple(td.event_shape))
    monkeypatch.setattr(flow, "rand", lambda *args, **kw: flow.tensor(u))
    monkeypatch.setattr(torch, "rand", lambda *args, **kw: torch.tensor(u))
    fy, ty = fd.rsample((6,)), td.rsample((6,))
    close(fy, ty, 1e-9)
    (fy * flow.tensor(u)).sum().backward()
    (ty * torch.tensor(u)).sum().backward()
    for a, b in zip(fp, tp):
        close(a.grad, b.grad, 1e-8)


@pytest.mark.parametrize("name", ["ContinuousBernoulli", "GeneralizedPareto"])
def test_inverse_cdf_sampler_gradients_match_torch(name):
    # rsample is icdf(U): for the same U the gradients agree
    fd, fp = build(flow, name, SPECS[name][0])
    td, tp = build(torch, name, SPECS[name][0])
    fd.icdf(as_value(flow, name, P)).sum().backward()
    td.icdf(as_value(torch, name, P)).sum().backward()
    for a, b in zip(fp, tp):
        close(a.grad, b.grad, 1e-5 if name in FLOAT32 else 1e-9)


def test_gamma_based_rsample_gradients():
    # d/dparam E[X] by the pathwise (implicit reparameterization) gradient against the closed form
    flow.manual_seed(6)
    n = 4000
    c, r = flow.tensor([3.5], dtype=flow.float64, requires_grad=True), flow.tensor([2.0], dtype=flow.float64,
                                                                                  requires_grad=True)
    FD.InverseGamma(c, r).rsample((n,)).mean().backward()
    # E = r / (c - 1): dE/dc = -r / (c - 1)^2, dE/dr = 1 / (c - 1)
    np.testing.assert_allclose([c.grad.item(), r.grad.item()], [-2.0 / 2.5 ** 2, 1 / 2.5], rtol=0.15)
    df = flow.tensor([3.0], dtype=flow.float64, requires_grad=True)
    FD.Chi2(df).rsample((n,)).mean().backward()
    assert abs(df.grad.item() - 1.0) < 0.1
    df2 = flow.tensor([8.0], dtype=flow.float64, requires_grad=True)
    FD.FisherSnedecor(flow.tensor([5.0], dtype=flow.float64), df2).rsample((n,)).mean().backward()
    # E = df2 / (df2 - 2): dE/ddf2 = -2 / (df2 - 2)^2
    assert abs(df2.grad.item() + 2 / 36) < 0.02
    # the straight-through gradient is that of probs, whatever the draw
    probs, tprobs = flow.tensor(PROBS[0], requires_grad=True), torch.tensor(PROBS[0], requires_grad=True)
    sample = FD.OneHotCategoricalStraightThrough(probs).rsample((3,))
    (sample * flow.tensor([1.0, 2.0, 3.0], dtype=flow.float64)).sum().backward()
    (TD.OneHotCategoricalStraightThrough(tprobs).rsample((3,)) * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    close(probs.grad, tprobs.grad)
    assert bool((sample.sum(-1) == 1).all())


def test_validation_errors():
    t = flow.tensor
    bad = [
        lambda: FD.Chi2(t([-1.0])),
        lambda: FD.InverseGamma(t([1.0]), t([0.0])),
        lambda: FD.FisherSnedecor(t([1.0]), t([-2.0])),
        lambda: FD.Pareto(t([0.0]), t([1.0])),
        lambda: FD.Pareto(t([1.0]), t([2.0])).log_prob(t([0.5])),
        lambda: FD.GeneralizedPareto(t([0.0]), t([-1.0]), t([0.1])),
        lambda: FD.GeneralizedPareto(t([0.0]), t([1.0]), t([-0.5])).log_prob(t([3.0])),
        lambda: FD.Weibull(t([1.0]), t([0.0])),
        lambda: FD.Kumaraswamy(t([1.0]), t([-1.0])),
        lambda: FD.Kumaraswamy(t([1.0]), t([1.0])).log_prob(t([1.5])),
        lambda: FD.HalfCauchy(t([-1.0])),
        lambda: FD.HalfCauchy(t([1.0])).log_prob(t([-1.0])),
        lambda: FD.VonMises(t([0.0]), t([0.0])),
        lambda: FD.ContinuousBernoulli(t([1.5])),
        lambda: FD.ContinuousBernoulli(t([0.3])).log_prob(t([1.5])),
        lambda: FD.ContinuousBernoulli(),
        lambda: FD.NegativeBinomial(t([-1.0]), t([0.5])),
        lambda: FD.NegativeBinomial(t([2.0]), t([1.0])),
        lambda: FD.NegativeBinomial(t([2.0]), t([0.5])).log_prob(t([1.5])),
        lambda: FD.NegativeBinomial(t([2.0]), t([0.5]), logits=t([0.0])),
        lambda: FD.RelaxedBernoulli(t(0.5), t([1.5])),
        lambda: FD.RelaxedBernoulli(t(0.5), t([0.5])).log_prob(t([1.5])),
        lambda: FD.RelaxedOneHotCategorical(t(0.5), t([0.5, -0.5])),
        lambda: FD.RelaxedOneHotCategorical(t(0.5), t([0.5, 0.5])).log_prob(t([0.5, 0.6])),
        lambda: FD.OneHotCategoricalStraightThrough(t([0.5, -0.5])),
    ]
    for i, fn in enumerate(bad):
        with pytest.raises(ValueError):
            fn()
            pytest.fail(f"case {i} did not raise")
    FD.Weibull(t([1.0]), t([0.0]), validate_args=False)  # validation off: no error


def test_class_structure_matches_torch():
    transformed = ["Weibull", "Pareto", "Kumaraswamy", "LogisticNormal", "RelaxedBernoulli", "HalfCauchy",
                   "InverseGamma", "LogNormal", "HalfNormal", "Gumbel", "RelaxedOneHotCategorical"]
    for name in transformed:
        assert issubclass(getattr(FD, name), FD.TransformedDistribution), name
    for name in dir(TD):
        cls = getattr(TD, name)
        if isinstance(cls, type) and issubclass(cls, TD.Distribution):
            ours = getattr(FD, name)
            for base in ("TransformedDistribution", "ExponentialFamily"):
                assert issubclass(ours, getattr(FD, base)) == issubclass(cls, getattr(TD, base)), (name, base)
    d = FD.HalfCauchy(flow.tensor([1.0]))
    assert isinstance(d.base_dist, FD.Cauchy) and isinstance(d.transforms[0], FD.transforms.AbsTransform)
    w = FD.Weibull(flow.tensor([1.0]), flow.tensor([2.0]))
    assert isinstance(w.base_dist, FD.Exponential) and len(w.transforms) == 2
