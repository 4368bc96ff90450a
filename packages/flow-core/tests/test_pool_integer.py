"""Pooling on integer tensors, as PyTorch's CPU kernels allow it: max pools over 2-D and 3-D windows for every
integer type, average pools for int64 (the window sum divided with truncation toward zero), and
NotImplementedError naming torch's kernel for the rest."""
import numpy as np
import pytest

import oneflow as flow

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
INT_DTYPES = ["int64", "int32", "int16", "int8", "uint8"]


def ints(dtype, shape=(2, 3, 7, 6)):
    lo = 0 if dtype == "uint8" else -100
    return RNG.integers(lo, 100, shape).astype(dtype)


def check_same(fn_name, x, *args, rtol=0, **kw):
    got = getattr(flow.nn.functional, fn_name)(flow.tensor(x), *args, **kw)
    want = getattr(torch.nn.functional, fn_name)(torch.tensor(x), *args, **kw)
    got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=rtol, atol=0)


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                dict(kernel_size=(2, 3), dilation=2), dict(kernel_size=2, return_indices=True)])
def test_max_pool2d_integer_matches_torch(dtype, kw):
    check_same("max_pool2d", ints(dtype), **kw)


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_max_pool3d_integer_matches_torch(dtype):
    check_same("max_pool3d", ints(dtype), 2, 1, 1, return_indices=True)


def test_max_pool_integer_padding_never_wins():
    # an all-negative int8 window with padding: the padded positions must not be taken as 0 or as the minimum
    x = np.array([[[[-5, -6], [-7, -8]]]], dtype="int8")
    y, idx = flow.nn.functional.max_pool2d(flow.tensor(x), 2, stride=1, padding=1, return_indices=True)
    np.testing.assert_array_equal(y.numpy()[0, 0], [[-5, -5, -6], [-5, -5, -6], [-7, -7, -8]])
    np.testing.assert_array_equal(idx.numpy()[0, 0], [[0, 0, 1], [0, 0, 1], [2, 2, 3]])
    assert not y.requires_grad


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
                                dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)])
@pytest.mark.parametrize("fn_name,take", [("avg_pool1d", lambda x: x[0]), ("avg_pool2d", lambda x: x),
                                          ("avg_pool3d", lambda x: x)])
def test_avg_pool_int64_truncates_like_torch(kw, fn_name, take):
    check_same(fn_name, take(ints("int64")), **kw)


@pytest.mark.parametrize("divisor", [3, -3])
def test_avg_pool_int64_divisor_override(divisor):
    check_same("avg_pool2d", ints("int64"), 2, divisor_override=divisor)


def test_avg_pool_int64_wraps_and_never_traps():
    big = 2 ** 62
    x = flow.tensor(np.array([[[[big, big], [big, big]]]], dtype="int64"))
    assert flow.nn.functional.avg_pool2d(x, 2).item() == 0  # the sum wraps to 0, as torch's does
    # INT64_MIN / -1 overflows; torch's kernel dies with SIGFPE here, ours wraps
    x = flow.tensor(np.array([[[[-2 ** 63, 0], [0, 0]]]], dtype="int64"))
    assert flow.nn.functional.avg_pool2d(x, 2, divisor_override=-1).item() == -2 ** 63


def test_lp_pool_of_int64_is_float_like_torch():
    check_same("lp_pool2d", ints("int64"), 2, 2, rtol=1e-6)  # the final pow(1/p) is float


@pytest.mark.parametrize("call,kernel", [
    (lambda F, x: F.max_pool1d(x[0], 2), "max_pool1d_impl"),
    (lambda F, x: F.avg_pool2d(x.int(), 2), "avg_pool2d"),
    (lambda F, x: F.avg_pool3d(x.int(), 2), "avg_pool3d_out_frame"),
    (lambda F, x: F.adaptive_avg_pool2d(x, 2), "adaptive_avg_pool2d"),
    (lambda F, x: F.adaptive_max_pool1d(x[0], 2), "adaptive_max_pool2d"),
    (lambda F, x: F.max_pool2d(x.bool(), 2), "max_pool2d"),
])
def test_integer_pools_torch_lacks_raise_not_implemented(call, kernel):
    x = ints("int64", (1, 2, 4, 4))
    for M in (flow, torch):
        with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for'):
            call(M.nn.functional, M.tensor(x))
