"""oneflow.distributions.transforms, constraint_registry, the new constraints and TransformedDistribution against
torch.distributions: forward/inverse values, log-Jacobians, shapes, caching, equality, registry lookups, event-dim
reinterpretation, expand, cdf/icdf, gradients and errors."""
import numpy as np
import pytest
import torch

import oneflow as flow

FD, TD = flow.distributions, torch.distributions
FT, TT = FD.transforms, TD.transforms
FC, TC = FD.constraints, TD.constraints
g = np.random.default_rng(3)
X = g.standard_normal((2, 3))
POS = g.uniform(0.5, 2.0, (2, 3))
VEC6 = g.standard_normal((2, 6))
MAT = g.standard_normal((2, 3, 3))


def close(a, b, tol=1e-10):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    np.testing.assert_allclose(np.asarray(a), b.detach().numpy() if hasattr(b, "detach") else b, rtol=tol, atol=tol)


def both(fn):
    """fn(lib_module, tensor_fn) built once with oneflow and once with torch."""
    return fn(FD, flow.tensor), fn(TD, torch.tensor)


# name -> (transform builder, an input in its domain)
TRANSFORMS = {
    "Exp": (lambda D, t: D.transforms.ExpTransform(), X),
    "ExpInv": (lambda D, t: D.transforms.ExpTransform().inv, POS),
    "Power": (lambda D, t: D.transforms.PowerTransform(t(np.array([0.5, -2.0, 3.0]))), POS),
    "Sigmoid": (lambda D, t: D.transforms.SigmoidTransform(), X),
    "Tanh": (lambda D, t: D.transforms.TanhTransform(), X),
    "Softplus": (lambda D, t: D.transforms.SoftplusTransform(), X),
    "AffineScalar": (lambda D, t: D.transforms.AffineTransform(1.5, -2.0), X),
    "AffineTensor": (lambda D, t: D.transforms.AffineTransform(t(X[0]), t(POS[1]), event_dim=1), X),
    "StickBreaking": (lambda D, t: D.transforms.StickBreakingTransform(), X),
    "CorrCholesky": (lambda D, t: D.transforms.CorrCholeskyTransform(), VEC6[:, :3]),
    "Reshape": (lambda D, t: D.transforms.ReshapeTransform((6,), (2, 3)), VEC6),
    "Independent": (lambda D, t: D.transforms.IndependentTransform(D.transforms.SigmoidTransform(), 1), X),
    "Compose": (lambda D, t: D.transforms.ComposeTransform(
        [D.transforms.AffineTransform(0.5, 2.0), D.transforms.StickBreakingTransform(),
         D.transforms.ExpTransform().inv]), X),
    "Cat": (lambda D, t: D.transforms.CatTransform(
        [D.transforms.ExpTransform(), D.transforms.AffineTransform(1.0, 3.0)], dim=1, lengths=[1, 2]), X),
    "Stack": (lambda D, t: D.transforms.StackTransform(
        [D.transforms.SigmoidTransform(), D.transforms.ExpTransform()], dim=0), X),
    "CDF": (lambda D, t: D.transforms.CumulativeDistributionTransform(D.Normal(t(X[1]), t(POS[0]))), X),
}
NOT_BIJECTIVE = {
    "Abs": (lambda D, t: D.transforms.AbsTransform(), X),
    "Softmax": (lambda D, t: D.transforms.SoftmaxTransform(), X),
    "LowerCholesky": (lambda D, t: D.transforms.LowerCholeskyTransform(), MAT),
    "PositiveDefinite": (lambda D, t: D.transforms.PositiveDefiniteTransform(), MAT),
}


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_bijections_match_torch(name):
    build, x = TRANSFORMS[name]
    ft, tt = both(build)
    fx, tx = flow.tensor(x), torch.tensor(x)
    fy, ty = ft(fx), tt(tx)
    close(fy, ty)
    close(ft.inv(fy), tx, 1e-8)
    close(ft.log_abs_det_jacobian(fx, fy), tt.log_abs_det_jacobian(tx, ty), 1e-8)
    close(ft.inv.log_abs_det_jacobian(fy, fx), tt.inv.log_abs_det_jacobian(ty, tx), 1e-8)
    assert ft.bijective and tt.bijective
    assert (ft.domain.event_dim, ft.codomain.event_dim) == (tt.domain.event_dim, tt.codomain.event_dim)
    assert bool(ft.codomain.check(fy).all())
    shape = tuple(x.shape)
    assert tuple(ft.forward_shape(shape)) == tuple(tt.forward_shape(torch.Size(shape))) == tuple(fy.shape)
    assert tuple(ft.inverse_shape(tuple(fy.shape))) == shape
    try:
        expected_sign = tt.sign
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            ft.sign
    else:
        close(flow.tensor(1.0) * ft.sign, torch.tensor(1.0) * expected_sign)


@pytest.mark.parametrize("name", sorted(NOT_BIJECTIVE))
def test_non_bijective_transforms_match_torch(name):
    build, x = NOT_BIJECTIVE[name]
    ft, tt = both(build)
    fy, ty = ft(flow.tensor(x)), tt(torch.tensor(x))
    close(fy, ty)
    close(ft.inv(fy), tt.inv(ty), 1e-8)
    assert not ft.bijective and not tt.bijective
    assert bool(ft.codomain.check(fy).all())
    # the inverse is a right inverse: t(t.inv(y)) == y
    close(ft(ft.inv(fy)), ty, 1e-8)


def test_log_abs_det_jacobian_is_the_autograd_jacobian():
    # independent of torch: log|det J| of StickBreaking (K -> K+1, so drop the last output) and CorrCholesky
    x = flow.tensor(X[0], requires_grad=True)
    t = FT.StickBreakingTransform()
    jac = np.stack([flow.autograd.grad(t(x)[i], [x], retain_graph=True)[0].numpy() for i in range(3)])
    np.testing.assert_allclose(np.log(abs(np.linalg.det(jac))), t.log_abs_det_jacobian(x, t(x)).item(), rtol=1e-8)
    x = flow.tensor(VEC6[0, :3], requires_grad=True)
    t = FT.CorrCholeskyTransform()
    y = t(x)
    rows = [(1, 0), (2, 0), (2, 1)]  # the free below-diagonal entries
    jac = np.stack([flow.autograd.grad(y[i, j], [x], retain_graph=True)[0].numpy() for i, j in rows])
    np.testing.assert_allclose(np.log(abs(np.linalg.det(jac))), t.log_abs_det_jacobian(x, y).item(), rtol=1e-8)


def test_caching_and_inverse_identity():
    t = FT.ExpTransform(cache_size=1)
    x = flow.tensor(X)
    y = t(x)
    assert t(x) is y and t.inv(y) is x
    assert t.inv.inv is t and FT.ExpTransform().inv.inv is not None
    uncached = FT.ExpTransform()
    assert uncached(x) is not uncached(x)
    assert uncached.with_cache(1)._cache_size == 1 and uncached.with_cache(0) is uncached
    comp = FT.ComposeTransform([FT.ExpTransform(), FT.AffineTransform(1.0, 2.0)], cache_size=1)
    assert all(p._cache_size == 1 for p in comp.parts)
    y = comp(x)
    assert comp.inv.inv is comp
    close(comp.inv(y), X)
    tanh = FT.TanhTransform(cache_size=1)
    big = flow.tensor([30.0], dtype=flow.float64)
    assert tanh.inv(tanh(big)) is big  # atanh(1.0) would be inf: the cache avoids it
    with pytest.raises(ValueError):
        FT.ExpTransform(cache_size=2)

    class Custom(FT.Transform):
        def __init__(self, a):
            super().__init__()
    with pytest.raises(NotImplementedError):
        Custom(1).with_cache(1)  # a custom __init__ needs its own with_cache


def test_equality_and_repr():
    assert FT.ExpTransform() == FT.ExpTransform() and FT.ExpTransform() != FT.SigmoidTransform()
    assert FT.AffineTransform(1.0, 2.0) == FT.AffineTransform(1.0, 2.0)
    assert FT.AffineTransform(1.0, 2.0) != FT.AffineTransform(1.0, 3.0)
    t = flow.tensor([1.0, 2.0])
    assert FT.AffineTransform(t, 2.0) == FT.AffineTransform(t.clone(), 2.0)
    assert FT.PowerTransform(t) == FT.PowerTransform(t.clone()) and FT.PowerTransform(t) != FT.PowerTransform(2 * t)
    assert FT.ExpTransform().inv == FT.ExpTransform().inv and FT.ExpTransform().inv != FT.ExpTransform()
    assert FT.ComposeTransform([FT.ExpTransform()]) == FT.ComposeTransform([FT.ExpTransform()])
    assert FT.Transform() != FT.Transform()  # a plain transform equals only itself
    assert repr(FT.ExpTransform()) == "ExpTransform()"
    assert repr(FT.ExpTransform().inv) == "_InverseTransform(ExpTransform())"
    assert repr(FT.IndependentTransform(FT.ExpTransform(), 1)) == "IndependentTransform(ExpTransform(), 1)"
    assert repr(FT.ComposeTransform([FT.ExpTransform()])) == repr(TT.ComposeTransform([TT.ExpTransform()]))


def test_event_dims_and_shape_errors():
    assert FT.StickBreakingTransform().event_dim == 1
    with pytest.raises(ValueError):
        FT.CorrCholeskyTransform().event_dim  # domain and codomain event dims differ
    comp = FT.ComposeTransform([FT.ExpTransform(), FT.StickBreakingTransform()])
    tcomp = TT.ComposeTransform([TT.ExpTransform(), TT.StickBreakingTransform()])
    assert (comp.domain.event_dim, comp.codomain.event_dim) == (tcomp.domain.event_dim, tcomp.codomain.event_dim)
    assert repr(comp.domain) == repr(tcomp.domain)
    assert FT.identity_transform.domain is FC.real and FT.identity_transform(flow.tensor(X)).shape == (2, 3)
    close(FT.identity_transform.log_abs_det_jacobian(flow.tensor(X), flow.tensor(X)), np.zeros((2, 3)))
    with pytest.raises(ValueError):
        FT.ReshapeTransform((2, 3), (5,))
    with pytest.raises(ValueError):
        FT.ReshapeTransform((6,), (2, 3)).forward_shape((2, 5))
    with pytest.raises(ValueError):
        FT.CorrCholeskyTransform().forward_shape((4,))
    with pytest.raises(ValueError):
        FT.CorrCholeskyTransform().inverse_shape((3, 2))
    with pytest.raises(ValueError):
        FT.StickBreakingTransform().forward_shape(())
    with pytest.raises(ValueError):
        FT.IndependentTransform(FT.ExpTransform(), 2)(flow.tensor([1.0]))
    with pytest.raises(ValueError):
        FD.utils.vec_to_tril_matrix(flow.zeros(4))
    assert tuple(FT.AffineTransform(flow.zeros(3), 1.0).forward_shape((2, 1))) == (2, 3)
    with pytest.raises(ValueError):
        FT.CatTransform([FT.ExpTransform()], dim=0, lengths=[1, 2])


CONSTRAINTS = [
    lambda C, t: C.real, lambda C, t: C.positive, lambda C, t: C.nonnegative, lambda C, t: C.greater_than(2.0),
    lambda C, t: C.greater_than_eq(t(X[0])), lambda C, t: C.less_than(1.0), lambda C, t: C.interval(-1.0, 3.0),
    lambda C, t: C.half_open_interval(t(X[0]), t(X[0] + 2)), lambda C, t: C.unit_interval,
    lambda C, t: C.simplex, lambda C, t: C.real_vector, lambda C, t: C.independent(C.positive, 1),
    lambda C, t: C.corr_cholesky,
    lambda C, t: C.cat([C.positive, C.interval(0.0, 2.0)], dim=1, lengths=[2, 1]),
    lambda C, t: C.stack([C.positive, C.unit_interval], dim=0),
]


@pytest.mark.parametrize("index", range(len(CONSTRAINTS)))
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_constraint_registry_matches_torch(index, registry):
    fc, tc = CONSTRAINTS[index](FC, flow.tensor), CONSTRAINTS[index](TC, torch.tensor)
    ft, tt = getattr(FD, registry)(fc), getattr(TD, registry)(tc)
    x = VEC6[:, :3] if fc is FC.corr_cholesky else X
    fy, ty = ft(flow.tensor(x)), tt(torch.tensor(x))
    close(fy, ty)
    assert bool(fc.check(fy).all())
    if ft.bijective:
        close(ft.inv(fy), x, 1e-8)
        close(ft.log_abs_det_jacobian(flow.tensor(x), fy), tt.log_abs_det_jacobian(torch.tensor(x), ty), 1e-8)


def test_constraint_registry_matrix_spaces_and_errors():
    for c in (FC.lower_cholesky, FC.positive_definite, FC.positive_semidefinite):
        y = FD.transform_to(c)(flow.tensor(MAT))
        assert bool(c.check(y).all())
        with pytest.raises(NotImplementedError):
            FD.biject_to(c)
    with pytest.raises(NotImplementedError):
        FD.transform_to(FC.nonnegative_integer)
    with pytest.raises(TypeError):
        FD.biject_to.register(3, lambda c: FT.ExpTransform())
    registry = FD.constraint_registry.ConstraintRegistry()

    @registry.register(FC.positive)
    def _positive(constraint):
        return FT.SoftplusTransform()
    assert isinstance(registry(FC.greater_than(1.0)), FT.SoftplusTransform)


def _matrices():
    sym = MAT[0] @ MAT[0].T + np.eye(3)
    return np.stack([sym, -sym, MAT[1], np.tril(MAT[0]), np.linalg.cholesky(sym), np.zeros((3, 3))])


@pytest.mark.parametrize("name", ["lower_triangular", "lower_cholesky", "square", "symmetric", "positive_semidefinite",
                                  "positive_definite"])
def test_matrix_constraints_match_torch(name):
    m = _matrices()
    assert getattr(FC, name).check(flow.tensor(m)).numpy().tolist() == \
        getattr(TC, name).check(torch.tensor(m)).numpy().tolist()
    assert getattr(FC, name).event_dim == 2 and not getattr(FC, name).is_discrete


def test_other_new_constraints_match_torch():
    corr = TT.CorrCholeskyTransform()(torch.tensor(VEC6[:, :3]))
    values = torch.cat([corr, torch.tensor(_matrices()[3:5])])
    assert FC.corr_cholesky.check(flow.tensor(values.numpy())).numpy().tolist() == \
        TC.corr_cholesky.check(values).numpy().tolist() == [True, True, False, False]
    v = np.array([0.0, 1.0, 2.0, 1.5])
    assert FC.positive_integer.check(flow.tensor(v)).numpy().tolist() == [False, True, True, False]
    for build in CONSTRAINTS[-2:]:
        fc, tc = build(FC, flow.tensor), build(TC, torch.tensor)
        assert fc.event_dim == tc.event_dim and fc.is_discrete == tc.is_discrete
        x = np.abs(X) * np.array([[1.0], [0.3]])
        x[1, 2] = -1.0
        assert fc.check(flow.tensor(x)).numpy().tolist() == tc.check(torch.tensor(x)).numpy().tolist()
    ms = FC.MixtureSameFamilyConstraint(FC.positive)
    tms = TC.MixtureSameFamilyConstraint(TC.positive)
    assert ms.check(flow.tensor(X)).numpy().tolist() == tms.check(torch.tensor(X)).numpy().tolist()
    assert repr(FC.real_vector) == repr(TC.real_vector)


def _logistic(D, t):
    base = D.Uniform(t(np.zeros(3)), t(np.ones(3)))
    return D.TransformedDistribution(base, [D.transforms.SigmoidTransform().inv,
                                            D.transforms.AffineTransform(t(X[0]), t(POS[0]))])


def test_transformed_distribution_values_match_torch():
    fd, td = both(_logistic)
    assert tuple(fd.batch_shape) == (3,) and tuple(fd.event_shape) == () and fd.has_rsample
    close(fd.log_prob(flow.tensor(X)), td.log_prob(torch.tensor(X)))
    close(fd.cdf(flow.tensor(X)), td.cdf(torch.tensor(X)))
    p = g.uniform(0.1, 0.9, 3)
    close(fd.icdf(flow.tensor(p)), td.icdf(torch.tensor(p)), 1e-9)
    assert repr(fd.support) == repr(td.support)
    # a decreasing transform reverses the cdf
    fr, tr = both(lambda D, t: D.TransformedDistribution(D.Exponential(t(POS[0])),
                                                         D.transforms.AffineTransform(1.0, t(-POS[1]))))
    close(fr.cdf(flow.tensor(1 - POS[1])), tr.cdf(torch.tensor(1 - POS[1])))
    close(fr.icdf(flow.tensor(p)), tr.icdf(torch.tensor(p)))


@pytest.mark.parametrize("case", ["stick_breaking", "reshape", "broadcast", "lower_cholesky", "corr_cholesky"])
def test_transformed_distribution_event_dims_match_torch(case):
    def build(D, t):
        T = D.transforms
        if case == "stick_breaking":  # a batch dim of the base becomes an event dim
            return D.TransformedDistribution(D.Normal(t(X), t(POS)), T.StickBreakingTransform())
        if case == "reshape":
            return D.TransformedDistribution(D.Normal(t(VEC6), t(np.abs(VEC6) + 0.5)), T.ReshapeTransform((6,), (3, 2)))
        if case == "broadcast":  # the transform's parameters broadcast the base: it is expanded
            return D.TransformedDistribution(D.Normal(t(X[0]), t(POS[0])), T.AffineTransform(t(X), 2.0))
        if case == "corr_cholesky":  # adds an event dim to a base with two: log-Jacobians summed over one
            base = D.Independent(D.Normal(t(np.hstack([VEC6, -VEC6]).reshape(2, 4, 3)), t(np.ones((2, 4, 3)))), 2)
            return D.TransformedDistribution(base, T.CorrCholeskyTransform())
        return D.TransformedDistribution(D.Normal(t(MAT), t(np.ones((2, 3, 3)))),
                                         [T.LowerCholeskyTransform()])
    fd, td = both(build)
    assert (tuple(fd.batch_shape), tuple(fd.event_shape)) == (tuple(td.batch_shape), tuple(td.event_shape))
    assert type(fd.base_dist).__name__ == type(td.base_dist).__name__
    torch.manual_seed(0)
    value = td.sample((2,))
    if case != "lower_cholesky":  # its transform is not injective: log_prob is undefined
        close(fd.log_prob(flow.tensor(value.numpy())), td.log_prob(value), 1e-8)
    assert tuple(fd.sample((2,)).shape) == tuple(value.shape)
    assert bool(fd.support.check(fd.sample((4,))).all())
    fe, te = fd.expand((5,) + tuple(fd.batch_shape)), td.expand((5,) + tuple(td.batch_shape))
    assert (tuple(fe.batch_shape), tuple(fe.event_shape)) == (tuple(te.batch_shape), tuple(te.event_shape))
    assert tuple(fe.base_dist.batch_shape) == tuple(te.base_dist.batch_shape)
    if case != "lower_cholesky":
        close(fe.log_prob(flow.tensor(value[0].numpy())), te.log_prob(value[0]), 1e-8)


def test_transformed_distribution_gradients_match_torch():
    # the same base sample pushed through the transforms: the pathwise gradients must agree
    base_sample = g.standard_normal((4, 3))

    def build(D, t):
        loc, scale = t(X[0], requires_grad=True), t(POS[0], requires_grad=True)
        d = D.TransformedDistribution(D.Normal(t(np.zeros(3)), t(np.ones(3))),
                                      [D.transforms.AffineTransform(loc, scale), D.transforms.TanhTransform()])
        d.base_dist.rsample = lambda sample_shape=(): t(base_sample)
        return d, (loc, scale)
    (fd, fp), (td, tp) = both(build)
    fy, ty = fd.rsample((4,)), td.rsample((4,))
    close(fy, ty)
    (fy.pow(3).sum() + fd.log_prob(fy.detach()).sum()).backward()
    (ty.pow(3).sum() + td.log_prob(ty.detach()).sum()).backward()
    for a, b in zip(fp, tp):
        close(a.grad, b.grad, 1e-8)


def test_transformed_distribution_errors():
    base = FD.Normal(flow.zeros(3), flow.ones(3))
    with pytest.raises(ValueError):
        FD.TransformedDistribution(base, "exp")
    with pytest.raises(ValueError):
        FD.TransformedDistribution(base, [FT.ExpTransform(), "exp"])
    with pytest.raises(ValueError):
        FD.TransformedDistribution(FD.Normal(0.0, 1.0), FT.StickBreakingTransform())  # needs an event dim
    d = FD.TransformedDistribution(base, FT.ExpTransform())
    with pytest.raises(ValueError):
        d.log_prob(flow.tensor([1.0, -1.0, 2.0]))  # outside the support
    quiet = FD.Normal(flow.zeros(3), flow.ones(3), validate_args=False)
    lp = FD.TransformedDistribution(quiet, FT.ExpTransform(), validate_args=False).log_prob(
        flow.tensor([1.0, -1.0, 2.0]))
    assert np.isnan(lp.numpy()[1])
    assert FD.TransformedDistribution(base, []).support is FC.real
