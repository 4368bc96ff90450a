"""nn.init: fan rules against torch's, distribution statistics against torch's formulas, determinism with
generators, and nn.utils (clip_grad_norm_/clip_grad_value_/parameters_to_vector) against torch."""
import math

import numpy as np
import pytest
import torch

import oneflow as flow
from helpers import assert_close, to_np

init = flow.nn.init

SHAPES = [(30, 20), (16, 8, 3), (8, 4, 3, 5), (4, 6, 2, 3, 2), (1, 7)]


@pytest.mark.parametrize("shape", SHAPES)
def test_fans_match_torch(shape):
    assert init._calculate_fan_in_and_fan_out(flow.empty(*shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    for mode in ("fan_in", "fan_out"):
        assert init._calculate_correct_fan(flow.empty(*shape), mode) == \
            torch.nn.init._calculate_correct_fan(torch.empty(*shape), mode)


def test_fan_errors():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(flow.empty(5))
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(flow.empty(3, 4), mode="fan_avg")
    with pytest.raises(ValueError, match="Unsupported nonlinearity softmax"):
        init.calculate_gain("softmax")


@pytest.mark.parametrize("nl,param", [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None),
                                      ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None),
                                      ("leaky_relu", 3)])
def test_calculate_gain(nl, param):
    assert init.calculate_gain(nl, param) == torch.nn.init.calculate_gain(nl, param)


def _big(shape=(400, 300)):
    return flow.empty(*shape)


def test_uniform_normal_constant():
    t = init.uniform_(_big(), -2.0, 3.0)
    a = to_np(t)
    assert a.min() >= -2 and a.max() <= 3 and abs(a.mean() - 0.5) < 0.03 and abs(a.std() - 5 / math.sqrt(12)) < 0.03
    a = to_np(init.normal_(_big(), 1.5, 0.5))
    assert abs(a.mean() - 1.5) < 0.01 and abs(a.std() - 0.5) < 0.01
    assert (to_np(init.constant_(_big((3, 4)), 2.5)) == 2.5).all()
    assert (to_np(init.ones_(_big((3, 4)))) == 1).all()
    assert (to_np(init.zeros_(_big((3, 4)))) == 0).all()


@pytest.mark.parametrize("shape", [(400, 300), (64, 32, 3, 3)])
@pytest.mark.parametrize("gain", [1.0, 2.0])
def test_xavier(shape, gain):
    fan_in, fan_out = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    std = gain * math.sqrt(2.0 / (fan_in + fan_out))
    a = to_np(init.xavier_uniform_(flow.empty(*shape), gain=gain))
    bound = math.sqrt(3) * std
    assert a.min() >= -bound and a.max() <= bound and abs(a.std() - std) < 0.03 * std
    a = to_np(init.xavier_normal_(flow.empty(*shape), gain=gain))
    assert abs(a.std() - std) < 0.03 * std and abs(a.mean()) < 0.03 * std


@pytest.mark.parametrize("shape", [(400, 300), (64, 32, 3, 3)])
@pytest.mark.parametrize("a,mode,nl", [(0, "fan_in", "leaky_relu"), (math.sqrt(5), "fan_in", "leaky_relu"),
                                       (0, "fan_out", "relu"), (0.1, "fan_out", "leaky_relu"),
                                       (0, "fan_in", "tanh")])
def test_kaiming(shape, a, mode, nl):
    fan = torch.nn.init._calculate_correct_fan(torch.empty(*shape), mode)
    std = torch.nn.init.calculate_gain(nl, a) / math.sqrt(fan)
    u = to_np(init.kaiming_uniform_(flow.empty(*shape), a=a, mode=mode, nonlinearity=nl))
    bound = math.sqrt(3) * std
    assert u.min() >= -bound and u.max() <= bound and u.max() > 0.95 * bound
    assert abs(u.std() - std) < 0.03 * std
    n = to_np(init.kaiming_normal_(flow.empty(*shape), a=a, mode=mode, nonlinearity=nl))
    assert abs(n.std() - std) < 0.03 * std and abs(n.mean()) < 0.03 * std


def test_kaiming_zero_element_warns():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(flow.empty(0, 3))


def test_trunc_normal():
    a = to_np(init.trunc_normal_(flow.empty(200000), mean=0.5, std=2.0, a=-1.0, b=3.0))
    assert a.min() >= -1 and a.max() <= 3
    ref = torch.nn.init.trunc_normal_(torch.empty(200000, dtype=torch.float64), mean=0.5, std=2.0, a=-1.0, b=3.0)
    assert abs(a.mean() - ref.mean().item()) < 0.02 and abs(a.std() - ref.std().item()) < 0.02
    b = to_np(init.trunc_normal_(flow.empty(100000)))
    assert b.min() >= -2 and b.max() <= 2 and abs(b.std() - 0.8796) < 0.01  # std of N(0,1) cut at +-2


def test_eye_dirac():
    assert_close(init.eye_(flow.empty(3, 5)), np.eye(3, 5, dtype=np.float32))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(flow.empty(3, 4, 5))
    for shape, groups in [((4, 2, 3), 1), ((6, 3, 3, 3), 2), ((4, 4, 3, 3, 3), 1), ((2, 5, 3, 3), 1)]:
        ref = torch.nn.init.dirac_(torch.empty(*shape), groups=groups)
        assert_close(init.dirac_(flow.empty(*shape), groups=groups), ref)
    # a dirac kernel makes a convolution the identity
    w = init.dirac_(flow.empty(3, 3, 3, 3))
    x = flow.randn(1, 3, 5, 5)
    assert_close(flow.nn.functional.conv2d(x, w, padding=1), x, atol=1e-6)
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions are supported"):
        init.dirac_(flow.empty(3, 3))


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 2, 3), (10, 10)])
def test_orthogonal(shape):
    t = init.orthogonal_(flow.empty(*shape), gain=2.0)
    m = to_np(t).reshape(shape[0], -1).astype(np.float64) / 2.0
    rows, cols = m.shape
    if rows <= cols:
        np.testing.assert_allclose(m @ m.T, np.eye(rows), atol=1e-5)
    else:
        np.testing.assert_allclose(m.T @ m, np.eye(cols), atol=1e-5)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(flow.empty(3))


def test_sparse():
    t = to_np(init.sparse_(flow.empty(10, 6), sparsity=0.3, std=0.5))
    assert ((t == 0).sum(axis=0) >= 3).all()


def test_generator_determinism_and_no_grad():
    g1 = flow.Generator().manual_seed(7)
    g2 = flow.Generator().manual_seed(7)
    for fn in (init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_normal_, init.trunc_normal_,
               init.orthogonal_):
        a = fn(flow.empty(5, 4), generator=g1)
        b = fn(flow.empty(5, 4), generator=g2)
        assert_close(a, b)
    p = flow.nn.Parameter(flow.empty(3, 4))
    r = init.kaiming_uniform_(p)
    assert r is p and p.requires_grad and p.grad_fn is None and p.is_leaf
    init.zeros_(p)
    assert p.is_leaf


# ---- nn.utils ---------------------------------------------------------------------------------------------
def _params(rng, shapes, with_grad=True):
    fps, tps = [], []
    for s in shapes:
        a = rng.standard_normal(s)
        fp, tp = flow.nn.Parameter(flow.tensor(a)), torch.nn.Parameter(torch.tensor(a))
        if with_grad:
            g = rng.standard_normal(s) * 3
            fp.grad, tp.grad = flow.tensor(g), torch.tensor(g)
        fps.append(fp)
        tps.append(tp)
    return fps, tps


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, float("inf")])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm(norm_type, max_norm):
    rng = np.random.default_rng(0)
    fps, tps = _params(rng, [(3, 4), (5,), (2, 2, 2)])
    fps[1].grad = None
    tps[1].grad = None
    fn = flow.nn.utils.clip_grad_norm_(fps, max_norm, norm_type=norm_type)
    tn = torch.nn.utils.clip_grad_norm_(tps, max_norm, norm_type=norm_type)
    assert_close(fn, tn, rtol=1e-10, atol=1e-12)
    assert fn.dim() == 0
    for fp, tp in zip(fps, tps):
        if tp.grad is None:
            assert fp.grad is None
        else:
            assert_close(fp.grad, tp.grad, rtol=1e-10, atol=1e-12)


def test_clip_grad_norm_misc():
    rng = np.random.default_rng(1)
    fps, tps = _params(rng, [(3, 4)])
    assert_close(flow.nn.utils.clip_grad_norm_(fps[0], 1.0), torch.nn.utils.clip_grad_norm_(tps[0], 1.0))
    assert_close(fps[0].grad, tps[0].grad)
    # generators are accepted, no grads gives a zero norm
    fps, _ = _params(rng, [(2,)], with_grad=False)
    assert flow.nn.utils.clip_grad_norm_((p for p in fps), 1.0).item() == 0.0
    fps, _ = _params(rng, [(3,)])
    fps[0].grad = flow.tensor([1.0, float("nan"), 2.0], dtype=flow.float64)
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        flow.nn.utils.clip_grad_norm_(fps, 1.0, error_if_nonfinite=True)
    assert math.isnan(flow.nn.utils.clip_grad_norm_(fps, 1.0).item())


def test_clip_grad_value():
    rng = np.random.default_rng(2)
    fps, tps = _params(rng, [(3, 4), (6,)])
    flow.nn.utils.clip_grad_value_(fps, 1.5)
    torch.nn.utils.clip_grad_value_(tps, 1.5)
    for fp, tp in zip(fps, tps):
        assert_close(fp.grad, tp.grad)


def test_parameters_vector_roundtrip():
    m = flow.nn.Linear(4, 3)
    v = flow.nn.utils.parameters_to_vector(m.parameters())
    assert tuple(v.shape) == (15,)
    assert_close(v[:12], to_np(m.weight).reshape(-1))
    assert_close(v[12:], to_np(m.bias))
    new = flow.arange(15, dtype=flow.float32)
    flow.nn.utils.vector_to_parameters(new, m.parameters())
    assert_close(m.weight, np.arange(12, dtype=np.float32).reshape(3, 4))
    assert_close(m.bias, np.arange(12, 15, dtype=np.float32))
    assert m.weight.is_leaf and m.weight.requires_grad
    with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
        flow.nn.utils.vector_to_parameters([1, 2], m.parameters())
    # differentiable like torch's
    p = flow.nn.Parameter(flow.ones(2, 2))
    flow.nn.utils.parameters_to_vector([p]).sum().backward()
    assert_close(p.grad, np.ones((2, 2), dtype=np.float32))
