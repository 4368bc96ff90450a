"""flow.compile / Module.compile with the graph backend: one autograd node per compiled call (AOT autograd)."""
import copy

import numpy as np
import oneflow as flow
import pytest
from oneflow_graph.compiled import CompiledCallable


def _compiled(c):
    """The CompiledCallable behind what flow.compile returned."""
    if isinstance(c, flow.nn.Module):
        target = c.forward.compiled
    else:  # the functools.wraps wrapper calls the backend call it closes over
        target = next(cell.cell_contents for cell in c.__closure__
                      if hasattr(cell.cell_contents, "backend")).compiled
    assert isinstance(target, CompiledCallable)
    return target


def _mlp():
    flow.manual_seed(0)
    return flow.nn.Sequential(flow.nn.Linear(4, 8), flow.nn.ReLU(), flow.nn.Linear(8, 3))


def _cnn():
    flow.manual_seed(1)
    return flow.nn.Sequential(flow.nn.Conv2d(2, 4, 3, padding=1), flow.nn.BatchNorm2d(4), flow.nn.ReLU(),
                              flow.nn.Flatten(), flow.nn.Linear(4 * 5 * 5, 3))


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("make,shape", [(_mlp, (5, 4)), (_cnn, (2, 2, 5, 5))])
def test_forward_and_gradients_equal_eager(make, shape):
    m = make()
    e = copy.deepcopy(m)
    c = flow.compile(m)
    x = flow.randn(*shape)
    xc, xe = x.clone().requires_grad_(), x.clone().requires_grad_()
    yc, ye = c(xc), e(xe)
    _close(yc, ye)
    assert yc.grad_fn is not None
    (yc * yc).sum().backward()
    (ye * ye).sum().backward()
    _close(xc.grad, xe.grad)
    for (n, a), b in zip(m.named_parameters(), e.parameters()):
        _close(a.grad, b.grad)
    for a, b in zip(m.buffers(), e.buffers()):  # BatchNorm running stats update as in eager
        _close(a, b)
    assert _compiled(c).compile_count == 1


def test_grads_accumulate_retain_graph_and_second_backward_raises():
    m = _mlp()
    e = copy.deepcopy(m)
    c = flow.compile(m)
    x = flow.randn(5, 4)
    lc, le = c(x).sum(), e(x).sum()
    lc.backward(retain_graph=True)
    le.backward(retain_graph=True)
    lc.backward()
    le.backward()
    for a, b in zip(m.parameters(), e.parameters()):
        _close(a.grad, b.grad)
    with pytest.raises(RuntimeError):
        lc.backward()


def test_function_with_several_inputs_and_outputs():
    def fn(a, b, scale):
        s = (a * b).sum(dim=1)
        return {"s": s * scale, "t": (a.relu(), b - a)}

    c = flow.compile(fn)
    a0, b0 = flow.randn(3, 4), flow.randn(3, 4)
    ac, bc = a0.clone().requires_grad_(), b0.clone().requires_grad_()
    ae, be = a0.clone().requires_grad_(), b0.clone().requires_grad_()
    oc, oe = c(ac, bc, 2.0), fn(ae, be, 2.0)
    _close(oc["s"], oe["s"])
    for u, v in zip(oc["t"], oe["t"]):
        _close(u, v)
    (oc["s"].sum() + oc["t"][0].sum() * 3 + (oc["t"][1] ** 2).sum()).backward()
    (oe["s"].sum() + oe["t"][0].sum() * 3 + (oe["t"][1] ** 2).sum()).backward()
    _close(ac.grad, ae.grad)
    _close(bc.grad, be.grad)
    # a new signature compiles again; the same one does not
    cc = _compiled(c)
    c(ac, bc, 2.0)
    assert cc.compile_count == 1
    c(flow.randn(2, 4), flow.randn(2, 4), 2.0)
    assert cc.compile_count == 2


def test_no_grad_inference():
    m = _mlp()
    c = flow.compile(m)
    x = flow.randn(5, 4)
    with flow.no_grad():
        y = c(x)
    assert not y.requires_grad and y.grad_fn is None
    _close(y, m(x))
    assert _compiled(c).last.backward is None


def test_module_compile_in_place_trains():
    m = _mlp()
    e = copy.deepcopy(m)
    m.compile()
    x = flow.randn(5, 4)
    m(x).sum().backward()
    e(x).sum().backward()
    for a, b in zip(m.parameters(), e.parameters()):
        _close(a.grad, b.grad)
    assert isinstance(m._compiled_call_impl.compiled, CompiledCallable)


@pytest.mark.parametrize("opt", ["sgd", "adam"])
@pytest.mark.parametrize("make,shape", [(_mlp, (6, 4)), (_cnn, (2, 2, 5, 5))])
def test_ten_training_steps_equal_eager(opt, make, shape):
    m = make()
    e = copy.deepcopy(m)
    c = flow.compile(m)

    def optim(mod):
        if opt == "sgd":
            return flow.optim.SGD(mod.parameters(), lr=0.1, momentum=0.9)
        return flow.optim.Adam(mod.parameters(), lr=0.01)

    oc, oe = optim(m), optim(e)
    flow.manual_seed(3)
    for _ in range(10):
        x, t = flow.randn(*shape), flow.randn(shape[0], 3)
        for mod, o, fwd in ((m, oc, c), (e, oe, e)):
            o.zero_grad()
            loss = ((fwd(x) - t) ** 2).mean()
            loss.backward()
            o.step()
            if mod is m:
                lc = loss
            else:
                le = loss
        _close(lc, le)
    for a, b in zip(m.state_dict().values(), e.state_dict().values()):
        _close(a, b)
    assert _compiled(c).compile_count == 1


def test_frozen_parameters_and_double_backward():
    m = _mlp()
    m[0].weight.requires_grad_(False)
    e = copy.deepcopy(m)
    c = flow.compile(m)
    x = flow.randn(5, 4)
    c(x).sum().backward()
    e(x).sum().backward()
    assert m[0].weight.grad is None
    for a, b in zip(m.parameters(), e.parameters()):
        if b.grad is not None:
            _close(a.grad, b.grad)
    # unfreezing recompiles, so the weight gets its gradient
    m[0].weight.requires_grad_(True)
    e[0].weight.requires_grad_(True)
    c(x).sum().backward()
    e(x).sum().backward()
    _close(m[0].weight.grad, e[0].weight.grad)
    xg = x.clone().requires_grad_()
    (g,) = flow.autograd.grad(c(xg).sum(), [xg], create_graph=False)
    xe = x.clone().requires_grad_()
    (ge,) = flow.autograd.grad(e(xe).sum(), [xe])
    _close(g, ge)
    with pytest.raises(RuntimeError, match="double backward"):
        flow.autograd.grad(c(xg).sum(), [xg], create_graph=True)


def test_a_call_that_cannot_be_traced_falls_back_to_eager_with_a_warning():
    def f(x):
        if x.sum().item() > 0:  # data-dependent: no static graph
            return x * 2
        return x - 1

    c = flow.compile(f)
    x = flow.ones(3)
    with pytest.warns(UserWarning, match="cannot compile this call, it runs eagerly"):
        assert c(x).tolist() == [2.0, 2.0, 2.0]
    assert c(-x).tolist() == [-2.0, -2.0, -2.0]  # the same signature: eager again, no second warning needed
    assert _compiled(c).compile_count == 0
