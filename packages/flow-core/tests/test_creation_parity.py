"""Tensor creation and conversion against PyTorch, case by case: the same call on ``oneflow`` and ``torch`` must
give the same dtype, shape and values, or the same exception type and message (``torch`` read as ``oneflow``)."""
import math
import warnings

import numpy as np
import pytest

import oneflow as flow
from oneflow._ops import creation
from helpers import torch


def outcome(fn, m):
    """What ``fn(m)`` gives, comparable across the two libraries."""
    try:
        r = fn(m)
    except Exception as e:  # noqa: BLE001 - the exception is the outcome compared
        return ("raises", type(e).__name__, str(e).replace("torch", "oneflow"))
    if isinstance(r, (flow.Tensor, torch.Tensor)):
        r = r.detach()
        if r.dtype in (flow.bfloat16, torch.bfloat16):
            r = r.float()
        return ("tensor", str(r.dtype).split(".")[-1], tuple(r.shape), repr(r.tolist()))
    if isinstance(r, (flow.dtype, torch.dtype)):
        return ("dtype", str(r).split(".")[-1])
    return ("value", repr(r).replace("torch", "oneflow"))


def same(fn, upto=None):
    """Asserts ``fn`` gives the same outcome on both; an error message is compared up to ``upto`` if given (a
    part where oneflow says something else, such as its own list of supported dtypes)."""
    f, t = outcome(fn, flow), outcome(fn, torch)
    if upto is not None:
        f, t = (o[:2] + (o[2].split(upto)[0],) if o[0] == "raises" else o for o in (f, t))
    assert f == t, f"\noneflow: {f}\ntorch:   {t}"
    return f


# ---- tensor(): dtype inference ----------------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda m: m.tensor([np.int32(1), np.int32(2)]),              # NumPy scalars keep their dtype
    lambda m: m.tensor([np.int8(1), True]),
    lambda m: m.tensor([np.int8(1), 2]),                         # promoted with a Python int: int64
    lambda m: m.tensor([np.float64(1.0), 2.0]),                  # float64 scalar, not the default dtype
    lambda m: m.tensor([np.float16(1.5), 1]),
    lambda m: m.tensor([np.float16(1.5), 1.0]),
    lambda m: m.tensor(np.float16(1.5)),
    lambda m: m.tensor(np.uint8(200)),
    lambda m: m.tensor([m.tensor(1, dtype=m.int32), m.tensor(2, dtype=m.int32)]),  # element tensors' dtype
    lambda m: m.tensor([m.tensor(1.0, dtype=m.float64), 2.0]),
    lambda m: m.tensor([m.tensor(1.0, dtype=m.float16)]),
    lambda m: m.tensor([m.tensor(1, dtype=m.int32), 2.5]),
    lambda m: m.tensor([m.tensor([1.0]), m.tensor([3.0])]),     # one-element tensors read as numbers
    lambda m: m.tensor([np.array([1, 2], dtype=np.int8), [3, 400]]),
    lambda m: m.tensor([[], [1]]),                               # nothing to store: no length check
    lambda m: m.tensor([[], []], dtype=m.int8),
    lambda m: m.tensor(bytearray(b"ab")),
    lambda m: m.tensor([[1, 2], (3, 4)]),
    lambda m: m.tensor(-2 ** 63),
    lambda m: m.tensor(2 ** 63, dtype=m.float32),                # ints beyond int64 are fine for floats
    lambda m: m.tensor([2 ** 64, 1.0]),
])
def test_tensor_infers_dtype_like_torch(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(make)


@pytest.mark.parametrize("make", [
    lambda m: m.tensor([[1, 2], [3]]),
    lambda m: m.tensor([[1], []]),
    lambda m: m.tensor([[1, 2], 3]),
    lambda m: m.tensor([1, [2, 3]]),
    lambda m: m.tensor([[1.0, 2], [3, [4]]]),
    lambda m: m.tensor([[[1]], [2]]),
    lambda m: m.tensor([m.tensor([1.0, 2.0]), m.tensor([3.0, 4.0])]),
    lambda m: m.tensor([m.tensor([1, 2]), m.tensor([3, 4])]),
    lambda m: m.tensor([np.array(1.5), np.array(2.5)]),
    lambda m: m.tensor(2 ** 63),
    lambda m: m.tensor([1, -2 ** 63 - 1]),
    lambda m: m.tensor(2 ** 63, dtype=m.uint8),
    lambda m: m.tensor([float("nan")], dtype=m.int64),
    lambda m: m.tensor([float("inf")], dtype=m.int32),
    lambda m: m.tensor([255.9], dtype=m.uint8),
    lambda m: m.tensor([-1.5], dtype=m.uint8),
    lambda m: m.tensor([127.9, 1], dtype=m.int8),
    lambda m: m.tensor([300], dtype=m.int8),
    lambda m: m.tensor(np.uint8(200), dtype=m.int8),            # a NumPy scalar is range-checked as a number
    lambda m: m.tensor("abc"),
    lambda m: m.tensor(b"ab"),
    lambda m: m.tensor(["a"]),
    lambda m: m.tensor([[1, 2], [3, "a"]]),
    lambda m: m.tensor(None),
    lambda m: m.tensor([1, None]),
    lambda m: m.tensor({1: 2}),
    lambda m: m.tensor({1, 2}),
    lambda m: m.tensor(np.array([1, 2], dtype=">i4")),
    lambda m: m.tensor(np.array([1], dtype=object)),
    lambda m: m.tensor([1, 2], m.float64),                      # dtype is keyword-only
    lambda m: m.tensor([1, 2], requires_grad=True),
    lambda m: m.zeros(2, dtype=m.int64, requires_grad=True),
    lambda m: m.arange(3, requires_grad=True),
])
def test_tensor_errors_like_torch(make):
    assert same(make, upto=" The only supported types")[0] == "raises"


@pytest.mark.parametrize("make", [
    lambda m: m.tensor([-1, 1.5], dtype=m.uint8),                # an int wraps, a float is range-checked
    lambda m: m.tensor([3.7, -3.7, 2 ** 40], dtype=m.int64),
    lambda m: m.tensor([-0.5, 127.0], dtype=m.int8),
    lambda m: m.tensor([float("nan"), 0.0, -2.0], dtype=m.bool),
    lambda m: m.tensor([2.0 ** 63], dtype=m.int64),
    lambda m: m.tensor([1e6], dtype=m.float16),
    lambda m: m.tensor(np.array([300.0]), dtype=m.int8),          # arrays convert like .to(): they wrap
])
def test_tensor_stores_numbers_like_torch(make):
    same(make)


def test_tensor_warnings():
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(UserWarning, match=r"sourceTensor.detach\(\).clone\(\)"):
        y = flow.tensor(x)
    assert not y.requires_grad and y.tolist() == [1.0, 2.0]
    creation._warned.discard("list of ndarrays")
    with pytest.warns(UserWarning, match="list of numpy.ndarrays is extremely slow"):
        flow.tensor([np.ones(2), np.zeros(2)])
    with warnings.catch_warnings():  # once per process, as PyTorch
        warnings.simplefilter("error")
        flow.tensor([np.ones(2), np.zeros(2)])


# ---- as_tensor / asarray / from_numpy ------------------------------------------------------------------------------
def _readonly(shape=(2, 3)):
    a = np.arange(6, dtype=np.float32).reshape(shape)
    a.setflags(write=False)
    return a


def test_from_numpy_shares_read_only_arrays_with_a_warning():
    creation._warned.discard("readonly ndarray")
    a = _readonly()
    with pytest.warns(UserWarning, match="NumPy array is not writable"):
        t = flow.from_numpy(a)
    assert t.tolist() == a.tolist() and t.data_ptr() == a.__array_interface__["data"][0]
    b = np.broadcast_to(np.arange(3, dtype=np.int64), (2, 3))
    tb = flow.as_tensor(b)
    assert tb.stride() == (0, 1) and tb.tolist() == b.tolist()
    unaligned = np.frombuffer(b"\0" + np.arange(3, dtype=np.int32).tobytes(), dtype=np.int32, offset=1)
    assert flow.from_numpy(unaligned).tolist() == [0, 1, 2]
    assert flow.tensor(_readonly()).tolist() == a.tolist()


@pytest.mark.parametrize("make", [
    lambda m: m.from_numpy(np.float32(2.5)),
    lambda m: m.from_numpy([1]),
    lambda m: m.from_numpy(np.arange(6.0).reshape(2, 3)[:, ::-1]),
    lambda m: m.from_numpy(np.array([1], np.longdouble)),
    lambda m: m.from_numpy(np.array(["a"])),
    lambda m: m.from_numpy(np.array([1, 2], dtype=">f8")),
    lambda m: m.from_numpy(np.arange(3.0)[::-1][:1]),            # a negative stride over one element is fine
    lambda m: m.as_tensor([1], m.float64),
    lambda m: m.asarray(np.ones(2, np.float32), dtype=m.float64, copy=False),
    lambda m: m.asarray(m.ones(2), dtype=m.int32, copy=False),
    lambda m: m.asarray([1, 2], copy=False),
    lambda m: m.asarray(3, copy=False),
    lambda m: m.asarray(np.float64(2.5), copy=False),
    lambda m: m.asarray(np.float64(2.5)),
    lambda m: m.asarray([m.tensor(1.0, dtype=m.float64), m.tensor(2.0)]),
    lambda m: m.asarray(bytearray(b"ab")),                       # a buffer holds elements of the default dtype
    lambda m: m.asarray(bytearray(b"abcd"), dtype=m.uint8),
    lambda m: m.asarray(bytearray(b"abcdabcd"), dtype=m.bfloat16),
    lambda m: m.asarray(memoryview(np.arange(3, dtype=np.float64)), dtype=m.float64),
    lambda m: m.asarray(np.arange(3, dtype=np.int16)),
])
def test_conversions_like_torch(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(make, upto=" The only supported types")


def test_asarray_sharing_and_requires_grad():
    a = np.arange(4, dtype=np.float32)
    for copy, shared in [(None, True), (False, True), (True, False)]:
        t = flow.asarray(a, copy=copy)
        a[0] += 1
        assert (t.tolist()[0] == a[0]) == shared
    x = flow.ones(2)
    assert flow.asarray(x) is x and flow.asarray(x, copy=False) is x and flow.asarray(x, copy=True) is not x
    w = flow.ones(2, requires_grad=True)
    creation._warned.discard("asarray requires_grad")
    with pytest.warns(UserWarning, match="unspecified requires_grad now defaults to obj.requires_grad"):
        assert flow.asarray(w) is w
    c = flow.asarray(w, copy=True)
    assert c.requires_grad and c.grad_fn is not None  # a differentiable copy, as PyTorch's
    assert flow.asarray(w, dtype=flow.float64).grad_fn is not None
    d = flow.asarray(w, requires_grad=False)
    assert not d.requires_grad and d.data_ptr() == w.data_ptr()
    buf = bytearray(np.arange(3, dtype=np.float32).tobytes())
    tb = flow.asarray(buf)
    tb[0] = 7.0  # shares the buffer
    assert np.frombuffer(buf, dtype=np.float32)[0] == 7.0
    creation._warned.discard("readonly buffer")
    with pytest.warns(UserWarning, match="buffer is not writable"):
        assert flow.asarray(b"\0\0\0\0", dtype=flow.int32).tolist() == [0]


# ---- NumPy protocol, Python scalars, DLPack -------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda m: int(m.ones(2)),
    lambda m: float(m.ones(0)),
    lambda m: complex(m.ones(3)),
    lambda m: bool(m.ones(0)),
    lambda m: bool(m.ones(2)),
    lambda m: [1, 2, 3][m.tensor([1, 2])],
    lambda m: [1, 2, 3][m.tensor(1.0)],
    lambda m: m.ones(2, requires_grad=True).numpy(),
    lambda m: np.asarray(m.ones(2, requires_grad=True)),
    lambda m: m.ones(2, requires_grad=True).__dlpack__(),
    lambda m: m.ones(2, requires_grad=True).numpy(force=True).tolist(),
    lambda m: np.add(m.arange(3.0), 1),                          # ufunc results are tensors
    lambda m: np.greater(m.arange(3.0), 1),                      # bool ufunc results are uint8 tensors
    lambda m: np.add.reduce(m.arange(3.0)),
    lambda m: m.arange(3.0) + np.arange(3.0),
    lambda m: m.arange(3.0) == np.arange(3.0),
    lambda m: np.arange(3.0) == m.arange(3.0),
    lambda m: m.arange(3.0) < np.arange(3.0),
    lambda m: np.float64(2.0) * m.arange(3.0),                   # NumPy scalars defer to the tensor
    lambda m: np.int64(2) + m.arange(3, dtype=m.int8),
    lambda m: np.asarray(m.arange(3.0), dtype=np.float64).tolist(),
    lambda m: m.utils.dlpack.from_dlpack(np.arange(3.0)),
    lambda m: m.from_dlpack(m.utils.dlpack.to_dlpack(m.arange(3.0))),
])
def test_python_and_numpy_protocols_like_torch(make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(make)


def test_array_protocol_shares_and_copies():
    t = flow.arange(3.0)
    np.asarray(t)[0] = 5.0
    assert t.tolist()[0] == 5.0
    c = np.array(t, copy=True)
    c[1] = 9.0
    assert t.tolist()[1] == 1.0
    assert np.asarray(flow.ones(2, dtype=flow.bfloat16)).dtype == np.float32  # NumPy has no bfloat16
    with pytest.raises(ValueError, match="Unable to avoid copy"):
        np.array(t, dtype=np.float64, copy=False)


# ---- filled tensors: sizes and fill values --------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda m: m.zeros(),
    lambda m: m.ones(2.0),
    lambda m: m.ones(True),
    lambda m: m.empty(None),
    lambda m: m.zeros("2"),
    lambda m: m.ones(m.tensor([2, 3])),
    lambda m: m.zeros(np.array([2, 3])),
    lambda m: m.zeros((2, (3,))),
    lambda m: m.zeros([2, 3.0]),
    lambda m: m.zeros(2, 3.0),
    lambda m: m.ones((2,), (3,)),
    lambda m: m.zeros([True, 2]),
    lambda m: m.zeros([m.tensor(2.0)]),
    lambda m: m.zeros(size=2),
    lambda m: m.zeros(2, size=(2,)),
    lambda m: m.zeros(-1, 2),
    lambda m: m.ones(-1, 2),
    lambda m: m.zeros(np.array(2)),
    lambda m: m.zeros(m.tensor(2), m.tensor(3)),
    lambda m: m.zeros(np.int32(3)),
    lambda m: m.ones([]),
    lambda m: m.full(2, 3),
    lambda m: m.full([2, 3.0], 1),
    lambda m: m.full(None, 1),
    lambda m: m.full((2,), np.bool_(True)),                      # PyTorch reads a NumPy bool as a float
    lambda m: m.full((2,), np.int32(3)),
    lambda m: m.full((2,), np.float16(1.5)),
    lambda m: m.full((2,), m.tensor(3, dtype=m.int32)),          # a 0-dim tensor by its dtype's kind
    lambda m: m.full((2,), m.tensor(1.5, dtype=m.float64)),
    lambda m: m.full((2,), m.tensor(True)),
    lambda m: m.full((2,), m.tensor([3.0])),
    lambda m: m.full((2,), "a"),
    lambda m: m.full((2,), None),
    lambda m: m.full((2,), 2 ** 63),
    lambda m: m.full((2,), 2 ** 64),
    lambda m: m.full((2,), 2 ** 63, dtype=m.float32),
    lambda m: m.full((2,), 300, dtype=m.int8),
    lambda m: m.full_like(m.zeros(2), 2 ** 64),
    lambda m: m.full_like(m.zeros(2), 2 ** 63),
    lambda m: m.full_like(m.zeros(2, dtype=m.uint8), -1),
    lambda m: m.full((2,), 1, requires_grad=True),
    lambda m: m.empty_strided((2, 3), (-1, 2)),
    lambda m: m.empty_strided((0,), (-1,)),
    lambda m: m.empty_strided(2, 1),
    lambda m: m.empty_strided((2, 3), (1, 2.0)),
])
def test_sizes_and_fill_values_like_torch(make):
    same(make)


# ---- ranges ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("args,kw", [
    ((0, 4, 1.5), {"dtype": "int32"}), ((0, 4, 1.5), {"dtype": "int64"}), ((0, 4, 1.5), {}),
    ((2.5, 0, -0.5), {}), ((0, 0), {}), ((5, 1), {}), ((0, 1, 0), {}), ((0, math.inf), {}), ((0, math.nan), {}),
    (("a",), {}), ((None,), {}), ((10 ** 20,), {}), ((0, 3), {"dtype": "bool"}),
])
def test_range_like_torch(args, kw):
    def make(m):
        kwargs = {k: getattr(m, v) for k, v in kw.items()}
        return m.range(*args, **kwargs) if len(args) > 1 else m.range(0, *args, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        same(make)
    with pytest.warns(UserWarning, match="oneflow.range is deprecated"):
        flow.range(0, 2)
    with pytest.raises(RuntimeError, match="step must be nonzero"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flow.range(0, 4, 0.5, dtype=flow.int8)  # the step truncates to 0 (PyTorch divides by it and crashes)


@pytest.mark.parametrize("make", [
    lambda m: m.arange(m.tensor([3])),
    lambda m: m.arange("a"),
    lambda m: m.arange(10 ** 20),
    lambda m: m.arange(3, dtype=m.bool),
    lambda m: m.arange(0, 1, 0.25, dtype=m.int64),
    lambda m: m.arange(0, 5, 1.5, dtype=m.int32),
    lambda m: m.linspace(m.tensor([0.0]), 1, 3),
    lambda m: m.linspace(0, 1, 3, dtype=m.bool),
    lambda m: m.logspace(0, 1, 3, dtype=m.bool),
])
def test_range_arguments_like_torch(make):
    same(make)


def test_half_linspace_and_logspace_match_torch_bitwise():
    rng = np.random.default_rng(0)
    for _ in range(40):
        start, end = (float(v) for v in rng.uniform(-500, 500, 2))
        steps = int(rng.integers(1, 40))
        base = float(rng.choice([10.0, 2.0, 0.5, -2.0]))
        for name in ["float16", "bfloat16", "float32", "float64"]:
            f = flow.linspace(start, end, steps, dtype=getattr(flow, name)).double().numpy()
            t = torch.linspace(start, end, steps, dtype=getattr(torch, name)).double().numpy()
            np.testing.assert_array_equal(f, t, err_msg=f"linspace {start} {end} {steps} {name}")
            s, e = start / 200, end / 200
            f = flow.logspace(s, e, steps, base=base, dtype=getattr(flow, name)).double().numpy()
            t = torch.logspace(s, e, steps, base=base, dtype=getattr(torch, name)).double().numpy()
            np.testing.assert_array_equal(f, t, err_msg=f"logspace {s} {e} {steps} {base} {name}")


def test_legacy_constructor_uses_default_dtype():
    prev = flow.get_default_dtype()
    try:
        flow.set_default_dtype(flow.float64)
        assert flow.Tensor([1, 2]).dtype == flow.float64 and flow.Tensor(2, 3).dtype == flow.float64
    finally:
        flow.set_default_dtype(prev)
    x = flow.tensor([1, 2])
    y = flow.Tensor(x)  # a tensor is shared, keeping its dtype
    assert y.dtype == flow.int64 and y.data_ptr() == x.data_ptr()
    same(lambda m: m.Tensor(2.5))


# ---- conversions ----------------------------------------------------------------------------------------------------
def _x(m):
    return m.tensor([1.5, -2.7, 0.0])


@pytest.mark.parametrize("make", [
    lambda m: _x(m).to("cpu", m.float64, True),                  # non_blocking and copy may be positional
    lambda m: _x(m).to(m.float64, False, True),
    lambda m: _x(m).to(m.zeros(1, dtype=m.int8), True),
    lambda m: _x(m).to(m.float64, m.int32),
    lambda m: _x(m).to(m.float64, "cpu"),
    lambda m: _x(m).to(device="cpu", dtype=m.float16, copy=True),
    lambda m: _x(m).to(None),
    lambda m: _x(m).type("torch.IntTensor"),
    lambda m: _x(m).type("IntTensor"),
    lambda m: _x(m).type("torch.int32"),
    lambda m: _x(m).type("torch.FooTensor"),
    lambda m: _x(m).type(m.IntTensor),
    lambda m: _x(m).type(m.float64, non_blocking=True),
    lambda m: _x(m).type(3),
    lambda m: m.zeros(1).type(),
    lambda m: m.LongTensor([1.5, 2]),
    lambda m: m.FloatTensor(2, 3).shape,
    lambda m: m.BoolTensor([1, 0]),
    lambda m: isinstance(m.zeros(1), m.FloatTensor),
    lambda m: isinstance(m.zeros(1), m.LongTensor),
    lambda m: m.can_cast(1.0, m.int32),
    lambda m: m.result_type(tensor=m.tensor([1], dtype=m.int8), other=2.5),
    lambda m: m.ones(1, 2, 3, 4, dtype=m.float64).float(memory_format=m.channels_last).stride(),
    lambda m: m.tensor([float("nan"), float("inf"), -float("inf")]).to(m.int32),
    lambda m: m.tensor([-1.0, 256.0, 300.7]).to(m.uint8),
])
def test_conversion_overloads_like_torch(make):
    same(make)


def test_to_returns_self_unless_copy():
    x = flow.ones(2)
    assert x.to(flow.float32) is x and x.to("cpu", flow.float32, False, False) is x
    assert x.to(flow.float32, copy=True) is not x and x.to(x, False, True) is not x
    assert x.float() is x and x.type("oneflow.FloatTensor") is x and x.type("torch.FloatTensor") is x
    with pytest.raises(TypeError):  # a legacy type shares a tensor only of its own dtype
        flow.IntTensor(flow.tensor([1.5]))
    if not flow.cuda.is_available():
        with pytest.raises(RuntimeError):
            x.type("torch.cuda.FloatTensor")
