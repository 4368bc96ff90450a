"""autograd.graph: saved-tensor hooks (pack/unpack of what backward keeps), save_on_cpu and
disable_saved_tensors_hooks, against PyTorch's."""
import gc
import weakref

import numpy as np
import pytest
import torch

import oneflow as flow

rng = np.random.default_rng(0)


def _mlp_step(lib, x_np, w1_np, w2_np, hooks=None):
    x = lib.tensor(x_np, requires_grad=True)
    w1, w2 = lib.tensor(w1_np, requires_grad=True), lib.tensor(w2_np, requires_grad=True)
    packed = []

    def pack(t):
        packed.append((tuple(t.shape), str(t.dtype).split(".")[-1]))
        return t.clone()

    def unpack(t):
        return t

    ctx = lib.autograd.graph.saved_tensors_hooks(pack, unpack) if hooks else None
    if ctx:
        ctx.__enter__()
    try:
        h = lib.tanh(x @ w1)
        loss = lib.nn.functional.log_softmax(h @ w2, dim=1).sum() + (h * h).mean()
    finally:
        if ctx:
            ctx.__exit__(None, None, None)
    loss.backward()
    return [t.grad.numpy() for t in (x, w1, w2)], packed


def test_hooks_see_every_saved_tensor_and_gradients_match_torch():
    x, w1, w2 = rng.standard_normal((4, 5)), rng.standard_normal((5, 6)), rng.standard_normal((6, 3))
    x, w1, w2 = (a.astype(np.float32) for a in (x, w1, w2))
    plain, _ = _mlp_step(flow, x, w1, w2)
    got, fpacked = _mlp_step(flow, x, w1, w2, hooks=True)
    want, tpacked = _mlp_step(torch, x, w1, w2, hooks=True)
    for g, p, w in zip(got, plain, want):
        np.testing.assert_allclose(g, p, rtol=1e-6)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    assert fpacked, "no tensor went through the pack hook"
    # every saved tensor is one of the forward's values: inputs, weights or intermediate activations
    assert {s for s, _ in fpacked} <= {(4, 5), (5, 6), (6, 3), (4, 6), (4, 3), (), (6, 5), (3, 6)}


def test_unpack_must_return_a_tensor_and_hook_errors_propagate():
    x = flow.ones(3, requires_grad=True)
    with flow.autograd.graph.saved_tensors_hooks(lambda t: 1, lambda o: None):
        y = (x * x).sum()
    with pytest.raises(TypeError, match="Output of saved tensor unpack_hook expected to be a Tensor but got result "
                                        "of type NoneType"):
        y.backward()

    def bad_pack(t):
        raise ValueError("pack failed")

    with pytest.raises(ValueError, match="pack failed"):
        with flow.autograd.graph.saved_tensors_hooks(bad_pack, lambda t: t):
            (x * x).sum()
    # the failure left no hooks installed: a plain graph keeps its tensors and backpropagates
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [2, 2, 2])


def test_packed_objects_are_released_with_the_graph():
    class Box:
        def __init__(self, t):
            self.t = t

    boxes = []

    def pack(t):
        b = Box(t)
        boxes.append(weakref.ref(b))
        return b

    x = flow.randn(5, requires_grad=True)
    with flow.autograd.graph.saved_tensors_hooks(pack, lambda b: b.t):
        y = (x.sin() * x).sum()
    assert boxes and all(r() is not None for r in boxes)
    y.backward()
    gc.collect()
    assert all(r() is None for r in boxes), "backward (without retain_graph) must drop what pack returned"
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()


def test_custom_function_saves_nesting_and_double_backward():
    calls = []

    class Cube(flow.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a ** 3

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return 3 * g * a * a

    def tagged(tag):
        def pack(t):
            calls.append(tag)
            return t.detach().clone().requires_grad_(t.requires_grad), t
        return pack

    a = flow.tensor([1.0, -2.0], requires_grad=True)
    with flow.autograd.graph.saved_tensors_hooks(tagged("outer"), lambda p: p[1]):
        with flow.autograd.graph.saved_tensors_hooks(tagged("inner"), lambda p: p[1]):
            Cube.apply(a).sum().backward()
        assert calls == ["inner"]  # the innermost pair applies, custom Functions included
        y = (a * a * a).sum()
    assert "outer" in calls[1:]
    g, = flow.autograd.grad(y, a, create_graph=True)  # unpack hands back the original: second derivative works
    gg, = flow.autograd.grad(g.sum(), a)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])
    np.testing.assert_allclose(gg.numpy(), [6.0, -12.0])


def test_save_on_cpu_and_disable_saved_tensors_hooks():
    x = rng.standard_normal((3, 4)).astype(np.float32)
    fx, tx = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    with flow.autograd.graph.save_on_cpu(pin_memory=True):
        (fx.exp() * fx).sum().backward()
    with torch.autograd.graph.save_on_cpu():
        (tx.exp() * tx).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    with flow.autograd.graph.disable_saved_tensors_hooks("hooks are off in this region"):
        with pytest.raises(RuntimeError, match="hooks are off in this region"):
            with flow.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass
    with flow.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):  # allowed again outside
        pass


def test_unpacked_inputs_keep_their_history_for_second_derivatives():
    # a pack hook that drops history (offloading, compression) must not cut second derivatives: unpacking
    # re-attaches the original tensor's grad_fn / accumulator, as torch does
    for lib in (flow, torch):
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
            z = (x.exp() * x).sum()
            w = (x * x * x).sum()
        g, = lib.autograd.grad(z, x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        h, = lib.autograd.grad(w, x, create_graph=True)
        hh, = lib.autograd.grad(h.sum(), x)
        if lib is flow:
            got = (gg.numpy(), hh.numpy())
        else:
            np.testing.assert_allclose(got[0], gg.numpy(), rtol=1e-6)
            np.testing.assert_allclose(got[1], hh.numpy(), rtol=1e-6)


def test_pack_hook_running_a_custom_function_and_disable_inside_hooks():
    class Twice(flow.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * 2 + a * 0

    packs = []

    def pack(t):
        packs.append(1)
        return Twice.apply(t)  # its own save is not packed again

    x = flow.ones(2, requires_grad=True)
    with flow.autograd.graph.saved_tensors_hooks(pack, lambda t: t / 2):
        y = Twice.apply(x)
    y.sum().backward()
    assert len(packs) == 1
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 2.0])
    with flow.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        with pytest.raises(RuntimeError, match="no hooks in here"):
            with flow.autograd.graph.disable_saved_tensors_hooks("no hooks in here"):
                pass


@pytest.mark.parametrize("mode", ["plain", "save_on_cpu", "checkpoint"])
def test_in_place_op_on_a_view_saves_a_snapshot(mode):
    # mul_ on a view saves its input: the op must see the view's values before the write (torch's result),
    # with or without hooks (no false version error either)
    res = []
    for lib in (flow, torch):
        x = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
        w = lib.tensor([2.0, 3.0], requires_grad=True)

        def f(a):
            h = a * 1
            h[:, :2].mul_(w)
            v = h[1:]
            v.pow_(2)
            return h.sum()

        if mode == "checkpoint":
            ck = (flow.utils.checkpoint.checkpoint if lib is flow else torch.utils.checkpoint.checkpoint)
            y = ck(f, x, use_reentrant=False)
        elif mode == "save_on_cpu":
            with lib.autograd.graph.save_on_cpu():
                y = f(x)
        else:
            y = f(x)
        y.backward()
        res.append((x.grad.numpy(), w.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_a_saved_leaf_returned_as_gradient_does_not_become_a_grad_that_requires_grad():
    class PassSaved(flow.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(b)
            return a * 1

        @staticmethod
        def backward(ctx, g):
            (b,) = ctx.saved_tensors
            return b, None

    a = flow.ones(3, requires_grad=True)
    b = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with flow.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = PassSaved.apply(a, b)
    y.sum().backward()
    assert not a.grad.requires_grad
    a.grad.zero_()


def test_mul_and_div_keep_an_operand_only_for_the_other_ones_gradient():
    # like torch, x * 2.0 and x / 3 keep nothing the size of x for backward (only the 0-dim scalar here); an
    # operand is kept when the other one needs a gradient
    def saved(expr, x, w):
        shapes = []
        with flow.autograd.graph.saved_tensors_hooks(lambda t: shapes.append(tuple(t.shape)) or t, lambda t: t):
            y = expr(x, w)
        return shapes, y

    for expr, want in [(lambda x, w: x * 2.0, [()]), (lambda x, w: x / 3, [()]),
                       (lambda x, w: x * w, [(3,), (3,)]), (lambda x, w: x.detach() * w, [(3,)]),
                       (lambda x, w: x / w, [(3,), (3,)]), (lambda x, w: w / x.detach(), [(3,)])]:
        x = flow.tensor([1.0, 2.0, 4.0], requires_grad=True)
        w = flow.tensor([2.0, 3.0, 5.0], requires_grad=True)
        shapes, y = saved(expr, x, w)
        assert shapes == want
        tx, tw = torch.tensor([1.0, 2.0, 4.0], requires_grad=True), torch.tensor([2.0, 3.0, 5.0], requires_grad=True)
        y.sum().backward()
        expr(tx, tw).sum().backward()
        for a, b in ((x, tx), (w, tw)):
            assert (a.grad is None) == (b.grad is None)
            if a.grad is not None:
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6)
    # in-place on a non-leaf, and a second derivative through the kept operand
    x = flow.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    h.mul_(3.0)
    (h * x).sum().backward(create_graph=True)
    np.testing.assert_allclose(x.grad.detach().numpy(), [6.0, 12.0])
    gg, = flow.autograd.grad(x.grad.sum(), x)
    np.testing.assert_allclose(gg.numpy(), [6.0, 6.0])


def test_pow_keeps_its_result_only_for_the_exponents_gradient():
    for expr, want in [(lambda x, w: x ** 3, [(3,), ()]), (lambda x, w: x ** w, [(3,), (3,), (3,)]),
                       (lambda x, w: 2.0 ** x, [(), (3,), (3,)])]:
        shapes = []
        x = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
        w = flow.tensor([2.0, 0.5, 1.5], requires_grad=True)
        with flow.autograd.graph.saved_tensors_hooks(lambda t: shapes.append(tuple(t.shape)) or t, lambda t: t):
            y = expr(x, w)
        assert shapes == want
        y.sum().backward()
        tx, tw = torch.tensor([1.0, 2.0, 3.0], requires_grad=True), torch.tensor([2.0, 0.5, 1.5], requires_grad=True)
        expr(tx, tw).sum().backward()
        for a, b in ((x, tx), (w, tw)):
            assert (a.grad is None) == (b.grad is None)
            if a.grad is not None:
                np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6)
