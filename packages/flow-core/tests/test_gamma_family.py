"""lgamma, digamma, polygamma, mvlgamma and their oneflow.special names against torch: values over the
whole real line (poles, signed zeros, negative non-integers, large arguments), gradients, dtypes, errors."""
import numpy as np
import pytest
import torch

import oneflow as flow
from helpers import check_vs_torch

GRID = np.array([-7.3, -2.5, -1.0, -0.5, -0.0, 0.0, 1e-8, 0.3, 0.5, 1.0, 1.5, 2.0, 3.7, 9.99, 10.0, 10.01, 42.0,
                 1e5, 1e18, np.inf, np.nan])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("fn", ["lgamma", "digamma"])
def test_values_match_torch(fn, dtype):
    got = getattr(flow, fn)(flow.tensor(GRID.astype(dtype))).numpy()
    want = getattr(torch, fn)(torch.tensor(GRID.astype(dtype))).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12 if dtype == "float64" else 2e-6, atol=1e-12)
    assert (np.signbit(got) == np.signbit(want))[np.isinf(want)].all()  # digamma(+-0) = -+inf


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5])
def test_polygamma_matches_torch(n):
    x = np.concatenate([GRID[GRID > 0], [-2.5, -0.5]])
    got = flow.polygamma(n, flow.tensor(x)).numpy()
    want = torch.polygamma(n, torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-300)
    np.testing.assert_allclose(flow.tensor(x).polygamma(n).numpy(), want, rtol=1e-10, atol=1e-300)


def test_gradients_and_special_aliases():
    x = np.array([0.4, 1.3, 2.5, 6.0, 11.0])
    check_vs_torch(lambda t: flow.lgamma(t), lambda t: torch.lgamma(t), [x], rtol=1e-10, atol=1e-12)
    check_vs_torch(lambda t: flow.digamma(t), lambda t: torch.digamma(t), [x], rtol=1e-10, atol=1e-12)
    check_vs_torch(lambda t: flow.polygamma(2, t), lambda t: torch.polygamma(2, t), [x], rtol=1e-9, atol=1e-12)
    check_vs_torch(lambda t: flow.mvlgamma(t, 3), lambda t: torch.mvlgamma(t, 3), [x + 1], rtol=1e-10,
                   atol=1e-12)
    t = flow.tensor(x)
    for name, ref in (("gammaln", torch.special.gammaln), ("digamma", torch.special.digamma),
                      ("psi", torch.special.psi)):
        np.testing.assert_allclose(getattr(flow.special, name)(t).numpy(), ref(torch.tensor(x)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(flow.special.multigammaln(t + 1, 2).numpy(),
                               torch.special.multigammaln(torch.tensor(x) + 1, 2).numpy(), rtol=1e-12)
    np.testing.assert_allclose(flow.special.polygamma(1, t).numpy(), torch.special.polygamma(1, torch.tensor(x)).numpy(),
                               rtol=1e-12)
    # integers compute in the default float dtype; in place works
    assert flow.lgamma(flow.tensor([1, 2, 3])).dtype == flow.float32
    y = flow.tensor([1.0, 2.0, 3.0])
    y.lgamma_()
    np.testing.assert_allclose(y.numpy(), [0.0, 0.0, np.log(2.0)], atol=1e-7)


def test_errors():
    with pytest.raises(RuntimeError, match="polygamma\\(n, x\\) does not support negative n"):
        flow.polygamma(-1, flow.ones(2))
    x = np.array([0.4, 3.0])  # below (p-1)/2 too: the sum as it is, as torch returns it
    np.testing.assert_allclose(flow.mvlgamma(flow.tensor(x), 2).numpy(), torch.mvlgamma(torch.tensor(x), 2).numpy(),
                               rtol=1e-12)
