"""Binary family: broadcasting math, comparisons, logical/bitwise ops, where/lerp/addcmul/addcdiv, in-place
variants and operator dunders, against PyTorch (values, result dtypes, gradients) and finite differences."""
import operator

import numpy as np
import pytest

import oneflow as flow
from helpers import assert_close, check_vs_torch, flow_and_torch, gradcheck, torch

rng = np.random.default_rng(0)


def randn(*shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def positive(*shape, dtype=np.float32):
    return (rng.random(shape) + 0.5).astype(dtype)


def sl(t, dim, start=None, end=None, step=1):
    """A strided slice of a oneflow or torch tensor (a non-contiguous view)."""
    if isinstance(t, flow.Tensor):
        return flow.slice(t, dim, start, end, step)
    idx = [slice(None)] * t.dim()
    idx[dim] = slice(start, end, step)
    return t[tuple(idx)]


def dtype_name(d):
    return str(d).split(".")[-1]


# (name, lhs maker, rhs maker, differentiable): inputs chosen inside each op's smooth domain
FLOAT_OPS = [
    ("remainder", randn, positive, True),
    ("fmod", randn, positive, True),
    ("pow", positive, randn, True),
    ("maximum", randn, randn, True),
    ("minimum", randn, randn, True),
    ("fmax", randn, randn, True),
    ("fmin", randn, randn, True),
    ("atan2", randn, randn, True),
    ("hypot", randn, randn, True),
    ("copysign", randn, randn, True),
    ("xlogy", randn, positive, True),
    ("floor_divide", randn, positive, False),
    ("true_divide", randn, positive, True),
]
SHAPES = [((2, 3), (3,)), ((3, 1), (1, 4)), ((), (2, 3)), ((2, 3), ()), ((0, 3), (3,)), ((4,), (2, 1, 4))]


@pytest.mark.parametrize("name,mk_a,mk_b,diff", FLOAT_OPS, ids=[o[0] for o in FLOAT_OPS])
@pytest.mark.parametrize("sa,sb", SHAPES, ids=[f"{a}-{b}" for a, b in SHAPES])
def test_float_ops_vs_torch(name, mk_a, mk_b, diff, sa, sb):
    a, b = mk_a(*sa), mk_b(*sb)
    check_vs_torch(getattr(flow, name), getattr(torch, name), [a, b], grad=diff, rtol=1e-5, atol=1e-5)
    # and the other way round (rhs broadcast into lhs)
    check_vs_torch(getattr(flow, name), getattr(torch, name), [mk_a(*sb), mk_b(*sa)], grad=diff, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["remainder", "fmod", "pow", "atan2", "hypot", "copysign", "xlogy", "maximum",
                                  "fmax", "fmin", "minimum", "true_divide"])
def test_gradcheck_float64(name):
    lo = name in ("pow",)
    a = flow.tensor(positive(3, 4, dtype=np.float64) if lo else randn(3, 4, dtype=np.float64), requires_grad=True)
    b = flow.tensor(positive(4, dtype=np.float64) if name in ("remainder", "fmod", "xlogy", "true_divide")
                    else randn(4, dtype=np.float64), requires_grad=True)
    gradcheck(getattr(flow, name), [a, b])


def test_float_ops_non_contiguous():
    a = randn(4, 3)
    for name in ["remainder", "fmod", "pow", "maximum", "atan2", "hypot", "copysign", "xlogy", "fmin"]:
        x = np.abs(a) + 0.5 if name in ("pow",) else a
        check_vs_torch(lambda p, q: getattr(flow, name)(p.t(), sl(q, 1, None, None, 2).t()),
                       lambda p, q: getattr(torch, name)(p.t(), sl(q, 1, None, None, 2).t()), [x, positive(4, 6)])
        check_vs_torch(lambda p, q: getattr(flow, name)(sl(q, 0, 1, None, 2), p.t()),
                       lambda p, q: getattr(torch, name)(sl(q, 0, 1, None, 2), p.t()), [x, positive(6, 4)])


# ---- scalars on either side --------------------------------------------------------------------------------
SCALAR_CASES = [
    ("x % 1.5", lambda x: x % 1.5), ("5 % x", lambda x: 5 % x), ("x % -2", lambda x: x % -2),
    ("x ** 2", lambda x: x ** 2), ("x ** 3", lambda x: x ** 3), ("x ** 0.5", lambda x: x ** 0.5),
    ("x ** -1", lambda x: x ** -1), ("x ** -2", lambda x: x ** -2), ("x ** 1", lambda x: x ** 1),
    ("x ** 2.7", lambda x: x ** 2.7), ("x ** 0", lambda x: x ** 0), ("2 ** x", lambda x: 2 ** x),
    ("1.5 ** x", lambda x: 1.5 ** x), ("x ** True", lambda x: x ** True),
    ("x // 0.7", lambda x: x // 0.7), ("3 // x", lambda x: 3 // x),
    ("x < 1", lambda x: x < 1), ("1 < x", lambda x: 1 < x), ("x == 1", lambda x: x == 1),
    ("x != 1.0", lambda x: x != 1.0), ("x >= 1", lambda x: x >= 1), ("x <= True", lambda x: x <= True),
]


@pytest.mark.parametrize("desc,fn", SCALAR_CASES, ids=[c[0] for c in SCALAR_CASES])
def test_python_scalars_both_sides(desc, fn):
    x = positive(2, 3) * 2
    # torch has no derivative for remainder(Scalar, Tensor); ours is checked by finite differences below
    check_vs_torch(fn, fn, [x], grad="//" not in desc and desc != "5 % x")


def test_scalar_remainder_gradcheck():
    x = flow.tensor(positive(2, 3, dtype=np.float64) * 2, requires_grad=True)
    gradcheck(lambda t: 5 % t, [x])
    gradcheck(lambda t: flow.fmod(-5.5, t), [x])


@pytest.mark.parametrize("name,scalar", [("fmod", 1.5), ("remainder", -1.5), ("xlogy", 2.0), ("copysign", -1.0),
                                         ("floor_divide", 2), ("pow", 2.5)])
def test_scalar_functional_forms(name, scalar):
    x = positive(3, 2)
    check_vs_torch(lambda t: getattr(flow, name)(t, scalar), lambda t: getattr(torch, name)(t, scalar), [x],
                   grad=name != "floor_divide")


def test_pow_scalar_base_and_functional():
    x = randn(5)
    check_vs_torch(lambda t: flow.pow(2.0, t), lambda t: torch.pow(2.0, t), [x])
    check_vs_torch(lambda t: flow.pow(2, t), lambda t: torch.pow(2, t), [x])
    e = np.array([0, 1, 2, 3], dtype=np.int64)
    assert_close(flow.pow(3, flow.tensor(e)), torch.pow(3, torch.tensor(e)))


# ---- result dtypes -----------------------------------------------------------------------------------------
DTYPE_PAIRS = [(np.int64, np.float32), (np.float32, np.float64), (np.bool_, np.int32), (np.uint8, np.int8),
               (np.int32, np.int64), (np.int16, np.uint8), (np.float16, np.float32), (np.int8, np.float64)]
MIXED_OPS = ["remainder", "fmod", "pow", "maximum", "minimum", "fmax", "fmin", "atan2", "copysign", "xlogy",
             "floor_divide", "eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor",
             "true_divide"]


def _values(dt, shape=(2, 3)):
    if dt == np.bool_:
        return rng.random(shape) > 0.5
    if np.issubdtype(dt, np.integer):
        return rng.integers(1, 5, shape).astype(dt)
    return positive(*shape).astype(dt)


@pytest.mark.parametrize("name", MIXED_OPS)
@pytest.mark.parametrize("da,db", DTYPE_PAIRS, ids=[f"{np.dtype(a).name}-{np.dtype(b).name}" for a, b in DTYPE_PAIRS])
def test_mixed_dtypes_like_torch(name, da, db):
    a, b = _values(da), _values(db, (3,))
    fa, ta = flow_and_torch(a)
    fb, tb = flow_and_torch(b)
    try:
        expected = getattr(torch, name)(ta, tb)
    except (RuntimeError, NotImplementedError) as e:
        with pytest.raises(type(e)):
            getattr(flow, name)(fa, fb)
        return
    got = getattr(flow, name)(fa, fb)
    assert dtype_name(got.dtype) == dtype_name(expected.dtype)
    assert_close(got, expected, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dt", [np.int32, np.int16, np.uint8, np.float16, np.bool_])
@pytest.mark.parametrize("scalar", [2, 2.5, True])
@pytest.mark.parametrize("op", [operator.mod, operator.pow, operator.floordiv, operator.lt, operator.eq,
                                operator.and_, operator.or_, operator.xor, operator.lshift])
def test_tensor_scalar_dtypes(dt, scalar, op):
    a = _values(dt)
    fa, ta = flow_and_torch(a)
    for f, t in [(lambda: op(fa, scalar), lambda: op(ta, scalar)), (lambda: op(scalar, fa), lambda: op(scalar, ta))]:
        try:
            expected = t()
        except (RuntimeError, NotImplementedError, TypeError):
            with pytest.raises((RuntimeError, NotImplementedError, TypeError)):
                f()
            continue
        got = f()
        assert dtype_name(got.dtype) == dtype_name(expected.dtype), (got.dtype, expected.dtype)
        assert_close(got, expected, rtol=1e-3, atol=1e-3)


# ---- integers ----------------------------------------------------------------------------------------------
def test_integer_remainder_fmod_floor_divide_signs():
    a = np.array([-7, -6, -1, 0, 1, 6, 7], dtype=np.int64)
    for b in [3, -3]:
        for name in ["remainder", "fmod", "floor_divide"]:
            assert_close(getattr(flow, name)(flow.tensor(a), b), getattr(torch, name)(torch.tensor(a), b))
    i8 = np.array([-128, 127, -5], dtype=np.int8)
    assert_close(flow.tensor(i8) % flow.tensor(np.int8(-1)), torch.tensor(i8) % torch.tensor(np.int8(-1)))
    assert_close(flow.fmod(flow.tensor(i8), flow.tensor(np.int8(-1))), torch.fmod(torch.tensor(i8), torch.tensor(np.int8(-1))))


@pytest.mark.parametrize("fn", [lambda a, b: a // b, lambda a, b: a % b, flow.fmod, flow.remainder, flow.floor_divide,
                                lambda a, b: flow.div(a, b, rounding_mode="trunc"),
                                lambda a, b: flow.div(a, b, rounding_mode="floor")])
def test_integer_division_by_zero_raises(fn):
    a = flow.tensor([5, -6, 7])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(a, flow.tensor([1, 0, 2]))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(a, 0)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        fn(flow.tensor([5], dtype=flow.uint8), flow.tensor([0], dtype=flow.uint8))


def test_integer_inplace_division_by_zero_leaves_self():
    a = flow.tensor([5, -6, 7])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a %= flow.tensor([1, 0, 2])
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        a //= 0
    assert a.tolist() == [5, -6, 7]


def test_float_division_by_zero_follows_ieee():
    a = np.array([1.0, -1.0, 0.0], dtype=np.float32)
    for name in ["remainder", "fmod", "floor_divide"]:
        assert_close(getattr(flow, name)(flow.tensor(a), 0.0), getattr(torch, name)(torch.tensor(a), 0.0))


def test_integer_pow():
    base = np.array([2, -1, 1, 0, 3, -2], dtype=np.int64)
    ex = np.array([-1, -3, -2, -1, 40, 63], dtype=np.int64)
    assert_close(flow.tensor(base) ** flow.tensor(ex), torch.tensor(base) ** torch.tensor(ex))  # incl. wraparound
    for dt in [np.int8, np.uint8, np.int32]:
        b = np.array([2, 3, 5], dtype=dt)
        e = np.array([3, 7, 2], dtype=dt)
        assert_close(flow.tensor(b) ** flow.tensor(e), torch.tensor(b) ** torch.tensor(e))
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        flow.tensor([2, 3]) ** -1
    with pytest.raises(RuntimeError, match="Integers to negative integer powers are not allowed"):
        flow.tensor(2) ** -1
    assert_close(flow.tensor([2]) ** flow.tensor(-1), torch.tensor([2]) ** torch.tensor(-1))
    assert_close(2 ** flow.tensor([-1, 2]), 2 ** torch.tensor([-1, 2]))
    assert_close(flow.tensor([2, 3]) ** 2.5, torch.tensor([2, 3]) ** 2.5)


def test_unsupported_dtypes_raise():
    b = flow.tensor([True, False])
    for fn in [flow.remainder, flow.fmod, flow.pow, flow.floor_divide]:
        with pytest.raises(NotImplementedError):
            fn(b, b)
    with pytest.raises(NotImplementedError, match="hypot"):
        flow.hypot(flow.tensor([3]), flow.tensor([4]))
    with pytest.raises(NotImplementedError, match="bitwise_and"):
        flow.bitwise_and(flow.tensor([1.0]), 1)
    with pytest.raises(NotImplementedError, match="lshift"):
        flow.tensor([1.0]) << 1
    with pytest.raises(RuntimeError, match="must match the size"):
        flow.pow(flow.ones(2, 3), flow.ones(4))


# ---- pow gradients at zero ---------------------------------------------------------------------------------
def test_pow_gradients_zero_base_and_zero_exponent():
    base = np.array([0.0, 0.0, 0.0, 1.0, 2.0, -1.5], dtype=np.float64)
    ex = np.array([0.0, 2.0, -1.0, 0.0, -1.0, 2.0], dtype=np.float64)
    check_vs_torch(lambda a, b: a ** b, lambda a, b: a ** b, [base, ex])
    check_vs_torch(lambda a: a ** 0, lambda a: a ** 0, [base])
    check_vs_torch(lambda a: a ** 0.0, lambda a: a ** 0.0, [base])
    check_vs_torch(lambda a: a ** 2, lambda a: a ** 2, [base])
    check_vs_torch(lambda b: 0.0 ** b, lambda b: 0.0 ** b, [ex])
    check_vs_torch(lambda b: 0 ** b, lambda b: 0 ** b, [ex])
    check_vs_torch(lambda b: 2 ** b, lambda b: 2 ** b, [ex])


def test_pow_gradcheck_variants():
    a = flow.tensor(positive(2, 3, dtype=np.float64), requires_grad=True)
    e = flow.tensor(randn(3, dtype=np.float64), requires_grad=True)
    gradcheck(lambda x: x ** 2.5, [a])
    gradcheck(lambda x: x ** 3, [a])
    gradcheck(lambda x: 1.7 ** x, [e])
    gradcheck(lambda x, y: x ** y, [a, e])


def test_maximum_minimum_ties_and_nan():
    a = np.array([1.0, 2.0, 3.0, np.nan, 5.0], dtype=np.float32)
    b = np.array([1.0, 3.0, 2.0, 1.0, np.nan], dtype=np.float32)
    for name in ["maximum", "minimum", "fmax", "fmin"]:
        check_vs_torch(getattr(flow, name), getattr(torch, name), [a, b])
    ints = (np.array([1, 5, 3]), np.array([2, 4, 3]))
    for name in ["maximum", "minimum", "fmax", "fmin"]:
        assert_close(getattr(flow, name)(*map(flow.tensor, ints)), getattr(torch, name)(*map(torch.tensor, ints)))


def test_xlogy_special_values():
    x = np.array([0.0, 0.0, 1.0, 2.0, 0.0, 3.0], dtype=np.float32)
    y = np.array([0.0, np.nan, 0.0, 3.0, -1.0, 2.0], dtype=np.float32)
    check_vs_torch(flow.xlogy, torch.xlogy, [x, y])
    check_vs_torch(lambda t: flow.xlogy(t, 2.0), lambda t: torch.xlogy(t, 2.0), [x])


def test_copysign_zero_and_grad():
    x = np.array([0.0, -0.0, 1.5, -2.0, 3.0], dtype=np.float32)
    y = np.array([-1.0, 1.0, -0.0, 2.0, -3.0], dtype=np.float32)
    check_vs_torch(flow.copysign, torch.copysign, [x, y])
    r = flow.copysign(flow.tensor(x), flow.tensor(y)).numpy()
    assert np.array_equal(np.signbit(r), np.signbit(np.copysign(x, y)))


# ---- comparisons, logical, bitwise -------------------------------------------------------------------------
CMP = ["eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal", "not_equal"]


@pytest.mark.parametrize("name", CMP)
def test_comparisons_with_nan_and_broadcast(name):
    a = np.array([[1.0, np.nan, 2.0, -np.inf], [0.0, 3.0, np.nan, np.inf]], dtype=np.float32)
    b = np.array([1.0, np.nan, 1.0, np.inf], dtype=np.float32)
    fa, ta = flow_and_torch(a)
    fb, tb = flow_and_torch(b)
    got = getattr(flow, name)(fa, fb)
    assert got.dtype == flow.bool
    assert_close(got, getattr(torch, name)(ta, tb))
    assert_close(getattr(fa, name)(1.0), getattr(ta, name)(1.0))
    assert_close(getattr(flow, name)(fa.t(), fb.unsqueeze(1)), getattr(torch, name)(ta.t(), tb.unsqueeze(1)))
    z = getattr(flow, name)(flow.ones(0, 4), fb)
    assert z.shape == (0, 4) and z.dtype == flow.bool


def test_comparison_operators_and_no_grad():
    a = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
    for op in [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]:
        r = op(a, 2.0)
        assert r.dtype == flow.bool and not r.requires_grad
        assert r.tolist() == op(torch.tensor([1.0, 2.0, 3.0]), 2.0).tolist()
    assert (a == None) is False  # noqa: E711
    assert (a != "x") is True
    assert hash(a) == hash(a) and {a: 1}[a] == 1


def test_comparisons_mixed_int_float_and_uint8_int8():
    a = np.array([1, 2, 3], dtype=np.int32)
    assert (flow.tensor(a) < 2.5).tolist() == [True, True, False]
    u = np.array([200, 1], dtype=np.uint8)
    s = np.array([-56, 1], dtype=np.int8)
    assert_close(flow.eq(flow.tensor(u), flow.tensor(s)), torch.eq(torch.tensor(u), torch.tensor(s)))
    assert_close(flow.gt(flow.tensor(u), flow.tensor(s)), torch.gt(torch.tensor(u), torch.tensor(s)))


def test_inplace_comparisons_keep_dtype():
    for name in ["eq_", "lt_", "ge_", "ne_", "logical_and_", "logical_xor_"]:
        fa, ta = flow_and_torch(np.array([1.0, 2.0, 0.0], dtype=np.float32))
        r = getattr(fa, name)(flow.tensor([1.0, 3.0, 0.0]))
        getattr(ta, name)(torch.tensor([1.0, 3.0, 0.0]))
        assert r is fa
        assert_close(fa, ta)
    x = flow.tensor([1, 2])
    x.eq_(flow.tensor([1.5, 2.0]))
    assert x.tolist() == [0, 1] and x.dtype == flow.int64


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical_ops(name):
    a = np.array([[0.0, 1.0, np.nan], [2.0, 0.0, -1.0]], dtype=np.float32)
    b = np.array([1, 0, 0], dtype=np.int64)
    fa, ta = flow_and_torch(a)
    fb, tb = flow_and_torch(b)
    assert_close(getattr(flow, name)(fa, fb), getattr(torch, name)(ta, tb))
    assert_close(getattr(flow, name)(fa.t(), sl(fb, 0, 0, 2)), getattr(torch, name)(ta.t(), tb[:2]))
    fbool, tbool = flow_and_torch(np.array([True, False, True]))
    assert_close(getattr(fbool, name + "_")(fb), getattr(tbool, name + "_")(tb))


@pytest.mark.parametrize("op,name", [(operator.and_, "bitwise_and"), (operator.or_, "bitwise_or"),
                                     (operator.xor, "bitwise_xor"), (operator.lshift, "bitwise_left_shift"),
                                     (operator.rshift, "bitwise_right_shift")])
def test_bitwise_ops(op, name):
    for dt in [np.int8, np.uint8, np.int16, np.int32, np.int64]:
        a = rng.integers(-100 if dt != np.uint8 else 0, 100, (3, 4)).astype(dt)
        b = rng.integers(0, 9, (4,)).astype(dt)
        fa, ta = flow_and_torch(a)
        fb, tb = flow_and_torch(b)
        assert_close(op(fa, fb), op(ta, tb))
        assert_close(getattr(flow, name)(fa.t(), sl(fb, 0, 0, 3)), getattr(torch, name)(ta.t(), tb[:3]))
        assert_close(op(fa, 3), op(ta, 3))
        assert_close(op(5, fa), op(5, ta))
    if "shift" not in name:
        fa, ta = flow_and_torch(np.array([True, False, True]))
        fb, tb = flow_and_torch(np.array([True, True, False]))
        assert_close(op(fa, fb), op(ta, tb))
        assert_close(op(fa, True), op(ta, True))


def test_shift_out_of_range_amounts():
    for dt in [np.int8, np.uint8, np.int32, np.int64]:
        a = np.array([-8 if dt != np.uint8 else 8, 1, 5, 100], dtype=dt)
        s = np.array([10, 70 if dt != np.int8 and dt != np.uint8 else 9, 0, 3], dtype=dt)
        for op in [operator.lshift, operator.rshift]:
            assert_close(op(flow.tensor(a), flow.tensor(s)), op(torch.tensor(a), torch.tensor(s)))
    assert_close(flow.tensor([-8]) >> -1, torch.tensor([-8]) >> -1)


def test_inplace_bitwise_dunders():
    fa, ta = flow_and_torch(np.array([1, 6, 12]))
    for op in [operator.iand, operator.ior, operator.ixor, operator.ilshift, operator.irshift]:
        fa = op(fa, 3)
        ta = op(ta, 3)
    assert_close(fa, ta)
    with pytest.raises(RuntimeError):
        x = flow.tensor([True, False])
        x &= flow.tensor([1, 2])


def test_isclose_allclose_equal():
    a = np.array([1.0, np.nan, np.inf, -np.inf, 1e-9, 100.0], dtype=np.float32)
    b = np.array([1.0 + 1e-6, np.nan, np.inf, np.inf, 0.0, 100.1], dtype=np.float32)
    fa, ta = flow_and_torch(a)
    fb, tb = flow_and_torch(b)
    for kw in [{}, {"equal_nan": True}, {"rtol": 0.01}, {"atol": 0.2, "rtol": 0.0}]:
        assert_close(flow.isclose(fa, fb, **kw), torch.isclose(ta, tb, **kw))
        assert flow.allclose(fa, fb, **kw) == torch.allclose(ta, tb, **kw)
        assert fa.allclose(fb, **kw) == ta.allclose(tb, **kw)
    assert flow.allclose(flow.ones(2, 3), flow.ones(3))
    i = flow.tensor([1, 3])
    assert_close(flow.isclose(i, flow.tensor([1, 2]), rtol=0.5), torch.isclose(torch.tensor([1, 3]), torch.tensor([1, 2]), rtol=0.5))
    with pytest.raises(RuntimeError, match="did not match"):
        flow.isclose(flow.ones(2), flow.ones(2, dtype=flow.float64))
    assert flow.equal(sl(fa, 0, 0, 1), sl(fb, 0, 0, 1) * 0 + 1) is True
    assert flow.equal(flow.tensor([1, 2]), flow.tensor([1.0, 2.0])) is True
    assert flow.equal(flow.tensor([1, 2]), flow.tensor([1])) is False
    assert flow.equal(flow.tensor([np.nan]), flow.tensor([np.nan])) is False
    assert flow.ones(2, 3).t().equal(flow.ones(3, 2)) is True
    assert flow.equal(flow.ones(0), flow.ones(0)) is True


# ---- where -------------------------------------------------------------------------------------------------
def test_where_broadcast_scalars_and_grad():
    c = rng.random((2, 1, 3)) > 0.5
    x, y = randn(4, 1), randn(2, 4, 3)
    fc, tc = flow_and_torch(c)
    check_vs_torch(lambda a, b: flow.where(fc, a, b), lambda a, b: torch.where(tc, a, b), [x, y])
    check_vs_torch(lambda a: flow.where(fc, a, 0.0), lambda a: torch.where(tc, a, 0.0), [x])
    check_vs_torch(lambda b: flow.where(fc, 1.5, b), lambda b: torch.where(tc, 1.5, b), [y])
    check_vs_torch(lambda a, b: a.where(fc, b), lambda a, b: a.where(tc, b), [x, y])
    check_vs_torch(lambda a, b: flow.where(sl(fc, 2, None, None, 2), a.t(), b),
                   lambda a, b: torch.where(sl(tc, 2, None, None, 2), a.t(), b),
                   [randn(2, 4), randn(2, 4, 1)])
    assert_close(flow.where(fc, 1, 2.5), torch.where(tc, 1, 2.5))
    assert_close(flow.where(fc, flow.tensor([1], dtype=flow.int32), 2), torch.where(tc, torch.tensor([1], dtype=torch.int32), 2))
    assert_close(flow.where(flow.tensor(True), flow.tensor(1.0), flow.tensor(2.0)), torch.where(torch.tensor(True), torch.tensor(1.0), torch.tensor(2.0)))
    e = flow.where(flow.ones(0, 3, dtype=flow.bool), flow.ones(3), 0.0)
    assert e.shape == (0, 3)
    with pytest.raises(RuntimeError, match="boolean"):
        flow.where(flow.tensor([1.0]), flow.ones(1), flow.ones(1))
    a = flow.tensor(randn(2, 3).astype(np.float64), requires_grad=True)
    b = flow.tensor(randn(3).astype(np.float64), requires_grad=True)
    gradcheck(lambda p, q: flow.where(flow.select(fc, 0, 0), p, q), [a, b])


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.int64, np.int8, np.bool_, np.float16])
def test_where_dtypes(dt):
    c = np.array([True, False, True])
    x, y = _values(dt, (3,)), _values(dt, (3,))
    assert_close(flow.where(flow.tensor(c), flow.tensor(x), flow.tensor(y)),
                 torch.where(torch.tensor(c), torch.tensor(x), torch.tensor(y)))
    assert_close(flow.where(flow.tensor(c), flow.tensor(x), flow.tensor(y.astype(np.float64))),
                 torch.where(torch.tensor(c), torch.tensor(x), torch.tensor(y.astype(np.float64))))


def test_where_one_argument_form():
    c = np.array([[True, False], [False, True]])
    got = flow.where(flow.tensor(c))
    exp = torch.where(torch.tensor(c))
    assert isinstance(got, tuple) and len(got) == 2
    for g, e in zip(got, exp):
        assert_close(g, e)


# ---- lerp / addcmul / addcdiv ------------------------------------------------------------------------------
def test_lerp_forward_backward():
    s, e, w = randn(2, 3), randn(3), rng.random((2, 1)).astype(np.float32)
    check_vs_torch(flow.lerp, torch.lerp, [s, e, w])
    for wv in [0.0, 0.3, 0.5, 1.0, 1.7, -0.4]:
        check_vs_torch(lambda a, b: flow.lerp(a, b, wv), lambda a, b: torch.lerp(a, b, wv), [s, e])
    check_vs_torch(lambda a, b: a.lerp(b.t(), 0.25), lambda a, b: a.lerp(b.t(), 0.25), [s, randn(3, 2)])
    args = [flow.tensor(x.astype(np.float64), requires_grad=True) for x in (s, e, w)]
    gradcheck(flow.lerp, args)
    gradcheck(lambda a, b: flow.lerp(a, b, 0.7), args[:2])
    with pytest.raises(RuntimeError, match="expected dtype"):
        flow.lerp(flow.ones(2), flow.ones(2, dtype=flow.float64), 0.5)
    with pytest.raises(NotImplementedError):
        flow.lerp(flow.tensor([1]), flow.tensor([2]), 0.5)


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_addcmul_addcdiv(name):
    x, t1, t2 = randn(2, 1, 3), randn(4, 1), positive(3)
    for value in [1, 0.5, -2]:
        check_vs_torch(lambda a, b, c: getattr(flow, name)(a, b, c, value=value),
                       lambda a, b, c: getattr(torch, name)(a, b, c, value=value), [x, t1, t2])
    check_vs_torch(lambda a, b, c: getattr(a, name)(b.t(), c), lambda a, b, c: getattr(a, name)(b.t(), c),
                   [randn(3, 2), randn(2, 3), positive(3, 1)])
    args = [flow.tensor(v.astype(np.float64), requires_grad=True) for v in (x, t1, t2)]
    gradcheck(lambda a, b, c: getattr(flow, name)(a, b, c, value=0.7), args)
    assert getattr(flow, name)(flow.ones(0, 3), flow.ones(3), flow.ones(1)).shape == (0, 3)


def test_addcmul_addcdiv_dtypes():
    i = flow.tensor([1, 2])
    assert_close(flow.addcmul(i, i, i, value=2), torch.addcmul(torch.tensor([1, 2]), torch.tensor([1, 2]), torch.tensor([1, 2]), value=2))
    assert flow.addcmul(i, i, flow.tensor([1.0, 2.0])).dtype == flow.float32
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        flow.addcdiv(i, i, i)
    with pytest.raises(NotImplementedError):
        b = flow.tensor([True])
        flow.addcmul(b, b, b)


# ---- in-place variants -------------------------------------------------------------------------------------
INPLACE = [
    ("pow_", lambda x, y: x.pow_(y)), ("remainder_", lambda x, y: x.remainder_(y)),
    ("fmod_", lambda x, y: x.fmod_(y)), ("atan2_", lambda x, y: x.atan2_(y)), ("hypot_", lambda x, y: x.hypot_(y)),
    ("copysign_", lambda x, y: x.copysign_(y)), ("xlogy_", lambda x, y: x.xlogy_(y)),
    ("floor_divide_", lambda x, y: x.floor_divide_(y)), ("true_divide_", lambda x, y: x.true_divide_(y)),
    ("ipow", lambda x, y: operator.ipow(x, y)), ("imod", lambda x, y: operator.imod(x, y)),
    ("ifloordiv", lambda x, y: operator.ifloordiv(x, y)),
    ("lerp_", lambda x, y: x.lerp_(y, 0.3)), ("addcmul_", lambda x, y: x.addcmul_(y, y, value=0.5)),
    ("addcdiv_", lambda x, y: x.addcdiv_(y, y * 2 + 3, value=2)),
]


@pytest.mark.parametrize("desc,fn", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_variants(desc, fn):
    a, b = positive(2, 3), positive(3)
    fa, ta = flow_and_torch(a)
    fb, tb = flow_and_torch(b)
    r = fn(fa, fb)
    fn(ta, tb)
    assert r is fa
    assert_close(fa, ta, rtol=1e-5, atol=1e-6)
    # through autograd on a non-leaf
    if "floor" in desc:
        return
    fl, tl = flow_and_torch(a, requires_grad=True)
    fw, tw = flow_and_torch(b, requires_grad=True)
    fy, ty = fl * 1.0, tl * 1.0
    fn(fy, fw)
    fn(ty, tw)
    (fy * flow.tensor(a)).sum().backward()
    (ty * torch.tensor(a)).sum().backward()
    assert_close(fl.grad, tl.grad, rtol=1e-4, atol=1e-5)
    assert_close(fw.grad, tw.grad, rtol=1e-4, atol=1e-5)


def test_inplace_dtype_and_shape_errors():
    x = flow.tensor([1, 2])
    for bad in [lambda: operator.iadd(x, 1.5), lambda: operator.ipow(x, 1.5), lambda: operator.imod(x, 1.5),
                lambda: x.atan2_(flow.tensor([1, 1])), lambda: x.pow_(flow.tensor([1.0, 2.0])),
                lambda: x.lerp_(flow.tensor([1, 1]), 0.5), lambda: x.xlogy_(2),
                lambda: flow.ones(3).pow_(flow.ones(2, 3)), lambda: flow.tensor([True]).bitwise_and_(flow.tensor([3]))]:
        with pytest.raises((RuntimeError, NotImplementedError)):
            bad()
    assert x.tolist() == [1, 2]
    y = flow.tensor([2.0, 3.0])
    y **= 2  # float keeps its dtype with an int exponent
    assert y.dtype == flow.float32 and y.tolist() == [4.0, 9.0]
    z = flow.tensor([7, 8])
    z %= 3
    z //= 2
    assert z.tolist() == [0, 1] and z.dtype == flow.int64
    leaf = flow.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.pow_(2)


# ---- 0-dim, zero-size, non-contiguous ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["remainder", "pow", "maximum", "atan2", "hypot", "xlogy", "fmin"])
def test_zero_dim_and_zero_size(name):
    check_vs_torch(getattr(flow, name), getattr(torch, name), [positive(), positive()])
    check_vs_torch(getattr(flow, name), getattr(torch, name), [positive(0, 2), positive(2)])
    check_vs_torch(getattr(flow, name), getattr(torch, name), [positive(3, 0), positive()])
    r = getattr(flow, name)(flow.tensor(2.0), flow.tensor(3.0))
    assert r.shape == ()


def test_large_tensors_parallel_paths():
    a, b = randn(300, 257), positive(257)
    for name in ["remainder", "maximum", "atan2", "eq"]:
        assert_close(getattr(flow, name)(*map(flow.tensor, (a, b))), getattr(torch, name)(*map(torch.tensor, (a, b))))
    assert_close(flow.tensor(np.abs(a)) ** 2.5, torch.tensor(np.abs(a)) ** 2.5, rtol=1e-5)
    c = rng.random((300, 257)) > 0.5
    assert_close(flow.where(flow.tensor(c), flow.tensor(a), 0.0), torch.where(torch.tensor(c), torch.tensor(a), 0.0))
    assert_close(flow.lerp(flow.tensor(a), flow.tensor(b), 0.3), torch.lerp(torch.tensor(a), torch.tensor(b), 0.3))


# ---- aliases and helpers -----------------------------------------------------------------------------------
def test_sub_alpha_rsub_and_aliases():
    a, b = randn(2, 3), randn(3)
    check_vs_torch(lambda x, y: flow.sub(x, y, alpha=2), lambda x, y: torch.sub(x, y, alpha=2), [a, b])
    check_vs_torch(lambda x, y: flow.rsub(x, y, alpha=3), lambda x, y: torch.rsub(x, y, alpha=3), [a, b])
    check_vs_torch(lambda x: flow.rsub(x, 1), lambda x: torch.rsub(x, 1), [a])
    for name in ["true_divide", "subtract", "multiply", "divide", "arctan2", "greater", "less_equal", "not_equal"]:
        check_vs_torch(getattr(flow, name), getattr(torch, name), [a, positive(3)])
        check_vs_torch(lambda x, y: getattr(x, name)(y), lambda x, y: getattr(x, name)(y), [a, positive(3)])


# ---- dunders that call other families' ops (abs, logical_not/bitwise_not, matmul) --------------------------
def test_invert_pos_abs_dunders():
    assert (~flow.tensor([True, False])).tolist() == [False, True]
    assert_close(~flow.tensor([1, -2, 0], dtype=flow.int8), ~torch.tensor([1, -2, 0], dtype=torch.int8))
    with pytest.raises(TypeError):
        ~flow.tensor([1.0])
    x = flow.tensor([-1.0, 2.0])
    assert (+x) is x
    with pytest.raises(RuntimeError):
        +flow.tensor([True])
    assert_close(abs(x), torch.tensor([1.0, 2.0]))


def test_matmul_dunders():
    a, b = randn(2, 3), randn(3, 4)
    check_vs_torch(lambda x, y: x @ y, lambda x, y: x @ y, [a, b])
    fa, ta = flow_and_torch(a)
    c = randn(4, 2)
    assert_close(fa.__rmatmul__(flow.tensor(c)), ta.__rmatmul__(torch.tensor(c)))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [1e7, 1.0, 1e-3])
def test_float_remainder_fmod_exact_on_hard_values(dt, scale):
    """The fma fast paths must agree bit for bit with PyTorch (large quotients, signed zeros, inf/NaN)."""
    r = np.random.default_rng(3)
    x = (r.standard_normal(5000) * scale).astype(dt)
    y = (r.standard_normal(5000) * 3).astype(dt)
    x[:12] = [0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 4, -4, 3, 5, -1e-10]
    y[:12] = [2, 2, 2, 2, 2, 1, 1, 2, 2, 0, np.inf, 1]
    for name in ["remainder", "fmod"]:
        got = getattr(flow, name)(flow.tensor(x), flow.tensor(y)).numpy()
        exp = getattr(torch, name)(torch.tensor(x), torch.tensor(y)).numpy()
        assert np.array_equal(got, exp, equal_nan=True)
        ok = ~np.isnan(exp)
        assert np.array_equal(np.signbit(got[ok]), np.signbit(exp[ok]))


# ---- the vectorised runs of the binary loop: dense, scalar on either side, in place, strided fallback ------
VEC_DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool"]
VEC_OPS = [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul), ("maximum", None), ("eq", operator.eq)]


def _vals(shape, dt):
    if dt == "bool":
        return rng.random(shape) > 0.5
    if dt in ("int32", "int64", "uint8"):
        return rng.integers(0, 50, shape).astype(dt)
    return randn(*shape)


def _lib_tensor(lib, arr, dt):
    return lib.tensor(arr).to(getattr(lib, dt))


@pytest.mark.parametrize("dt", VEC_DTYPES)
@pytest.mark.parametrize("name,op", VEC_OPS, ids=[o[0] for o in VEC_OPS])
def test_binary_vectorised_runs_vs_torch(name, op, dt):
    """Lengths off the vector width, several parallel chunks, scalar operands on each side (0-dim tensors
    and Python numbers), inner and outer broadcasts, strided operands (the generic loop)."""
    if dt == "bool" and name in ("sub", "maximum"):
        return
    fn = (lambda lib: op) if op else (lambda lib: getattr(lib, name))
    tol = dict(rtol=1e-2, atol=1e-2) if dt in ("float16", "bfloat16") else {}
    big = _vals((131, 517), dt)  # > the parallel grain, odd run lengths
    pairs = [
        (big, _vals((131, 517), dt)),
        (big, _vals((), dt)), (_vals((), dt), big),
        (big, _vals((517,), dt)), (_vals((131, 1), dt), big),
        (_vals((7,), dt), _vals((3, 7), dt)),
    ]
    for a, b in pairs:
        for lib_a, lib_b in [(a, b)]:
            got = fn(flow)(_lib_tensor(flow, lib_a, dt), _lib_tensor(flow, lib_b, dt))
            want = fn(torch)(_lib_tensor(torch, lib_a, dt), _lib_tensor(torch, lib_b, dt))
            assert_close(got, want, **tol)
    # strided views on both sides, and a transposed output shape
    fa, ta = _lib_tensor(flow, big, dt), _lib_tensor(torch, big, dt)
    got = fn(flow)(sl(fa, 1, 1, None, 2), sl(fa, 1, 0, -1, 2))
    want = fn(torch)(sl(ta, 1, 1, None, 2), sl(ta, 1, 0, -1, 2))
    assert_close(got, want, **tol)
    assert_close(fn(flow)(fa.t(), fa.t()), fn(torch)(ta.t(), ta.t()), **tol)
    if dt not in ("bool", "uint8") and name in ("add", "mul"):
        s = 3 if dt.startswith("int") else 0.5
        assert_close(fn(flow)(fa, s), fn(torch)(ta, s), **tol)
        assert_close(fn(flow)(s, fa), fn(torch)(s, ta), **tol)


@pytest.mark.parametrize("dt", ["float32", "float64", "int64"])
def test_binary_inplace_aliasing_vectorised(dt):
    """out == an input (x += x), a 0-dim operand, and mixed-dtype in-place (float32 += float64)."""
    a = _vals((129, 301), dt)
    f, t = _lib_tensor(flow, a, dt), _lib_tensor(torch, a, dt)
    f.add_(f)
    t.add_(t)
    assert_close(f, t)
    f.mul_(f[3, 4].clone())
    t.mul_(t[3, 4].clone())
    assert_close(f, t)
    g = _lib_tensor(flow, a, dt)
    h = _lib_tensor(torch, a, dt)
    f.sub_(g.t().t())
    t.sub_(h)
    assert_close(f, t)
    if dt == "float32":
        d = randn(129, 301, dtype=np.float64)
        f.add_(flow.tensor(d))
        t.add_(torch.tensor(d))
        assert_close(f, t)


def test_binary_mixed_dtype_broadcast_vs_torch():
    """Mixed dtypes take the cast prelude before the vectorised loop: float32 * float64 scalar tensor,
    int * float, half + float broadcast."""
    a32, a64 = randn(64, 257), randn(257, dtype=np.float64)
    cases = [
        (a32, a64), (a32, np.array(2.5)), (rng.integers(0, 9, (64, 257)), a32),
        (randn(64, 257).astype(np.float16), randn(257)),
    ]
    for a, b in cases:
        for op in (operator.add, operator.mul, operator.truediv):
            assert_close(op(flow.tensor(a), flow.tensor(b)), op(torch.tensor(a), torch.tensor(b)), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "int64", "bool"])
def test_contiguous_of_transposed_4d(dt):
    """transpose(1, 2).contiguous() of attention outputs: contiguous inner runs copied whole, and casting
    copies through the same runs."""
    a = _vals((3, 4, 33, 17), dt)
    f, t = _lib_tensor(flow, a, dt), _lib_tensor(torch, a, dt)
    got = f.transpose(1, 2).contiguous()
    assert got.is_contiguous()
    assert_close(got, t.transpose(1, 2).contiguous())
    if dt != "bool":
        out = flow.empty(3, 33, 4, 17, dtype=flow.float64)
        out.copy_(f.transpose(1, 2))
        assert_close(out, t.transpose(1, 2).double())
    # a copy between overlapping views of one buffer (exact alias is a no-op)
    x = flow.arange(10.0)
    x[1:].copy_(x[1:])
    assert x.tolist() == list(range(10))


def test_pow_strength_reduced_exponents_match_torch_bitwise():
    x = np.abs(np.random.default_rng(8).standard_normal(1003)).astype(np.float32)
    x[:4] = [0.0, np.inf, np.nan, 1e-30]
    for e in (2, 3, 1, -1, -2, -0.5):
        np.testing.assert_array_equal(flow.tensor(x).pow(e).numpy(), torch.tensor(x).pow(e).numpy())
    # ** 0.5 is sqrt, correctly rounded (torch's pow is within an ulp of it)
    np.testing.assert_array_equal(flow.tensor(x).pow(0.5).numpy(), np.sqrt(x))
    np.testing.assert_allclose(flow.tensor(x).pow(0.5).numpy(), torch.tensor(x).pow(0.5).numpy(), rtol=2e-7)


@pytest.mark.parametrize("dtype,low", [("int64", -2 ** 63), ("int32", -2 ** 31), ("int16", -2 ** 15), ("int8", -128)])
def test_integer_min_divided_by_minus_one_wraps_instead_of_trapping(dtype, low):
    # INT_MIN / -1 overflows; the hardware division traps (SIGFPE), which used to kill the process
    x, m1 = flow.tensor(np.array([low, 7], dtype=dtype)), flow.tensor(np.array([-1, -2], dtype=dtype))
    assert (x // m1).tolist() == [low, -4]
    assert flow.div(x, m1, rounding_mode="trunc").tolist() == [low, -3]
    assert (x % m1).tolist() == [0, -1]
    assert flow.fmod(x, m1).tolist() == [0, 1]
    y = x.clone()
    y //= m1
    assert y.tolist() == [low, -4]


def test_integer_division_by_zero_with_an_empty_result_does_not_raise():
    assert (flow.zeros(0, dtype=flow.int64) // 0).shape == (0,)
    assert (flow.zeros(0, 3, dtype=flow.int64) % flow.tensor([1, 0, 2])).shape == (0, 3)
    assert flow.div(flow.zeros(0, dtype=flow.int32), 0, rounding_mode="floor").shape == (0,)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        flow.tensor([1, 2]) // flow.tensor([1, 0])


@pytest.mark.parametrize("call", [lambda M: M.tensor([True]) - 1,
                                  lambda M: M.tensor([1.0, 2.0]).sub(M.tensor([True, False])),
                                  lambda M: 1 - M.tensor([True]), lambda M: M.rsub(M.tensor([True]), 1),
                                  lambda M: M.tensor([True]) - M.tensor([True])])
def test_subtraction_with_a_bool_tensor_raises_like_torch(call):
    for M in (flow, torch):
        with pytest.raises(RuntimeError, match="Subtraction, the `-` operator, with (a bool tensor|two bool tensors)"):
            call(M)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_promotes_integer_operands_against_floats(name):
    for a, b in (([1, 2], [0.5, 1.5]), ([True, False], [1.0, 2.0])):
        got = getattr(flow, name)(flow.tensor(a), flow.tensor(b))
        want = getattr(torch, name)(torch.tensor(a), torch.tensor(b))
        assert got.dtype == flow.float32
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for \'Long\''):
        getattr(flow, name)(flow.tensor([1, 2]), flow.tensor([1, 2]))
