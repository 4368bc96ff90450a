"""nn.utils.weight_norm / spectral_norm (the forward pre-hook forms) against PyTorch: parameters and
buffers they create, forward values, gradients through the reparametrization, power iteration across
train/eval, removal, and errors."""
import warnings

import numpy as np
import pytest
import torch

import oneflow as flow
from helpers import to_np

rng = np.random.default_rng(11)


def twin(make_f, make_t):
    f, t = make_f(), make_t()
    f.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return f, t


def close(a, b, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(to_np(a), b.detach().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("dim", [0, 1, -1, None])
def test_weight_norm_matches_torch(dim):
    f, t = twin(lambda: flow.nn.Conv2d(3, 4, 3), lambda: torch.nn.Conv2d(3, 4, 3))
    with pytest.warns(FutureWarning, match="deprecated"):
        flow.nn.utils.weight_norm(f, dim=dim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.nn.utils.weight_norm(t, dim=dim)
    assert sorted(n for n, _ in f.named_parameters()) == sorted(n for n, _ in t.named_parameters())
    close(f.weight_g, t.weight_g)
    close(f.weight, t.weight)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    fy, ty = f(flow.tensor(x)), t(torch.tensor(x))
    close(fy, ty, 1e-4, 1e-5)
    fy.square().sum().backward()
    ty.square().sum().backward()
    close(f.weight_g.grad, t.weight_g.grad, 1e-4, 1e-4)
    close(f.weight_v.grad, t.weight_v.grad, 1e-4, 1e-4)
    # removal folds g and v back into one parameter with the same value
    flow.nn.utils.remove_weight_norm(f)
    torch.nn.utils.remove_weight_norm(t)
    assert sorted(n for n, _ in f.named_parameters()) == ["bias", "weight"]
    close(f.weight, t.weight, 1e-5, 1e-6)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        flow.nn.utils.remove_weight_norm(f)


def test_weight_norm_errors():
    m = flow.nn.Linear(3, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flow.nn.utils.weight_norm(m)
        with pytest.raises(RuntimeError, match="Cannot register two weight_norm hooks on the same parameter weight"):
            flow.nn.utils.weight_norm(m)


@pytest.mark.parametrize("make", ["linear", "conv", "convT"])
def test_spectral_norm_matches_torch(make):
    mk = {"linear": lambda L: L.nn.Linear(5, 4), "conv": lambda L: L.nn.Conv2d(2, 3, 3),
          "convT": lambda L: L.nn.ConvTranspose2d(3, 2, 3)}[make]
    f, t = twin(lambda: mk(flow), lambda: mk(torch))
    flow.nn.utils.spectral_norm(f, n_power_iterations=2)
    torch.nn.utils.spectral_norm(t, n_power_iterations=2)
    assert sorted(f.state_dict()) == sorted(t.state_dict())
    assert f.weight_u.shape == t.weight_u.shape and f.weight_v.shape == t.weight_v.shape  # dim 1 for convT
    # the random start vectors differ between frameworks: start both from torch's
    f.weight_u.copy_(flow.tensor(t.weight_u.numpy()))
    f.weight_v.copy_(flow.tensor(t.weight_v.numpy()))
    shape = {"linear": (3, 5), "conv": (2, 2, 5, 5), "convT": (2, 3, 4, 4)}[make]
    for step in range(3):
        x = rng.standard_normal(shape).astype(np.float32)
        fy, ty = f(flow.tensor(x)), t(torch.tensor(x))
        close(fy, ty, 1e-4, 1e-5)
        close(f.weight_u, t.weight_u, 1e-4, 1e-5)
        fy.sum().backward()
        ty.sum().backward()
        close(f.weight_orig.grad, t.weight_orig.grad, 1e-3, 1e-4)
    # eval mode: no power iteration, u and v stay put
    f.eval(), t.eval()
    u0 = to_np(f.weight_u).copy()
    x = rng.standard_normal(shape).astype(np.float32)
    close(f(flow.tensor(x)), t(torch.tensor(x)), 1e-4, 1e-5)
    np.testing.assert_array_equal(to_np(f.weight_u), u0)
    flow.nn.utils.remove_spectral_norm(f)
    torch.nn.utils.remove_spectral_norm(t)
    assert sorted(f.state_dict()) == sorted(t.state_dict())
    close(f.weight, t.weight, 1e-4, 1e-5)


def test_spectral_norm_bounds_the_singular_value_and_errors():
    flow.manual_seed(0)  # power iteration's speed depends on the gap between the top singular values
    m = flow.nn.utils.spectral_norm(flow.nn.Linear(8, 6), n_power_iterations=1)
    for _ in range(100):  # power iteration converges across training forwards
        m(flow.ones(1, 8))
    s = np.linalg.svd(to_np(m.weight), compute_uv=False)
    assert abs(s[0] - 1) < 1e-3
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        flow.nn.utils.spectral_norm(m)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        flow.nn.utils.spectral_norm(flow.nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="spectral_norm of 'bias' not found"):
        flow.nn.utils.remove_spectral_norm(m, "bias")
