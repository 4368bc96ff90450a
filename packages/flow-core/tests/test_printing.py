"""repr(tensor) against PyTorch's, character for character (with 'torch' -> 'oneflow')."""
import math

import numpy as np
import pytest

import oneflow as flow
from helpers import torch


@pytest.fixture(autouse=True)
def default_printoptions():
    flow.set_printoptions(profile="default", sci_mode=None)
    torch.set_printoptions(profile="default", sci_mode=None)
    yield
    flow.set_printoptions(profile="default", sci_mode=None)
    torch.set_printoptions(profile="default", sci_mode=None)


def expected(t):
    return repr(t).replace("torch", "oneflow")


def check(arr, dtype=None):
    """Same data in both libraries (dtype: a name like 'bfloat16' applied to both); compare reprs."""
    arr = np.asarray(arr)
    f, t = flow.tensor(arr), torch.tensor(arr)
    if dtype is not None:
        f, t = f.to(getattr(flow, dtype)), t.to(getattr(torch, dtype))
    assert repr(f) == expected(t), f"\n{repr(f)}\n!=\n{expected(t)}"
    assert str(f) == repr(f)


rng = np.random.default_rng(0)


@pytest.mark.parametrize("arr", [
    rng.standard_normal(5).astype(np.float32),
    rng.standard_normal((3, 4)).astype(np.float32),
    rng.standard_normal((2, 3, 4)).astype(np.float32),
    rng.standard_normal((2, 2, 2, 3)).astype(np.float32),
    np.array([1.0, 2.0, 3.0], np.float32),                  # integer-valued floats: "1., 2., 3."
    np.array([1.0, -2.0, 300.0], np.float32),
    np.array([1.0, 2e5], np.float32),                       # int mode, ratio > 1000 -> scientific
    np.array([1e9, 1.0], np.float32),
    np.array([1.5, 1e9], np.float32),                       # max > 1e8 -> scientific
    np.array([1e-5, 0.5], np.float32),                      # min < 1e-4 -> scientific
    np.array([0.001, 0.5, 2.0], np.float32),
    np.array([0.0, 0.0], np.float32),
    np.array([-0.0, 1.5], np.float32),
    np.array([np.inf, -np.inf, np.nan, 1.5], np.float32),
    np.array([np.inf, 2.0], np.float32),
    np.array([np.nan], np.float32),
    np.array([123456.789, 0.25], np.float64),
    rng.standard_normal(7) * 1e-7,
    np.array(3.0, np.float32),
    np.array(3.5, np.float32),
    np.array(-1e-10, np.float32),
    np.array(np.nan, np.float32),
    np.array(2.0),
    np.arange(30, dtype=np.float32) / 7,                     # wraps at linewidth 80
    np.arange(100, dtype=np.float32).reshape(4, 25),
])
def test_float_formats_match_torch(arr):
    check(arr)


@pytest.mark.parametrize("arr", [
    np.array([1, -20, 300], np.int64),
    np.array([[1, 2], [3, 4]], np.int32),
    np.array([0, 255, 7], np.uint8),
    np.array([-128, 5], np.int8),
    np.array([1, 2], np.int16),
    np.array([True, False, True]),
    np.array(7, np.int64),
    np.array(7, np.int32),
    np.array(True),
    np.arange(60, dtype=np.int64),
    np.arange(-30, 30, dtype=np.int64).reshape(3, 20),
])
def test_integer_and_bool_formats_match_torch(arr):
    check(arr)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float64"])
def test_low_and_high_precision_dtypes(dtype):
    check(np.array([0.1, 1.5, -3.25, 1000.0], np.float32), dtype)
    check(np.array(2.5, np.float32), dtype)


@pytest.mark.parametrize("shape", [(2000,), (1001,), (50, 50), (10, 10, 20), (3, 400), (400, 3), (2, 3, 200)])
def test_summarised_large_tensors(shape):
    check(rng.standard_normal(shape).astype(np.float32))
    check(np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape))


def test_summarised_values_decide_format():
    a = np.ones(5000, np.float32)
    a[2500] = 1e-9  # not among the printed edge items: fixed notation, as in PyTorch
    check(a)


@pytest.mark.parametrize("shape,dtype", [((0,), None), ((0, 3), None), ((2, 0, 1), "int32"), ((0,), "int64"),
                                         ((0,), "bool"), ((3, 0), "float64")])
def test_empty_tensors(shape, dtype):
    arr = np.zeros(shape, np.float32)
    check(arr, dtype)


def test_non_contiguous():
    a = rng.standard_normal((4, 5)).astype(np.float32)
    f, t = flow.tensor(a), torch.tensor(a)
    assert repr(f.t()) == expected(t.t())
    assert repr(flow.slice(f, 1, 0, 5, 2)) == expected(t[:, ::2])


def test_requires_grad_and_grad_fn_suffixes():
    a = rng.standard_normal(3).astype(np.float32)
    f, t = flow.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    assert repr(f) == expected(t)
    assert repr(f * 2) == expected(t * 2)  # node names carry torch's overload number
    assert repr(flow.tensor(2.5, requires_grad=True)) == "tensor(2.5000, requires_grad=True)"
    # (no case where the suffix sits at the line limit: "dtype=oneflow." is 2 characters longer than "dtype=torch.")
    g = flow.tensor(np.arange(8, dtype=np.float64), requires_grad=True)
    assert repr(g) == expected(torch.tensor(np.arange(8, dtype=np.float64), requires_grad=True))


def test_suffix_wraps_to_new_line():
    a = np.array([[1.25, 2.5, 3.75, 4.125, 5.5, 6.25, 7.5, 8.25, 9.5, 10.25]], np.float64)
    f, t = flow.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    assert repr(f) == expected(t)
    assert "\n" in repr(f)


@pytest.mark.parametrize("opts", [
    dict(precision=2), dict(precision=8), dict(sci_mode=True), dict(sci_mode=False), dict(threshold=5),
    dict(threshold=5, edgeitems=1), dict(linewidth=40), dict(profile="short"), dict(profile="full"),
    dict(edgeitems=0, threshold=5),
])
def test_set_printoptions(opts):
    flow.set_printoptions(**opts)
    torch.set_printoptions(**opts)
    for arr in [rng.standard_normal((4, 6)).astype(np.float32), np.array([1e-6, 1.0, 5e5]),
                np.arange(2000, dtype=np.float32), np.arange(12, dtype=np.int64).reshape(3, 4),
                np.array([1.0, 2.0, 3.0], np.float32), np.array(0.123456789)]:
        check(arr)


def test_default_dtype_suffix_follows_default_dtype():
    prev = flow.get_default_dtype()
    prev_t = torch.get_default_dtype()
    try:
        flow.set_default_dtype(flow.float64)
        torch.set_default_dtype(torch.float64)
        check(np.array([1.5, 2.5], np.float64))
        check(np.array([1.5, 2.5], np.float32))
        check(np.zeros(0, np.float32))
    finally:
        flow.set_default_dtype(prev)
        torch.set_default_dtype(prev_t)


def test_creation_results_print_like_torch():
    assert repr(flow.arange(5)) == expected(torch.arange(5))
    assert repr(flow.linspace(0, 1, 7)) == expected(torch.linspace(0, 1, 7))
    assert repr(flow.eye(3, dtype=flow.int32)) == expected(torch.eye(3, dtype=torch.int32))
    assert repr(flow.zeros(2, 3, dtype=flow.bool)) == expected(torch.zeros(2, 3, dtype=torch.bool))
    assert repr(flow.full((2,), math.pi, dtype=flow.float64)) == expected(torch.full((2,), math.pi,
                                                                                     dtype=torch.float64))
