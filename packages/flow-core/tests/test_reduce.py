"""Reductions and scans against PyTorch: values, dtypes, gradients (and float64 finite differences), dims
given as None/int/negative/tuple with and without keepdim, non-contiguous, zero-size and 0-dim inputs, errors."""
import math

import numpy as np
import pytest

import oneflow as flow
from helpers import assert_close, check_vs_torch, gradcheck, to_np, torch

rng = np.random.default_rng(0)
ops = flow._C.ops


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def ft(arr, requires_grad=False):
    t = flow.tensor(np.asarray(arr))
    if requires_grad:
        t.requires_grad_(True)
    return t


def strided(x, lib):
    """A non-contiguous view: transposed, then every other element of the (new) last dim."""
    y = x.transpose(0, 2)
    if lib is flow:
        return ops.slice(y, 2, 0, y.shape[2], 2)
    return y[:, :, ::2]


DIMS = [None, 0, -1, (0, 2), (-1, 1), ()]


def kw(dim, keepdim=False):
    """dim/keepdim keywords; torch refuses keepdim without dim, so both are left out when dim is None."""
    if dim is None:
        return {}
    return {"dim": dim, "keepdim": keepdim} if keepdim else {"dim": dim}


# ---- sum-like ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["sum", "mean", "nansum", "nanmean"])
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_like_vs_torch(name, dim, keepdim):
    a = randn(3, 4, 5)
    if name.startswith("nan"):
        a[0, 1, 2] = np.nan
        a[2, :, 3] = np.nan
    check_vs_torch(lambda x: getattr(flow, name)(x, **kw(dim, keepdim)),
                   lambda x: getattr(torch, name)(x, **kw(dim, keepdim)), [a], rtol=1e-5, atol=1e-5)
    check_vs_torch(lambda x: getattr(x, name)(**kw(dim, keepdim)),
                   lambda x: getattr(x, name)(**kw(dim, keepdim)), [a], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["sum", "mean", "nansum", "nanmean", "amax", "amin", "logsumexp", "var", "std"])
def test_non_contiguous_inputs(name):
    a = randn(4, 3, 6)
    dims = [(1,), (0, 2), (2,)]
    for d in dims:
        check_vs_torch(lambda x: getattr(flow, name)(strided(x, flow), d),
                       lambda x: getattr(torch, name)(strided(x, torch), d), [a], rtol=1e-5, atol=1e-5)
    if name not in ("logsumexp",):
        check_vs_torch(lambda x: getattr(flow, name)(strided(x, flow)),
                       lambda x: getattr(torch, name)(strided(x, torch)), [a], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["sum", "mean", "nansum", "nanmean", "var", "std", "logsumexp", "amax", "amin"])
def test_float64_gradcheck(name):
    x = ft(randn(3, 4, dtype=np.float64), True)
    gradcheck(lambda t: getattr(flow, name)(t, 1), [x])
    gradcheck(lambda t: getattr(flow, name)(t, (0, 1), keepdim=True), [x])


def test_sum_dtypes_like_torch():
    for npdt in [np.bool_, np.uint8, np.int8, np.int32, np.int64, np.float16, np.float64]:
        a = (rng.standard_normal((3, 4)) * 3).astype(npdt)
        f, t = ft(a), torch.tensor(a)
        for fn in ["sum", "prod", "nansum"]:
            assert_close(getattr(f, fn)(), getattr(t, fn)(), rtol=2e-3, atol=1e-2)
            assert_close(getattr(f, fn)(1), getattr(t, fn)(1), rtol=2e-3, atol=1e-2)
        assert_close(f.cumsum(0), t.cumsum(0), rtol=2e-3, atol=1e-2)
    a = np.arange(12).reshape(3, 4).astype(np.int32)
    assert_close(ft(a).sum(dtype=flow.float64), torch.tensor(a).sum(dtype=torch.float64))
    assert_close(ft(a).sum(1, dtype=flow.int16), torch.tensor(a).sum(1, dtype=torch.int16))
    assert_close(ft(a).mean(dtype=flow.float64), torch.tensor(a).mean(dtype=torch.float64))
    assert_close(ft(a).mean(0, dtype=flow.float32), torch.tensor(a).mean(0, dtype=torch.float32))
    assert_close(ft(a).cumsum(1, dtype=flow.float32), torch.tensor(a).cumsum(1, dtype=torch.float32))
    assert_close(ft(a).prod(1, dtype=flow.float64), torch.tensor(a).prod(1, dtype=torch.float64))
    h = randn(5, 7).astype(np.float16)
    assert_close(ft(h).mean(1), torch.tensor(h).mean(1), rtol=1e-3, atol=1e-3)
    assert_close(ft(h).sum(0), torch.tensor(h).sum(0), rtol=1e-3, atol=1e-3)


def test_integer_inputs_rejected_like_torch():
    i = ft(np.arange(6).reshape(2, 3))
    with pytest.raises(RuntimeError, match="mean\\(\\): could not infer output dtype"):
        flow.mean(i)
    with pytest.raises(RuntimeError, match="nanmean\\(\\): expected input to have floating point"):
        flow.nanmean(i)
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        flow.var(i)
    with pytest.raises(RuntimeError, match="std and var only support floating point"):
        flow.std(i, 0)
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point"):
        flow.linalg.vector_norm(i)
    # logsumexp of integers computes in the default float dtype
    assert_close(flow.logsumexp(i, 1), torch.logsumexp(torch.arange(6).reshape(2, 3), 1))


def test_zero_size_inputs():
    e = np.zeros((0, 3), np.float32)
    for name in ["sum", "mean", "nansum", "prod"]:
        check_vs_torch(lambda x: getattr(flow, name)(x), lambda x: getattr(torch, name)(x), [e])
        check_vs_torch(lambda x: getattr(flow, name)(x, 0), lambda x: getattr(torch, name)(x, 0), [e])
        check_vs_torch(lambda x: getattr(flow, name)(x, 1), lambda x: getattr(torch, name)(x, 1), [e])
    assert ft(np.zeros(0)).sum().item() == 0
    for name in ["amax", "amin", "logsumexp", "var", "std"]:
        check_vs_torch(lambda x: getattr(flow, name)(x, 1), lambda x: getattr(torch, name)(x, 1), [e])
    check_vs_torch(lambda x: flow.logsumexp(x, 0), lambda x: torch.logsumexp(x, 0), [e])
    check_vs_torch(lambda x: flow.linalg.vector_norm(x), lambda x: torch.linalg.vector_norm(x), [e])
    check_vs_torch(lambda x: flow.cumsum(x, 0), lambda x: torch.cumsum(x, 0), [e])
    check_vs_torch(lambda x: flow.cumprod(x, 1), lambda x: torch.cumprod(x, 1), [e])
    assert_close(flow.all(ft(e)), torch.all(torch.tensor(e)))
    assert_close(flow.any(ft(e), 0), torch.any(torch.tensor(e), 0))
    assert_close(flow.count_nonzero(ft(e), 0), torch.count_nonzero(torch.tensor(e), 0))


def test_empty_reduction_errors_like_torch():
    e = ft(np.zeros((0, 3), np.float32))
    with pytest.raises(RuntimeError, match="max\\(\\): Expected reduction dim to be specified for input.numel\\(\\) == 0"):
        flow.max(e)
    with pytest.raises(RuntimeError, match="min\\(\\): Expected reduction dim to be specified"):
        e.min()
    with pytest.raises(IndexError, match="max\\(\\): Expected reduction dim 0 to have non-zero size"):
        flow.max(e, 0)
    with pytest.raises(IndexError, match="amax\\(\\): Expected reduction dim 0 to have non-zero size"):
        flow.amax(e, 0)
    with pytest.raises(IndexError, match="argmax\\(\\): Expected reduction dim to be specified"):
        flow.argmax(e)
    with pytest.raises(IndexError, match="argmin\\(\\): Expected reduction dim 0 to have non-zero size"):
        flow.argmin(e, 0)
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        flow.linalg.vector_norm(e, float("inf"))
    assert flow.amax(e, 1).shape == (0,)
    assert flow.max(e, 1).indices.shape == (0,)


def test_amin_amax_aminmax_empty_errors_name_dims_as_torch():
    # amin/amax keep the caller's (negative) index; aminmax and max(dim) name the normalised one; no dims at
    # all on an empty input is a RuntimeError
    e3 = flow.zeros(2, 0, 3)
    for fn, err, msg in [
        (lambda: flow.amin(e3, dim=(0, -2)), IndexError, "amin\\(\\): Expected reduction dim -2 to have non-zero"),
        (lambda: flow.amax(e3, dim=-2), IndexError, "amax\\(\\): Expected reduction dim -2 to have non-zero"),
        (lambda: flow.amin(e3), RuntimeError, "amin\\(\\): Expected reduction dim to be specified for input"),
        (lambda: flow.aminmax(e3, dim=-2), IndexError, "^aminmax: Expected reduction dim 1 to have non-zero size"),
        (lambda: flow.aminmax(e3), RuntimeError, "aminmax\\(\\): cannot compute aminmax over an empty dim"),
        (lambda: flow.max(e3, -2), IndexError, "max\\(\\): Expected reduction dim 1 to have non-zero"),
    ]:
        with pytest.raises(err, match=msg):
            fn()
    mn, mx = flow.aminmax(e3, dim=0)
    assert mn.shape == mx.shape == (0, 3)


def test_zero_dim_inputs():
    s = np.array(2.5, np.float32)
    for name in ["sum", "mean", "nansum", "nanmean", "amax", "amin", "prod"]:
        check_vs_torch(lambda x: getattr(flow, name)(x), lambda x: getattr(torch, name)(x), [s])
    for name in ["sum", "mean", "amax", "logsumexp", "prod"]:
        check_vs_torch(lambda x: getattr(flow, name)(x, 0), lambda x: getattr(torch, name)(x, 0), [s])
        check_vs_torch(lambda x: getattr(flow, name)(x, -1, keepdim=True),
                       lambda x: getattr(torch, name)(x, -1, keepdim=True), [s])
    check_vs_torch(lambda x: flow.max(x, 0), lambda x: torch.max(x, 0), [s])
    check_vs_torch(lambda x: flow.max(x), lambda x: torch.max(x), [s])
    check_vs_torch(lambda x: flow.cumsum(x, 0), lambda x: torch.cumsum(x, 0), [s])
    check_vs_torch(lambda x: flow.cumprod(x, -1), lambda x: torch.cumprod(x, -1), [s])
    check_vs_torch(lambda x: flow.linalg.vector_norm(x), lambda x: torch.linalg.vector_norm(x), [s])
    check_vs_torch(lambda x: flow.var(x, correction=0), lambda x: torch.var(x, correction=0), [s])
    assert_close(flow.argmax(ft(s), 0), torch.argmax(torch.tensor(s), 0))
    assert_close(flow.argmax(ft(s)), torch.argmax(torch.tensor(s)))
    assert_close(flow.all(ft(s)), torch.all(torch.tensor(s)))
    assert_close(flow.count_nonzero(ft(s)), torch.count_nonzero(torch.tensor(s)))
    assert math.isnan(flow.var(ft(s)).item())  # one element, correction 1


def test_bad_and_duplicate_dims():
    x = ft(randn(2, 3))
    for fn in [lambda: flow.sum(x, 2), lambda: flow.mean(x, -3), lambda: flow.amax(x, (0, 5)),
               lambda: flow.max(x, 2), lambda: flow.argmax(x, -3), lambda: flow.var(x, 3),
               lambda: flow.linalg.vector_norm(x, 2, 4), lambda: flow.logsumexp(x, 2), lambda: flow.all(x, 2),
               lambda: flow.cumsum(x, 2), lambda: flow.cumprod(x, -3), lambda: flow.prod(x, 2),
               lambda: flow.count_nonzero(x, 7), lambda: flow.sum(ft(np.float32(1)), 1)]:
        with pytest.raises(IndexError, match="Dimension out of range"):
            fn()
    for fn in [lambda: flow.sum(x, (0, 0)), lambda: flow.mean(x, (1, -1)), lambda: flow.amax(x, (0, -2)),
               lambda: flow.var(x, (1, 1)), lambda: flow.logsumexp(x, (0, 0)), lambda: flow.any(x, (0, 0))]:
        with pytest.raises(RuntimeError, match="appears multiple times in the list of dims"):
            fn()
    with pytest.raises(TypeError):
        flow.prod(x, (0, 1))  # prod takes a single dim, like torch


# ---- prod ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("zeros", [0, 1, 2])
def test_prod_grad_with_zeros(zeros):
    a = rng.uniform(0.5, 1.5, (3, 4, 5)).astype(np.float32)
    if zeros >= 1:
        a[1, 2, 3] = 0
    if zeros >= 2:
        a[1, 0, 3] = 0
        a[0, 0, 0] = 0
    for dim, keepdim in [(None, False), (0, False), (1, True), (-1, False)]:
        check_vs_torch(lambda x: flow.prod(x, **kw(dim, keepdim)) if dim is not None else flow.prod(x),
                       lambda x: torch.prod(x, **kw(dim, keepdim)) if dim is not None else torch.prod(x),
                       [a], rtol=1e-5, atol=1e-6)
    check_vs_torch(lambda x: strided(x, flow).prod(1), lambda x: strided(x, torch).prod(1), [a])
    x = ft(a.astype(np.float64), True)
    gradcheck(lambda t: flow.prod(t, 1), [x])
    gradcheck(lambda t: flow.prod(t), [x])


def test_prod_double_backward_without_zeros():
    a = rng.uniform(0.5, 1.5, (3, 4))
    f, t = ft(a, True), torch.tensor(a, requires_grad=True)
    gf, = flow.autograd.grad(flow.prod(f, 1).sum(), [f], create_graph=True)
    gt, = torch.autograd.grad(torch.prod(t, 1).sum(), [t], create_graph=True)
    assert_close(gf, gt)
    assert_close(flow.autograd.grad((gf * gf).sum(), [f])[0], torch.autograd.grad((gt * gt).sum(), [t])[0])


# ---- max / min / amax / amin / argmax / argmin ---------------------------------------------------------
@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_forms(name):
    a = randn(3, 4, 5)
    fn_f, fn_t = getattr(flow, name), getattr(torch, name)
    check_vs_torch(lambda x: fn_f(x), lambda x: fn_t(x), [a])
    for dim in [0, 1, -1]:
        for keepdim in [False, True]:
            check_vs_torch(lambda x: fn_f(x, dim, keepdim), lambda x: fn_t(x, dim, keepdim), [a])
            check_vs_torch(lambda x: getattr(x, name)(dim=dim, keepdim=keepdim),
                           lambda x: getattr(x, name)(dim=dim, keepdim=keepdim), [a])
    check_vs_torch(lambda x: fn_f(strided(x, flow), 1), lambda x: fn_t(strided(x, torch), 1), [a])
    r = fn_f(ft(a), 1)
    assert isinstance(r, tuple) and len(r) == 2
    values, indices = r
    assert values is not None and r.values.shape == (3, 5) and r.indices.dtype == flow.int64
    assert repr(r).startswith(f"oneflow.return_types.{name}(")


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_binary_is_elementwise(name):
    a, b = randn(3, 4), randn(4)
    check_vs_torch(lambda x, y: getattr(flow, name)(x, y), lambda x, y: getattr(torch, name)(x, y), [a, b])


def test_max_ties_and_nan_like_torch():
    a = np.array([[1, 3, 3, 0], [2, 2, 2, 2], [5, np.nan, 7, np.nan]], np.float32)
    for name in ["max", "min"]:
        check_vs_torch(lambda x: getattr(flow, name)(x, 1), lambda x: getattr(torch, name)(x, 1), [a])
        check_vs_torch(lambda x: getattr(flow, name)(x, 0), lambda x: getattr(torch, name)(x, 0), [a])
        check_vs_torch(lambda x: getattr(flow, name)(x), lambda x: getattr(torch, name)(x), [a])
        check_vs_torch(lambda x: getattr(flow, name)(ops.slice(x, 0, 0, 2, 1)),
                       lambda x: getattr(torch, name)(x[0:2]), [a])
    for name in ["amax", "amin"]:
        # ties share the gradient evenly; a NaN group gets NaN gradients (as in PyTorch)
        check_vs_torch(lambda x: getattr(flow, name)(x, 1), lambda x: getattr(torch, name)(x, 1), [a])
        check_vs_torch(lambda x: getattr(flow, name)(x, 0, True), lambda x: getattr(torch, name)(x, 0, True), [a])
        check_vs_torch(lambda x: getattr(flow, name)(x), lambda x: getattr(torch, name)(x), [a])
    for name in ["argmax", "argmin"]:
        for d in [None, 0, 1]:
            assert_close(getattr(flow, name)(ft(a), d), getattr(torch, name)(torch.tensor(a), d))


@pytest.mark.parametrize("name", ["amax", "amin"])
@pytest.mark.parametrize("dim", [(), 0, -1, (0, 2), [1, 2]])
@pytest.mark.parametrize("keepdim", [False, True])
def test_amax_amin_vs_torch(name, dim, keepdim):
    a = np.round(randn(3, 4, 5) * 2) / 2  # ties
    check_vs_torch(lambda x: getattr(flow, name)(x, dim, keepdim), lambda x: getattr(torch, name)(x, dim, keepdim), [a])
    check_vs_torch(lambda x: getattr(x, name)(dim=dim, keepdim=keepdim),
                   lambda x: getattr(x, name)(dim=dim, keepdim=keepdim), [a])


def test_max_gradcheck_and_double_backward():
    x = ft(randn(3, 4, dtype=np.float64), True)
    gradcheck(lambda t: flow.max(t, 1).values, [x])
    gradcheck(lambda t: flow.min(t, 0, True).values, [x])
    gradcheck(lambda t: flow.max(t), [x])
    a = randn(3, 4, dtype=np.float64)
    f, t = ft(a, True), torch.tensor(a, requires_grad=True)
    w = randn(3, 4, dtype=np.float64)
    gf, = flow.autograd.grad(flow.max(f, 1).values.sum() * 3, [f], create_graph=True)
    gt, = torch.autograd.grad(torch.max(t, 1).values.sum() * 3, [t], create_graph=True)
    assert_close(gf, gt)
    # the grad is linear in the incoming gradient: differentiate through the helper op
    v = ft(np.ones(3), True)
    gv, = flow.autograd.grad(flow.max(f, 1).values, [f], grad_outputs=v, create_graph=True)
    out, = flow.autograd.grad((gv * ft(w)).sum(), [v])
    idx = np.argmax(a, 1)
    assert_close(out, w[np.arange(3), idx])


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_argmin(name):
    a = randn(3, 4, 5)
    f, t = ft(a), torch.tensor(a)
    for d in [None, 0, 1, -1]:
        for keepdim in [False, True]:
            assert_close(getattr(flow, name)(f, d, keepdim), getattr(torch, name)(t, d, keepdim))
            assert_close(getattr(f, name)(dim=d, keepdim=keepdim), getattr(t, name)(dim=d, keepdim=keepdim))
    assert_close(getattr(flow, name)(strided(f, flow)), getattr(torch, name)(strided(t, torch)))
    assert_close(getattr(flow, name)(strided(f, flow), 1), getattr(torch, name)(strided(t, torch), 1))
    i = (rng.standard_normal((4, 6)) * 5).astype(np.int32)
    assert_close(getattr(flow, name)(ft(i), 1), getattr(torch, name)(torch.tensor(i), 1))
    b = np.array([[True, False, True], [False, False, False]])
    assert_close(getattr(flow, name)(ft(b.astype(np.uint8)), 1), getattr(torch, name)(torch.tensor(b.astype(np.uint8)), 1))
    assert getattr(flow, name)(f).dtype == flow.int64


def test_max_of_ints_and_bools_keeps_dtype():
    i = (rng.standard_normal((4, 6)) * 5).astype(np.int16)
    b = rng.standard_normal((4, 6)) > 0
    for arr in [i, b]:
        f, t = ft(arr), torch.tensor(arr)
        for name in ["amax", "amin"]:
            assert_close(getattr(flow, name)(f, 1), getattr(torch, name)(t, 1))
        assert_close(flow.max(f), torch.max(t))
        assert_close(flow.min(f, 0).values, torch.min(t, 0).values)
        assert_close(flow.min(f, 0).indices, torch.min(t, 0).indices)


def test_aminmax():
    a = randn(3, 4)
    r = flow.aminmax(ft(a))
    t = torch.aminmax(torch.tensor(a))
    assert_close(r.min, t.min)
    assert_close(r.max, t.max)
    r = flow.aminmax(ft(a), dim=1, keepdim=True)
    t = torch.aminmax(torch.tensor(a), dim=1, keepdim=True)
    assert_close(r[0], t[0])
    assert_close(r[1], t[1])
    with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty dimension"):
        flow.aminmax(ft(np.zeros((0, 2), np.float32)))


# ---- var / std -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("dim", [None, 0, -1, (0, 2), ()])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("correction", [None, 0, 1, 2])
def test_var_std_vs_torch(name, dim, keepdim, correction):
    a = randn(3, 4, 5)
    extra = {} if correction is None else {"correction": correction}
    # (PyTorch's backward treats dim=() as "no dims" and returns inf: compare the forward only there)
    check_vs_torch(lambda x: getattr(flow, name)(x, **kw(dim, keepdim), **extra),
                   lambda x: getattr(torch, name)(x, **kw(dim, keepdim), **extra), [a], rtol=1e-5, atol=1e-5,
                   grad=dim != ())


@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean"])
def test_var_unbiased_forms(name):
    a = randn(4, 5)
    f_fn, t_fn = getattr(flow, name), getattr(torch, name)
    for args, kwargs in [((), {"unbiased": False}), ((False,), {}), ((True,), {}), ((1, False), {}),
                         ((1, True, True), {}), ((0,), {"unbiased": False, "keepdim": True}),
                         (((0, 1),), {"correction": 0})]:
        check_vs_torch(lambda x: f_fn(x, *args, **kwargs), lambda x: t_fn(x, *args, **kwargs), [a], rtol=1e-5, atol=1e-5)
    if name in ("var", "std"):
        check_vs_torch(lambda x: getattr(x, name)(1, unbiased=False), lambda x: getattr(x, name)(1, unbiased=False), [a])
        check_vs_torch(lambda x: getattr(x, name)(dim=0, keepdim=True), lambda x: getattr(x, name)(dim=0, keepdim=True), [a])
    with pytest.raises(TypeError, match="can't specify both unbiased and correction"):  # as torch's parser
        f_fn(ft(a), 0, unbiased=True, correction=1)


def test_var_std_edge_cases():
    const = np.full((3, 4), 2.0, np.float32)
    check_vs_torch(lambda x: flow.std(x, 1), lambda x: torch.std(x, 1), [const])  # std 0 -> grad 0
    check_vs_torch(lambda x: flow.std(x), lambda x: torch.std(x), [const])
    one = randn(3, 1)
    check_vs_torch(lambda x: flow.var(x, 1), lambda x: torch.var(x, 1), [one])  # NaN like torch
    big = (randn(1000) + 1e4).astype(np.float32)
    assert_close(flow.var(ft(big)), torch.var(torch.tensor(big)), rtol=1e-4)
    x = ft(randn(3, 4, dtype=np.float64), True)
    gradcheck(lambda t: flow.var_mean(t, 1), [x])
    gradcheck(lambda t: flow.std_mean(t, 0, correction=0), [x])
    gradcheck(lambda t: flow.std(t, (0, 1)), [x])


def test_var_double_backward():
    a = randn(3, 4, dtype=np.float64)
    f, t = ft(a, True), torch.tensor(a, requires_grad=True)
    gf, = flow.autograd.grad(flow.std(f, 1).sum(), [f], create_graph=True)
    gt, = torch.autograd.grad(torch.std(t, 1).sum(), [t], create_graph=True)
    assert_close(gf, gt)
    assert_close(flow.autograd.grad((gf * gf).sum(), [f])[0], torch.autograd.grad((gt * gt).sum(), [t])[0],
                 rtol=1e-6)


# ---- norms ---------------------------------------------------------------------------------------------
ORDS = [2, 1, math.inf, -math.inf, 0, 3, 0.5, 1.5, -1]


@pytest.mark.parametrize("ord", ORDS)
@pytest.mark.parametrize("dim", [None, 1, (0, 2), -1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_vector_norm_vs_torch(ord, dim, keepdim):
    a = randn(3, 4, 5)
    a[0, 0, 0] = 0
    check_vs_torch(lambda x: flow.linalg.vector_norm(x, ord, dim, keepdim),
                   lambda x: torch.linalg.vector_norm(x, ord, dim, keepdim), [a], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("ord", ORDS)
def test_vector_norm_grads(ord):
    x = ft(randn(3, 4, dtype=np.float64) + 0.1, True)
    if ord != 0:
        gradcheck(lambda t: flow.linalg.vector_norm(t, ord, 1), [x])
    z = np.zeros((2, 3), np.float32)  # zero vectors: torch's masked gradients
    check_vs_torch(lambda x: flow.linalg.vector_norm(x, ord, 1), lambda x: torch.linalg.vector_norm(x, ord, 1), [z])
    check_vs_torch(lambda x: flow.linalg.vector_norm(strided(x, flow), ord),
                   lambda x: torch.linalg.vector_norm(strided(x, torch), ord), [randn(3, 2, 4)], rtol=1e-5, atol=1e-5)


def test_norm_function_and_method():
    a = randn(3, 4)
    check_vs_torch(lambda x: flow.norm(x), lambda x: torch.norm(x), [a])
    check_vs_torch(lambda x: flow.norm(x, "fro", (0, 1)), lambda x: torch.norm(x, "fro", (0, 1)), [a])
    check_vs_torch(lambda x: x.norm(p=1, dim=1), lambda x: x.norm(p=1, dim=1), [a])
    check_vs_torch(lambda x: x.norm(3, 0, True), lambda x: x.norm(3, 0, True), [a])
    check_vs_torch(lambda x: flow.norm(x, float("inf")), lambda x: torch.norm(x, float("inf")), [a])
    check_vs_torch(lambda x: flow.linalg.vector_norm(x, dtype=flow.float64),
                   lambda x: torch.linalg.vector_norm(x, dtype=torch.float64), [a])
    check_vs_torch(lambda x: flow.norm(x, 2, 1), lambda x: torch.norm(x, 2, 1), [np.zeros((2, 3), np.float32)])
    assert math.isnan(flow.linalg.vector_norm(ft(np.array([1.0, np.nan], np.float32)), math.inf).item())


def test_norm_double_backward():
    a = randn(3, 4, dtype=np.float64)
    f, t = ft(a, True), torch.tensor(a, requires_grad=True)
    for ord in [2, 3, 1.5]:
        gf, = flow.autograd.grad(flow.linalg.vector_norm(f, ord, 1).sum(), [f], create_graph=True)
        gt, = torch.autograd.grad(torch.linalg.vector_norm(t, ord, 1).sum(), [t], create_graph=True)
        assert_close(gf, gt)
        assert_close(flow.autograd.grad((gf * gf).sum(), [f])[0], torch.autograd.grad((gt * gt).sum(), [t])[0],
                     rtol=1e-6, atol=1e-9)


# ---- logsumexp -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [0, -1, (0, 2), [1]])
@pytest.mark.parametrize("keepdim", [False, True])
def test_logsumexp_vs_torch(dim, keepdim):
    a = randn(3, 4, 5) * 30  # large values: must not overflow
    check_vs_torch(lambda x: flow.logsumexp(x, dim, keepdim), lambda x: torch.logsumexp(x, dim, keepdim), [a],
                   rtol=1e-5, atol=1e-4)
    check_vs_torch(lambda x: x.logsumexp(dim=dim, keepdim=keepdim), lambda x: x.logsumexp(dim=dim, keepdim=keepdim),
                   [a], rtol=1e-5, atol=1e-4)


def test_logsumexp_infinities():
    a = np.array([[-np.inf, -np.inf], [np.inf, 1.0], [-np.inf, 2.0], [np.nan, 1.0], [1000.0, 1000.0]], np.float32)
    assert_close(flow.logsumexp(ft(a), 1), torch.logsumexp(torch.tensor(a), 1))
    big = np.full(100000, 88.0, np.float32)
    assert_close(flow.logsumexp(ft(big), 0), torch.logsumexp(torch.tensor(big), 0), rtol=1e-5)


def test_logsumexp_double_backward():
    a = randn(3, 4, dtype=np.float64)
    f, t = ft(a, True), torch.tensor(a, requires_grad=True)
    gf, = flow.autograd.grad(flow.logsumexp(f, 1).sum(), [f], create_graph=True)
    gt, = torch.autograd.grad(torch.logsumexp(t, 1).sum(), [t], create_graph=True)
    assert_close(flow.autograd.grad((gf * gf).sum(), [f])[0], torch.autograd.grad((gt * gt).sum(), [t])[0])


# ---- all / any / count_nonzero -------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["all", "any"])
def test_all_any(name):
    for arr in [rng.standard_normal((3, 4, 5)) > 0.8, (rng.standard_normal((3, 4, 5)) > -1.5).astype(np.float32),
                (rng.integers(0, 3, (3, 4, 5))).astype(np.uint8), np.ones((2, 3, 2), np.int32)]:
        f, t = ft(arr), torch.tensor(arr)
        assert_close(getattr(flow, name)(f), getattr(torch, name)(t))
        for dim in [0, -1, (0, 2), ()]:
            for keepdim in [False, True]:
                assert_close(getattr(flow, name)(f, dim, keepdim), getattr(torch, name)(t, dim, keepdim))
                assert_close(getattr(f, name)(dim=dim, keepdim=keepdim), getattr(t, name)(dim=dim, keepdim=keepdim))
        assert_close(getattr(flow, name)(strided(f, flow), 1), getattr(torch, name)(strided(t, torch), 1))


def test_count_nonzero():
    a = randn(3, 4, 5)
    a[a < 0.3] = 0
    f, t = ft(a), torch.tensor(a)
    for dim in [None, 0, -1, (0, 2), ()]:
        assert_close(flow.count_nonzero(f, dim), torch.count_nonzero(t, dim))
    assert_close(f.count_nonzero(dim=1), t.count_nonzero(dim=1))
    assert_close(flow.count_nonzero(strided(f, flow), 0), torch.count_nonzero(strided(t, torch), 0))
    b = rng.standard_normal((5, 7)) > 0
    assert_close(flow.count_nonzero(ft(b), 1), torch.count_nonzero(torch.tensor(b), 1))


# ---- cumsum / cumprod ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scans_vs_torch(name, dim):
    a = rng.uniform(0.5, 1.5, (3, 4, 5)).astype(np.float32)
    check_vs_torch(lambda x: getattr(flow, name)(x, dim), lambda x: getattr(torch, name)(x, dim), [a], rtol=1e-5)
    check_vs_torch(lambda x: getattr(x, name)(dim), lambda x: getattr(x, name)(dim), [a], rtol=1e-5)
    check_vs_torch(lambda x: getattr(flow, name)(strided(x, flow), dim),
                   lambda x: getattr(torch, name)(strided(x, torch), dim), [a], rtol=1e-5)
    check_vs_torch(lambda x: getattr(flow, name)(x, dim, dtype=flow.float64),
                   lambda x: getattr(torch, name)(x, dim, dtype=torch.float64), [a], rtol=1e-5)
    i = rng.integers(-3, 4, (3, 4)).astype(np.int32)
    assert_close(getattr(flow, name)(ft(i), 1), getattr(torch, name)(torch.tensor(i), 1))
    b = rng.standard_normal((3, 4)) > 0
    assert_close(getattr(flow, name)(ft(b), 0), getattr(torch, name)(torch.tensor(b), 0))
    x = ft(rng.uniform(0.5, 1.5, (3, 4)), True)
    gradcheck(lambda t: getattr(flow, name)(t, dim % 2), [x])


def test_cumprod_grad_with_zeros():
    a = rng.uniform(0.5, 1.5, (4, 6)).astype(np.float32)
    a[0, 2] = 0
    a[1, 0] = 0
    a[2, 1] = 0
    a[2, 4] = 0
    a[3, 5] = 0
    for dim in [0, 1]:
        check_vs_torch(lambda x: flow.cumprod(x, dim), lambda x: torch.cumprod(x, dim), [a], rtol=1e-5)
    x = ft(a.astype(np.float64), True)
    gradcheck(lambda t: flow.cumprod(t, 1), [x])
    gradcheck(lambda t: flow.cumprod(t, 0), [x])


def test_cumsum_double_backward():
    a = randn(3, 4, dtype=np.float64)
    f = ft(a, True)
    g, = flow.autograd.grad((flow.cumsum(f, 1) * flow.cumsum(f, 1)).sum(), [f], create_graph=True)
    t = torch.tensor(a, requires_grad=True)
    gt, = torch.autograd.grad((torch.cumsum(t, 1) ** 2).sum(), [t], create_graph=True)
    assert_close(g, gt)
    assert_close(flow.autograd.grad(g.sum(), [f])[0], torch.autograd.grad(gt.sum(), [t])[0])


# ---- large inputs: parallel paths ----------------------------------------------------------------------
@pytest.mark.parametrize("shape,dim", [((1 << 20,), None), ((2, 300000), 1), ((300000, 3), 0), ((500, 600), 0),
                                       ((500, 600), 1), ((10, 5000, 7), 1), ((10, 5000, 7), (0, 2))])
def test_large_reductions_match_numpy(shape, dim):
    old = flow.get_num_threads()
    flow.set_num_threads(2)
    try:
        a = rng.standard_normal(shape).astype(np.float32)
        f = ft(a)
        ax = dim if dim is None or isinstance(dim, tuple) else (dim,)
        ref = a.astype(np.float64)
        np.testing.assert_allclose(to_np(flow.sum(f, **kw(dim))), ref.sum(axis=ax), rtol=1e-5, atol=1e-3)
        np.testing.assert_allclose(to_np(flow.mean(f, **kw(dim))), ref.mean(axis=ax), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(to_np(flow.amax(f, dim if dim is not None else ())), ref.max(axis=ax))
        np.testing.assert_allclose(to_np(flow.var(f, **kw(dim))), ref.var(axis=ax, ddof=1), rtol=1e-4)
        np.testing.assert_allclose(to_np(flow.logsumexp(f, dim if dim is not None else list(range(a.ndim)))),
                                   np.log(np.exp(ref).sum(axis=ax)), rtol=1e-5)
        if dim is None or isinstance(dim, int):
            np.testing.assert_array_equal(to_np(flow.argmax(f, dim)), np.argmax(a, axis=dim))
    finally:
        flow.set_num_threads(old)


def test_second_order_through_zeros_matches_torch():
    # create_graph=True switches prod/cumprod to a differentiable zero-safe gradient
    a = np.array([[1.0, 0.0, 2.0], [3.0, 4.0, 5.0], [0.0, 0.0, 1.5]])
    v = np.arange(9.0).reshape(3, 3) / 7 - 0.5
    for ff, tf in [(lambda t: flow.prod(t, 1), lambda t: torch.prod(t, 1)),
                   (lambda t: flow.prod(t), lambda t: torch.prod(t)),
                   (lambda t: flow.cumprod(t, 1), lambda t: torch.cumprod(t, 1)),
                   (lambda t: flow.cumprod(t.t(), 0), lambda t: torch.cumprod(t.t(), 0))]:
        f, t = ft(a, True), torch.tensor(a, requires_grad=True)
        fo, to = ff(f), tf(t)
        wo = np.linspace(-1, 1, fo.numel()).reshape(tuple(fo.shape))
        g, = flow.autograd.grad((fo * flow.tensor(wo)).sum(), [f], create_graph=True)
        tg, = torch.autograd.grad((to * torch.tensor(wo)).sum(), [t], create_graph=True)
        np.testing.assert_allclose(to_np(g), tg.detach().numpy(), rtol=1e-12, atol=1e-12)
        gg, = flow.autograd.grad((g * flow.tensor(v)).sum(), [f])
        tgg, = torch.autograd.grad((tg * torch.tensor(v)).sum(), [t])
        np.testing.assert_allclose(to_np(gg), tgg.numpy(), rtol=1e-10, atol=1e-12)


def test_logsumexp_special_rows_and_long_rows_match_torch():
    # the vectorised row path: shift by the max, NaN and infinities as torch treats them, and rows long
    # enough to be split across chunks and threads
    rng = np.random.default_rng(11)
    x = rng.standard_normal((7, 40)).astype(np.float32) * 30
    x[1, 5] = np.nan
    x[2, 7] = np.inf
    x[3, :] = -np.inf
    x[4, 3] = -np.inf
    x[5, :] = 1e30
    x[6, 9] = -np.inf
    x[6, 10] = np.inf
    for dim in (1, 0):
        got = flow.logsumexp(flow.tensor(x), dim)
        want = torch.logsumexp(torch.tensor(x), dim)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
    big = rng.standard_normal((3, 200_000)).astype(np.float32) * 10
    for dt in (np.float32, np.float64):
        got = flow.logsumexp(flow.tensor(big.astype(dt)), 1)
        want = torch.logsumexp(torch.tensor(big.astype(dt)), 1)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("shape,dims", [
    ((16, 8, 12, 12), (0, 2, 3)),  # a conv bias gradient: kept channels between reduced runs
    ((16, 8, 12, 12), (0, 3)),
    ((4, 1, 6, 1, 5), (0, 2, 4)),  # size-1 dims inside and between the runs
    ((3, 5, 4, 6, 7), (0, 2, 4)),  # three runs: split twice
    ((5, 1, 7), (0, 2)),
])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_sum_and_mean_over_split_dims_match_torch(shape, dims, dtype):
    x = randn(*shape, dtype=dtype) + 3  # an offset, so a wrong count or a dropped group shows in the mean
    tol = dict(rtol=2e-3, atol=2e-2) if dtype == np.float16 else dict(rtol=1e-5, atol=1e-4)
    for keepdim in (False, True):
        for name in ("sum", "mean"):
            got = getattr(flow.tensor(x), name)(dims, keepdim=keepdim)
            want = getattr(torch.tensor(x), name)(dims, keepdim=keepdim)
            assert_close(got, want, **tol)
