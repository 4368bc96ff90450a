"""utils.checkpoint: the same outputs and gradients as running the model directly (and as torch's
checkpoint), random ops recomputed with the forward's random state, fewer tensors kept alive, errors."""
import gc
import weakref

import numpy as np
import pytest
import torch

import oneflow as flow
from oneflow.utils.checkpoint import checkpoint, checkpoint_sequential


def block(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(6, 16), lib.nn.GELU(), lib.nn.Dropout(0.3), lib.nn.Linear(16, 6))


def copy_weights(dst, src):
    with flow.no_grad():
        for d, s in zip(dst.parameters(), src.parameters()):
            d.copy_(flow.tensor(s.detach().numpy()))


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_gradients_equal_the_direct_run(use_reentrant):
    x = np.random.default_rng(0).standard_normal((4, 6)).astype(np.float32)
    m = block(flow)
    m.eval()  # no dropout: the direct run is the reference
    xi = flow.tensor(x, requires_grad=True)
    m(xi).pow(2).sum().backward()
    want = [p.grad.numpy().copy() for p in m.parameters()], xi.grad.numpy().copy()
    m.zero_grad()
    xc = flow.tensor(x, requires_grad=True)
    out = checkpoint(m, xc, use_reentrant=use_reentrant)
    assert out.requires_grad
    out.pow(2).sum().backward()
    for p, w in zip(m.parameters(), want[0]):
        np.testing.assert_allclose(p.grad.numpy(), w, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(xc.grad.numpy(), want[1], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_dropout_is_recomputed_with_the_same_mask_and_matches_torch(use_reentrant):
    # train mode: the recomputation must redraw the forward's dropout mask; torch's checkpoint is the reference
    # for which gradients that gives (same weights, same input; masks compared through the gradients' zeros)
    x = np.random.default_rng(1).standard_normal((8, 6)).astype(np.float32)
    fm = block(flow)
    xf = flow.tensor(x, requires_grad=True)
    out = checkpoint(fm, xf, use_reentrant=use_reentrant)
    out.sum().backward()
    # the same forward, run directly from the same random state, gives the same output and gradients
    fm2 = block(flow)
    copy_weights(fm2, fm)
    flow.manual_seed(123)
    xd = flow.tensor(x, requires_grad=True)
    flow.manual_seed(123)
    xc = flow.tensor(x, requires_grad=True)
    oc = checkpoint(fm, xc, use_reentrant=use_reentrant)
    flow.manual_seed(123)
    od = fm2(xd)
    np.testing.assert_array_equal(oc.detach().numpy(), od.detach().numpy())
    fm.zero_grad()
    oc.sum().backward()
    od.sum().backward()
    np.testing.assert_allclose(xc.grad.numpy(), xd.grad.numpy(), rtol=1e-6, atol=1e-7)
    for a, b in zip(fm.parameters(), fm2.parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-7)
    # the random state after backward is where the forward left it
    flow.manual_seed(7)
    o = checkpoint(fm, flow.tensor(x, requires_grad=True), use_reentrant=use_reentrant)
    after_forward = flow.rand(3).numpy()
    flow.manual_seed(7)
    o = checkpoint(fm, flow.tensor(x, requires_grad=True), use_reentrant=use_reentrant)
    o.sum().backward()
    np.testing.assert_array_equal(flow.rand(3).numpy(), after_forward)


def test_reentrant_needs_an_input_that_requires_grad_non_reentrant_does_not():
    m = block(flow).eval()
    x = flow.randn(2, 6)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        assert not checkpoint(m, x, use_reentrant=True).requires_grad
    out = checkpoint(m, x, use_reentrant=False)
    assert out.requires_grad
    out.sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(m, flow.randn(2, 6, requires_grad=True))
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda a, scale=1: a * scale, x, scale=2, use_reentrant=True)
    y = checkpoint(lambda a, scale=1: a * scale, flow.ones(2, requires_grad=True), scale=3, use_reentrant=False)
    np.testing.assert_array_equal(y.detach().numpy(), [3, 3])


def test_checkpoint_sequential_matches_the_plain_model_and_torch():
    x = np.random.default_rng(2).standard_normal((5, 6)).astype(np.float32)
    layers = [(6, 12), (12, 12), (12, 12), (12, 8), (8, 4)]
    fseq = flow.nn.Sequential(*[m for a, b in layers for m in (flow.nn.Linear(a, b), flow.nn.Tanh())])
    tseq = torch.nn.Sequential(*[m for a, b in layers for m in (torch.nn.Linear(a, b), torch.nn.Tanh())])
    with torch.no_grad():
        for f, t in zip(fseq.parameters(), tseq.parameters()):
            t.copy_(torch.tensor(f.detach().numpy()))
    xf, xt = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    of = checkpoint_sequential(fseq, 3, xf, use_reentrant=False)
    ot = torch.utils.checkpoint.checkpoint_sequential(tseq, 3, xt, use_reentrant=False)
    np.testing.assert_allclose(of.detach().numpy(), ot.detach().numpy(), rtol=1e-5, atol=1e-6)
    of.sum().backward()
    ot.sum().backward()
    np.testing.assert_allclose(xf.grad.numpy(), xt.grad.numpy(), rtol=1e-5, atol=1e-6)
    for f, t in zip(fseq.parameters(), tseq.parameters()):
        np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_activations_are_not_kept():
    # 8 checkpointed wide layers keep only their boundaries: the allocator's peak during the forward stays
    # well below what the plain model holds for backward
    def run(ckpt):
        flow.manual_seed(0)
        layers = [flow.nn.Sequential(flow.nn.Linear(256, 2048), flow.nn.GELU(), flow.nn.Linear(2048, 256))
                  for _ in range(8)]
        x = flow.randn(256, 256, requires_grad=True)
        flow._C._reset_peak_stats()
        base = flow._C._allocator_stats()["allocated_bytes"]
        for layer in layers:
            x = checkpoint(layer, x, use_reentrant=False) if ckpt else layer(x)
        peak = flow._C._allocator_stats()["peak_allocated_bytes"] - base
        x.sum().backward()
        return peak
    plain, ckpt = run(False), run(True)
    assert ckpt < plain / 3, (ckpt, plain)


def _pair(seed=3):
    # the same Linear in both frameworks, and an input
    torch.manual_seed(seed)
    tl = torch.nn.Linear(5, 4)
    fl = flow.nn.Linear(5, 4)
    with flow.no_grad():
        fl.weight.copy_(flow.tensor(tl.weight.detach().numpy()))
        fl.bias.copy_(flow.tensor(tl.bias.detach().numpy()))
    x = np.random.default_rng(seed).standard_normal((3, 5)).astype(np.float32)
    return fl, tl, x


def test_reentrant_refuses_grad_and_backward_inputs_like_torch():
    fl, _, x = _pair()
    xf = flow.tensor(x, requires_grad=True)
    for run in (lambda out: flow.autograd.grad(out, [xf]), lambda out: out.backward(inputs=[xf])):
        with pytest.raises(RuntimeError, match="When use_reentrant=True, torch.utils.checkpoint is incompatible "
                                               "with .grad\\(\\) or passing an `inputs` parameter"):
            run(checkpoint(fl, xf, use_reentrant=True).sum())
    assert fl.weight.grad is None and xf.grad is None  # nothing accumulated on the way to the error
    # a plain backward still works afterwards (the flag is per call)
    checkpoint(fl, xf, use_reentrant=True).sum().backward()
    assert fl.weight.grad is not None and xf.grad is not None


def test_non_reentrant_module_params_reach_autograd_grad_and_backward_inputs():
    fl, tl, x = _pair()
    xf, xt = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got = flow.autograd.grad(checkpoint(fl, xf, use_reentrant=False).pow(2).sum(), [fl.weight, fl.bias, xf])
    want = torch.autograd.grad(torch.utils.checkpoint.checkpoint(tl, xt, use_reentrant=False).pow(2).sum(),
                               [tl.weight, tl.bias, xt])
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)
    assert fl.weight.grad is None and xf.grad is None  # grad() leaves .grad alone, inside the region too
    # backward(inputs=[x]) fills x.grad only
    checkpoint(fl, xf, use_reentrant=False).pow(2).sum().backward(inputs=[xf])
    np.testing.assert_allclose(xf.grad.numpy(), want[2].numpy(), rtol=1e-5, atol=1e-6)
    assert fl.weight.grad is None
    # a plain backward accumulates into the parameters once (not twice through two routes)
    checkpoint(fl, xf, use_reentrant=False).pow(2).sum().backward()
    np.testing.assert_allclose(fl.weight.grad.numpy(), want[0].numpy(), rtol=1e-5, atol=1e-6)


def test_non_reentrant_bound_method_kwargs_param_argument_and_double_backward():
    class Scaled(flow.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = flow.nn.Linear(5, 4)
            self.s = flow.nn.Parameter(flow.tensor(1.5))

        def forward(self, x, w, shift=0.0):
            return flow.tanh(self.lin(x) * self.s + x.sum(1, keepdim=True) * w.sum() + shift)

    m = Scaled()
    x = flow.randn(3, 5, requires_grad=True)

    def run(ck):
        out = m.forward(x, m.lin.weight, shift=0.5) if not ck else checkpoint(m.forward, x, m.lin.weight, shift=0.5,
                                                                               use_reentrant=False)
        loss = out.pow(2).sum()
        g = flow.autograd.grad(loss, [m.lin.weight, m.s, x], create_graph=True)
        gg = flow.autograd.grad(sum(t.pow(2).sum() for t in g), [m.lin.weight, m.s, x])
        return [t.detach().numpy() for t in g + gg]

    # the weight is both an argument and a parameter of the bound method's module: both paths count, once each
    for a, b in zip(run(True), run(False)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_non_reentrant_any_callable_recomputes_once_and_supports_second_derivatives():
    fl, tl, x = _pair(5)
    calls = []

    def region(lin, a, scale=1.0):  # a closure over nothing: the parameters reach it only through `lin`
        calls.append(1)
        return (lin(a).tanh() * scale).pow(2).sum()

    xf, xt = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yf = checkpoint(lambda a: region(fl, a, scale=2.0), xf, use_reentrant=False)
    yt = torch.utils.checkpoint.checkpoint(lambda a: region(tl, a, scale=2.0), xt, use_reentrant=False)
    assert len(calls) == 2  # one forward each; no recomputation before backward
    gf = flow.autograd.grad(yf, [xf, fl.weight], create_graph=True)
    assert len(calls) == 3  # one recomputation for all the region's saved tensors
    gt = torch.autograd.grad(yt, [xt, tl.weight], create_graph=True)
    for a, b in zip(gf, gt):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    ggf = flow.autograd.grad(sum(t.pow(2).sum() for t in gf), [xf, fl.weight])
    ggt = torch.autograd.grad(sum(t.pow(2).sum() for t in gt), [xt, tl.weight])
    for a, b in zip(ggf, ggt):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)
    assert fl.weight.grad is None
    # keyword arguments pass through; nested regions work
    out = checkpoint(lambda a: checkpoint(region, fl, a, scale=0.5, use_reentrant=False), xf, use_reentrant=False)
    out.backward()
    want = torch.autograd.grad(region(tl, xt, scale=0.5), [xt, tl.weight])
    np.testing.assert_allclose(xf.grad.numpy(), want[0].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(fl.weight.grad.numpy(), want[1].numpy(), rtol=1e-5, atol=1e-6)


def test_non_reentrant_context_fn_and_determinism_check():
    from oneflow.utils.checkpoint import CheckpointError

    seen = []

    class Tag:
        def __init__(self, name):
            self.name = name

        def __enter__(self):
            seen.append(self.name)

        def __exit__(self, *exc):
            return False

    x = flow.randn(4, 3, requires_grad=True)
    checkpoint(lambda a: a.sin().sum(), x, use_reentrant=False,
               context_fn=lambda: (Tag("forward"), Tag("recompute"))).backward()
    assert seen == ["forward", "recompute"]
    with pytest.raises(ValueError, match="only supported when use_reentrant=False"):
        checkpoint(lambda a: a.sin().sum(), x, use_reentrant=True, context_fn=lambda: (Tag("f"), Tag("r")))

    def changes(state):  # recomputation runs a different graph than the forward did
        def f(a):
            state.append(1)
            return (a * a).sum() if len(state) == 1 else (a[:2] * a[:2]).sum()
        return f

    with pytest.raises(CheckpointError, match="Recomputed values for the following tensors have different metadata"):
        checkpoint(changes([]), x, use_reentrant=False).backward()

    def fewer(state):
        def f(a):
            state.append(1)
            return (a.exp() * a).sum() if len(state) == 1 else (a * 2.0).sum()
        return f

    with pytest.raises(CheckpointError, match="A different number of tensors was saved"):
        checkpoint(fewer([]), x, use_reentrant=False, determinism_check="none").backward()
    with pytest.raises(ValueError, match="determinism_check should be one of"):
        checkpoint(lambda a: a.sum(), x, use_reentrant=False, determinism_check="strict")


def test_non_reentrant_frees_recomputed_values_and_nested_inputs():
    alive = []

    def inner(a):
        b = a.exp()
        alive.append(weakref.ref(b))
        return (b * b).sin()

    x = flow.randn(5, requires_grad=True)
    for _ in range(3):
        y = checkpoint(lambda h: checkpoint(inner, h * h, use_reentrant=False).sum(), x, use_reentrant=False)
        y.backward()
        del y
        gc.collect()
    assert alive and not any(r() for r in alive), "recomputed intermediates must not outlive backward"


def test_autocast_state_is_restored_for_the_recomputation():
    flow.manual_seed(0)
    lin = flow.nn.Linear(8, 8)
    x = np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32)

    def grads(mode):
        xi = flow.tensor(x, requires_grad=True)
        lin.zero_grad()
        with flow.autocast("cpu", dtype=flow.bfloat16):
            def f(t):
                return lin(t).relu()

            y = f(xi) if mode is None else checkpoint(f, xi, use_reentrant=mode)
        assert y.dtype == flow.bfloat16
        y.float().sum().backward()
        return xi.grad.numpy(), lin.weight.grad.numpy()

    plain = grads(None)
    for mode in (True, False):
        for a, b in zip(grads(mode), plain):
            np.testing.assert_array_equal(a, b)


def test_changing_an_input_in_place_before_backward_is_an_error():
    x = flow.randn(4, requires_grad=True)
    h = x * 1
    y = checkpoint(lambda a: a.exp().sum(), h, use_reentrant=False)
    with flow.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*input of a checkpointed region"):
        y.backward()

    def doubles(a):
        a.mul_(2)
        return a.exp().sum()

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        checkpoint(doubles, x * 1, use_reentrant=False).backward()


def test_autograd_grad_inside_the_region_matches_torch():
    xs = np.array([0.3, -0.7, 1.1, 0.2], np.float32)
    res = []
    for lib, ck in ((flow, checkpoint), (torch, torch.utils.checkpoint.checkpoint)):
        x = lib.tensor(xs, requires_grad=True)
        w = lib.tensor(np.float32(1.5), requires_grad=True)

        def f(a):
            du, = lib.autograd.grad(((a * w).tanh() * a).sum(), a, create_graph=True)
            return (du * du).sum()

        ck(f, x, use_reentrant=False).backward()
        res.append((x.grad.numpy(), w.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("use_reentrant", [True, False])
def test_recomputing_names_the_region_being_recomputed(use_reentrant):
    from oneflow.utils.checkpoint import recomputing

    seen = []

    def region(name):
        def f(x):
            seen.append((name, recomputing()))
            return x.sin() * 2

        return f

    x = flow.randn(3, requires_grad=True)
    y = checkpoint(region("b"), checkpoint(region("a"), x, use_reentrant=use_reentrant), use_reentrant=use_reentrant)
    assert seen == [("a", None), ("b", None)]  # the forward is no recomputation
    y.sum().backward()
    assert recomputing() is None
    rerun = dict(seen[2:])
    assert sorted(rerun) == ["a", "b"] and all(isinstance(r, int) for r in rerun.values())
    assert rerun["a"] != rerun["b"]  # each recomputation its own id
