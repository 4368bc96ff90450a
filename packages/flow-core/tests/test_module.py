"""nn.Module core: registration, iteration, state_dict round trips, hooks, modes, conversion, repr."""
import copy

import numpy as np
import pytest

import oneflow as flow
from oneflow import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(flow.randn(3, 2))
        self.register_buffer("running", flow.zeros(2))
        self.register_buffer("scratch", flow.zeros(1), persistent=False)
        self.blocks = nn.Sequential(nn.Module(), nn.ModuleList([nn.Module()]))
        self.table = nn.ParameterDict({"a": nn.Parameter(flow.ones(2))})

    def forward(self, x):
        return x @ self.w


def test_registration_and_names():
    m = Net()
    assert [n for n, _ in m.named_parameters()] == ["w", "table.a"]
    assert list(m.state_dict()) == ["w", "running", "table.a"]
    assert [n for n, _ in m.named_modules()] == ["", "blocks", "blocks.0", "blocks.1", "blocks.1.0", "table"]
    assert m.get_submodule("blocks.1.0") is m.blocks[1][0]
    with pytest.raises(TypeError, match="cannot assign"):
        m.w = flow.ones(3, 2)
    m.w = None
    assert "w" not in dict(m.named_parameters())


def test_shared_parameters_listed_once():
    lin = nn.Module()
    lin.p = nn.Parameter(flow.ones(2))
    outer = nn.Sequential(lin, lin)
    assert len(list(outer.parameters())) == 1


def test_state_dict_round_trip_and_strict_errors():
    a, b = Net(), Net()
    res = b.load_state_dict(a.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert np.array_equal(a.w.detach().numpy(), b.w.detach().numpy())
    sd = a.state_dict()
    sd["extra"] = flow.ones(1)
    del sd["running"]
    with pytest.raises(RuntimeError, match='(?s)Missing key\\(s\\) in state_dict: "running".*Unexpected key\\(s\\).*"extra"'):
        b.load_state_dict(sd)
    b.load_state_dict(sd, strict=False)
    sd = a.state_dict()
    sd["w"] = flow.ones(2, 2)
    with pytest.raises(RuntimeError, match="size mismatch for w"):
        b.load_state_dict(sd)


def test_state_dict_tensors_are_detached_views():
    m = Net()
    sd = m.state_dict()
    assert not sd["w"].requires_grad
    sd["w"].add_(1)
    assert np.array_equal(sd["w"].numpy(), m.w.detach().numpy())


def test_hooks():
    m = Net()
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    h2 = m.register_forward_hook(lambda mod, args, out: out + 1)
    x = flow.ones(1, 3)
    y = m(x)
    expected = (2 * np.ones((1, 3))) @ m.w.detach().numpy() + 1
    assert np.allclose(y.detach().numpy(), expected, atol=1e-6)
    h1.remove()
    h2.remove()
    m.register_full_backward_hook(lambda mod, gin, gout: calls.append((tuple(gin[0].shape), tuple(gout[0].shape))))
    x = flow.ones(4, 3, requires_grad=True)
    m(x).sum().backward()
    assert calls == [((4, 3), (4, 2))]


def test_backward_hook_can_replace_grad_input():
    m = Net()
    m.register_full_backward_hook(lambda mod, gin, gout: (gin[0] * 0,))
    x = flow.ones(2, 3, requires_grad=True)
    m(x).sum().backward()
    assert x.grad.abs().sum().item() == 0
    assert m.w.grad is not None


def test_train_eval_zero_grad_requires_grad():
    m = Net()
    m.eval()
    assert not m.training and not m.blocks[0].training
    m.train()
    assert m.blocks[1][0].training
    m(flow.ones(1, 3)).sum().backward()
    assert m.w.grad is not None
    m.zero_grad()
    assert m.w.grad is None
    m.requires_grad_(False)
    assert not m.w.requires_grad


def test_to_dtype_keeps_parameter_identity():
    m = Net()
    w = m.w
    m.to(flow.float64)
    assert m.w is w and w.dtype == flow.float64 and isinstance(w, nn.Parameter) and w.requires_grad
    assert m.running.dtype == flow.float64
    with pytest.raises(TypeError):
        m.to(flow.int64)


def test_deepcopy_and_apply():
    m = Net()
    c = copy.deepcopy(m)
    assert c.w is not m.w and np.array_equal(c.w.detach().numpy(), m.w.detach().numpy())
    seen = []
    m.apply(lambda mod: seen.append(type(mod).__name__))
    assert seen[-1] == "Net"


def test_repr():
    r = repr(Net())
    assert r.startswith("Net(\n  (blocks): Sequential(\n    (0): Module()")


def test_sequential_indexing():
    s = nn.Sequential(nn.Module(), nn.Module(), nn.Module())
    assert len(s[1:]) == 2 and isinstance(s[-1], nn.Module)
    with pytest.raises(IndexError):
        s[3]
