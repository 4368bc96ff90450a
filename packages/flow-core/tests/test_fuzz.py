"""Property-based fuzzing: random shapes (incl. zero-size and 0-dim), dtypes and strides (transposed and
sliced views) for many ops; every case must agree with PyTorch (values, dtype, gradients) or raise the same
kind of error — and never crash the process."""
import numpy as np
import pytest
from hypothesis import given, strategies as st

import oneflow as flow
from helpers import assert_close, torch

F32, F64, I32, I64, BOOL = "float32", "float64", "int32", "int64", "bool"
FLOATS = [F32, F64]
NUMERIC = [F32, F64, I32, I64]


class Spec:
    def __init__(self, name, fn, arity=1, dtypes=FLOATS, domain=None, grad=True, min_ndim=0, same_shape=False,
                 tfn=None, rtol=1e-5, atol=1e-6):
        self.name, self.fn, self.arity, self.dtypes, self.domain = name, fn, arity, dtypes, domain
        self.grad, self.min_ndim, self.same_shape, self.tfn = grad, min_ndim, same_shape, tfn
        self.rtol, self.atol = rtol, atol


def m(name, *a, **k):
    """Call method `name` on the first argument, in either library."""
    return lambda x, *rest: getattr(x, name)(*rest, *a, **k)


POS = "positive"
SPECS = [
    Spec("abs", m("abs"), dtypes=NUMERIC, grad=True),
    Spec("neg", m("neg"), dtypes=NUMERIC),
    Spec("exp", m("exp")),
    Spec("log", m("log"), domain=POS),
    Spec("sqrt", m("sqrt"), domain=POS),
    Spec("sin", m("sin")),
    Spec("cos", m("cos")),
    Spec("tanh", m("tanh")),
    Spec("sigmoid", m("sigmoid")),
    Spec("relu", m("relu"), dtypes=NUMERIC),
    Spec("gelu", lambda x: flow.nn.functional.gelu(x), tfn=lambda x: torch.nn.functional.gelu(x)),
    Spec("silu", lambda x: flow.nn.functional.silu(x), tfn=lambda x: torch.nn.functional.silu(x)),
    Spec("floor", m("floor"), dtypes=NUMERIC, grad=False),
    Spec("sign", m("sign"), dtypes=NUMERIC, grad=False),
    Spec("erf", m("erf")),
    Spec("clamp", m("clamp", -0.5, 0.5)),
    Spec("add", lambda a, b: a + b, arity=2, dtypes=NUMERIC + [BOOL]),
    Spec("sub", lambda a, b: a - b, arity=2, dtypes=NUMERIC),
    Spec("mul", lambda a, b: a * b, arity=2, dtypes=NUMERIC + [BOOL]),
    Spec("div", lambda a, b: a / b, arity=2, domain=POS),
    Spec("maximum", lambda a, b: a.maximum(b), arity=2, dtypes=NUMERIC),
    Spec("minimum", lambda a, b: a.minimum(b), arity=2, dtypes=NUMERIC),
    Spec("pow", lambda a, b: a.pow(b), arity=2, domain=POS),
    Spec("atan2", lambda a, b: a.atan2(b), arity=2),
    Spec("eq", lambda a, b: a == b, arity=2, dtypes=NUMERIC + [BOOL], grad=False),
    Spec("lt", lambda a, b: a < b, arity=2, dtypes=NUMERIC, grad=False),
    Spec("where", lambda a, b: a.where(a > b, b), arity=2),
    Spec("sum", m("sum"), dtypes=NUMERIC + [BOOL]),
    Spec("sum_dim", m("sum", -1), dtypes=NUMERIC, min_ndim=1),
    Spec("mean", m("mean", 0, True), min_ndim=1),
    Spec("amax", m("amax", -1), min_ndim=1, grad=False),
    Spec("prod", m("prod", 0), min_ndim=1, rtol=1e-4),
    Spec("logsumexp", m("logsumexp", -1), min_ndim=1),
    Spec("var", m("var", -1), min_ndim=1, rtol=1e-4, atol=1e-5),
    Spec("argmax", m("argmax", -1), dtypes=[F32, I64], min_ndim=1, grad=False),
    Spec("cumsum", m("cumsum", 0), min_ndim=1, rtol=1e-4, atol=1e-5),
    Spec("softmax", m("softmax", -1), min_ndim=1),
    Spec("flip", m("flip", [0]), dtypes=NUMERIC, min_ndim=1),
    Spec("transpose", m("transpose", 0, -1), dtypes=NUMERIC + [BOOL], min_ndim=1),
    Spec("matmul", lambda a, b: a @ b.transpose(0, -1), arity=2, min_ndim=1, same_shape=True, rtol=1e-4, atol=1e-5),
]
SPECS = [s for s in SPECS if s.dtypes]


def _array(data, shape, dtype, domain):
    if dtype == BOOL:
        return np.array(data.draw(st.lists(st.booleans(), min_size=int(np.prod(shape)), max_size=int(np.prod(shape)))),
                        dtype=np.bool_).reshape(shape)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31 - 1)))
    if dtype.startswith("int"):
        return rng.integers(-5, 6, size=shape).astype(dtype)
    a = rng.standard_normal(shape)
    if domain == POS:
        a = np.abs(a) + 0.5
    return a.astype(dtype)


def _layout(data, arr):
    """Returns (array, view function) producing a non-contiguous view of equal shape in either library."""
    kind = data.draw(st.sampled_from(["contiguous", "transposed", "strided"]))
    if kind == "transposed" and arr.ndim >= 2:
        base = np.ascontiguousarray(np.swapaxes(arr, 0, -1))
        return base, lambda t: t.transpose(0, -1)
    if kind == "strided" and arr.ndim >= 1:
        base = np.repeat(arr, 2, axis=-1)
        return base, (lambda t: t[..., ::2]) if hasattr(flow.Tensor, "__getitem__") else (lambda t: t)
    return arr, lambda t: t


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
@given(data=st.data())
def test_fuzz_against_torch(spec, data):
    ndim = data.draw(st.integers(spec.min_ndim, 3))
    shape = tuple(data.draw(st.lists(st.integers(0, 4), min_size=ndim, max_size=ndim)))
    dtype = data.draw(st.sampled_from(spec.dtypes))
    shapes = [shape]
    for _ in range(spec.arity - 1):
        if spec.same_shape:
            shapes.append(shape)
        else:  # broadcastable: drop leading dims and set some to 1
            k = data.draw(st.integers(0, len(shape)))
            sub = list(shape[k:])
            sub = [1 if data.draw(st.booleans()) else d for d in sub]
            shapes.append(tuple(sub))
    f_in, t_in = [], []
    for s in shapes:
        arr = _array(data, s, dtype, spec.domain)
        base, view = _layout(data, arr)
        rg = spec.grad and dtype.startswith("float")
        fb, tb = flow.tensor(base), torch.tensor(base)
        fv, tv = view(fb), view(tb)
        if rg:
            fb.requires_grad_(True)
            tb.requires_grad_(True)
            fv, tv = view(fb), view(tb)
        f_in.append((fb, fv))
        t_in.append((tb, tv))
    tfn = spec.tfn or spec.fn
    try:
        t_out = tfn(*[v for _, v in t_in])
    except (RuntimeError, IndexError, ValueError, TypeError) as e:
        with pytest.raises(type(e)):
            spec.fn(*[v for _, v in f_in])
        return
    f_out = spec.fn(*[v for _, v in f_in])
    assert_close(f_out, t_out, rtol=spec.rtol, atol=spec.atol)
    if spec.grad and dtype.startswith("float") and t_out.requires_grad and t_out.numel() > 0:
        w = np.random.default_rng(3).standard_normal(tuple(t_out.shape)).astype(dtype)
        (t_out * torch.tensor(w)).sum().backward()
        (f_out * flow.tensor(w)).sum().backward()
        for (fb, _), (tb, _) in zip(f_in, t_in):
            if tb.grad is not None:
                assert fb.grad is not None
                assert_close(fb.grad, tb.grad, rtol=spec.rtol * 10, atol=spec.atol * 10)
