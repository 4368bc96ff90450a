"""The multivariate and matrix distributions of oneflow.distributions (LowRankMultivariateNormal, Wishart,
LKJCholesky, MixtureSameFamily, LogisticNormal), ExponentialFamily's Bregman entropies and the KL divergences
between them, against torch.distributions."""
import warnings

import numpy as np
import pytest
import torch

import oneflow as flow

FD, TD = flow.distributions, torch.distributions
g = np.random.default_rng(5)
LOC = g.standard_normal((2, 3))
W = g.standard_normal((2, 3, 2))
DIAG = g.uniform(0.5, 2.0, (2, 3))
COV = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]])
DF = np.array([4.0, 5.5])


def close(a, b, tol=1e-10):
    np.testing.assert_allclose(np.asarray(a.detach().numpy()), b.detach().numpy(), rtol=tol, atol=tol,
                               equal_nan=True)


def lowrank(lib, requires_grad=False):
    params = [lib.tensor(x, requires_grad=requires_grad) for x in (LOC, W, DIAG)]
    return getattr(FD if lib is flow else TD, "LowRankMultivariateNormal")(*params), params


def wishart(lib, **kw):
    D = FD if lib is flow else TD
    return D.Wishart(lib.tensor(DF), covariance_matrix=lib.tensor(COV), **kw)


def test_lowrank_mvn_matches_torch():
    (fd, fp), (td, tp) = lowrank(flow, True), lowrank(torch, True)
    assert (tuple(fd.batch_shape), tuple(fd.event_shape)) == (tuple(td.batch_shape), tuple(td.event_shape))
    for attr in ("mean", "mode", "variance", "scale_tril", "covariance_matrix", "precision_matrix"):
        close(getattr(fd, attr), getattr(td, attr))
    v = g.standard_normal((5, 2, 3))
    fl, tl = fd.log_prob(flow.tensor(v)), td.log_prob(torch.tensor(v))
    close(fl, tl)
    close(fd.entropy(), td.entropy())
    (fl.sum() + fd.entropy().sum()).backward()
    (tl.sum() + td.entropy().sum()).backward()
    for a, b in zip(fp, tp):
        close(a.grad, b.grad, 1e-9)
    fe, te = fd.expand((4, 2)), td.expand((4, 2))
    close(fe.log_prob(flow.tensor(v[0])), te.log_prob(torch.tensor(v[0])))
    assert tuple(fe.rsample((3,)).shape) == (3, 4, 2, 3)
    # a batch of loc against a shared covariance broadcasts
    shared = FD.LowRankMultivariateNormal(flow.tensor(LOC), flow.tensor(W[0]), flow.tensor(DIAG[0]))
    tshared = TD.LowRankMultivariateNormal(torch.tensor(LOC), torch.tensor(W[0]), torch.tensor(DIAG[0]))
    close(shared.log_prob(flow.tensor(v)), tshared.log_prob(torch.tensor(v)))


def test_lowrank_mvn_samples_and_pathwise_gradient():
    (fd, fp) = lowrank(flow, True)
    flow.manual_seed(7)
    n = 20_000
    x = fd.rsample((n,))
    assert tuple(x.shape) == (n, 2, 3)
    cov = np.einsum("...ij,...kj->...ik", W, W) + np.einsum("...i,ij->...ij", DIAG, np.eye(3))
    xs = x.detach().numpy()
    np.testing.assert_allclose(xs.mean(0), LOC, atol=0.1)
    np.testing.assert_allclose(np.einsum("nbi,nbj->bij", xs - LOC, xs - LOC) / n, cov, atol=0.15)
    # E[sum x^2] = sum(loc^2 + diag(W W^T) + D): gradients 2 loc, 2 W, 1
    (x.pow(2).sum() / n).backward()
    np.testing.assert_allclose(fp[0].grad.numpy(), 2 * LOC, atol=0.1)
    np.testing.assert_allclose(fp[1].grad.numpy(), 2 * W, atol=0.15)
    np.testing.assert_allclose(fp[2].grad.numpy(), np.ones_like(DIAG), atol=0.1)


def test_wishart_matches_torch():
    fw, tw = wishart(flow), wishart(torch)
    assert (tuple(fw.batch_shape), tuple(fw.event_shape)) == ((2,), (3, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's rsample warns about singular samples even when there are none
        torch.manual_seed(0)
        x = tw.sample((3,))
    close(fw.log_prob(flow.tensor(x.numpy())), tw.log_prob(x))
    for attr in ("mean", "mode", "variance", "precision_matrix", "scale_tril", "covariance_matrix"):
        close(getattr(fw, attr), getattr(tw, attr))
    close(fw.entropy(), tw.entropy())
    close(FD.ExponentialFamily.entropy(fw), tw.entropy(), 1e-8)  # the Bregman-divergence entropy agrees
    for kw in (dict(precision_matrix=np.linalg.inv(COV)), dict(scale_tril=np.linalg.cholesky(COV))):
        other = FD.Wishart(flow.tensor(DF), **{k: flow.tensor(v) for k, v in kw.items()})
        close(other.log_prob(flow.tensor(x.numpy())), tw.log_prob(x), 1e-8)
    fe, te = fw.expand((4, 2)), tw.expand((4, 2))
    close(fe.log_prob(flow.tensor(x[0].numpy())), te.log_prob(x[0]))
    flow.manual_seed(8)
    s = fe.rsample((2,))
    assert tuple(s.shape) == (2, 4, 2, 3, 3) and bool(fe.support.check(s).all())


def test_wishart_samples_and_gradient():
    flow.manual_seed(9)
    n = 4000
    L = flow.tensor(np.linalg.cholesky(COV), requires_grad=True)
    d = FD.Wishart(flow.tensor(5.0, dtype=flow.float64), scale_tril=L)
    x = d.rsample((n,))
    np.testing.assert_allclose(x.detach().numpy().mean(0), 5.0 * COV, rtol=0.1, atol=0.15)
    # sum(E[X]) = df * |L^T 1|^2: gradient 2 df 1 (1^T L)
    (x.sum() / n).backward()
    expected = 2 * 5.0 * np.outer(np.ones(3), np.ones(3) @ np.linalg.cholesky(COV))
    np.testing.assert_allclose(np.tril(L.grad.numpy()), np.tril(expected), rtol=0.1, atol=0.3)


def test_lkj_cholesky_matches_torch():
    conc = np.array([0.5, 1.0, 3.0])
    fl, tl = FD.LKJCholesky(4, flow.tensor(conc)), TD.LKJCholesky(4, torch.tensor(conc))
    assert (tuple(fl.batch_shape), tuple(fl.event_shape)) == ((3,), (4, 4))
    torch.manual_seed(1)
    v = tl.sample((5,))
    close(fl.log_prob(flow.tensor(v.numpy())), tl.log_prob(v))
    flow.manual_seed(10)
    n = 4000
    s = fl.sample((n,))
    assert tuple(s.shape) == (n, 3, 4, 4) and bool(FD.constraints.corr_cholesky.check(s).all())
    # every off-diagonal correlation has the marginal Beta(c + dim/2 - 1, c + dim/2 - 1) on [-1, 1], variance
    # 1 / (2c + dim - 1) (PyTorch 2.13's sampler misses this for rows below the second: not compared with it)
    rows, cols = np.tril_indices(4, -1)
    corr = (s @ s.transpose(-1, -2)).numpy()[..., rows, cols]
    np.testing.assert_allclose(corr.var(0), np.repeat(1 / (2 * conc + 3), 6).reshape(3, 6), rtol=0.1)
    np.testing.assert_allclose(corr.mean(0), 0, atol=0.05)
    fe = fl.expand((2, 3))
    close(fe.log_prob(flow.tensor(v[0].numpy())), tl.expand((2, 3)).log_prob(v[0]))
    assert tuple(fe.sample().shape) == (2, 3, 4, 4)


def _mixtures():
    mix = g.dirichlet(np.ones(3), 2)
    loc, scale = g.standard_normal((2, 3)), g.uniform(0.5, 2, (2, 3))
    mvn_loc = g.standard_normal((2, 3, 2))

    def build(D, t):
        normal = D.MixtureSameFamily(D.Categorical(t(mix)), D.Normal(t(loc), t(scale)))
        mvn = D.MixtureSameFamily(D.Categorical(t(mix[0])),
                                  D.MultivariateNormal(t(mvn_loc), t(np.eye(2) * 0.5).expand(2, 3, 2, 2)))
        return normal, mvn
    return build(FD, flow.tensor), build(TD, torch.tensor)


def test_mixture_same_family_matches_torch():
    (fn, fm), (tn, tm) = _mixtures()
    v = g.standard_normal((4, 2))
    close(fn.log_prob(flow.tensor(v)), tn.log_prob(torch.tensor(v)))
    close(fn.cdf(flow.tensor(v)), tn.cdf(torch.tensor(v)))
    for attr in ("mean", "variance"):
        close(getattr(fn, attr), getattr(tn, attr))
        close(getattr(fm, attr), getattr(tm, attr))
    vm = g.standard_normal((4, 2, 2))
    close(fm.log_prob(flow.tensor(vm)), tm.log_prob(torch.tensor(vm)))
    assert (tuple(fm.batch_shape), tuple(fm.event_shape)) == ((2,), (2,))
    flow.manual_seed(11)
    n = 20_000
    for d in (fn, fm):
        x = d.sample((n,))
        assert tuple(x.shape) == (n,) + tuple(d.batch_shape) + tuple(d.event_shape)
        se = np.sqrt(d.variance.numpy() / n)
        assert np.all(np.abs(x.numpy().mean(0) - d.mean.numpy()) < 5 * se)
        np.testing.assert_allclose(x.numpy().var(0), d.variance.numpy(), rtol=0.05)
    fe = fn.expand((3, 2))
    close(fe.log_prob(flow.tensor(v[0])), tn.expand((3, 2)).log_prob(torch.tensor(v[0])))
    assert tuple(fe.sample((2,)).shape) == (2, 3, 2) and not fe.has_rsample
    assert type(fn.support).__name__ == "MixtureSameFamilyConstraint"


def test_logistic_normal_matches_torch():
    loc, scale = g.standard_normal((2, 3)), g.uniform(0.5, 2, (2, 3))
    fl = [flow.tensor(x, requires_grad=True) for x in (loc, scale)]
    tl = [torch.tensor(x, requires_grad=True) for x in (loc, scale)]
    fd, td = FD.LogisticNormal(*fl), TD.LogisticNormal(*tl)
    assert (tuple(fd.batch_shape), tuple(fd.event_shape)) == ((2,), (4,))
    assert isinstance(fd.base_dist, FD.Independent) and isinstance(fd.transforms[0], FD.StickBreakingTransform)
    v = g.dirichlet(np.ones(4), (5, 2))
    flp, tlp = fd.log_prob(flow.tensor(v)), td.log_prob(torch.tensor(v))
    close(flp, tlp, 1e-9)
    flp.sum().backward()
    tlp.sum().backward()
    for a, b in zip(fl, tl):
        close(a.grad, b.grad, 1e-8)
    close(fd.loc, td.loc)
    assert tuple(FD.LogisticNormal(0.0, 1.0).event_shape) == (2,)
    s = fd.expand((3, 2)).rsample((4,))
    assert tuple(s.shape) == (4, 3, 2, 4) and bool(FD.constraints.simplex.check(s).all())


def _pair(name, which):
    """(oneflow, torch) distributions named ``name``; ``which`` picks one of two parameter sets."""
    rng = np.random.default_rng(100 + which)
    a, b, loc, p = rng.uniform(0.5, 3.0, 4), rng.uniform(0.5, 3.0, 4), rng.standard_normal(4), rng.uniform(0.2, 0.8, 4)
    specs = {
        "ContinuousBernoulli": dict(probs=np.where(np.arange(4) == 1, 0.4996, p)),
        "Pareto": dict(scale=a, alpha=b + 2.5), "Exponential": dict(rate=a), "Gamma": dict(concentration=a, rate=b),
        "Normal": dict(loc=loc, scale=a), "Uniform": dict(low=loc - 3, high=loc + 3),
        "Beta": dict(concentration1=a, concentration0=b), "Laplace": dict(loc=loc, scale=a),
        "Gumbel": dict(loc=loc, scale=a), "Chi2": dict(df=a * 2), "InverseGamma": dict(concentration=a, rate=b),
        "HalfCauchy": dict(scale=a), "Weibull": dict(scale=np.ones(4), concentration=np.full(4, 2.0)),
        "LogisticNormal": dict(loc=loc, scale=a),
    }
    if name == "Uniform" and which == 0:
        specs["Uniform"] = dict(low=p * 0.5 + 0.1, high=p * 0.5 + 0.4)  # inside (0, 1) and above Pareto's scale
    if name == "Pareto" and which == 1:
        specs["Pareto"] = dict(scale=a * 0.1, alpha=b + 2.5)  # q's support contains p's
    kw = specs[name]
    return (getattr(FD, name)(**{k: flow.tensor(v) for k, v in kw.items()}),
            getattr(TD, name)(**{k: torch.tensor(v) for k, v in kw.items()}))


KL_PAIRS = [("ContinuousBernoulli", "ContinuousBernoulli"), ("Pareto", "Pareto"), ("Beta", "ContinuousBernoulli"),
            ("Uniform", "ContinuousBernoulli"), ("ContinuousBernoulli", "Exponential"),
            ("ContinuousBernoulli", "Normal"), ("ContinuousBernoulli", "Uniform"), ("ContinuousBernoulli", "Pareto"),
            ("Pareto", "Exponential"), ("Pareto", "Gamma"), ("Pareto", "Normal"), ("Pareto", "Beta"),
            ("Pareto", "Uniform"), ("Pareto", "ContinuousBernoulli"), ("Uniform", "Pareto"), ("Beta", "Pareto"),
            ("Exponential", "Pareto"), ("Gamma", "Pareto"), ("Normal", "Pareto"), ("Laplace", "Pareto"),
            ("Gumbel", "Pareto"), ("Exponential", "ContinuousBernoulli"), ("Normal", "ContinuousBernoulli"),
            ("Chi2", "Chi2"), ("InverseGamma", "InverseGamma"), ("HalfCauchy", "HalfCauchy"),
            ("Weibull", "Weibull"), ("LogisticNormal", "LogisticNormal")]


@pytest.mark.parametrize("pair", KL_PAIRS)
def test_kl_matches_torch(pair):
    (fp, tp), (fq, tq) = _pair(pair[0], 0), _pair(pair[1], 1)
    close(FD.kl_divergence(fp, fq), TD.kl_divergence(tp, tq), 1e-9)


def test_multivariate_kl_matches_torch():
    (fp, _), (tp, _) = lowrank(flow), lowrank(torch)
    loc2, W2, D2 = g.standard_normal(3), g.standard_normal((3, 1)), g.uniform(0.5, 2, 3)
    fq = FD.LowRankMultivariateNormal(flow.tensor(loc2), flow.tensor(W2), flow.tensor(D2))
    tq = TD.LowRankMultivariateNormal(torch.tensor(loc2), torch.tensor(W2), torch.tensor(D2))
    fm = FD.MultivariateNormal(flow.tensor(loc2), flow.tensor(COV))
    tm = TD.MultivariateNormal(torch.tensor(loc2), torch.tensor(COV))
    for (a, b), (c, d) in (((fp, tp), (fq, tq)), ((fm, tm), (fp, tp)), ((fp, tp), (fm, tm)), ((fq, tq), (fp, tp))):
        close(FD.kl_divergence(a, c), TD.kl_divergence(b, d), 1e-9)
    fw2 = FD.Wishart(flow.tensor(DF[::-1].copy()), scale_tril=flow.tensor(np.linalg.cholesky(COV * 0.5)))
    tw2 = TD.Wishart(torch.tensor(DF[::-1].copy()), scale_tril=torch.tensor(np.linalg.cholesky(COV * 0.5)))
    close(FD.kl_divergence(wishart(flow), fw2), TD.kl_divergence(wishart(torch), tw2), 1e-8)  # Bregman divergence
    bad = FD.LowRankMultivariateNormal(flow.zeros(2, dtype=flow.float64), flow.ones(2, 1, dtype=flow.float64),
                                       flow.ones(2, dtype=flow.float64))
    with pytest.raises(ValueError):
        FD.kl_divergence(fp, bad)


@pytest.mark.parametrize("name", ["Normal", "Gamma", "Exponential", "Bernoulli", "ContinuousBernoulli"])
def test_exponential_family_bregman_matches_closed_forms(name):
    rng = np.random.default_rng(12)
    a, b = rng.uniform(0.2, 0.8, 4), rng.uniform(0.5, 3.0, 4)
    kw = {"Normal": dict(loc=a, scale=b), "Gamma": dict(concentration=b, rate=a), "Exponential": dict(rate=b),
          "Bernoulli": dict(probs=a), "ContinuousBernoulli": dict(probs=a)}[name]
    fd = getattr(FD, name)(**{k: flow.tensor(v) for k, v in kw.items()})
    td = getattr(TD, name)(**{k: torch.tensor(v) for k, v in kw.items()})
    assert isinstance(fd, FD.ExponentialFamily)
    close(FD.ExponentialFamily.entropy(fd), td.entropy(), 1e-7)
    fq = getattr(FD, name)(**{k: flow.tensor(v[::-1].copy()) for k, v in kw.items()})
    tq = getattr(TD, name)(**{k: torch.tensor(v[::-1].copy()) for k, v in kw.items()})
    close(FD.kl._kl_expfamily_expfamily(fd, fq), TD.kl_divergence(td, tq), 1e-7)
    with pytest.raises(NotImplementedError):
        FD.kl._kl_expfamily_expfamily(fd, FD.Poisson(flow.tensor(b)))


def test_dispatch_and_errors():
    p, q = FD.HalfNormal(flow.tensor([1.0])), FD.LogNormal(flow.tensor([0.0]), flow.tensor([1.0]))
    with pytest.raises(NotImplementedError):
        FD.kl_divergence(p, q)  # different transforms
    with pytest.raises(NotImplementedError):
        FD.kl_divergence(FD.Normal(flow.tensor([0.0]), flow.tensor([1.0])), FD.Bernoulli(flow.tensor([0.5])))
    t = flow.tensor
    eye = flow.eye(3, dtype=flow.float64)
    bad_value = [
        lambda: FD.LowRankMultivariateNormal(t(1.0), t(W), t(DIAG)),
        lambda: FD.LowRankMultivariateNormal(t(LOC), t(LOC), t(DIAG)),
        lambda: FD.LowRankMultivariateNormal(t(LOC), t(W[..., :2, :]), t(DIAG)),
        lambda: FD.LowRankMultivariateNormal(t(LOC), t(W), t(DIAG[..., :2])),
        lambda: FD.LowRankMultivariateNormal(t(LOC), t(W), t(-DIAG)),
        lambda: FD.LowRankMultivariateNormal(t(np.zeros((4, 3))), t(W), t(DIAG)),
        lambda: FD.Wishart(t(1.5), covariance_matrix=eye),
        lambda: FD.Wishart(t(4.0), covariance_matrix=-eye),
        lambda: FD.Wishart(t(4.0), scale_tril=t(np.triu(COV))),
        lambda: FD.Wishart(t(4.0), covariance_matrix=t(COV[0])),
        lambda: FD.Wishart(t(4.0), covariance_matrix=eye).log_prob(-eye),
        lambda: FD.LKJCholesky(1),
        lambda: FD.LKJCholesky(3, t([-1.0])),
        lambda: FD.LKJCholesky(3).log_prob(eye * 2),
        lambda: FD.MixtureSameFamily(FD.Normal(t([0.0]), t([1.0])), FD.Normal(t([0.0]), t([1.0]))),
        lambda: FD.MixtureSameFamily(FD.Categorical(t([0.5, 0.5])), "normal"),
        lambda: FD.MixtureSameFamily(FD.Categorical(t([0.5, 0.5])), FD.Normal(t([0.0] * 3), t([1.0] * 3))),
        lambda: FD.MixtureSameFamily(FD.Categorical(t(np.full((2, 2), 0.5))),
                                     FD.Normal(t(np.zeros((3, 2))), t(np.ones((3, 2))))),
        lambda: FD.LogisticNormal(t([0.0]), t([-1.0])),
        lambda: FD.LogisticNormal(t([0.0]), t([1.0])).log_prob(t([0.7, 0.7])),
    ]
    for i, fn in enumerate(bad_value):
        with pytest.raises(ValueError):
            fn()
            pytest.fail(f"case {i} did not raise")
    with pytest.raises(AssertionError):  # PyTorch's error type for this check
        FD.Wishart(t(4.0), covariance_matrix=eye, precision_matrix=eye)
    with pytest.warns(UserWarning):
        FD.Wishart(t(2.5), covariance_matrix=eye)  # ndim - 1 < df < ndim
