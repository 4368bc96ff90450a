"""Unary family: elementwise math, activations, clamp/nan_to_num/predicates, against PyTorch and finite
differences (forward, backward, double backward, dtypes, layouts, in-place variants, errors)."""
import math

import numpy as np
import pytest

import oneflow as flow
import oneflow.nn.functional as F
import torch
import torch.nn.functional as TF
from helpers import assert_close, check_vs_torch, gradcheck, to_np


class Case:
    """An op under test: flow and torch callables, the input domain, and the points where it has kinks
    (inputs are kept away from them so that finite differences are meaningful)."""

    def __init__(self, name, f, t=None, lo=-2.0, hi=2.0, kinks=(), int_ok=True, smooth=True, periodic_kinks=None):
        self.name, self.f, self.t = name, f, t or f
        self.lo, self.hi, self.kinks = lo, hi, kinks
        self.int_ok = int_ok              # integer inputs accepted by PyTorch
        self.smooth = smooth              # has a nonzero derivative (worth a finite-difference check)
        self.periodic_kinks = periodic_kinks  # kinks at multiples of this (rounding ops)

    def __repr__(self):
        return self.name

    def data(self, shape, dtype=np.float64, seed=0):
        rng = np.random.default_rng(seed)
        x = rng.uniform(self.lo, self.hi, size=shape)
        for k in self.kinks:
            near = np.abs(x - k) < 0.05
            x[near] = k + np.where(x[near] >= k, 0.1, -0.1)
        if self.periodic_kinks:
            p = self.periodic_kinks
            r = x / p - np.round(x / p)
            x = np.where(np.abs(r) < 0.1, x + 0.25 * p, x)
        return x.astype(dtype)


def _m(name):
    return lambda x: getattr(x, name)()


MATH = [
    Case("abs", _m("abs"), kinks=(0,)),
    Case("sign", _m("sign"), kinks=(0,), smooth=False),
    Case("sqrt", _m("sqrt"), lo=0.1, hi=4),
    Case("rsqrt", _m("rsqrt"), lo=0.2, hi=4),
    Case("square", _m("square")),
    Case("reciprocal", _m("reciprocal"), lo=0.3, hi=3),
    Case("exp", _m("exp")),
    Case("exp2", _m("exp2")),
    Case("expm1", _m("expm1")),
    Case("log", _m("log"), lo=0.1, hi=5),
    Case("log2", _m("log2"), lo=0.1, hi=5),
    Case("log10", _m("log10"), lo=0.1, hi=5),
    Case("log1p", _m("log1p"), lo=-0.8, hi=4),
    Case("sin", _m("sin"), lo=-4, hi=4),
    Case("cos", _m("cos"), lo=-4, hi=4),
    Case("tan", _m("tan"), lo=-1.2, hi=1.2),
    Case("asin", _m("asin"), lo=-0.9, hi=0.9),
    Case("acos", _m("acos"), lo=-0.9, hi=0.9),
    Case("atan", _m("atan"), lo=-4, hi=4),
    Case("sinh", _m("sinh")),
    Case("cosh", _m("cosh")),
    Case("tanh", _m("tanh"), lo=-4, hi=4),
    Case("asinh", _m("asinh"), lo=-4, hi=4),
    Case("acosh", _m("acosh"), lo=1.2, hi=4),
    Case("atanh", _m("atanh"), lo=-0.9, hi=0.9),
    Case("sigmoid", _m("sigmoid"), lo=-6, hi=6),
    Case("erf", _m("erf")),
    Case("erfc", _m("erfc")),
    Case("erfinv", _m("erfinv"), lo=-0.95, hi=0.95),
    Case("floor", _m("floor"), lo=-4, hi=4, periodic_kinks=1.0, smooth=False),
    Case("ceil", _m("ceil"), lo=-4, hi=4, periodic_kinks=1.0, smooth=False),
    Case("round", _m("round"), lo=-4, hi=4, periodic_kinks=0.5, smooth=False),
    Case("round_decimals", lambda x: x.round(decimals=1), lo=-4, hi=4, periodic_kinks=0.05, smooth=False),
    Case("trunc", _m("trunc"), lo=-4, hi=4, periodic_kinks=1.0, smooth=False),
    Case("frac", _m("frac"), lo=-4, hi=4, periodic_kinks=1.0, int_ok=False),
    Case("neg", _m("neg")),
]

ACT = [
    Case("relu", F.relu, TF.relu, kinks=(0,)),
    Case("relu6", F.relu6, TF.relu6, lo=-3, hi=9, kinks=(0, 6)),
    Case("gelu", F.gelu, TF.gelu, lo=-4, hi=4, int_ok=False),
    Case("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), lambda x: TF.gelu(x, approximate="tanh"), lo=-4,
         hi=4, int_ok=False),
    Case("silu", F.silu, TF.silu, lo=-6, hi=6, int_ok=False),
    Case("softplus", F.softplus, TF.softplus, lo=-5, hi=5, int_ok=False),
    Case("softplus_beta", lambda x: F.softplus(x, beta=2, threshold=3), lambda x: TF.softplus(x, beta=2, threshold=3),
         lo=-3, hi=3, kinks=(1.5,), int_ok=False),
    Case("elu", lambda x: F.elu(x, alpha=0.7), lambda x: TF.elu(x, alpha=0.7), kinks=(0,), int_ok=False),
    Case("selu", F.selu, TF.selu, kinks=(0,), int_ok=False),
    Case("celu", lambda x: F.celu(x, alpha=1.5), lambda x: TF.celu(x, alpha=1.5), kinks=(0,), int_ok=False),
    Case("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2), kinks=(0,), int_ok=False),
    Case("hardtanh", lambda x: F.hardtanh(x, -0.5, 1.5), lambda x: TF.hardtanh(x, -0.5, 1.5), lo=-3, hi=3,
         kinks=(-0.5, 1.5)),
    Case("hardswish", F.hardswish, TF.hardswish, lo=-5, hi=5, kinks=(-3, 3), int_ok=False),
    Case("hardsigmoid", F.hardsigmoid, TF.hardsigmoid, lo=-5, hi=5, kinks=(-3, 3), int_ok=False),
    Case("mish", F.mish, TF.mish, lo=-5, hi=5, int_ok=False),
    Case("logsigmoid", F.logsigmoid, TF.logsigmoid, lo=-6, hi=6, int_ok=False),
    Case("softsign", F.softsign, TF.softsign, kinks=(0,)),
    Case("tanhshrink", F.tanhshrink, TF.tanhshrink),
    Case("hardshrink", F.hardshrink, TF.hardshrink, kinks=(-0.5, 0.5), int_ok=False),
    Case("softshrink", lambda x: F.softshrink(x, 0.3), lambda x: TF.softshrink(x, 0.3), kinks=(-0.3, 0.3),
         int_ok=False),
    Case("threshold", lambda x: F.threshold(x, 0.1, -2.0), lambda x: TF.threshold(x, 0.1, -2.0), kinks=(0.1,)),
    Case("F.sigmoid", F.sigmoid, torch.sigmoid, lo=-6, hi=6),
    Case("F.tanh", F.tanh, torch.tanh),
    Case("glu", F.glu, TF.glu, int_ok=False),
    Case("glu_dim0", lambda x: F.glu(x, 0), lambda x: TF.glu(x, 0), int_ok=False),
    Case("clamp", lambda x: x.clamp(-0.5, 0.7), lambda x: x.clamp(-0.5, 0.7), kinks=(-0.5, 0.7)),
    Case("clamp_kw_min", lambda x: flow.clamp(x, min=0.2), lambda x: torch.clamp(x, min=0.2), kinks=(0.2,)),
    Case("clamp_kw_max", lambda x: flow.clamp(x, max=0.2), lambda x: torch.clamp(x, max=0.2), kinks=(0.2,)),
    Case("clamp_min", lambda x: x.clamp_min(-1), lambda x: x.clamp_min(-1), kinks=(-1,)),
    Case("clamp_max", lambda x: flow.clamp_max(x, 1), lambda x: torch.clamp_max(x, 1), kinks=(1,)),
    Case("clip", lambda x: flow.clip(x, -1, 1), lambda x: torch.clip(x, -1, 1), kinks=(-1, 1)),
    Case("nan_to_num", lambda x: x.nan_to_num(), lambda x: x.nan_to_num()),
    Case("positive", flow.positive, torch.positive),
    Case("absolute", flow.absolute, torch.absolute, kinks=(0,)),
    Case("arcsin", flow.arcsin, torch.arcsin, lo=-0.9, hi=0.9),
    Case("fix", flow.fix, torch.fix, periodic_kinks=1.0, smooth=False),
]

ALL = MATH + ACT
SMOOTH = [c for c in ALL if c.smooth]


def _shape(case):
    return (4, 6)


def _tol(dtype):
    return dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-7, atol=1e-10)  # torch uses float constants in a few float64 kernels


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ALL, ids=repr)
def test_forward_backward_vs_torch(case, dtype):
    x = case.data(_shape(case), dtype)
    tol = _tol(dtype)
    check_vs_torch(case.f, case.t, [x], **tol)


@pytest.mark.parametrize("case", SMOOTH, ids=repr)
def test_gradcheck_finite_differences(case):
    x = flow.tensor(case.data((2, 4)), requires_grad=True)
    gradcheck(case.f, [x])


@pytest.mark.parametrize("case", ALL, ids=repr)
def test_noncontiguous_input(case):
    x = case.data((4, 8))
    check_vs_torch(lambda a: case.f(a.t()), lambda a: case.t(a.t()), [x])
    # a strided (every other column) view
    check_vs_torch(lambda a: case.f(a.view(4, 4, 2).select(2, 0)),
                   lambda a: case.t(a.view(4, 4, 2).select(2, 0)), [x])


@pytest.mark.parametrize("case", ALL, ids=repr)
def test_zero_size_and_0dim(case):
    if case.name.startswith("glu"):
        z = np.zeros((0, 4))
    else:
        z = np.zeros((0, 3))
    check_vs_torch(case.f, case.t, [z])
    if not case.name.startswith("glu"):
        check_vs_torch(case.f, case.t, [case.data(())])


@pytest.mark.parametrize("case", ALL, ids=repr)
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.bool_])
def test_integer_and_bool_inputs_like_torch(case, dtype):
    """Same result dtype and values as PyTorch, or the same exception type."""
    if case.name.startswith("glu"):
        return
    x = np.array([[0, 1, 2], [3, 1, 0]]).astype(dtype)
    try:
        expected = case.t(torch.tensor(x))
    except Exception as e:  # noqa: BLE001
        with pytest.raises(type(e)):
            case.f(flow.tensor(x))
        return
    got = case.f(flow.tensor(x))
    assert_close(got, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("case", ALL, ids=repr)
def test_half_precision_forward(case, dtype):
    x = case.data((6, 6), np.float32)
    fx = flow.tensor(x).to(getattr(flow, dtype)) if hasattr(flow.Tensor, "to") else flow.tensor(x, dtype=getattr(flow, dtype))
    tx = torch.tensor(x).to(getattr(torch, dtype))
    got, expected = case.f(fx), case.t(tx)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    tol = 1e-2 if dtype == "float16" else 4e-2
    assert_close(got, expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_backward(dtype):
    x = np.linspace(-2, 2, 12).astype(np.float32).reshape(3, 4) + 0.01
    for f, t in [(F.gelu, TF.gelu), (F.silu, TF.silu), (flow.sigmoid, torch.sigmoid), (flow.tanh, torch.tanh),
                 (F.relu, TF.relu), (flow.sin, torch.sin), (F.elu, TF.elu)]:
        fx = flow.tensor(x, dtype=getattr(flow, dtype), requires_grad=True)
        tx = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
        f(fx).sum().backward()
        t(tx).sum().backward()
        assert fx.grad.dtype == getattr(flow, dtype)
        assert_close(fx.grad, tx.grad, rtol=2e-2, atol=2e-2)


# ---- in-place variants -------------------------------------------------------------------------------

INPLACE = [
    ("relu_", (), -2, 2), ("sigmoid_", (), -3, 3), ("tanh_", (), -3, 3), ("exp_", (), -2, 2), ("sin_", (), -3, 3),
    ("sqrt_", (), 0.1, 3), ("abs_", (), -2, 2), ("neg_", (), -2, 2), ("floor_", (), -3, 3), ("round_", (), -3, 3),
    ("clamp_", (-0.5, 0.5), -2, 2), ("clamp_min_", (0.1,), -2, 2), ("clamp_max_", (0.1,), -2, 2),
    ("clip_", (-1, 1), -2, 2), ("erfinv_", (), -0.9, 0.9), ("reciprocal_", (), 0.5, 2), ("square_", (), -2, 2),
    ("nan_to_num_", (), -2, 2), ("frac_", (), -3, 3), ("log1p_", (), 0, 3), ("atan_", (), -2, 2),
]


@pytest.mark.parametrize("name,args,lo,hi", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_tensor_methods(name, args, lo, hi):
    x = np.random.default_rng(3).uniform(lo, hi, (3, 4))
    f = flow.tensor(x)
    v = f._version
    r = getattr(f, name)(*args)
    assert r is f and f._version == v + 1
    t = getattr(torch.tensor(x), name)(*args)
    assert_close(f, t)
    # autograd through an in-place op on a non-leaf
    check_vs_torch(lambda a: getattr(a * 1.0, name)(*args), lambda a: getattr(a * 1.0, name)(*args), [x])


INPLACE_ACT = [
    ("relu", {}), ("relu6", {}), ("elu", {"alpha": 0.5}), ("selu", {}), ("celu", {"alpha": 2.0}),
    ("leaky_relu", {"negative_slope": 0.3}), ("hardtanh", {"min_val": -0.5, "max_val": 0.5}), ("hardswish", {}),
    ("hardsigmoid", {}), ("silu", {}), ("mish", {}), ("threshold", {"threshold": 0.2, "value": 5.0}),
]


@pytest.mark.parametrize("name,kw", INPLACE_ACT, ids=[c[0] for c in INPLACE_ACT])
def test_functional_inplace(name, kw):
    x = np.random.default_rng(4).uniform(-4, 4, (3, 5))
    x[np.abs(x) < 0.05] = 0.3
    f = flow.tensor(x)
    v = f._version
    r = getattr(F, name)(f, inplace=True, **kw)
    assert r is f and f._version == v + 1
    assert_close(f, getattr(TF, name)(torch.tensor(x), **kw))
    # not in-place by default
    g = flow.tensor(x)
    out = getattr(F, name)(g, **kw)
    assert out is not g and np.array_equal(g.numpy(), x)
    check_vs_torch(lambda a: getattr(F, name)(a * 1.0, inplace=True, **kw),
                   lambda a: getattr(TF, name)(a * 1.0, inplace=True, **kw), [x])


def test_inplace_on_leaf_requiring_grad_raises():
    x = flow.tensor([1.0, -1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        F.relu(x, inplace=True)


def test_inplace_float_op_on_int_tensor_raises():
    x = flow.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.sin_()
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.clamp_(min=0.5)


def test_modified_saved_output_raises():
    x = flow.tensor([1.0, -1.0], requires_grad=True)
    y = flow.sigmoid(x)
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_noncontiguous_inplace():
    x = np.random.default_rng(5).standard_normal((4, 6))
    f = flow.tensor(x)
    f.t().relu_()
    assert_close(f, torch.tensor(x).relu())
    f = flow.tensor(x)
    f.t().exp_()
    assert_close(f, torch.tensor(x).exp())


# ---- double backward of the fused helpers -----------------------------------------------------------

DOUBLE = [c for c in ALL if c.smooth and c.name not in ("positive",)]


@pytest.mark.parametrize("case", DOUBLE, ids=repr)
def test_double_backward_vs_torch(case):
    x = case.data((4, 6))
    fx = flow.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    w = np.random.default_rng(6).standard_normal(tuple(case.t(tx).shape))
    (fg,) = flow.autograd.grad((case.f(fx) * flow.tensor(w)).sum(), [fx], create_graph=True)
    (tg,) = torch.autograd.grad((case.t(tx) * torch.tensor(w)).sum(), [tx], create_graph=True)
    assert_close(fg, tg, rtol=1e-7, atol=1e-10)
    if not tg.requires_grad:  # piecewise-linear in x: torch has no second-order graph
        return
    (fgg,) = flow.autograd.grad((fg * fg).sum(), [fx], allow_unused=True)
    try:
        (tgg,) = torch.autograd.grad((tg * tg).sum(), [tx], allow_unused=True)
    except RuntimeError as e:  # torch lacks some (zero almost everywhere) second derivatives
        assert "not implemented" in str(e)
        tgg = None
    if tgg is not None and tgg._is_zerotensor():
        tgg = None
    if tgg is None:
        assert fgg is None or np.allclose(to_np(fgg), 0)
    else:
        assert_close(fgg, tgg, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("name", ["relu", "gelu", "gelu_tanh", "silu", "F.sigmoid", "F.tanh", "elu", "softplus",
                                  "softplus_beta", "hardswish", "mish", "celu", "leaky_relu"])
def test_double_backward_finite_differences(name):
    case = next(c for c in ALL if c.name == name)
    def first_grad(x, gout):
        if not x.requires_grad:  # the finite-difference probes pass plain tensors
            x = x.detach().requires_grad_(True)
        (g,) = flow.autograd.grad((case.f(x) * gout).sum(), [x], create_graph=True)
        return g

    x = flow.tensor(case.data((2, 3)), requires_grad=True)
    gout = flow.tensor(np.random.default_rng(8).standard_normal(tuple(case.f(x).shape)), requires_grad=True)
    gradcheck(lambda a, b: first_grad(a, b) * 1.0, [x, gout])


# ---- numerics --------------------------------------------------------------------------------------

SPECIAL = np.array([0.0, -0.0, 1e-8, -1e-8, 0.3, -0.7, 1.0, 5.0, -5.0, 20.0, -20.0, 80.0, 88.5, 89.0, -87.0, -100.0,
                    -104.5, -200.0, np.inf, -np.inf, np.nan], dtype=np.float32)


@pytest.mark.parametrize("name", ["exp", "sigmoid", "tanh", "expm1", "log1p", "erfinv", "sqrt", "rsqrt", "relu",
                                  "abs", "sign", "floor", "round", "trunc", "frac", "erf", "reciprocal"])
def test_special_values(name):
    with np.errstate(all="ignore"):
        x = SPECIAL.copy()
        if name == "erfinv":
            x = np.array([-1.0, 1.0, 0.0, 0.999, -0.5, 2.0, np.nan], dtype=np.float32)
        for dt in [np.float32, np.float64]:
            got = getattr(flow, name)(flow.tensor(x.astype(dt)))
            exp = getattr(torch, name)(torch.tensor(x.astype(dt)))
            assert_close(got, exp, rtol=2e-6 if dt == np.float32 else 1e-12, atol=1e-30)


@pytest.mark.parametrize("name", ["exp", "sigmoid", "tanh", "relu", "abs", "sqrt", "floor", "neg"])
def test_large_contiguous_matches_torch(name):
    """Exercises the vectorised contiguous path across several parallel chunks."""
    x = np.random.default_rng(9).standard_normal(100_003).astype(np.float32) * 4
    if name == "sqrt":
        x = np.abs(x)
    assert_close(getattr(flow, name)(flow.tensor(x)), getattr(torch, name)(torch.tensor(x)), rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_silu_large(approximate):
    x = np.random.default_rng(10).standard_normal(70_000).astype(np.float32) * 5
    assert_close(F.gelu(flow.tensor(x), approximate=approximate),
                 TF.gelu(torch.tensor(x), approximate=approximate), rtol=1e-5, atol=2e-6)
    check_vs_torch(lambda a: F.gelu(a, approximate=approximate), lambda a: TF.gelu(a, approximate=approximate), [x],
                   rtol=1e-5, atol=2e-6)
    check_vs_torch(F.silu, TF.silu, [x], rtol=1e-5, atol=2e-6)


def test_nan_propagation_like_torch():
    x = np.array([np.nan, 1.0, -1.0, np.inf, -np.inf], dtype=np.float32)
    for f, t in [(F.relu, TF.relu), (F.relu6, TF.relu6), (F.hardtanh, TF.hardtanh),
                 (lambda a: a.clamp(-0.5, 0.5), lambda a: a.clamp(-0.5, 0.5)),
                 (lambda a: a.clamp(min=0), lambda a: a.clamp(min=0)), (lambda a: a.clamp(max=0), lambda a: a.clamp(max=0)),
                 (F.leaky_relu, TF.leaky_relu), (F.elu, TF.elu), (F.silu, TF.silu),
                 (F.softplus, TF.softplus), (F.hardshrink, TF.hardshrink), (F.softshrink, TF.softshrink),
                 (F.logsigmoid, TF.logsigmoid), (F.mish, TF.mish), (F.hardswish, TF.hardswish)]:
        assert_close(f(flow.tensor(x)), t(torch.tensor(x)))
    # torch's float32 gelu(inf) depends on the CPU (nan on an AVX-512 one, inf on an AVX2 one); its float64
    # kernel and the limit agree on inf
    want = TF.gelu(torch.tensor(x, dtype=torch.float64)).float()
    assert want[3] == np.inf
    assert_close(F.gelu(flow.tensor(x)), want)


def test_clamp_semantics():
    xi = np.array([-3, -1, 0, 2, 5])
    for kw in [dict(min=1.5), dict(min=1), dict(max=2), dict(min=-1, max=2.5), dict(min=3, max=1)]:
        assert_close(flow.clamp(flow.tensor(xi), **kw), torch.clamp(torch.tensor(xi), **kw))
        assert_close(flow.clamp(flow.tensor(xi.astype(np.float32)), **kw),
                     torch.clamp(torch.tensor(xi.astype(np.float32)), **kw))
    # the gradient passes at the bounds themselves (min <= x <= max)
    check_vs_torch(lambda a: a.clamp(-1, 2), lambda a: a.clamp(-1, 2), [np.array([-2.0, -1.0, 0.5, 2.0, 3.0])])
    # min > max: everything is max, no gradient
    check_vs_torch(lambda a: a.clamp(2, 1), lambda a: a.clamp(2, 1), [np.array([-2.0, 1.5, 3.0])])
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        flow.clamp(flow.tensor([1.0]))
    # float16 keeps its dtype with float bounds
    assert flow.clamp(flow.tensor([1.0, 2.0], dtype=flow.float16), 0.5, 1.5).dtype == flow.float16


def test_relu_threshold_boundaries_grad():
    x = np.array([-1.0, 0.0, 1.0, 6.0, 0.1])
    check_vs_torch(F.relu, TF.relu, [x])
    check_vs_torch(F.relu6, TF.relu6, [x])
    check_vs_torch(lambda a: F.threshold(a, 0.1, 3.0), lambda a: TF.threshold(a, 0.1, 3.0), [x])
    check_vs_torch(lambda a: F.hardtanh(a, 0.0, 1.0), lambda a: TF.hardtanh(a, 0.0, 1.0), [x])
    check_vs_torch(lambda a: F.hardshrink(a, 1.0), lambda a: TF.hardshrink(a, 1.0), [x])
    check_vs_torch(F.hardswish, TF.hardswish, [np.array([-3.0, 3.0, 0.0])])
    check_vs_torch(F.hardsigmoid, TF.hardsigmoid, [np.array([-3.0, 3.0, 0.0])])


def test_nan_to_num():
    x = np.array([np.nan, np.inf, -np.inf, 1.5, -2.0])
    for dt in [np.float32, np.float64, np.float16]:
        for kw in [{}, dict(nan=1.0), dict(posinf=10.0, neginf=-10.0), dict(nan=-1.0, posinf=2.0)]:
            assert_close(flow.nan_to_num(flow.tensor(x.astype(dt)), **kw),
                         torch.nan_to_num(torch.tensor(x.astype(dt)), **kw))
    assert_close(flow.nan_to_num(flow.tensor(x.astype(np.float32)).to(flow.bfloat16) if hasattr(flow.Tensor, "to")
                                 else flow.tensor(x, dtype=flow.bfloat16)),
                 torch.nan_to_num(torch.tensor(x, dtype=torch.bfloat16)))
    check_vs_torch(lambda a: a.nan_to_num(), lambda a: a.nan_to_num(), [x])


@pytest.mark.parametrize("name", ["isnan", "isinf", "isfinite", "isposinf", "isneginf", "logical_not"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int64, np.uint8, np.bool_])
def test_predicates(name, dtype):
    with np.errstate(invalid="ignore"):
        x = np.array([np.nan, np.inf, -np.inf, 0.0, 2.0, -1.0]).astype(dtype)
    got = getattr(flow, name)(flow.tensor(x))
    assert got.dtype == flow.bool
    assert_close(got, getattr(torch, name)(torch.tensor(x)))
    xt = flow.tensor(np.array([1.0, np.nan]), requires_grad=True)
    assert not getattr(flow, name)(xt).requires_grad


def test_logical_not_inplace_keeps_dtype():
    x = np.array([0.0, 2.0, -1.0])
    f, t = flow.tensor(x), torch.tensor(x)
    f.logical_not_()
    t.logical_not_()
    assert_close(f, t)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int8, np.uint8, np.bool_])
def test_bitwise_not(dtype):
    x = np.array([0, 1, 5, 127]).astype(dtype)
    assert_close(flow.bitwise_not(flow.tensor(x)), torch.bitwise_not(torch.tensor(x)))
    f = flow.tensor(x)
    f.bitwise_not_()
    assert_close(f, torch.bitwise_not(torch.tensor(x)))


def test_round_decimals():
    x = np.array([1.2345, 2.5, -0.5, 0.125, 1234.5, -1.55, 3.5])
    for d in [0, 1, 2, -1, -2]:
        for dt in [np.float32, np.float64]:
            assert_close(flow.round(flow.tensor(x.astype(dt)), decimals=d),
                         torch.round(torch.tensor(x.astype(dt)), decimals=d))
    assert_close(flow.round(flow.tensor([1, 2])), torch.round(torch.tensor([1, 2])))
    with pytest.raises(NotImplementedError, match="round_cpu"):
        flow.round(flow.tensor([1, 2]), decimals=1)


def test_glu_and_softsign_shapes():
    x = np.random.default_rng(11).standard_normal((2, 6, 4))
    for dim in [0, 1, -1, 2]:
        check_vs_torch(lambda a: F.glu(a, dim), lambda a: TF.glu(a, dim), [x])
    with pytest.raises(RuntimeError, match="Halving dimension must be even"):
        F.glu(flow.tensor(np.ones((2, 3))), 1)
    with pytest.raises(RuntimeError, match="scalars"):
        F.glu(flow.tensor(1.0))


def test_positive_returns_input():
    x = flow.tensor([1.0, -2.0])
    assert flow.positive(x) is x and x.positive() is x


def test_errors():
    with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor"):
        flow.neg(flow.tensor([True, False]))
    with pytest.raises(RuntimeError, match="The `\\+` operator, on a bool tensor"):
        flow.positive(flow.tensor([True]))
    with pytest.raises(NotImplementedError, match="abs_cpu.*Bool"):
        flow.abs(flow.tensor([True]))
    with pytest.raises(NotImplementedError, match="frac_cpu.*Long"):
        flow.frac(flow.tensor([1, 2]))
    with pytest.raises(NotImplementedError, match="bitwise_not_cpu.*Float"):
        flow.bitwise_not(flow.tensor([1.0]))
    with pytest.raises(NotImplementedError, match="GeluKernelImpl.*Long"):
        F.gelu(flow.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="approximate argument must be either none or tanh"):
        F.gelu(flow.tensor([1.0]), approximate="fast")
    with pytest.raises(RuntimeError, match="lambda must be in range"):
        F.softshrink(flow.tensor([1.0]), -1.0)
    with pytest.raises(RuntimeError, match="alpha cannot be 0 for CELU"):
        F.celu(flow.tensor([1.0]), alpha=0.0)
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(flow.tensor([1.0]), 2.0, 1.0)
    with pytest.raises(RuntimeError, match="Boolean inputs not supported for relu"):
        F.relu(flow.tensor([True]))
    with pytest.raises(RuntimeError, match="Bool inputs not supported for hardtanh"):
        F.relu6(flow.tensor([True]))
    with pytest.raises(TypeError):
        flow.sin(flow.tensor([1.0]), 3)


def test_helpers_hidden_from_python():
    for name in ["threshold_backward", "sigmoid_backward", "tanh_backward", "gelu_backward", "silu_backward",
                 "elu_backward", "clamp_backward", "softplus_backward", "hardswish_backward"]:
        assert not hasattr(flow, name)


def test_default_dtype_promotion_for_ints():
    flow.set_default_dtype(flow.float64)
    try:
        assert flow.sin(flow.tensor([1, 2])).dtype == flow.float64
        assert flow.sigmoid(flow.tensor([1, 2])).dtype == flow.float64
    finally:
        flow.set_default_dtype(flow.float32)
    assert flow.sqrt(flow.tensor([4, 9])).dtype == flow.float32
    assert flow.square(flow.tensor([True])).dtype == flow.int64


def test_math_constants():
    x = np.array([0.5, 1.0, 2.0])
    assert_close(flow.exp2(flow.tensor(x)), 2 ** x)
    assert_close(flow.log10(flow.tensor(x)), np.log10(x))
    assert_close(flow.erfinv(flow.erf(flow.tensor(x * 0.5))), x * 0.5, rtol=1e-12, atol=1e-12)
    assert abs(float(flow.sigmoid(flow.tensor(0.0)).numpy()) - 0.5) < 1e-7
    assert math.isclose(float(F.gelu(flow.tensor(1.0, dtype=flow.float64)).numpy()), float(TF.gelu(torch.tensor(1.0, dtype=torch.float64))), rel_tol=1e-14)


def test_gelu_backward_shared_exp_accuracy():
    """gelu's exact backward shares exp(-x^2/2) between the erf and the pdf: against torch's float64 gradient
    over the tails (exp underflow, erf -> +-1), zero and non-finite inputs, on the vectorised path."""
    x = np.concatenate([np.linspace(-12, 12, 40_001), [0.0, -0.0, np.inf, -np.inf, np.nan]]).astype(np.float32)
    g = np.random.default_rng(11).standard_normal(x.shape).astype(np.float32)
    fx = flow.tensor(x, requires_grad=True)
    (fg,) = flow.autograd.grad(F.gelu(fx), [fx], [flow.tensor(g)])
    tx = torch.tensor(x.astype(np.float64), requires_grad=True)
    (tg,) = torch.autograd.grad(TF.gelu(tx), [tx], [torch.tensor(g.astype(np.float64))])
    assert_close(fg, tg.float(), rtol=1e-5, atol=1e-6)


def test_gelu_forward_float32_accuracy():
    """gelu's forward takes erf from a rational fit (no exp), erf's error times x / 2: within 4 ulp of x
    (1 + erf cancels in the left tail, in torch too), exact beyond the fit's range, and torch's special
    values."""
    x = np.linspace(-10, 10, 400_001).astype(np.float32)
    want = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.astype(np.float64)])
    got = F.gelu(flow.tensor(x)).numpy().astype(np.float64)
    assert np.abs(got - want).max() < 2e-6
    assert (np.abs(got - want) <= 4 * np.spacing(np.abs(x)).astype(np.float64)).all()
    assert (got[x >= 5.6] == x[x >= 5.6]).all() and (got[x <= -5.6] == 0).all()
    assert (got[x < 0] <= 0).all()  # the fit rounds up to 4e-7 over 1 near its cut: 1 + erf must not go below 0
    special = F.gelu(flow.tensor([np.inf, -np.inf, np.nan, 0.0, -0.0], dtype=flow.float32)).numpy()
    want = TF.gelu(torch.tensor([np.inf, -np.inf, np.nan, 0.0, -0.0], dtype=torch.float64)).float().numpy()
    np.testing.assert_array_equal(special, want)


def test_erf_float32_accuracy_and_special_values():
    # float32 erf runs a vectorised Taylor / erfc-fit pair (unary_vec.h): within 2 ulp of the exact value on
    # both sides of the switch at |x| = 1, out to where erf rounds to 1, with erf(-0) = -0, erf(+-inf) = +-1,
    # NaN kept, and subnormal inputs still scaled by 2/sqrt(pi)
    x = np.concatenate([np.linspace(-6, 6, 120001, dtype=np.float32),
                        np.float32([0.9999999, 1.0, 1.0000001, -1.0, 1e-30, -1e-20, 3e-39])])
    want = np.array([math.erf(float(v)) for v in x])
    got = flow.erf(flow.tensor(x)).numpy().astype(np.float64)
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got - want) / ulp) <= 2.0
    sp = flow.erf(flow.tensor(np.float32([-0.0, 0.0, np.inf, -np.inf, np.nan]))).numpy()
    assert np.signbit(sp[0]) and not np.signbit(sp[1])
    assert sp[2] == 1.0 and sp[3] == -1.0 and np.isnan(sp[4])
    # a non-contiguous input takes the same kernel after a dense copy
    assert_close(flow.erf(flow.tensor(x)[::3]), want[::3].astype(np.float32), rtol=3e-7, atol=0)


def test_log_float32_accuracy_and_special_values():
    # float32 log runs a vectorised Cephes-style kernel (unary_vec.h): within 1 ulp over the whole finite range,
    # subnormal inputs included, with log(0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN kept
    rng = np.random.default_rng(3)
    x = np.concatenate([np.exp(rng.uniform(-87, 88, 50000)), np.linspace(0.5, 2, 20001),
                        rng.uniform(0, 1e-37, 500), np.float32([1.4e-45, 1.1754942e-38, 1.17549435e-38, 3.4028235e38])])
    x = x.astype(np.float32)
    want = np.log(x.astype(np.float64))
    got = flow.log(flow.tensor(x)).numpy().astype(np.float64)
    nz = want != 0
    ulp = np.spacing(np.abs(want[nz]).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got[nz] - want[nz]) / ulp) <= 1.0
    assert flow.log(flow.ones(3)).tolist() == [0.0, 0.0, 0.0]
    sp = flow.log(flow.tensor(np.float32([0.0, -0.0, -1.0, np.inf, -np.inf, np.nan]))).numpy()
    assert sp[0] == -np.inf and sp[1] == -np.inf and sp[3] == np.inf
    assert np.isnan(sp[2]) and np.isnan(sp[4]) and np.isnan(sp[5])
