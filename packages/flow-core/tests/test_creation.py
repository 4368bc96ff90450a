"""Creation ops against PyTorch: tensor(), filled tensors, *_like, arange/linspace/logspace/eye."""
import math

import numpy as np
import pytest

import oneflow as flow
from helpers import assert_close, torch


def same_dtype(f, t):
    assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (f.dtype, t.dtype)


def check(f, t, exact=True):
    same_dtype(f, t)
    assert tuple(f.shape) == tuple(t.shape)
    if exact:
        np.testing.assert_array_equal(np.asarray(f.tolist()), np.asarray(t.tolist()))
    else:
        assert_close(f, t, rtol=1e-6, atol=1e-6)


# ---- tensor() -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("data", [
    1, 2.5, True, [1, 2, 3], [1.0, 2, 3], [True, False], [True, 2], [[1, 2], [3, 4]], [], [[], []],
    [[1.5], [2.5]], (1, 2), range(4), [np.int64(3), 4], -0.0, [1e308, -1e308], 2 ** 62,
])
def test_tensor_dtype_inference(data):
    check(flow.tensor(data), torch.tensor(data))


@pytest.mark.parametrize("np_dtype", [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16,
                                      np.float32, np.float64])
def test_tensor_from_numpy_keeps_dtype_and_copies(np_dtype):
    a = (np.arange(6) % 3).astype(np_dtype).reshape(2, 3)
    f = flow.tensor(a)
    check(f, torch.tensor(a))
    a[0, 0] = 1
    assert f.tolist()[0][0] == 0  # a copy
    check(flow.tensor(a.T), torch.tensor(a.T))
    check(flow.tensor(a[:, ::-1]), torch.tensor(a[:, ::-1].copy()))  # negative strides are fine for a copy


def test_tensor_numpy_scalars_and_dtype_argument():
    check(flow.tensor(np.float64(1.5)), torch.tensor(np.float64(1.5)))
    check(flow.tensor(np.int32(3)), torch.tensor(np.int32(3)))
    for d in ["int32", "float64", "bool", "uint8", "float16", "bfloat16"]:
        check(flow.tensor([1.7, 0.0, 2.2], dtype=getattr(flow, d)), torch.tensor([1.7, 0.0, 2.2], dtype=getattr(torch, d)))
    check(flow.tensor([[1, 2]], dtype=flow.float32), torch.tensor([[1, 2]], dtype=torch.float32))


def test_tensor_from_tensors_and_requires_grad():
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    assert x.requires_grad and x.is_leaf
    y = flow.tensor(x)
    assert not y.requires_grad
    y.add_(1)
    assert x.tolist() == [1.0, 2.0]
    check(flow.tensor([flow.tensor(1.0), flow.tensor(2.0)]), torch.tensor([torch.tensor(1.0), torch.tensor(2.0)]))


def test_tensor_errors():
    with pytest.raises(ValueError):
        flow.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        flow.tensor("abc")
    with pytest.raises(TypeError):
        flow.tensor(np.array([1, 2], dtype=np.uint32))
    with pytest.raises(TypeError):
        flow.tensor(1 + 2j)


def test_as_tensor_and_from_numpy_share_memory():
    a = np.arange(6, dtype=np.float32)
    t = flow.as_tensor(a)
    a[0] = 10
    assert t.tolist()[0] == 10
    t2 = flow.as_tensor(a, dtype=flow.float64)  # a dtype change copies
    a[1] = 20
    assert t2.tolist()[1] == 1
    x = flow.ones(3)
    assert flow.as_tensor(x) is x
    check(flow.as_tensor([1, 2]), torch.as_tensor([1, 2]))
    assert flow.asarray(a).tolist() == a.tolist()
    c = flow.asarray(a, copy=True)
    a[2] = 30
    assert c.tolist()[2] == 2


# ---- filled tensors ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_filled_size_forms(name):
    ff, tf = getattr(flow, name), getattr(torch, name)
    for args in [(2, 3), ((2, 3),), ([2, 3],), (flow.Size([2, 3]),), ((),), (0,), (3, 0, 2), (4,)]:
        targs = tuple(torch.Size(a) if isinstance(a, flow.Size) else a for a in args)
        f, t = ff(*args), tf(*targs)
        assert tuple(f.shape) == tuple(t.shape)
        same_dtype(f, t)
        if name != "empty":
            check(f, t)
    f = ff(size=(2, 1), dtype=flow.int32)
    assert tuple(f.shape) == (2, 1) and f.dtype == flow.int32
    assert ff(2, requires_grad=True).requires_grad
    assert ff(2, dtype=flow.float64).dtype == flow.float64
    with pytest.raises(RuntimeError, match="negative dimension|must be non-negative"):  # zeros words it so
        ff(-1, 2)


def test_zeros_out_and_device():
    out = flow.empty(2, 2)
    r = flow.zeros(2, 2, out=out)
    assert r is out and out.tolist() == [[0, 0], [0, 0]]
    assert flow.ones(2, device="cpu").tolist() == [1, 1]
    assert flow.zeros(2, device=flow.device("cpu")).tolist() == [0, 0]


@pytest.mark.parametrize("value", [1, 1.5, True, -3, 2 ** 40])
def test_full_dtype_inference(value):
    check(flow.full((2, 3), value), torch.full((2, 3), value))
    check(flow.full([2], value, dtype=flow.float64), torch.full([2], value, dtype=torch.float64))
    check(flow.full((), value), torch.full((), value))


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.int32, np.int64, np.bool_, np.uint8])
def test_like_functions(np_dtype):
    a = (np.arange(6).reshape(2, 3) % 2).astype(np_dtype)
    f, t = flow.tensor(a), torch.tensor(a)
    check(flow.zeros_like(f), torch.zeros_like(t))
    check(flow.ones_like(f), torch.ones_like(t))
    check(flow.full_like(f, 1), torch.full_like(t, 1))
    check(flow.zeros_like(f, dtype=flow.float64), torch.zeros_like(t, dtype=torch.float64))
    check(flow.ones_like(f.t()), torch.ones_like(t.t()))
    e = flow.empty_like(f)
    assert e.shape == f.shape and e.dtype == f.dtype
    if f.dtype.is_floating_point:
        assert flow.zeros_like(f, requires_grad=True).requires_grad


def test_scalar_tensor():
    check(flow.scalar_tensor(3), torch.scalar_tensor(3))
    check(flow.scalar_tensor(3, dtype=flow.int32), torch.scalar_tensor(3, dtype=torch.int32))


# ---- ranges -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args", [
    (5,), (0,), (2, 7), (7, 2, -1), (0, 10, 3), (0, 1, 0.1), (1, 2.5, 0.5), (-3.5, 4), (0.5,), (10, 0, -2.5),
    (0, 1e-3, 1e-4), (5, 5), (1, 10, 4), (-1, -10, -3), (0, 10.0, 1), (0, 2 ** 40, 2 ** 38),
])
def test_arange_matches_torch(args):
    check(flow.arange(*args), torch.arange(*args), exact=False)
    assert flow.arange(*args).shape[0] == torch.arange(*args).shape[0]


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64", "float16", "bfloat16", "uint8", "int16"])
def test_arange_dtypes(dtype):
    for args in [(10,), (1, 9, 2), (0, 6.5, 1.5), (2.5, 7)]:
        if dtype == "uint8" and args == (0, 6.5, 1.5):
            continue
        check(flow.arange(*args, dtype=getattr(flow, dtype)), torch.arange(*args, dtype=getattr(torch, dtype)),
              exact=False)


def test_arange_keywords_and_tensor_bounds():
    check(flow.arange(start=1, end=4), torch.arange(start=1, end=4))
    check(flow.arange(1, 4, step=2), torch.arange(1, 4, step=2))
    check(flow.arange(flow.tensor(5)), torch.arange(torch.tensor(5)))
    assert flow.arange(3.0, requires_grad=True).requires_grad
    out = flow.empty(3, dtype=flow.int64)
    assert flow.arange(3, out=out) is out and out.tolist() == [0, 1, 2]


def test_arange_errors():
    with pytest.raises(RuntimeError, match="step must be nonzero"):
        flow.arange(0, 10, 0)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent with step sign"):
        flow.arange(10, 0, 1)
    with pytest.raises(RuntimeError, match="unsupported range"):
        flow.arange(0, math.inf)
    with pytest.raises(RuntimeError):
        flow.arange(0, 10, dtype=flow.bool)


def test_range_includes_end():
    with pytest.warns(UserWarning):
        t = torch.range(1, 4, 0.5)
    check(flow.range(1, 4, 0.5), t, exact=False)


@pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (-3, 7, 11), (1, 0, 4), (0, 10, 1), (2, 5, 0), (0, 1, 2),
                                            (-1.5, 2.25, 100), (5, 5, 3), (0, 1e6, 7)])
@pytest.mark.parametrize("dtype", [None, "float64", "int64", "int32", "float16"])
def test_linspace_matches_torch(start, end, steps, dtype):
    if dtype == "float16" and end > 65504:
        return  # PyTorch rejects bounds that overflow float16
    kw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    fkw = {} if dtype is None else {"dtype": getattr(flow, dtype)}
    t = torch.linspace(start, end, steps, **kw)
    f = flow.linspace(start, end, steps, **fkw)
    same_dtype(f, t)
    rtol = 1e-3 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(np.asarray(f.tolist(), np.float64), np.asarray(t.tolist(), np.float64),
                               rtol=rtol, atol=rtol * (1 + abs(end)))
    if dtype in ("int64", "int32"):
        assert f.tolist() == t.tolist()


@pytest.mark.parametrize("start,end,steps,base", [(0, 3, 4, 10.0), (-2, 2, 5, 2.0), (1, 0, 3, 10.0), (0, 1, 1, 3.0),
                                                 (0, 2, 0, 10.0), (0.5, 1.5, 9, math.e)])
@pytest.mark.parametrize("dtype", [None, "float64", "int64"])
def test_logspace_matches_torch(start, end, steps, base, dtype):
    kw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    fkw = {} if dtype is None else {"dtype": getattr(flow, dtype)}
    t = torch.logspace(start, end, steps, base, **kw)
    f = flow.logspace(start, end, steps, base, **fkw)
    same_dtype(f, t)
    np.testing.assert_allclose(np.asarray(f.tolist(), np.float64), np.asarray(t.tolist(), np.float64), rtol=1e-6)


def test_linspace_errors_and_kwargs():
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        flow.linspace(0, 1, -1)
    assert flow.linspace(0, 1, steps=3, requires_grad=True).requires_grad
    check(flow.linspace(flow.tensor(0.0), flow.tensor(1.0), 3), torch.linspace(torch.tensor(0.0), torch.tensor(1.0), 3))


@pytest.mark.parametrize("args", [(3,), (2, 4), (4, 2), (0,), (0, 3), (1,)])
@pytest.mark.parametrize("dtype", [None, "int64", "bool", "float64"])
def test_eye_matches_torch(args, dtype):
    kw = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    fkw = {} if dtype is None else {"dtype": getattr(flow, dtype)}
    check(flow.eye(*args, **fkw), torch.eye(*args, **kw))


def test_eye_errors():
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0, got -1"):
        flow.eye(-1)
    with pytest.raises(RuntimeError, match="m must be greater or equal to 0, got -2"):
        flow.eye(2, -2)


def test_large_ranges_use_threads_consistently():
    n = 1 << 20
    prev = flow.get_num_threads()
    try:
        flow.set_num_threads(1)
        a = flow.arange(n, dtype=flow.float32).numpy().copy()
        b = flow.linspace(-1, 1, n).numpy().copy()
        flow.set_num_threads(2)
        np.testing.assert_array_equal(flow.arange(n, dtype=flow.float32).numpy(), a)
        np.testing.assert_array_equal(flow.linspace(-1, 1, n).numpy(), b)
    finally:
        flow.set_num_threads(prev)
    np.testing.assert_allclose(a, torch.arange(n, dtype=torch.float32).numpy())
    np.testing.assert_allclose(b, torch.linspace(-1, 1, n).numpy(), atol=1e-6)


def test_creation_ops_are_registered_with_traits():
    ops = {o["name"]: o for o in flow.list_ops()}
    for name in ["arange", "linspace", "logspace", "eye"]:
        assert "creation" in ops[name]["traits"], ops[name]


def test_long_linspace_and_arange_match_torch_exactly():
    # the vectorised fill (32-bit index) keeps torch's two-sided linspace formula bit for bit
    for dt in ("float32", "float64"):
        np.testing.assert_array_equal(flow.linspace(-3, 7, 1_000_003, dtype=getattr(flow, dt)).numpy(),
                                      torch.linspace(-3, 7, 1_000_003, dtype=getattr(torch, dt)).numpy())
    np.testing.assert_array_equal(flow.arange(5, 10 ** 6, 3).numpy(), torch.arange(5, 10 ** 6, 3).numpy())
