"""oneflow.autograd.forward_ad (dual tensors) against torch.autograd.forward_ad on the same functions."""
import numpy as np
import pytest
import torch
import torch.autograd.forward_ad as tfw

import oneflow as flow
import oneflow.autograd.forward_ad as ffw

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3))
T = RNG.standard_normal((2, 3))
W = RNG.standard_normal((3, 4))
U = RNG.standard_normal((3, 4))


def _run(L, fw, fn, *pairs):
    """fn(L, *duals) inside a dual level; returns (primals, tangents) of its outputs as numpy (None: no tangent)."""
    with fw.dual_level():
        duals = [fw.make_dual(L.tensor(p), L.tensor(t)) for p, t in pairs]
        out = fn(L, *duals)
        outs = out if isinstance(out, tuple) else (out,)
        res = []
        for o in outs:
            primal, tangent = fw.unpack_dual(o)
            res.append((primal.detach().numpy(), None if tangent is None else tangent.detach().numpy()))
    return res


def _compare(fn, *pairs):
    got, want = _run(flow, ffw, fn, *pairs), _run(torch, tfw, fn, *pairs)
    assert len(got) == len(want)
    for (gp, gt), (wp, wt) in zip(got, want):
        np.testing.assert_allclose(gp, wp, rtol=1e-7, atol=1e-9)
        assert (gt is None) == (wt is None)
        if wt is not None:
            assert gt.shape == wt.shape
            np.testing.assert_allclose(gt, wt, rtol=1e-7, atol=1e-9)


FUNCS = {
    "elementwise": lambda L, x: (x.sin() * x.exp() + x ** 2).tanh(),
    "reductions": lambda L, x: (x.sum(), x.mean(1), x.max(0)[0], (x * x).sum(-1).sqrt()),
    "matmul": lambda L, x, w: (x @ w, L.matmul(x, w).relu()),
    "softmax": lambda L, x: L.nn.functional.softmax(x * 3, dim=1),
    "views": lambda L, x: (x[0], x.t(), x.reshape(-1)[1:4], x.chunk(3, dim=1)[1]),
    "inplace": lambda L, x: x.clone().mul_(2).add_(x.exp()),
    "no_tangent_outputs": lambda L, x: (x.argmax(), x > 0, L.ones(2)),
    "two_duals": lambda L, x, w: ((x @ w) * (x.sum() + w.mean()), w.cos()),
}


@pytest.mark.parametrize("name", sorted(FUNCS))
def test_tangents_match_torch(name):
    pairs = [(W, U)] if "w" in FUNCS[name].__code__.co_varnames[2:] else []
    _compare(FUNCS[name], (X, T), *pairs)


def test_modules():
    nets = []
    for L in (flow, torch):
        L.manual_seed(0)
        nets.append(L.nn.Sequential(L.nn.Linear(3, 5), L.nn.Tanh(), L.nn.LayerNorm(5), L.nn.Linear(5, 2)).double())
    nets[0].load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in nets[1].state_dict().items()})
    _compare(lambda L, x: (nets[0] if L is flow else nets[1])(x), (X, T))


def test_inplace_on_dual_and_dual_written_into_plain():
    def fn(L, x):
        y = x.clone()
        y.mul_(3)  # in place on a dual tensor: its tangent scales too
        z = L.zeros(2, 3, dtype=L.float64)
        z.add_(y.exp())  # a plain tensor becomes dual
        return y, z

    _compare(fn, (X, T))


def test_reverse_over_forward():
    res = []
    for L, fw in ((flow, ffw), (torch, tfw)):
        x = L.tensor(X, requires_grad=True)
        with fw.dual_level():
            d = fw.make_dual(x, L.tensor(T))
            assert d.requires_grad
            _, tangent = fw.unpack_dual((d.sin() * d).sum())
            assert tangent.requires_grad
            tangent.backward()
        res.append(x.grad.numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-7, atol=1e-9)


def test_random_ops_use_the_mask_they_draw():
    x = flow.tensor(X)
    with ffw.dual_level():
        out = flow.nn.functional.dropout(ffw.make_dual(x, flow.ones(2, 3, dtype=flow.float64)), 0.5)
        primal, tangent = ffw.unpack_dual(out)
    # dropout is linear in its input: tangent = mask / (1 - p) = primal / x
    np.testing.assert_allclose(tangent.numpy(), primal.numpy() / X, rtol=1e-7, atol=1e-9)


def test_level_api_and_errors():
    x = flow.tensor(X)
    t = flow.tensor(T)
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level\\(\\) first"):
        ffw.make_dual(x, t)
    assert ffw.unpack_dual(x) == (x, None) and ffw.unpack_dual(x)._fields == ("primal", "tangent")
    level = ffw.enter_dual_level()
    try:
        assert level == 0
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            ffw.enter_dual_level()
        d = ffw.make_dual(x, t)
        assert not d.requires_grad and ffw.unpack_dual(x).tangent is None and ffw.unpack_dual(d).tangent is t
        with pytest.raises(RuntimeError, match="already has a forward gradient at the same level 0"):
            ffw.make_dual(d, t)
        with pytest.raises(RuntimeError, match="Tensor is of size \\[2, 3\\] while the given forward gradient is "
                                               "of size \\[3\\]"):
            ffw.make_dual(x, t[0])
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex, but got"):
            ffw.make_dual(x.long(), t)
        with pytest.raises(ValueError, match="Expected tangent to be floating point or complex, but got"):
            ffw.make_dual(x, t.long())
        with pytest.raises(RuntimeError, match="Invalid level given to _make_dual"):
            ffw.make_dual(x, t, level=1)
        with pytest.raises(RuntimeError, match="not the last one that was created"):
            ffw.exit_dual_level(level=3)
    finally:
        ffw.exit_dual_level()
    assert ffw.unpack_dual(d).tangent is None  # tangents are dropped with the level
    with pytest.raises(RuntimeError, match="Dual level must be a positive number"):
        ffw.exit_dual_level()


def test_dual_level_as_decorator_and_exception_safety():
    @ffw.dual_level()
    def jvp_sin(x, v):
        return ffw.unpack_dual(ffw.make_dual(x, v).sin()).tangent

    np.testing.assert_allclose(jvp_sin(flow.tensor(X), flow.tensor(T)).numpy(), np.cos(X) * T)
    with pytest.raises(ZeroDivisionError):
        with ffw.dual_level():
            1 / 0
    assert ffw.enter_dual_level() == 0  # the failed block closed its level
    ffw.exit_dual_level()


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_tangents_flow_under_no_grad_and_inference_mode(mode):
    with ffw.dual_level(), getattr(flow, mode)():
        d = ffw.make_dual(flow.tensor(X), flow.tensor(T))
        tangent = ffw.unpack_dual(d.sin() * 2).tangent
    np.testing.assert_allclose(tangent.numpy(), 2 * np.cos(X) * T, rtol=1e-7, atol=1e-9)
