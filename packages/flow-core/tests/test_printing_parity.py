"""repr(tensor) against PyTorch's for the cases test_printing.py leaves out: suffixes at the line limit (placed
by PyTorch's lengths, so that only ``torch.`` -> ``oneflow.`` differs), extreme magnitude ratios and a randomized
sweep over values, dtypes and print options."""
import warnings

import numpy as np
import pytest

import oneflow as flow
from helpers import torch


@pytest.fixture(autouse=True)
def default_printoptions():
    for m in (flow, torch):
        m.set_printoptions(profile="default", sci_mode=None)
    yield
    for m in (flow, torch):
        m.set_printoptions(profile="default", sci_mode=None)


def check(arr, dtype=None, requires_grad=False):
    f, t = flow.tensor(arr), torch.tensor(arr)
    if dtype is not None:
        f, t = f.to(getattr(flow, dtype)), t.to(getattr(torch, dtype))
    if requires_grad:
        f.requires_grad_(), t.requires_grad_()
    expected = repr(t).replace("torch.", "oneflow.")
    assert repr(f) == expected, f"\n{repr(f)}\n!=\n{expected}"
    assert str(f) == expected


@pytest.mark.parametrize("arr,dtype", [
    # "dtype=torch.float16" fits on the last line, so "dtype=oneflow.float16" stays there too
    ([78.3, -40.5, -91.5, -22.6, 1.2], "float16"),
    ([-83.83, -84.05, 76.0, 20.34, 165.87], "float16"),
    ([-np.inf, 1e-05, 0.1, 0.1], "bfloat16"),
    (np.arange(3000.0).reshape(30, 100), "float64"),
    (np.arange(12.0) * 1.25, "float64"),
])
def test_dtype_suffix_wraps_where_torch_wraps(arr, dtype):
    check(np.asarray(arr), dtype)


@pytest.mark.parametrize("opts", [dict(precision=0), dict(sci_mode=False), dict(linewidth=60), dict(linewidth=70)])
def test_dtype_suffix_wrapping_with_print_options(opts):
    for m in (flow, torch):
        m.set_printoptions(**opts)
    check(np.arange(3000.0).reshape(30, 100), "float64")
    check(np.linspace(-3, 3, 13), "float64", requires_grad=True)
    check(np.array([1.5, -2.25, 3.125, 100.5]), "float16")


def test_extreme_ratio_is_scientific_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(np.array([1e308, 5e-324]), "float64")
        check(np.array([65504.0, 6e-8]), "float16")


def _random_arrays(rng):
    specials = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-5, 1e8, 1e9, 0.1, 1.0, -1.0, 100.0, 1e-10, 65504.0]
    for i in range(120):
        n = int(rng.integers(1, 7))
        kind = i % 5
        if kind == 0:
            a = rng.standard_normal(n) * 10.0 ** int(rng.integers(-9, 9))
        elif kind == 1:
            a = rng.choice(specials, n)
        elif kind == 2:
            a = rng.integers(-1000, 1000, n).astype(float) * 10.0 ** int(rng.integers(-3, 9))
        elif kind == 3:
            a = np.round(rng.standard_normal((n, 2)), int(rng.integers(0, 4)))
        else:
            a = rng.integers(-5, 5, n).astype(float)
        yield a


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_random_values_print_like_torch(dtype):
    for a in _random_arrays(np.random.default_rng(["float32", "float64", "float16", "bfloat16"].index(dtype))):
        check(a, dtype)
