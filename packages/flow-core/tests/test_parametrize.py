"""nn.utils.parametrize and nn.utils.parametrizations against torch: values, gradients, state dict keys,
assignment through right_inverse, chaining, caching, removal, and the errors."""
import copy
import pickle

import numpy as np
import pytest
import torch

import oneflow as flow

FP, TP = flow.nn.utils.parametrize, torch.nn.utils.parametrize


class Symmetric:
    """X -> triu(X) + triu(X, 1)^T, with right_inverse = triu (the torch tutorial's example), for both libs."""

    @staticmethod
    def build(lib):
        class Sym(lib.nn.Module):
            def forward(self, X):
                return X.triu() + X.triu(1).transpose(-1, -2)

            def right_inverse(self, A):
                return A.triu()
        return Sym()


def linear_pair(n_in=4, n_out=4, seed=0):
    w = np.random.default_rng(seed).standard_normal((n_out, n_in)).astype(np.float32)
    b = np.random.default_rng(seed + 1).standard_normal(n_out).astype(np.float32)
    fm, tm = flow.nn.Linear(n_in, n_out), torch.nn.Linear(n_in, n_out)
    with flow.no_grad():
        fm.weight.copy_(flow.tensor(w))
        fm.bias.copy_(flow.tensor(b))
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(w))
        tm.bias.copy_(torch.tensor(b))
    return fm, tm


def test_register_symmetric_values_grads_assignment_and_state_dict():
    fm, tm = linear_pair()
    FP.register_parametrization(fm, "weight", Symmetric.build(flow))
    TP.register_parametrization(tm, "weight", Symmetric.build(torch))
    assert type(fm).__name__ == type(tm).__name__ == "ParametrizedLinear"
    assert FP.type_before_parametrizations(fm) is flow.nn.Linear
    assert FP.is_parametrized(fm) and FP.is_parametrized(fm, "weight") and not FP.is_parametrized(fm, "bias")
    assert sorted(fm.state_dict()) == sorted(tm.state_dict())
    np.testing.assert_allclose(fm.weight.detach().numpy(), tm.weight.detach().numpy())
    assert np.allclose(fm.weight.detach().numpy(), fm.weight.detach().numpy().T)
    x = np.random.default_rng(3).standard_normal((5, 4)).astype(np.float32)
    fm(flow.tensor(x)).square().sum().backward()
    tm(torch.tensor(x)).square().sum().backward()
    np.testing.assert_allclose(fm.parametrizations.weight.original.grad.numpy(),
                               tm.parametrizations.weight.original.grad.numpy(), rtol=1e-5, atol=1e-5)
    # assigning stores right_inverse(value) in the same original tensor
    orig = fm.parametrizations.weight.original
    a = np.random.default_rng(4).standard_normal((4, 4)).astype(np.float32)
    fm.weight = flow.tensor(a + a.T)
    assert fm.parametrizations.weight.original is orig
    np.testing.assert_allclose(fm.weight.detach().numpy(), a + a.T, rtol=1e-6)
    # deepcopy gives an independent parametrized module (AveragedModel relies on it)
    twin = copy.deepcopy(fm)
    assert type(twin) is type(fm) and twin.parametrizations.weight.original is not orig
    np.testing.assert_array_equal(twin.weight.detach().numpy(), fm.weight.detach().numpy())
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(fm)
    # removal: the module gets its class and a plain parameter back
    FP.remove_parametrizations(fm, "weight")
    assert type(fm) is flow.nn.Linear and isinstance(fm.weight, flow.nn.Parameter)
    assert sorted(fm.state_dict()) == ["bias", "weight"]
    np.testing.assert_allclose(fm.weight.detach().numpy(), a + a.T, rtol=1e-6)


def test_chaining_caching_buffers_and_leave_unparametrized():
    class Double(flow.nn.Module):
        def forward(self, x):
            return 2 * x

        def right_inverse(self, x):
            return x / 2

    class Counting(flow.nn.Module):
        calls = 0

        def forward(self, x):
            Counting.calls += 1
            return x + 1

    m = flow.nn.Linear(3, 3)
    w0 = m.weight.detach().numpy().copy()
    FP.register_parametrization(m, "weight", Double())
    FP.register_parametrization(m, "weight", Counting())  # chained after Double
    np.testing.assert_allclose(m.weight.detach().numpy(), w0 + 1, rtol=1e-6)  # Double stored w0 / 2
    Counting.calls = 0
    with FP.cached():
        a, b = m.weight, m.weight
    assert Counting.calls == 1 and a is b
    m.weight  # noqa: B018  (outside the context: computed again)
    assert Counting.calls == 2
    FP.remove_parametrizations(m, "weight", leave_parametrized=False)
    np.testing.assert_allclose(m.weight.detach().numpy(), w0 / 2, rtol=1e-6)  # the stored original
    # a buffer can be parametrized too, and stays a buffer
    bn = flow.nn.BatchNorm1d(3)
    FP.register_parametrization(bn, "running_var", Double())
    assert "parametrizations.running_var.original" in bn.state_dict()
    np.testing.assert_allclose(bn.running_var.numpy(), np.full(3, 1.0, np.float32))


def test_errors_match_torch():
    class Shrink(flow.nn.Module):
        def forward(self, x):
            return x[:-1]

    class ToDouble(flow.nn.Module):
        def forward(self, x):
            return x.double()

    m = flow.nn.Linear(3, 4)
    with pytest.raises(ValueError, match="may not change the shape of the tensor"):
        FP.register_parametrization(m, "weight", Shrink())
    with pytest.raises(ValueError, match="may not change the dtype of the tensor"):
        FP.register_parametrization(m, "weight", ToDouble())
    FP.register_parametrization(m, "weight", Shrink(), unsafe=True)
    assert tuple(m.weight.shape) == (3, 3)
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        m.weight = flow.zeros(3, 3)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element"):
        FP.register_parametrization(m, "nothing", Shrink())
    with pytest.raises(ValueError, match="does not have a parametrization on bias"):
        FP.remove_parametrizations(m, "bias")


def test_weight_norm_matches_torch_and_loads_old_state_dicts():
    fm, tm = linear_pair(5, 3)
    flow.nn.utils.parametrizations.weight_norm(fm)
    torch.nn.utils.parametrizations.weight_norm(tm)
    assert sorted(fm.state_dict()) == sorted(tm.state_dict())
    x = np.random.default_rng(5).standard_normal((6, 5)).astype(np.float32)
    fo, to = fm(flow.tensor(x)), tm(torch.tensor(x))
    np.testing.assert_allclose(fo.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-6)
    fo.square().sum().backward()
    to.square().sum().backward()
    for k in ("original0", "original1"):
        np.testing.assert_allclose(getattr(fm.parametrizations.weight, k).grad.numpy(),
                                   getattr(tm.parametrizations.weight, k).grad.numpy(), rtol=1e-4, atol=1e-5)
    # a state dict of the old hook-based weight_norm (weight_g, weight_v) loads into the parametrization
    with pytest.warns(FutureWarning):
        old = flow.nn.utils.weight_norm(flow.nn.Linear(5, 3))
    fresh = flow.nn.utils.parametrizations.weight_norm(flow.nn.Linear(5, 3))
    fresh.load_state_dict(old.state_dict())
    np.testing.assert_allclose(fresh.weight.detach().numpy(), old.weight.detach().numpy(), rtol=1e-6)


@pytest.mark.parametrize("kind", ["linear", "convT"])
def test_spectral_norm_matches_torch_over_training_steps(kind):
    if kind == "linear":
        fm, tm = linear_pair(6, 4)
        x = np.random.default_rng(6).standard_normal((3, 6)).astype(np.float32)
    else:
        fm, tm = flow.nn.ConvTranspose2d(3, 2, 3), torch.nn.ConvTranspose2d(3, 2, 3)
        with torch.no_grad():
            for f, t in zip(fm.parameters(), tm.parameters()):
                t.copy_(torch.tensor(f.detach().numpy()))
        x = np.random.default_rng(6).standard_normal((1, 3, 4, 4)).astype(np.float32)
    flow.nn.utils.parametrizations.spectral_norm(fm)
    torch.nn.utils.parametrizations.spectral_norm(tm)
    assert sorted(fm.state_dict()) == sorted(tm.state_dict())
    fsn, tsn = fm.parametrizations.weight[0], tm.parametrizations.weight[0]
    assert fsn.dim == tsn.dim
    with flow.no_grad():  # start both power iterations from torch's vectors
        fsn._u.copy_(flow.tensor(tsn._u.numpy()))
        fsn._v.copy_(flow.tensor(tsn._v.numpy()))
    fo_, to_ = flow.optim.SGD(fm.parameters(), lr=0.1), torch.optim.SGD(tm.parameters(), lr=0.1)
    for _ in range(3):
        fo, to = fm(flow.tensor(x)), tm(torch.tensor(x))
        np.testing.assert_allclose(fo.detach().numpy(), to.detach().numpy(), rtol=1e-4, atol=1e-5)
        fo_.zero_grad()
        to_.zero_grad()
        fo.square().sum().backward()
        to.square().sum().backward()
        fo_.step()
        to_.step()
    np.testing.assert_allclose(fsn._u.numpy(), tsn._u.numpy(), rtol=1e-4, atol=1e-5)
    fm.eval()
    u = fsn._u.numpy().copy()
    fm(flow.tensor(x))
    np.testing.assert_array_equal(fsn._u.numpy(), u)  # eval: no power iteration
