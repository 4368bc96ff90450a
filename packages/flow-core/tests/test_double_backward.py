"""Second derivatives (autograd.grad with create_graph=True, twice) of the norms and pointwise losses:
against torch and against float64 finite differences of the first gradient."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import oneflow as flow
import oneflow.nn.functional as F
from helpers import assert_close, gradcheck, to_np


def _first_grads(lib, fn, inputs, proj):
    """Gradients of sum(fn(*inputs) * proj) w.r.t. every input, keeping their graph."""
    leaves = [x if x.requires_grad else x.detach().requires_grad_(True) for x in inputs]
    out = fn(*leaves)
    loss = (out * lib.tensor(proj, dtype=out.dtype)).sum()
    return lib.autograd.grad(loss, leaves, create_graph=True)


def _second_grads(lib, fn, arrays, proj, vs):
    inputs = [lib.tensor(a).requires_grad_(True) for a in arrays]
    gs = _first_grads(lib, fn, inputs, proj)
    total = sum((g * lib.tensor(v, dtype=g.dtype)).sum() for g, v in zip(gs, vs))
    return gs, lib.autograd.grad(total, inputs, allow_unused=True)


def check_double_backward(flow_fn, torch_fn, arrays, rtol=1e-4, atol=1e-5, fd=True):
    rng = np.random.default_rng(0)
    t_out = torch_fn(*[torch.tensor(a) for a in arrays])
    proj = rng.standard_normal(tuple(t_out.shape))
    vs = [rng.standard_normal(a.shape) for a in arrays]
    f_first, f_second = _second_grads(flow, flow_fn, arrays, proj, vs)
    t_first, t_second = _second_grads(torch, torch_fn, arrays, proj, vs)
    for f, t in zip(f_first, t_first):
        assert_close(f, t, rtol=rtol, atol=atol)
    for f, t in zip(f_second, t_second):
        if t is not None and t._is_zerotensor():  # torch's symbolic zeros (l1 has no curvature)
            t = torch.zeros(t.shape, dtype=t.dtype)
        if t is None:
            assert f is None or np.allclose(to_np(f), 0, atol=atol)
        else:
            assert f is not None, "missing second-order gradient"
            assert_close(f, t, rtol=rtol, atol=atol)
    if fd:  # finite differences of the first gradient (float64)
        gradcheck(lambda *xs: _first_grads(flow, flow_fn, xs, proj),
                  [flow.tensor(a.astype(np.float64)).requires_grad_(True) for a in arrays], atol=1e-4, rtol=1e-3)


R = np.random.default_rng(3)


def randn(*s):
    return R.standard_normal(s)


# ---- norms ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 3), (3, 2, 5), (2, 3, 2, 3)])
def test_batch_norm_training(shape):
    C = shape[1]
    arrays = [randn(*shape), randn(C) + 1.5, randn(C)]
    check_double_backward(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
                          lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True), arrays)


def test_batch_norm_no_affine_float32():
    arrays = [randn(5, 3, 4).astype(np.float32)]
    check_double_backward(lambda x: F.batch_norm(x, None, None, training=True),
                          lambda x: TF.batch_norm(x, None, None, training=True), arrays, rtol=2e-3, atol=2e-3,
                          fd=False)


def test_batch_norm_eval():
    rm, rv = randn(3), np.abs(randn(3)) + 0.5
    arrays = [randn(4, 3, 5), randn(3), randn(3)]
    check_double_backward(
        lambda x, w, b: F.batch_norm(x, flow.tensor(rm), flow.tensor(rv), w, b, training=False),
        lambda x, w, b: TF.batch_norm(x, torch.tensor(rm), torch.tensor(rv), w, b, training=False), arrays)


def test_batch_norm_running_stats_updated_once_with_create_graph():
    rm, rv = flow.zeros(3, dtype=flow.float64), flow.ones(3, dtype=flow.float64)
    x = flow.tensor(randn(6, 3)).requires_grad_(True)
    y = F.batch_norm(x, rm, rv, training=True, momentum=0.5)
    before = to_np(rm).copy()
    (g,) = flow.autograd.grad((y * y * y).sum(), [x], create_graph=True)
    (gg,) = flow.autograd.grad(g.sum(), [x])
    np.testing.assert_array_equal(to_np(rm), before)  # the composite gradient leaves running stats alone
    assert gg.shape == (6, 3)


@pytest.mark.parametrize("ns", [(5,), (2, 5)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(ns, affine):
    arrays = [randn(3, 2, 5)]
    if affine:
        arrays += [randn(*ns) + 1.0, randn(*ns)]
    check_double_backward(lambda x, *p: F.layer_norm(x, ns, *p), lambda x, *p: TF.layer_norm(x, ns, *p), arrays)


def test_layer_norm_whole_tensor_and_transposed():
    check_double_backward(lambda x, w: F.layer_norm(x, (4,), w), lambda x, w: TF.layer_norm(x, (4,), w),
                          [randn(4), randn(4)])
    check_double_backward(lambda x: F.layer_norm(x.transpose(0, 1), (3,)),
                          lambda x: TF.layer_norm(x.transpose(0, 1), (3,)), [randn(3, 4)])


@pytest.mark.parametrize("shape,groups", [((2, 4, 3), 2), ((2, 6, 2, 2), 3), ((3, 4), 4)])
def test_group_norm(shape, groups):
    C = shape[1]
    arrays = [randn(*shape), randn(C) + 1.0, randn(C)]
    check_double_backward(lambda x, w, b: F.group_norm(x, groups, w, b),
                          lambda x, w, b: TF.group_norm(x, groups, w, b), arrays)


def test_first_order_unchanged_without_create_graph():
    # the fused kernels still serve plain backward; their result matches the composite one
    x = randn(4, 3, 5)
    a = flow.tensor(x).requires_grad_(True)
    (g1,) = flow.autograd.grad((F.layer_norm(a, (5,)) ** 2).sum(), [a])
    (g2,) = flow.autograd.grad((F.layer_norm(a, (5,)) ** 2).sum(), [a], create_graph=True)
    assert not g1.requires_grad and g2.requires_grad
    assert_close(g1, g2, rtol=1e-10, atol=1e-12)


# ---- pointwise losses ----------------------------------------------------------------------------------
def _away_from_kinks(x, t, d):
    # keep |x - t| away from the non-differentiable points (0 and the beta/delta threshold) for FD
    z = x - t
    z = np.where(np.abs(z) < 0.1, z + 0.3, z)
    z = np.where(np.abs(np.abs(z) - d) < 0.1, z * 1.3, z)
    return t + z


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name,kw", [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {"beta": 0.7}),
                                     ("huber_loss", {"delta": 0.8})])
def test_regression_losses(name, kw, reduction):
    t = randn(3, 4)
    x = _away_from_kinks(randn(3, 4), t, kw.get("beta", kw.get("delta", 0.0)))
    ff, tf = getattr(F, name), getattr(TF, name)
    check_double_backward(lambda a, b: ff(a, b, reduction=reduction, **kw),
                          lambda a, b: tf(a, b, reduction=reduction, **kw), [x, t])


def test_mse_broadcast_and_float32():
    check_double_backward(lambda a, b: F.mse_loss(a, b.expand(3, 4)), lambda a, b: TF.mse_loss(a, b.expand(3, 4)),
                          [randn(3, 4), randn(1, 4)])
    check_double_backward(lambda a, b: F.mse_loss(a, b, reduction="sum"),
                          lambda a, b: TF.mse_loss(a, b, reduction="sum"),
                          [randn(2, 3).astype(np.float32), randn(2, 3).astype(np.float32)], rtol=1e-4, atol=1e-4,
                          fd=False)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy(reduction):
    x = R.uniform(0.1, 0.9, (3, 4))
    t = R.uniform(0.0, 1.0, (3, 4))
    w = R.uniform(0.5, 1.5, (4,))
    check_double_backward(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction),
                          lambda a, b: TF.binary_cross_entropy(a, b, reduction=reduction), [x, t])
    check_double_backward(lambda a: F.binary_cross_entropy(a, flow.tensor(t), flow.tensor(w), reduction=reduction),
                          lambda a: TF.binary_cross_entropy(a, torch.tensor(t), torch.tensor(w), reduction=reduction),
                          [x])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_binary_cross_entropy_with_logits(reduction):
    x, t = randn(3, 4), R.uniform(0.0, 1.0, (3, 4))
    w, pw = R.uniform(0.5, 1.5, (4,)), R.uniform(0.5, 2.0, (4,))
    check_double_backward(lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=reduction),
                          lambda a, b: TF.binary_cross_entropy_with_logits(a, b, reduction=reduction), [x, t])
    check_double_backward(
        lambda a, b: F.binary_cross_entropy_with_logits(a, b, flow.tensor(w), pos_weight=flow.tensor(pw),
                                                        reduction=reduction),
        lambda a, b: TF.binary_cross_entropy_with_logits(a, b, torch.tensor(w), pos_weight=torch.tensor(pw),
                                                         reduction=reduction), [x, t])


@pytest.mark.parametrize("log_target", [False, True])
@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none"])
def test_kl_div(log_target, reduction):
    x = np.log(R.uniform(0.1, 1.0, (3, 4)))
    t = np.log(R.uniform(0.1, 1.0, (3, 4))) if log_target else R.uniform(0.1, 1.0, (3, 4))
    check_double_backward(lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target),
                          lambda a, b: TF.kl_div(a, b, reduction=reduction, log_target=log_target), [x, t])


# ---- prod / cumprod through zeros ---------------------------------------------------------------------
@pytest.mark.parametrize("name,dim", [("prod", 1), ("prod", None), ("cumprod", 1), ("cumprod", 0)])
def test_prod_cumprod_with_zeros(name, dim):
    a = randn(3, 4)
    a[0, 1] = 0.0
    a[2, 0] = a[2, 3] = 0.0
    if name == "prod":
        ff = (lambda x: flow.prod(x)) if dim is None else (lambda x: flow.prod(x, dim))
        tf = (lambda x: torch.prod(x)) if dim is None else (lambda x: torch.prod(x, dim))
    else:
        ff, tf = (lambda x: flow.cumprod(x, dim)), (lambda x: torch.cumprod(x, dim))
    # finite differences would move the zeros; check against torch, plus FD on a zero-free copy
    check_double_backward(ff, tf, [a], rtol=1e-10, atol=1e-12, fd=False)
    check_double_backward(ff, tf, [np.abs(a) + 0.5], rtol=1e-8, atol=1e-10)
