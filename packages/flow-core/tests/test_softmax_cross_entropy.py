"""The fused softmax cross entropy (_softmax_cross_entropy and its backward helper), which the graph compiler
puts in place of log_softmax + nll_loss: values, gradients and second derivatives against the unfused
F.cross_entropy and against PyTorch, for every option the op takes."""
import numpy as np
import pytest
import torch

import oneflow as flow
from oneflow import _C

from helpers import gradcheck

fused = _C.ops._softmax_cross_entropy


def _case(shape, seed=0, dtype=np.float32, ignore=None):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    C = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0],) + tuple(shape[2:])
    t = rng.integers(0, C, size=tshape).astype(np.int64)
    if ignore is not None and t.ndim:
        t.reshape(-1)[::3] = ignore
    w = rng.uniform(0.2, 2.0, size=C).astype(dtype)
    return x, t, w


OPTIONS = [dict(reduction=r, weighted=wt, ignore_index=ig, label_smoothing=eps)
           for r in ("mean", "sum", "none") for wt in (False, True) for ig in (-100, 2) for eps in (0.0, 0.2)]


def _run(x, t, w, opts, use_fused):
    xf = flow.tensor(x, requires_grad=True)
    wf = flow.tensor(w) if opts["weighted"] else None
    kw = dict(reduction=opts["reduction"], ignore_index=opts["ignore_index"])
    if use_fused:
        loss, shift, logsum = fused(xf, flow.tensor(t), wf, label_smoothing=opts["label_smoothing"], **kw)
        assert not shift.requires_grad and not logsum.requires_grad
    else:
        loss = flow.nn.functional.cross_entropy(xf, flow.tensor(t), wf, label_smoothing=opts["label_smoothing"], **kw)
    g = flow.tensor(np.linspace(0.5, 1.5, loss.numel()).astype(x.dtype).reshape(tuple(loss.shape)))
    (gx,) = flow.autograd.grad(loss, xf, g)
    return loss.detach().numpy(), gx.numpy()


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: "-".join(str(v) for v in o.values()))
@pytest.mark.parametrize("shape", [(6, 5), (3, 4, 2, 3), (7,)])
def test_equals_unfused_cross_entropy(shape, opts):
    x, t, w = _case(shape, ignore=opts["ignore_index"] if opts["ignore_index"] >= 0 else None)
    lf, gf = _run(x, t, w, opts, True)
    le, ge = _run(x, t, w, opts, False)
    # the same roundings in the same order as log_softmax, nll_loss and their backward kernels; with both class
    # weights and smoothing the compiler may contract a weighted product into an FMA in one kernel and not the
    # other (one rounding less): within an ulp or two
    if opts["weighted"] and opts["label_smoothing"]:
        np.testing.assert_allclose(lf, le, rtol=1e-6)
        np.testing.assert_allclose(gf, ge, rtol=1e-6, atol=1e-9)
    else:
        np.testing.assert_array_equal(lf, le)
        np.testing.assert_array_equal(gf, ge)
    # and PyTorch's
    xt = torch.tensor(x, requires_grad=True)
    lt = torch.nn.functional.cross_entropy(xt, torch.tensor(t), torch.tensor(w) if opts["weighted"] else None,
                                           reduction=opts["reduction"], ignore_index=opts["ignore_index"],
                                           label_smoothing=opts["label_smoothing"])
    np.testing.assert_allclose(lf, lt.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_row_outputs_and_dtypes():
    x, t, _ = _case((4, 6))
    loss, shift, logsum = fused(flow.tensor(x), flow.tensor(t))
    np.testing.assert_array_equal(shift.numpy(), x.max(1))
    np.testing.assert_allclose((shift + logsum).numpy(), torch.logsumexp(torch.tensor(x), 1).numpy(), rtol=1e-6)
    loss64, s64, l64 = fused(flow.tensor(x.astype(np.float64)), flow.tensor(t))
    assert loss64.dtype == s64.dtype == l64.dtype == flow.float64
    for dt in (flow.bfloat16, flow.float16):
        xb = flow.tensor(x, requires_grad=True)
        xh = xb.to(dt)
        lb, sb, lsb = fused(xh, flow.tensor(t))
        assert lb.dtype == dt and sb.dtype == lsb.dtype == flow.float32  # the rows' normaliser stays float
        (gb,) = flow.autograd.grad(lb, xb)
        xe = flow.tensor(x, requires_grad=True)
        le = flow.nn.functional.cross_entropy(xe.to(dt), flow.tensor(t))
        (ge,) = flow.autograd.grad(le, xe)
        np.testing.assert_array_equal(lb.detach().float().numpy(), le.detach().float().numpy())
        np.testing.assert_array_equal(gb.numpy(), ge.numpy())


def test_non_contiguous_and_extreme_logits():
    x, t, _ = _case((5, 4))
    xs = flow.tensor(np.ascontiguousarray(x.T)).t()  # transposed memory
    assert not xs.is_contiguous()
    np.testing.assert_array_equal(fused(xs, flow.tensor(t))[0].numpy(),
                                  flow.nn.functional.cross_entropy(flow.tensor(x), flow.tensor(t)).numpy())
    big = np.array([[1000.0, -1000.0, 0.0], [-np.inf, 0.0, 1.0]], np.float32)
    tt = np.array([1, 0])
    got = fused(flow.tensor(big), flow.tensor(tt), reduction="none")[0].numpy()
    want = flow.nn.functional.cross_entropy(flow.tensor(big), flow.tensor(tt), reduction="none").numpy()
    np.testing.assert_array_equal(got, want)  # 2000 and inf, exactly


def test_zero_rows_and_all_ignored():
    x = flow.zeros(0, 3, requires_grad=True)
    loss, shift, _ = fused(x, flow.zeros(0, dtype=flow.int64))
    assert np.isnan(loss.detach().numpy()) and shift.shape == (0,)
    (g,) = flow.autograd.grad(loss, x)
    assert g.shape == (0, 3)
    x2 = flow.randn(3, 4, requires_grad=True)
    l2, _, _ = fused(x2, flow.tensor([-100, -100, -100]))
    e2 = flow.nn.functional.cross_entropy(x2, flow.tensor([-100, -100, -100]))
    assert np.isnan(l2.detach().numpy()) and np.isnan(e2.detach().numpy())


def test_errors_name_the_op():
    x = flow.randn(3, 4)
    with pytest.raises(IndexError, match="out of bounds"):
        fused(x, flow.tensor([0, 4, 1]))
    with pytest.raises(ValueError, match="batch_size"):
        fused(x, flow.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="weight tensor"):
        fused(x, flow.tensor([0, 1, 2]), flow.ones(3))
    with pytest.raises(RuntimeError, match="floating point"):
        fused(flow.ones(3, 4, dtype=flow.int64), flow.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="reduction"):
        fused(x, flow.tensor([0, 1, 2]), reduction="avg")


@pytest.mark.parametrize("opts", [dict(reduction="mean", weight=False, eps=0.0),
                                  dict(reduction="none", weight=True, eps=0.1),
                                  dict(reduction="sum", weight=True, eps=0.0)])
def test_double_backward(opts):
    x, t, w = _case((3, 4), dtype=np.float64, ignore=None)
    t[1] = -100
    tt = flow.tensor(t)
    wt = flow.tensor(w) if opts["weight"] else None

    def f(xx):
        return fused(xx, tt, wt, reduction=opts["reduction"], label_smoothing=opts["eps"])[0]

    def first(xx, gg):
        if not xx.requires_grad:  # gradcheck's finite differences call it with plain tensors
            xx = xx.detach().requires_grad_()
        (gx,) = flow.autograd.grad(f(xx), xx, gg, create_graph=True)
        return gx

    x0 = flow.tensor(x, requires_grad=True)
    gshape = (3,) if opts["reduction"] == "none" else ()
    g0 = flow.tensor(np.linspace(0.5, 1.5, int(np.prod(gshape))).reshape(gshape), requires_grad=True)
    gradcheck(first, [x0, g0])
    # second derivatives equal the unfused composite's
    h = flow.tensor(np.random.default_rng(3).standard_normal((3, 4)))
    got = flow.autograd.grad(first(x0, g0), [x0, g0], h)
    xe = flow.tensor(x, requires_grad=True)
    le = flow.nn.functional.cross_entropy(xe, tt, wt, reduction=opts["reduction"], label_smoothing=opts["eps"])
    (ge,) = flow.autograd.grad(le, xe, g0, create_graph=True)
    want = flow.autograd.grad(ge, [xe, g0], h)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)
