"""oneflow.autograd.functional (vjp, jvp, vhp, hvp, jacobian, hessian) against torch.autograd.functional."""
import numpy as np
import pytest
import torch
from torch.autograd import functional as TF

import oneflow as flow

F = flow.autograd.functional
RNG = np.random.default_rng(0)
XA, YA, VA = RNG.standard_normal(3), RNG.standard_normal((2, 3)), RNG.standard_normal(3)

FUNCS = {
    "pair_out": lambda x, y: (x * y, (x ** 3).sum() + y.sum()),
    "one_out": lambda x: (x ** 2).sin(),
    "scalar": lambda x: (x ** 3).sum() * x.sum(),
    "scalar_xy": lambda x, y: (x.exp() * y).sum(),
    "independent": lambda x, y: x * 2,
}


def _same(a, b):
    if isinstance(b, (tuple, list)):
        assert isinstance(a, tuple) and len(a) == len(b)
        for u, v in zip(a, b):
            _same(u, v)
        return
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-9, atol=1e-12)


def _args(names):
    f = tuple(flow.tensor(a) for a in names)
    t = tuple(torch.tensor(a) for a in names)
    return (f, t) if len(names) > 1 else (f[0], t[0])


@pytest.mark.parametrize("func,args,kwargs", [
    ("pair_out", (XA, YA), {}), ("one_out", (XA,), {}), ("independent", (XA, YA), {}),
    ("one_out", (XA,), {"vectorize": True, "strategy": "forward-mode"}),
    ("pair_out", (XA, YA), {"vectorize": True, "strategy": "forward-mode"}),
])
def test_jacobian(func, args, kwargs):
    fa, ta = _args(args)
    _same(F.jacobian(FUNCS[func], fa, **kwargs), TF.jacobian(FUNCS[func], ta, **kwargs))


@pytest.mark.parametrize("func,args", [("scalar", (XA,)), ("scalar_xy", (XA, YA))])
def test_hessian(func, args):
    fa, ta = _args(args)
    _same(F.hessian(FUNCS[func], fa), TF.hessian(FUNCS[func], ta))


@pytest.mark.parametrize("name,func,v", [("vjp", "one_out", VA), ("jvp", "one_out", VA), ("hvp", "scalar", VA),
                                         ("vhp", "scalar", VA), ("vjp", "scalar", None)])
def test_products(name, func, v):
    fa, ta = _args((XA,))
    fv, tv = (None, None) if v is None else (flow.tensor(v), torch.tensor(v))
    _same(getattr(F, name)(FUNCS[func], fa, fv), getattr(TF, name)(FUNCS[func], ta, tv))


def test_create_graph_keeps_the_result_differentiable():
    xs = []
    for L, mod in ((flow, F), (torch, TF)):
        x = L.tensor(XA, requires_grad=True)
        jac = mod.jacobian(FUNCS["one_out"], x, create_graph=True)
        _, h = mod.hvp(FUNCS["scalar"], x, L.tensor(VA), create_graph=True)
        (jac.sum() + h.pow(2).sum()).backward()
        xs.append(x.grad)
    _same(xs[0], xs[1])
    plain = F.jacobian(FUNCS["one_out"], flow.tensor(XA, requires_grad=True))
    assert not plain.requires_grad


@pytest.mark.parametrize("call", [
    lambda m, L: m.jacobian(FUNCS["independent"], (L.tensor(XA), L.tensor(YA)), strict=True),
    lambda m, L: m.jacobian(lambda x: 3, L.tensor(XA)),
    lambda m, L: m.jacobian(lambda x: x, 3),
    lambda m, L: m.jacobian(lambda x: x, L.tensor(XA), strategy="forward-mode"),
    lambda m, L: m.jacobian(lambda x: x, L.tensor(XA), strategy="sideways"),
    lambda m, L: m.hessian(lambda x: x ** 3, L.tensor(XA)),
    lambda m, L: m.vjp(lambda x: x ** 2, L.tensor(XA)),
    lambda m, L: m.vjp(lambda x: x ** 2, L.tensor(XA), L.ones(4, dtype=L.float64)),
    lambda m, L: m.jvp(lambda x: x ** 2, L.tensor(XA)),
    lambda m, L: m.vjp(lambda x: x.detach(), L.tensor(XA), L.tensor(VA), strict=True),
])
def test_errors_like_torch(call):
    with pytest.raises(Exception) as want:
        call(TF, torch)
    with pytest.raises(type(want.value)) as got:
        call(F, flow)
    assert str(got.value).replace("oneflow.Size", "torch.Size") == str(want.value)


def test_zero_fills_do_not_multiply_inf_and_strict_messages():
    x = np.array([np.inf, 1.0])
    for L, mod in ((flow, F), (torch, TF)):
        _, (gx, gy) = mod.vjp(lambda a, b: (b * 2).sum(), (L.tensor(x), L.ones(2, dtype=L.float64)))
        assert gx.numpy().tolist() == [0.0, 0.0]
        jac = mod.jacobian(lambda a: a * 2, L.tensor(x), vectorize=True, strategy="forward-mode")
        assert jac.numpy().tolist() == [[2.0, 0.0], [0.0, 2.0]]
    msgs = []
    for L, mod in ((flow, F), (torch, TF)):
        with pytest.raises(RuntimeError) as e:
            mod.jvp(lambda a, b: a * 3, (L.ones(2), L.ones(2)), (L.ones(2), L.ones(2)), strict=True)
        msgs.append(str(e.value))
        with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not supported together"):
            mod.jacobian(lambda a: a * 2, L.ones(2), strict=True, vectorize=True)
    assert msgs[0] == msgs[1]


def test_create_graph_seed_is_a_constant():
    # the implicit ones seeding a scalar's backward hangs off no graph: the gradient of a linear function is
    # then a constant even with create_graph, so strict second-order calls refuse it as torch does
    x = flow.ones(2, requires_grad=True)
    (g,) = flow.autograd.grad((x * 2).sum(), x, create_graph=True)
    assert not g.requires_grad
    (g,) = flow.autograd.grad((x * x).sum(), x, create_graph=True)
    assert g.requires_grad
    for name in ("hvp", "vhp"):
        msgs = []
        for L, mod in ((flow, F), (torch, TF)):
            with pytest.raises(RuntimeError) as e:
                getattr(mod, name)(lambda a: (a * 2).sum(), L.ones(2), L.ones(2), strict=True)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]
