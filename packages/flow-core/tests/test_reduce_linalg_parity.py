"""Reductions, selection and linalg against PyTorch where they used to differ: degrees-of-freedom warnings of
var/std, argument checks (dtype narrowing of norms, multi_dot/vecdot/lstsq shapes and dtypes, unique/kthvalue
on empty dims, bool inputs), histogram/bincount edge cases, and the gradients of logdet and hermitian pinv."""
import math
import warnings

import numpy as np
import pytest

import oneflow as flow
from helpers import assert_close, torch

rng = np.random.default_rng(0)


def both(fn, *arrays):
    """``fn(lib, *tensors)`` for oneflow and torch on the same data: (result or exception, warning messages)."""
    out = []
    for lib in (flow, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                res = fn(lib, *[lib.tensor(a) for a in arrays])
            except Exception as e:  # noqa: BLE001 - the exception is what is compared
                res = e
        out.append((res, [str(w.message) for w in caught]))
    return out


def same_error(fn, *arrays, match=None):
    """Both libraries raise the same exception type (and ``match``, when given, is in oneflow's message)."""
    (rf, _), (rt, _) = both(fn, *arrays)
    assert isinstance(rt, Exception), f"torch did not raise: {rt}"
    assert isinstance(rf, Exception), f"oneflow did not raise, returned {rf}"
    assert type(rf).__name__ == type(rt).__name__, (rf, rt)
    if match is not None:
        assert match in str(rf), str(rf)


def same_values(fn, *arrays, rtol=1e-6, atol=1e-8):
    (rf, _), (rt, _) = both(fn, *arrays)
    assert not isinstance(rt, Exception), rt
    assert not isinstance(rf, Exception), rf
    for f, t in zip(rf if isinstance(rf, tuple) else (rf,), rt if isinstance(rt, tuple) else (rt,)):
        assert_close(f, t, rtol=rtol, atol=atol)


def grads(fn, arr, create_graph=False):
    """The gradient of ``sum(fn(x) * w)`` at ``arr`` for both libraries (and, with ``create_graph``, the
    gradient of the squared gradient: a double backward)."""
    res = []
    w = rng.standard_normal(np.asarray(fn(torch, torch.tensor(arr)).shape))
    for lib in (flow, torch):
        x = lib.tensor(arr, requires_grad=True)
        (g,) = lib.autograd.grad((fn(lib, x) * lib.tensor(w)).sum(), [x], create_graph=create_graph)
        res.append(lib.autograd.grad((g * g).sum(), [x])[0] if create_graph else g)
    return res


# ---- var / std degrees of freedom ------------------------------------------------------------------------------
DOF_CASES = [  # (shape, kwargs): every case leaves no degree of freedom in torch, so it warns
    ((1,), {}),
    ((), {}),
    ((2, 0), {}),
    ((2, 0), {"dim": 0, "correction": 0}),
    ((3, 2), {"dim": 0, "correction": 3}),
    ((3, 2), {"correction": 6}),
    ((1, 3), {"dim": 0, "unbiased": True, "keepdim": True}),
]


@pytest.mark.parametrize("name", ["var", "std", "var_mean", "std_mean"])
@pytest.mark.parametrize("shape,kwargs", DOF_CASES)
def test_var_std_warn_without_degrees_of_freedom(name, shape, kwargs):
    a = rng.standard_normal(shape)
    (rf, wf), (rt, wt) = both(lambda L, x: getattr(L, name)(x, **kwargs), a)
    assert wt and wf, (wf, wt)
    assert f"{name}(): degrees of freedom is <= 0" in wf[0]
    for f, t in zip(rf if isinstance(rf, tuple) else (rf,), rt if isinstance(rt, tuple) else (rt,)):
        assert_close(f, t)


@pytest.mark.parametrize("kwargs", [{}, {"dim": 0, "correction": 2}, {"correction": 5.5}, {"dim": 1},
                                    {"dim": 0, "correction": -1}])
def test_var_std_no_warning_with_degrees_of_freedom(kwargs):
    a = rng.standard_normal((3, 2))
    (rf, wf), (rt, wt) = both(lambda L, x: L.var(x, **kwargs), a)
    assert not wt and not wf, (wf, wt)
    assert_close(rf, rt)


def test_var_std_method_warns_and_rejects_both_corrections():
    (_, wf), (_, wt) = both(lambda L, x: x.std(0), np.ones((1, 3)))
    assert wf and wt
    same_error(lambda L, x: L.var(x, 0, unbiased=True, correction=1), np.ones((2, 3)))


# ---- logdet / pinv gradients -----------------------------------------------------------------------------------
def test_logdet_gradient_is_finite():
    m = rng.standard_normal((3, 3))
    spd = m @ m.T + 3 * np.eye(3)
    gf, gt = grads(lambda L, x: L.logdet(x), spd)
    assert_close(gf, gt)
    # a batch holding a negative determinant: NaN there, and a zero gradient (not NaN) for that matrix
    batch = np.stack([spd, -np.eye(3)])
    same_values(lambda L, x: L.logdet(x), batch)
    gf, gt = grads(lambda L, x: L.logdet(x), batch)
    assert_close(gf, gt)
    gf, gt = grads(lambda L, x: x.logdet(), spd)
    assert_close(gf, gt)


def test_pinv_hermitian_gradient_matches_torch():
    m = rng.standard_normal((2, 3, 3))
    sym = m @ np.swapaxes(m, -1, -2) + 3 * np.eye(3)
    sym[:, 0, 2] += 0.5  # the upper triangle, which the forward ignores, still gets torch's gradient
    same_values(lambda L, x: L.linalg.pinv(x, hermitian=True), sym)
    gf, gt = grads(lambda L, x: L.linalg.pinv(x, hermitian=True), sym)
    assert_close(gf, gt, rtol=1e-6, atol=1e-9)
    gf, gt = grads(lambda L, x: L.linalg.pinv(x, hermitian=True, atol=0.1), sym[0], create_graph=True)
    assert_close(gf, gt, rtol=1e-6, atol=1e-9)
    gf, gt = grads(lambda L, x: L.linalg.pinv(x, rtol=0.1), rng.standard_normal((2, 4, 3)), create_graph=True)
    assert_close(gf, gt, rtol=1e-6, atol=1e-9)


# ---- norms -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda L, x: L.linalg.vector_norm(x, dtype=L.float32),
    lambda L, x: L.norm(x, dtype=L.float32),
    lambda L, x: L.norm(x, p=1, dim=0, dtype=L.float32),
    lambda L, x: L.linalg.norm(x, dtype=L.float32),
    lambda L, x: L.linalg.vector_norm(x.half(), dtype=L.bfloat16),
    lambda L, x: L.linalg.matrix_norm(x.half(), dtype=L.bfloat16),
    lambda L, x: L.linalg.matrix_norm(x.float(), dtype=L.float16),
])
def test_norm_dtype_must_not_narrow(fn):
    same_error(fn, rng.standard_normal((3, 3)), match="without narrowing")


def test_norm_dims_and_orders():
    r = rng.standard_normal((2, 4, 3))
    # no ord with two dims: the 2-norm of those elements (a vector norm: dims are range-checked first)
    same_values(lambda L, x: L.linalg.norm(x, None, (0, 2), True), r)
    same_error(lambda L, x: L.linalg.norm(x, None, (0, 1)), r[0, 0])
    same_error(lambda L, x: L.linalg.matrix_norm(x, dim=1), r)
    same_error(lambda L, x: L.linalg.matrix_norm(x, 2, 0), r[0, 0])
    # torch.norm(p='nuc') without dim takes every dim: only a matrix has one
    same_error(lambda L, x: L.norm(x, p="nuc"), r)
    same_values(lambda L, x: L.norm(x, p="nuc"), r[0])


# ---- linalg argument checks ------------------------------------------------------------------------------------
def test_multi_dot_checks():
    r = rng.standard_normal((2, 4, 3))
    same_error(lambda L, x: L.linalg.multi_dot([x, x[0].T]), r, match="the first tensor must be 1D or 2D")
    same_error(lambda L, x: L.linalg.multi_dot([x[0], x]), r, match="the last tensor must be 1D or 2D")
    same_error(lambda L, x: L.linalg.multi_dot([x[0], x[0, 0], x[0]]), r, match="tensor 1 must be 2D")
    same_error(lambda L, x: L.linalg.multi_dot([x[0], x[0].T.float()]), r, match="same dtype")
    same_values(lambda L, x: L.linalg.multi_dot([x[0, 0], x[0].T, x[1], x[1, 0]]), r)
    out = flow.empty(0, dtype=flow.float64)
    flow.linalg.multi_dot([flow.tensor(r[0]), flow.tensor(r[1].T)], out=out)
    assert_close(out, torch.linalg.multi_dot([torch.tensor(r[0]), torch.tensor(r[1].T)]))


def test_vecdot_and_lstsq_checks():
    x = rng.standard_normal((4, 3))
    same_error(lambda L, a: L.linalg.vecdot(a, a.float()), x, match="same dtype")
    same_error(lambda L, a: L.linalg.vecdot(a.long(), a.long()), x, match="floating point")
    same_error(lambda L, a: L.linalg.vecdot(a > 0, a > 0), x)
    same_values(lambda L, a: L.linalg.vecdot(a, a[:1], dim=-1), x)
    r = rng.standard_normal((2, 4, 3))
    same_error(lambda L, a: L.linalg.lstsq(a[0], a[..., :2]), r, match="input.dim() must be greater")
    same_values(lambda L, a: L.linalg.lstsq(a[:1], a[..., :2]).solution, r)
    same_values(lambda L, a: L.linalg.lstsq(a, a[..., 0]).solution, r)


# ---- histogram / bincount --------------------------------------------------------------------------------------
def test_histogram_defaults_and_errors():
    a = rng.standard_normal((5, 6)).astype(np.float32)
    f32 = {"rtol": 1e-5, "atol": 1e-6}  # float32 bin edges
    same_values(lambda L, x: L.histogram(x), a, **f32)
    same_values(lambda L, x: x.histogram(), a, **f32)
    same_values(lambda L, x: L.histogram(x, 4, weight=x.abs().reshape(-1)), a, **f32)
    same_error(lambda L, x: L.histogram(x.long(), 3), a)
    same_error(lambda L, x: L.histogram(x, 3, range=(1.0, 0.0)), a, match="min should not exceed max")
    same_error(lambda L, x: L.histogram(x, 3, range=(0.0, 1.0, 2.0)), a)
    same_error(lambda L, x: L.histogram(x, x.new_tensor([0.0, 1.0]).double()), a, match="same dtype")
    same_error(lambda L, x: L.histogram(x, 3), np.array([1.0, np.nan]), match="not finite")
    hist, edges = flow.empty(0, dtype=flow.float64), flow.empty(0, dtype=flow.float64)
    flow.histogram(flow.tensor(a.astype(np.float64)), 4, out=(hist, edges))
    want = torch.histogram(torch.tensor(a.astype(np.float64)), 4)
    assert_close(hist, want.hist)
    assert_close(edges, want.bin_edges)


def test_bincount_edge_cases():
    empty = np.zeros(0, np.int64)
    # an empty input gives int64 zeros even with (float) weights
    (rf, _), (rt, _) = both(lambda L, x, w: L.bincount(x, w, 3), empty, np.zeros(0, np.float32))
    assert_close(rf, rt)
    same_error(lambda L, x: L.bincount(x), np.array([1.0, 2.0]), match="bincount_cpu")
    same_error(lambda L, x: L.bincount(x), np.array([True, False]), match="bincount_cpu")
    same_error(lambda L, x: L.bincount(x, minlength=-1), np.array([-1]), match="minlength")
    same_values(lambda L, x: L.bincount(x, minlength=6), np.array([0, 3, 3, 1]))


# ---- selection on empty / bool inputs --------------------------------------------------------------------------
def test_unique_dim_checks():
    same_error(lambda L, x: L.unique(x, dim=0), np.array(1.0), match="has no dimensions")
    same_error(lambda L, x: L.unique_consecutive(x, dim=-1), np.array(1.0), match="has no dimensions")
    same_error(lambda L, x: L.unique(x, dim=0, return_counts=True), np.zeros((2, 0)), match="0 sized dimensions")
    same_error(lambda L, x: L.unique_consecutive(x, dim=1), np.zeros((0, 2)), match="0 sized dimensions")
    same_values(lambda L, x: L.unique(x, dim=1, return_inverse=True, return_counts=True), np.zeros((2, 0)))
    same_values(lambda L, x: L.unique_consecutive(x, dim=0, return_counts=True), np.zeros((0, 2)))


def test_kthvalue_topk_searchsorted_checks():
    same_error(lambda L, x: L.kthvalue(x, 1), np.zeros((2, 0)), match="non-zero size")
    same_error(lambda L, x: L.kthvalue(x, 0, 1), np.zeros((2, 0)), match="non-zero size")
    same_error(lambda L, x: L.kthvalue(x, 3, 0), np.ones((2, 2), bool), match="out of range")
    same_values(lambda L, x: L.kthvalue(x, 1, 1), np.zeros((0, 2)))
    same_error(lambda L, x: L.topk(x, 1), np.array([True, False]), match="bool")
    same_error(lambda L, x: L.searchsorted(x, True), np.array([False, True]), match="searchsorted_out_cpu")
    same_error(lambda L, x: L.bucketize(x, x), np.array([False, True]))
    same_values(lambda L, x: L.searchsorted(x, x.long()), np.array([False, True]))


def test_fixed_paths_keep_values():
    """The checks added above leave the ordinary results (and gradients) as torch's."""
    a = rng.standard_normal((3, 4))
    same_values(lambda L, x: L.std_mean(x, 1, correction=0), a)
    same_values(lambda L, x: L.linalg.vector_norm(x.float(), math.inf, 1, dtype=L.float64), a)
    same_values(lambda L, x: L.norm(x, "nuc"), a)
    gf, gt = grads(lambda L, x: L.var(x, 0, correction=2), a)
    assert_close(gf, gt)


@pytest.mark.parametrize("call", [
    lambda m: m.nanmean(m.ones(3, dtype=m.int64), dtype=m.float32),  # the input's dtype is checked, not dtype=
    lambda m: m.argmax(m.tensor([True, False])),
    lambda m: m.argmin(m.tensor([True, False]), dim=0),
    lambda m: m.tensor(2.0).var((0, -1)),  # a 0-d tensor's dims 0 and -1 are one dim
    lambda m: m.tensor(2.0).sum((0, -1)),
])
def test_reduction_argument_errors_like_torch(call):
    with pytest.raises(RuntimeError) as fe:
        call(flow)
    with pytest.raises(RuntimeError) as te:
        call(torch)
    assert str(te.value) in str(fe.value)  # torch's whole message (ours may name the op in front)
