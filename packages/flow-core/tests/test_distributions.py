"""oneflow.distributions against torch.distributions: densities, CDFs, entropies, moments and their
gradients; sample shapes and statistics; KL divergences; validation errors."""
import numpy as np
import pytest
import torch

import oneflow as flow

FD, TD = flow.distributions, torch.distributions
g = np.random.default_rng(0)
LOC = g.standard_normal(4).astype(np.float64)
SCALE = g.uniform(0.5, 2.0, 4)
PROBS = g.uniform(0.05, 0.95, 4)
CAT = g.uniform(0.1, 1.0, (3, 5))

# name -> (constructor args as numpy arrays, a value inside the support for log_prob, icdf/cdf?)
SPECS = {
    "Normal": ((LOC, SCALE), g.standard_normal(4), True),
    "Uniform": ((LOC - 1, LOC + SCALE), LOC - 1 + 0.3 * SCALE, True),
    "Exponential": ((SCALE,), g.uniform(0, 3, 4), True),
    "Laplace": ((LOC, SCALE), g.standard_normal(4), True),
    "Bernoulli": ((PROBS,), np.array([0.0, 1.0, 1.0, 0.0]), False),
    "Categorical": ((CAT,), np.array([0.0, 4.0, 2.0]), False),
}


def build(lib, name, args, requires_grad=True):
    D = FD if lib is flow else TD
    ts = [lib.tensor(a, requires_grad=requires_grad) for a in args]
    if name in ("Bernoulli", "Categorical"):
        return getattr(D, name)(probs=ts[0]), ts
    return getattr(D, name)(*ts), ts


@pytest.mark.parametrize("name", sorted(SPECS))
def test_values_and_gradients_match_torch(name):
    args, value, has_cdf = SPECS[name]
    fd, fp = build(flow, name, args)
    td, tp = build(torch, name, args)
    assert tuple(fd.batch_shape) == tuple(td.batch_shape) and tuple(fd.event_shape) == tuple(td.event_shape)
    fv, tv = flow.tensor(value), torch.tensor(value)
    pairs = [(fd.log_prob(fv), td.log_prob(tv)), (fd.entropy(), td.entropy())]
    for attr in ("mean", "variance", "stddev", "mode"):
        pairs.append((getattr(fd, attr), getattr(td, attr)))
    if has_cdf:
        pairs.append((fd.cdf(fv), td.cdf(tv)))
        q = flow.tensor(np.linspace(0.1, 0.9, 4))
        pairs.append((fd.icdf(q), td.icdf(torch.tensor(q.numpy()))))
    for f, t in pairs:
        np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
    fs = sum(f.sum() for f, _ in pairs if f.requires_grad and not np.isnan(f.detach().numpy()).any())
    ts = sum(t.sum() for _, t in pairs if t.requires_grad and not np.isnan(t.detach().numpy()).any())
    fs.backward()
    ts.backward()
    for a, b in zip(fp, tp):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_sample_shapes_and_statistics(name):
    args, _, _ = SPECS[name]
    flow.manual_seed(0)
    d, _ = build(flow, name, args, requires_grad=False)
    assert tuple(d.sample().shape) == tuple(d.batch_shape)
    x = d.sample((100_000,))
    assert tuple(x.shape) == (100_000,) + tuple(d.batch_shape)
    assert bool(d.support.check(x).all())
    if name == "Categorical":
        freq = np.stack([np.bincount(c, minlength=5) for c in x.numpy().T.astype(np.int64)]) / 100_000
        np.testing.assert_allclose(freq, CAT / CAT.sum(-1, keepdims=True), atol=6e-3)
        return
    np.testing.assert_allclose(x.numpy().mean(0), d.mean.numpy(), atol=0.03 * float(d.stddev.max()))
    np.testing.assert_allclose(x.numpy().std(0), d.stddev.numpy(), rtol=0.03)


@pytest.mark.parametrize("name", ["Normal", "Uniform", "Exponential", "Laplace"])
def test_rsample_is_differentiable(name):
    args, _, _ = SPECS[name]
    d, params = build(flow, name, args)
    assert d.has_rsample
    d.rsample((1000,)).mean().backward()
    assert all(p.grad is not None and np.isfinite(p.grad.numpy()).all() for p in params)
    with pytest.raises(RuntimeError):
        d.sample((3,)).sum().backward()  # sample() carries no graph


KL_PAIRS = [("Normal", (LOC[::-1].copy(), SCALE[::-1].copy())), ("Uniform", (LOC - 2, LOC + SCALE + 1)),
            ("Exponential", (SCALE[::-1].copy(),)), ("Laplace", (LOC[::-1].copy(), SCALE)),
            ("Bernoulli", (PROBS[::-1].copy(),)), ("Categorical", (CAT[::-1].copy(),))]


@pytest.mark.parametrize("name,qargs", KL_PAIRS, ids=[k for k, _ in KL_PAIRS])
def test_kl_divergence_matches_torch(name, qargs):
    pargs = SPECS[name][0]
    fp, _ = build(flow, name, pargs)
    fq, _ = build(flow, name, qargs)
    tp, _ = build(torch, name, pargs)
    tq, _ = build(torch, name, qargs)
    np.testing.assert_allclose(FD.kl_divergence(fp, fq).detach().numpy(), TD.kl_divergence(tp, tq).detach().numpy(),
                               rtol=1e-10, atol=1e-12)


def test_kl_edge_cases_and_unregistered_pairs():
    p = FD.Categorical(probs=flow.tensor([0.5, 0.5, 0.0]))
    q = FD.Categorical(probs=flow.tensor([0.5, 0.0, 0.5]))
    assert np.isinf(FD.kl_divergence(p, q).item())
    assert np.isfinite(FD.kl_divergence(q, FD.Categorical(probs=flow.tensor([0.4, 0.3, 0.3]))).item())
    with pytest.raises(NotImplementedError, match="No KL\\(p \\|\\| q\\) is implemented"):
        FD.kl_divergence(FD.Normal(0.0, 1.0), FD.Bernoulli(0.5))


def test_validation_errors_match_torch():
    cases = [lambda D: D.Normal(0.0, -1.0), lambda D: D.Bernoulli(probs=1.5), lambda D: D.Exponential(0.0),
             lambda D: D.Uniform(1.0, 0.0), lambda D: D.Bernoulli(probs=0.5, logits=0.0),
             lambda D: D.Normal(0.0, 1.0).log_prob(0.5),
             lambda D: D.Exponential(1.0).log_prob(-(D is TD and torch.tensor(1.0) or flow.tensor(1.0))),
             lambda D: D.Categorical(probs=(D is TD and torch or flow).ones(3)).log_prob(
                 (D is TD and torch or flow).tensor(3))]
    for case in cases:
        with pytest.raises(ValueError) as want:
            case(TD)
        with pytest.raises(ValueError) as got:
            case(FD)
        first = lambda e: str(e.value).split("(")[0].split(":")[0]  # noqa: E731
        assert first(got) == first(want), (str(got.value), str(want.value))
    assert np.isnan(FD.Normal(0.0, -1.0, validate_args=False).log_prob(flow.tensor(0.0)).item())


def _mvn_params():
    a = g.standard_normal((3, 3))
    cov = a @ a.T + 3 * np.eye(3)
    return g.standard_normal((2, 3)), cov


@pytest.mark.parametrize("param", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_multivariate_normal_matches_torch(param):
    loc, cov = _mvn_params()
    value = {"covariance_matrix": cov, "precision_matrix": np.linalg.inv(cov), "scale_tril": np.linalg.cholesky(cov)}
    fl, tl = flow.tensor(loc, requires_grad=True), torch.tensor(loc, requires_grad=True)
    fm, tm = flow.tensor(value[param], requires_grad=True), torch.tensor(value[param], requires_grad=True)
    fd = FD.MultivariateNormal(fl, **{param: fm})
    td = TD.MultivariateNormal(tl, **{param: tm})
    assert tuple(fd.batch_shape) == (2,) and tuple(fd.event_shape) == (3,)
    x = g.standard_normal((4, 2, 3))
    pairs = [(fd.log_prob(flow.tensor(x)), td.log_prob(torch.tensor(x))), (fd.entropy(), td.entropy()),
             (fd.mean, td.mean), (fd.variance, td.variance), (fd.covariance_matrix, td.covariance_matrix),
             (fd.precision_matrix, td.precision_matrix), (fd.scale_tril, td.scale_tril)]
    for f, t in pairs:
        np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), rtol=1e-9, atol=1e-10)
    (fd.log_prob(flow.tensor(x)).sum() + fd.entropy().sum()).backward()
    (td.log_prob(torch.tensor(x)).sum() + td.entropy().sum()).backward()
    np.testing.assert_allclose(fl.grad.numpy(), tl.grad.numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(fm.grad.numpy(), tm.grad.numpy(), rtol=1e-7, atol=1e-9)


def test_multivariate_normal_samples_kl_and_validation():
    loc, cov = _mvn_params()
    flow.manual_seed(0)
    d = FD.MultivariateNormal(flow.tensor(loc[0]), covariance_matrix=flow.tensor(cov))
    s = d.sample((200_000,)).numpy()
    np.testing.assert_allclose(s.mean(0), loc[0], atol=0.03)
    np.testing.assert_allclose(np.cov(s.T), cov, rtol=0.03, atol=0.05)
    q = (loc[1], cov + np.eye(3))
    kf = FD.kl_divergence(d, FD.MultivariateNormal(flow.tensor(q[0]), covariance_matrix=flow.tensor(q[1])))
    kt = TD.kl_divergence(TD.MultivariateNormal(torch.tensor(loc[0]), covariance_matrix=torch.tensor(cov)),
                          TD.MultivariateNormal(torch.tensor(q[0]), covariance_matrix=torch.tensor(q[1])))
    np.testing.assert_allclose(kf.numpy(), kt.numpy(), rtol=1e-10)
    with pytest.raises(ValueError, match="to satisfy the constraint PositiveDefinite"):
        FD.MultivariateNormal(flow.zeros(2), covariance_matrix=flow.tensor([[1.0, 0.0], [0.0, -1.0]]))
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        FD.MultivariateNormal(flow.zeros(2))
