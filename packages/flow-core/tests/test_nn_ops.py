"""nnops family: softmax, normalisation, dropout, embedding, losses, interpolate, pad, attention."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import oneflow as flow
import oneflow.nn.functional as F
from helpers import assert_close, check_vs_torch, gradcheck

rng = np.random.default_rng(0)


def randn(*s, dtype=np.float32):
    return rng.standard_normal(s).astype(dtype)


def f64(a, rg=True):
    t = flow.tensor(np.asarray(a, dtype=np.float64))
    return t.requires_grad_(True) if rg else t


# ---- softmax ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "softmin"])
@pytest.mark.parametrize("shape,dim", [((4, 7), 1), ((4, 7), 0), ((2, 3, 5), 1), ((2, 3, 5), -1), ((6,), 0)])
def test_softmax_vs_torch(fn, shape, dim):
    check_vs_torch(lambda x: getattr(F, fn)(x, dim), lambda x: getattr(TF, fn)(x, dim), [randn(*shape)])


def test_softmax_noncontiguous_and_dtype():
    x = randn(5, 4)
    check_vs_torch(lambda a: F.softmax(a.transpose(0, 1), 1), lambda a: TF.softmax(a.transpose(0, 1), 1), [x])
    out = F.log_softmax(flow.tensor(x), 1, dtype=flow.float64)
    assert_close(out, TF.log_softmax(torch.tensor(x), 1, dtype=torch.float64))
    assert_close(flow.tensor(x).softmax(0), torch.tensor(x).softmax(0))
    assert_close(flow.softmax(flow.tensor(x), 1), torch.softmax(torch.tensor(x), 1))


def test_softmax_edge_cases():
    x = np.array([[-np.inf, 0.0, 1.0], [1000.0, 1000.0, -1000.0]], np.float32)
    assert_close(F.softmax(flow.tensor(x), 1), TF.softmax(torch.tensor(x), 1))
    assert_close(F.log_softmax(flow.tensor(x), 1), TF.log_softmax(torch.tensor(x), 1))
    e = np.zeros((0, 3), np.float32)
    assert tuple(F.softmax(flow.tensor(e), 1).shape) == (0, 3)
    s = np.array(2.5, np.float32)
    assert_close(F.softmax(flow.tensor(s), 0), TF.softmax(torch.tensor(s), 0))
    with pytest.raises(IndexError):
        F.softmax(flow.tensor(randn(2, 3)), 2)
    with pytest.raises(RuntimeError):
        F.softmax(flow.tensor(np.arange(3)), 0)


# (16-bit log_softmax rounds large log-probabilities an ulp or two away from torch's, before and after the
# vectorised passes, so it is left to the float32 case)
@pytest.mark.parametrize("fn,dt", [("softmax", "float32"), ("softmax", "float16"), ("softmax", "bfloat16"),
                                   ("log_softmax", "float32")])
def test_softmax_wide_rows_masked_nan_and_tails(fn, dt):
    """Rows long enough for the vectorised max / exp passes: a causal -inf mask, an all -inf row, a NaN row,
    differences to the max that underflow (the flushed exp tail) and large magnitudes."""
    x = randn(6, 37, 131) * 30
    x[0] = np.where(np.triu(np.ones((37, 131), bool), 1), -np.inf, x[0])
    x[1, 3] = -np.inf
    x[1, 4, 17] = np.nan
    x[2, :, ::3] -= 200.0  # exp(x - max) below float's normal range
    x[3] *= 1000.0
    f, t = flow.tensor(x).to(getattr(flow, dt)), torch.tensor(x).to(getattr(torch, dt))
    tol = dict(rtol=1e-5, atol=1e-6) if dt == "float32" else dict(rtol=1e-2, atol=1e-3)
    assert_close(getattr(F, fn)(f, -1), getattr(TF, fn)(t, -1), **tol)
    if dt == "float32":
        g = randn(6, 37, 131)
        fx, tx = f.clone().requires_grad_(True), t.clone().requires_grad_(True)
        (fg,) = flow.autograd.grad(getattr(F, fn)(fx, -1), [fx], [flow.tensor(g)])
        (tg,) = torch.autograd.grad(getattr(TF, fn)(tx, -1), [tx], [torch.tensor(g)])
        assert_close(fg, tg, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_gradcheck_and_double_backward(fn):
    gradcheck(lambda x: getattr(F, fn)(x, 1), [f64(randn(3, 4))])
    gradcheck(lambda x: getattr(F, fn)(x, 0), [f64(randn(3, 2, 2))])
    # double backward through the fused backward helper, against torch
    x = randn(3, 4)
    w = randn(3, 4)
    fx = flow.tensor(x, dtype=flow.float64).requires_grad_(True)
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    (fg,) = flow.autograd.grad((getattr(F, fn)(fx, 1) * flow.tensor(w, dtype=flow.float64)).sum(), [fx],
                               create_graph=True)
    (tg,) = torch.autograd.grad((getattr(TF, fn)(tx, 1) * torch.tensor(w, dtype=torch.float64)).sum(), [tx],
                                create_graph=True)
    assert_close(fg, tg)
    (fg * fg).sum().backward()
    (tg * tg).sum().backward()
    assert_close(fx.grad, tx.grad, rtol=1e-6, atol=1e-8)


def test_softmax_backward_helper_gradcheck():
    for op in ("_softmax_backward_data", "_log_softmax_backward_data"):
        y = flow.tensor(TF.softmax(torch.randn(3, 4, dtype=torch.float64), 1).numpy())
        if op.startswith("_log"):
            y = flow.tensor(np.log(y.numpy()))
        g = f64(randn(3, 4))
        y.requires_grad_(True)
        gradcheck(lambda a, b: getattr(flow._C.ops, op)(a, b, 1), [g, y])


# ---- batch norm ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 5)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training(shape, affine):
    C = shape[1]
    x = randn(*shape)
    arrays = [x] + ([randn(C), randn(C)] if affine else [])
    rm_f, rv_f = flow.tensor(randn(C)), flow.tensor(np.abs(randn(C)) + 0.5)
    rm_t, rv_t = torch.tensor(rm_f.numpy()), torch.tensor(rv_f.numpy())

    def ff(x, *wb):
        return F.batch_norm(x, rm_f, rv_f, *(wb or (None, None)), training=True, momentum=0.3, eps=1e-3)

    def tf(x, *wb):
        return TF.batch_norm(x, rm_t, rv_t, *(wb or (None, None)), training=True, momentum=0.3, eps=1e-3)

    check_vs_torch(ff, tf, arrays, rtol=1e-4, atol=1e-5)
    assert_close(rm_f, rm_t, rtol=1e-5)
    assert_close(rv_f, rv_t, rtol=1e-5)  # unbiased variance for the running estimate


def test_batch_norm_eval_and_gradcheck():
    x, rm, rv, w, b = randn(3, 4, 2), randn(4), np.abs(randn(4)) + 0.1, randn(4), randn(4)
    check_vs_torch(lambda x, w, b: F.batch_norm(x, flow.tensor(rm), flow.tensor(rv), w, b, training=False),
                   lambda x, w, b: TF.batch_norm(x, torch.tensor(rm), torch.tensor(rv), w, b, training=False),
                   [x, w, b], rtol=1e-4, atol=1e-5)
    gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True),
              [f64(randn(3, 2, 2)), f64(randn(2)), f64(randn(2))])
    gradcheck(lambda x, w: F.batch_norm(x, f64(rm[:2], False), f64(rv[:2], False), w, None, training=False),
              [f64(randn(3, 2)), f64(randn(2))])


def test_batch_norm_noncontiguous_and_errors():
    x = randn(5, 3, 4)
    check_vs_torch(lambda x: F.batch_norm(x.transpose(0, 2), None, None, training=True),
                   lambda x: TF.batch_norm(x.transpose(0, 2), None, None, training=True), [x], rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError):
        F.batch_norm(flow.tensor(randn(1, 3)), None, None, training=True)
    with pytest.raises(RuntimeError):
        F.batch_norm(flow.tensor(randn(2, 3)), None, None, training=False)
    with pytest.raises(RuntimeError):
        F.batch_norm(flow.tensor(randn(2, 3)), None, None, flow.tensor(randn(4)), training=True)


# ---- layer / group / instance norm --------------------------------------------------------------------
@pytest.mark.parametrize("shape,ns", [((4, 6), (6,)), ((2, 3, 4), (3, 4)), ((2, 3, 4), (4,)), ((5,), (5,))])
def test_layer_norm(shape, ns):
    check_vs_torch(lambda x, w, b: F.layer_norm(x, ns, w, b, 1e-4), lambda x, w, b: TF.layer_norm(x, ns, w, b, 1e-4),
                   [randn(*shape), randn(*ns), randn(*ns)], rtol=1e-4, atol=1e-5)
    check_vs_torch(lambda x: F.layer_norm(x, ns), lambda x: TF.layer_norm(x, ns), [randn(*shape)], rtol=1e-4,
                   atol=1e-5)


@pytest.mark.parametrize("L", [8, 37, 256, 1500])
def test_norms_wide_rows_vs_torch(L):
    # rows long enough for the vectorised sums (8 and 32 wide, blocks of 1024), with a mean far from zero
    x = randn(3, 2, L) + 100.0
    w, b = randn(L), randn(L)
    check_vs_torch(lambda x, w, b: F.layer_norm(x, (L,), w, b), lambda x, w, b: TF.layer_norm(x, (L,), w, b),
                   [x, w, b], rtol=1e-4, atol=1e-4)
    check_vs_torch(lambda x: F.group_norm(x, 1), lambda x: TF.group_norm(x, 1), [x], rtol=1e-4, atol=1e-4)
    check_vs_torch(lambda x: F.batch_norm(x, None, None, training=True),
                   lambda x: TF.batch_norm(x, None, None, training=True), [x], rtol=1e-4, atol=1e-4)


def test_layer_norm_nonfinite_rows():
    x = randn(4, 40)
    x[1, 33] = np.nan  # past the 32-wide part of the row
    x[2, 5] = np.inf
    out = F.layer_norm(flow.tensor(x), (40,)).numpy()
    ref = TF.layer_norm(torch.tensor(x), (40,)).numpy()
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    np.testing.assert_allclose(out[[0, 3]], ref[[0, 3]], rtol=1e-5, atol=1e-5)


def test_layer_norm_gradcheck_noncontig_errors():
    gradcheck(lambda x, w, b: F.layer_norm(x, (3,), w, b), [f64(randn(2, 3)), f64(randn(3)), f64(randn(3))])
    x = randn(4, 3)
    check_vs_torch(lambda x: F.layer_norm(x.t(), (4,)), lambda x: TF.layer_norm(x.t(), (4,)), [x], rtol=1e-4,
                   atol=1e-5)
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.layer_norm(flow.tensor(randn(2, 4)), (3,))


@pytest.mark.parametrize("shape,G", [((2, 4, 3), 2), ((3, 6, 2, 2), 3), ((2, 4), 2), ((2, 6, 5), 1)])
def test_group_norm(shape, G):
    C = shape[1]
    check_vs_torch(lambda x, w, b: F.group_norm(x, G, w, b), lambda x, w, b: TF.group_norm(x, G, w, b),
                   [randn(*shape), randn(C), randn(C)], rtol=1e-4, atol=1e-5)


def test_group_norm_gradcheck_errors():
    gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), [f64(randn(2, 4, 3)), f64(randn(4)), f64(randn(4))])
    with pytest.raises(RuntimeError, match="divisible"):
        F.group_norm(flow.tensor(randn(2, 5, 3)), 2)


def test_instance_norm():
    x, w, b = randn(3, 4, 5), randn(4), randn(4)
    check_vs_torch(lambda x, w, b: F.instance_norm(x, weight=w, bias=b),
                   lambda x, w, b: TF.instance_norm(x, weight=w, bias=b), [x, w, b], rtol=1e-4, atol=1e-5)
    rm_f, rv_f = flow.tensor(randn(4)), flow.tensor(np.abs(randn(4)) + 1)
    rm_t, rv_t = torch.tensor(rm_f.numpy()), torch.tensor(rv_f.numpy())
    check_vs_torch(lambda x: F.instance_norm(x, rm_f, rv_f, momentum=0.2),
                   lambda x: TF.instance_norm(x, rm_t, rv_t, momentum=0.2), [x], rtol=1e-4, atol=1e-5)
    assert_close(rm_f, rm_t, rtol=1e-5)
    assert_close(rv_f, rv_t, rtol=1e-5)
    assert_close(F.instance_norm(flow.tensor(x), rm_f, rv_f, use_input_stats=False),
                 TF.instance_norm(torch.tensor(x), rm_t, rv_t, use_input_stats=False), rtol=1e-4, atol=1e-5)


# ---- dropout ------------------------------------------------------------------------------------------
def test_dropout_eval_and_p0():
    x = flow.tensor(randn(4, 5))
    assert F.dropout(x, 0.5, training=False) is x
    assert_close(F.dropout(x, 0.0), x)
    with pytest.raises(ValueError):
        F.dropout(x, 1.5)


def test_dropout_p1_gives_zeros_and_zero_grad():
    x = flow.tensor(randn(4, 5)).requires_grad_(True)
    y = F.dropout(x, 1.0)
    assert np.all(y.detach().numpy() == 0)
    y.sum().backward()
    assert np.all(x.grad.numpy() == 0)


def test_dropout_statistics_and_grad():
    p = 0.3
    x = flow.tensor(np.ones((200, 100), np.float32)).requires_grad_(True)
    y = F.dropout(x, p)
    yn = y.detach().numpy()
    kept = yn != 0
    assert abs(kept.mean() - (1 - p)) < 0.02
    np.testing.assert_allclose(yn[kept], 1 / (1 - p), rtol=1e-6)
    y.sum().backward()
    g = x.grad.numpy()
    np.testing.assert_allclose(g[kept], 1 / (1 - p), rtol=1e-6)
    assert np.all(g[~kept] == 0)


def test_dropout2d_channels():
    x = flow.tensor(np.ones((8, 16, 3, 3), np.float32))
    y = F.dropout2d(x, 0.5).numpy()
    per_channel = y.reshape(8, 16, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    y3 = F.dropout3d(flow.tensor(np.ones((4, 8, 2, 2, 2), np.float32)), 0.5).numpy().reshape(4, 8, 8)
    assert np.all((y3 == 0).all(-1) | (y3 == 2).all(-1))


def test_dropout_seeded():
    flow.manual_seed(3)
    a = F.dropout(flow.tensor(np.ones((50,), np.float32)), 0.5).numpy()
    flow.manual_seed(3)
    b = F.dropout(flow.tensor(np.ones((50,), np.float32)), 0.5).numpy()
    np.testing.assert_array_equal(a, b)


# ---- embedding ----------------------------------------------------------------------------------------
def test_embedding_forward_backward():
    w = randn(10, 4)
    idx = np.array([[1, 2, 1], [9, 0, 2]])
    for kw in ({}, {"padding_idx": 2}, {"padding_idx": -1}, {"scale_grad_by_freq": True}):
        check_vs_torch(lambda w: F.embedding(flow.tensor(idx), w, **kw),
                       lambda w: TF.embedding(torch.tensor(idx), w, **kw), [w])


def test_embedding_gradcheck_and_noncontig():
    gradcheck(lambda w: F.embedding(flow.tensor(np.array([0, 2, 2])), w, padding_idx=1), [f64(randn(3, 2))])
    w = randn(4, 6)
    check_vs_torch(lambda w: F.embedding(flow.tensor(np.array([3, 1])), w.t()),
                   lambda w: TF.embedding(torch.tensor(np.array([3, 1])), w.t()), [w])


def test_embedding_max_norm_and_errors():
    w = randn(6, 3) * 3
    fw, tw = flow.tensor(w), torch.tensor(w)
    idx = np.array([0, 1, 4])
    assert_close(F.embedding(flow.tensor(idx), fw, max_norm=1.0), TF.embedding(torch.tensor(idx), tw, max_norm=1.0),
                 rtol=1e-5)
    assert_close(fw, tw, rtol=1e-5)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(flow.tensor(np.array([6])), flow.tensor(w))
    with pytest.raises(IndexError):
        F.embedding(flow.tensor(np.array([-1])), flow.tensor(w))
    with pytest.raises(RuntimeError):
        F.embedding(flow.tensor(np.array([0.5], np.float32)), flow.tensor(w))


# ---- nll / cross entropy ------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("use_w", [False, True])
@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 2, 3), (4,)])
def test_nll_and_cross_entropy(reduction, use_w, shape):
    C = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    t = rng.integers(0, C, size=tshape)
    if t.ndim:
        t.reshape(-1)[0] = 1  # make ignore_index=1 meaningful
    w = np.abs(randn(C)) + 0.1
    kw = dict(reduction=reduction, ignore_index=1)
    fwk = {"weight": flow.tensor(w)} if use_w else {}
    twk = {"weight": torch.tensor(w)} if use_w else {}
    check_vs_torch(lambda x: F.nll_loss(x, flow.tensor(t), **fwk, **kw),
                   lambda x: TF.nll_loss(x, torch.tensor(t), **twk, **kw), [randn(*shape)], rtol=1e-5, atol=1e-6)
    for ls in (0.0, 0.2):
        check_vs_torch(lambda x: F.cross_entropy(x, flow.tensor(t), label_smoothing=ls, **fwk, **kw),
                       lambda x: TF.cross_entropy(x, torch.tensor(t), label_smoothing=ls, **twk, **kw),
                       [randn(*shape)], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_cross_entropy_prob_targets(reduction):
    x = randn(4, 5, 3)
    p = TF.softmax(torch.randn(4, 5, 3), 1).numpy()
    w = np.abs(randn(5)) + 0.1
    for ls in (0.0, 0.1):
        check_vs_torch(lambda x, p: F.cross_entropy(x, p, weight=flow.tensor(w), reduction=reduction, label_smoothing=ls),
                       lambda x, p: TF.cross_entropy(x, p, weight=torch.tensor(w), reduction=reduction,
                                                     label_smoothing=ls), [x, p], rtol=1e-5, atol=1e-6)


def test_nll_all_ignored_is_nan_and_gradcheck():
    t = np.array([2, 2, 2])
    x = randn(3, 4)
    assert_close(F.nll_loss(flow.tensor(x), flow.tensor(t), ignore_index=2),
                 TF.nll_loss(torch.tensor(x), torch.tensor(t), ignore_index=2))
    assert np.isnan(F.cross_entropy(flow.tensor(x), flow.tensor(t), ignore_index=2).numpy())
    t = np.array([0, 3, 1])
    cw = f64(np.abs(randn(4)), False)
    gradcheck(lambda x: F.cross_entropy(x, flow.tensor(t), weight=cw, label_smoothing=0.1),
              [f64(randn(3, 4))])
    gradcheck(lambda x: F.nll_loss(x, flow.tensor(t), reduction="none"), [f64(randn(3, 4))])


def test_cross_entropy_double_backward():
    x, t = randn(3, 4), np.array([0, 3, 1])
    fx = flow.tensor(x, dtype=flow.float64).requires_grad_(True)
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    (fg,) = flow.autograd.grad(F.cross_entropy(fx, flow.tensor(t)), [fx], create_graph=True)
    (tg,) = torch.autograd.grad(TF.cross_entropy(tx, torch.tensor(t)), [tx], create_graph=True)
    (fg * fg).sum().backward()
    (tg * tg).sum().backward()
    assert_close(fx.grad, tx.grad, rtol=1e-6, atol=1e-9)


def test_nll_noncontiguous_and_errors():
    x = randn(4, 3)
    t = np.array([0, 2, 1])
    check_vs_torch(lambda x: F.cross_entropy(x.t(), flow.tensor(t)), lambda x: TF.cross_entropy(x.t(), torch.tensor(t)),
                   [x])
    with pytest.raises(IndexError, match="out of bounds"):
        F.nll_loss(flow.tensor(randn(3, 4)), flow.tensor(np.array([0, 4, 1])))
    with pytest.raises(IndexError):
        F.cross_entropy(flow.tensor(randn(3, 4)), flow.tensor(np.array([0, -5, 1])))
    with pytest.raises(ValueError, match="batch_size"):
        F.nll_loss(flow.tensor(randn(3, 4)), flow.tensor(np.array([0, 1])))
    with pytest.raises(RuntimeError):
        F.nll_loss(flow.tensor(randn(3, 4, 2)), flow.tensor(np.zeros((3, 3), np.int64)))
    with pytest.raises(RuntimeError, match="weight"):
        F.nll_loss(flow.tensor(randn(3, 4)), flow.tensor(np.array([0, 1, 2])), weight=flow.tensor(randn(3)))
    with pytest.raises(ValueError):
        F.nll_loss(flow.tensor(randn(3, 4)), flow.tensor(np.array([0, 1, 2])), reduction="avg")


# ---- pointwise losses ---------------------------------------------------------------------------------
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("name,kw", [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}),
                                     ("smooth_l1_loss", {"beta": 0.0}), ("huber_loss", {"delta": 0.7})])
def test_regression_losses(name, kw, reduction):
    x, t = randn(4, 5), randn(4, 5)
    check_vs_torch(lambda x, t: getattr(F, name)(x, t, reduction=reduction, **kw),
                   lambda x, t: getattr(TF, name)(x, t, reduction=reduction, **kw), [x, t], rtol=1e-5, atol=1e-6)
    gradcheck(lambda x, t: getattr(F, name)(x, t, reduction=reduction, **kw), [f64(x[:2, :3]), f64(t[:2, :3])])


def test_regression_loss_weight_noncontig_empty():
    x, t, w = randn(3, 4), randn(3, 4), np.abs(randn(3, 4))
    for name in ("mse_loss", "l1_loss"):
        check_vs_torch(lambda x, t: getattr(F, name)(x, t, weight=flow.tensor(w)),
                       lambda x, t: getattr(TF, name)(x, t, weight=torch.tensor(w)), [x, t])
    check_vs_torch(lambda x, t: F.mse_loss(x.t(), t.t()), lambda x, t: TF.mse_loss(x.t(), t.t()), [x, t])
    e = np.zeros((0, 3), np.float32)
    assert np.isnan(F.mse_loss(flow.tensor(e), flow.tensor(e)).numpy())
    assert tuple(F.l1_loss(flow.tensor(e), flow.tensor(e), reduction="none").shape) == (0, 3)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_binary_cross_entropy(reduction):
    x = 1 / (1 + np.exp(-randn(4, 3)))
    x[0, 0], x[0, 1] = 0.0, 1.0  # exercises the -100 clamp
    t = rng.uniform(size=(4, 3)).astype(np.float32)
    w = np.abs(randn(4, 3))
    check_vs_torch(lambda x: F.binary_cross_entropy(x, flow.tensor(t), flow.tensor(w), reduction=reduction),
                   lambda x: TF.binary_cross_entropy(x, torch.tensor(t), torch.tensor(w), reduction=reduction),
                   [x], rtol=1e-5, atol=1e-5)
    xs = 1 / (1 + np.exp(-randn(2, 3).astype(np.float64)))
    gradcheck(lambda x: F.binary_cross_entropy(x, flow.tensor(t[:2].astype(np.float64)), reduction=reduction),
              [f64(xs)])
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        F.binary_cross_entropy(flow.tensor(np.array([1.5], np.float32)), flow.tensor(np.array([1.0], np.float32)))
    with pytest.raises(ValueError):
        F.binary_cross_entropy(flow.tensor(x), flow.tensor(t[:2]))


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_bce_with_logits(reduction):
    x = randn(4, 3) * 30  # large logits: must stay finite
    t = rng.uniform(size=(4, 3)).astype(np.float32)
    w, pw = np.abs(randn(4, 3)), np.abs(randn(3)) + 0.5
    check_vs_torch(lambda x, t: F.binary_cross_entropy_with_logits(x, t, flow.tensor(w), reduction=reduction,
                                                                   pos_weight=flow.tensor(pw)),
                   lambda x, t: TF.binary_cross_entropy_with_logits(x, t, torch.tensor(w), reduction=reduction,
                                                                    pos_weight=torch.tensor(pw)),
                   [x, t], rtol=1e-5, atol=1e-5)
    check_vs_torch(lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction=reduction),
                   lambda x, t: TF.binary_cross_entropy_with_logits(x, t, reduction=reduction), [x, t], rtol=1e-5,
                   atol=1e-5)
    pwt = f64(pw, False)
    gradcheck(lambda x, t: F.binary_cross_entropy_with_logits(x, t, pos_weight=pwt, reduction=reduction),
              [f64(randn(2, 3)), f64(t[:2])])


def test_bce_vectorised_paths_match_torch_on_extreme_inputs():
    # the float32 omp-simd loops (vectorised exp/log, log1p through Goldberg's trick), with a constant target
    # so that the backward skips the target's gradient; 1003 elements end in a scalar tail
    x = (randn(1003) * 12).astype(np.float32)
    x[:8] = [0.0, -0.0, 1e-8, -1e-8, 88.0, -88.0, 1e4, -1e4]
    t = rng.uniform(size=1003).astype(np.float32)
    t[:4] = [0.0, 1.0, 0.0, 1.0]
    with np.errstate(over="ignore"):
        p = (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float32)
    for fname, inp in (("binary_cross_entropy_with_logits", x), ("binary_cross_entropy", p)):
        for reduction in ("none", "mean"):
            fx, tx = flow.tensor(inp, requires_grad=True), torch.tensor(inp, requires_grad=True)
            fl = getattr(F, fname)(fx, flow.tensor(t), reduction=reduction)
            tl = getattr(TF, fname)(tx, torch.tensor(t), reduction=reduction)
            assert_close(fl, tl.detach().numpy(), rtol=2e-5, atol=2e-5)
            fl.sum().backward()
            tl.sum().backward()
            assert_close(fx.grad, tx.grad.numpy(), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("reduction", ["none", "mean", "sum", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    x = TF.log_softmax(torch.randn(3, 4), 1).numpy()
    t = TF.softmax(torch.randn(3, 4), 1).numpy()
    t[0, 0] = 0.0
    if log_target:
        t = np.log(t + 1e-3)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_vs_torch(lambda x, t: F.kl_div(x, t, reduction=reduction, log_target=log_target),
                       lambda x, t: TF.kl_div(x, t, reduction=reduction, log_target=log_target), [x, t],
                       rtol=1e-5, atol=1e-6)


def test_loss_errors():
    with pytest.raises(RuntimeError):
        F.mse_loss(flow.tensor(randn(3)), flow.tensor(randn(4)))
    with pytest.raises(ValueError):
        F.binary_cross_entropy_with_logits(flow.tensor(randn(3)), flow.tensor(randn(2)))


# ---- interpolate --------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,kw", [
    ((2, 3, 5), {"size": 8}), ((2, 3, 5), {"scale_factor": 2}), ((2, 3, 7), {"size": 3}),
    ((1, 2, 4, 5), {"size": (7, 3)}), ((1, 2, 4, 5), {"scale_factor": 1.7}), ((1, 2, 3, 3), {"scale_factor": (2, 3)}),
])
def test_interpolate_nearest(shape, kw):
    check_vs_torch(lambda x: F.interpolate(x, mode="nearest", **kw), lambda x: TF.interpolate(x, mode="nearest", **kw),
                   [randn(*shape)])


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("shape,mode,kw", [
    ((2, 3, 5), "linear", {"size": 9}), ((2, 3, 6), "linear", {"scale_factor": 0.5}),
    ((1, 2, 4, 5), "bilinear", {"size": (7, 3)}), ((1, 2, 4, 5), "bilinear", {"scale_factor": 1.5}),
    ((1, 1, 2, 3, 2), "trilinear", {"size": (3, 4, 5)}),
])
def test_interpolate_linear(shape, mode, kw, align):
    check_vs_torch(lambda x: F.interpolate(x, mode=mode, align_corners=align, **kw),
                   lambda x: TF.interpolate(x, mode=mode, align_corners=align, **kw), [randn(*shape)], rtol=1e-5,
                   atol=1e-5)


def test_interpolate_gradcheck_noncontig_errors():
    gradcheck(lambda x: F.interpolate(x, size=(3, 5), mode="bilinear", align_corners=False), [f64(randn(1, 2, 2, 3))])
    gradcheck(lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), [f64(randn(1, 2, 3))])
    x = randn(1, 2, 5, 4)
    check_vs_torch(lambda x: F.interpolate(x.transpose(2, 3), size=(6, 7), mode="bilinear", align_corners=True),
                   lambda x: TF.interpolate(x.transpose(2, 3), size=(6, 7), mode="bilinear", align_corners=True), [x],
                   rtol=1e-5, atol=1e-5)
    assert_close(F.upsample(flow.tensor(x), scale_factor=2), TF.interpolate(torch.tensor(x), scale_factor=2))
    with pytest.raises(ValueError):
        F.interpolate(flow.tensor(x), size=3, scale_factor=2)
    with pytest.raises(ValueError):
        F.interpolate(flow.tensor(x), size=3, align_corners=True)
    with pytest.raises(NotImplementedError):
        F.interpolate(flow.tensor(x), size=3, mode="linear")


# ---- pad ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("shape,p", [((2, 3, 5), (2, 1)), ((1, 2, 4, 5), (1, 2, 3, 0)),
                                     ((1, 1, 3, 4, 3), (1, 1, 2, 0, 1, 2))])
def test_pad_modes(mode, shape, p):
    check_vs_torch(lambda x: F.pad(x, p, mode=mode), lambda x: TF.pad(x, p, mode=mode), [randn(*shape)])


def test_pad_constant_value_negative_and_gradcheck():
    x = randn(2, 3, 4)
    check_vs_torch(lambda x: F.pad(x, (1, 2), value=3.5), lambda x: TF.pad(x, (1, 2), value=3.5), [x])
    check_vs_torch(lambda x: F.pad(x, (-1, 2, 0, -1)), lambda x: TF.pad(x, (-1, 2, 0, -1)), [x])
    check_vs_torch(lambda x: F.pad(x.transpose(1, 2), (1, 1, 1, 1, 1, 0)),
                   lambda x: TF.pad(x.transpose(1, 2), (1, 1, 1, 1, 1, 0)), [x])
    xi = np.arange(6).reshape(2, 3)
    assert_close(F.pad(flow.tensor(xi), (1, 1), value=7), TF.pad(torch.tensor(xi), (1, 1), value=7))
    for mode in ("reflect", "replicate", "circular"):
        gradcheck(lambda x: F.pad(x, (2, 1, 1, 1), mode=mode), [f64(randn(1, 1, 3, 3))])


def test_pad_errors():
    x = flow.tensor(randn(1, 2, 3))
    with pytest.raises(RuntimeError, match="Padding size"):
        F.pad(x, (3, 0), mode="reflect")
    with pytest.raises(RuntimeError):
        F.pad(x, (1,))
    with pytest.raises(NotImplementedError):
        F.pad(x, (1, 1), mode="bogus")


# ---- attention / normalize ----------------------------------------------------------------------------
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa(causal):
    q, k, v = randn(2, 3, 4, 8), randn(2, 3, 6, 8), randn(2, 3, 6, 5)
    if causal:
        k, v = k[:, :, :4], v[:, :, :4]
    check_vs_torch(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
                   lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=causal), [q, k, v], rtol=1e-4,
                   atol=1e-5)


def test_sdpa_masks():
    q, k, v = randn(2, 4, 8), randn(2, 6, 8), randn(2, 6, 5)
    bm = rng.uniform(size=(4, 6)) > 0.3
    bm[:, 0] = True
    fm = randn(4, 6)
    for m in (bm, fm):
        check_vs_torch(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=flow.tensor(m), scale=0.3),
                       lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor(m), scale=0.3),
                       [q, k, v], rtol=1e-4, atol=1e-5)


def test_normalize():
    x = randn(3, 4)
    check_vs_torch(lambda x: F.normalize(x), lambda x: TF.normalize(x), [x], rtol=1e-5, atol=1e-6)
    check_vs_torch(lambda x: F.normalize(x, p=1, dim=0), lambda x: TF.normalize(x, p=1, dim=0), [x], rtol=1e-5,
                   atol=1e-6)


@pytest.mark.parametrize("ls", [0.0, 0.1])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_wide_rows_grad(ls, weighted):
    """(N, C) rows wide enough for the vectorised fill of nll_loss_backward (unweighted) and its weighted
    strided loop; ignored targets get zero rows."""
    rng = np.random.default_rng(12)
    x = rng.standard_normal((37, 1000)).astype(np.float32)
    t = rng.integers(0, 1000, 37)
    t[[3, 20]] = 7
    w = rng.random(1000).astype(np.float32) + 0.5 if weighted else None
    kw = dict(label_smoothing=ls, ignore_index=7)
    check_vs_torch(lambda a: F.cross_entropy(a, flow.tensor(t), weight=None if w is None else flow.tensor(w), **kw),
                   lambda a: torch.nn.functional.cross_entropy(a, torch.tensor(t),
                                                               weight=None if w is None else torch.tensor(w), **kw),
                   [x], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("padding_idx,freq", [(None, False), (3, False), (None, True)])
def test_embedding_backward_accumulates_like_torch(dt, padding_idx, freq):
    """Repeated indices accumulate, padding rows get no gradient, scale_grad_by_freq divides by counts;
    200 columns span several parallel column blocks; float/double accumulate in the output itself."""
    rng = np.random.default_rng(13)
    w = rng.standard_normal((50, 200)).astype(np.float32)
    idx = rng.integers(0, 50, (7, 33))
    idx[0, :5] = 3
    g = rng.standard_normal((7, 33, 200)).astype(np.float32)
    res = []
    for lib, Fn in ((flow, F), (torch, TF)):
        wt = lib.tensor(w).to(getattr(lib, dt)).requires_grad_(True)
        out = Fn.embedding(lib.tensor(idx), wt, padding_idx=padding_idx, scale_grad_by_freq=freq)
        (gw,) = lib.autograd.grad(out, [wt], [lib.tensor(g).to(getattr(lib, dt))])
        res.append(gw)
    tol = dict(rtol=1e-5, atol=1e-5) if dt in ("float32", "float64") else dict(rtol=2e-2, atol=5e-2)
    assert_close(res[0], res[1], **tol)


@pytest.mark.parametrize("kind", ["layer_norm", "layer_norm_no_affine", "group_norm"])
def test_norm_backward_large_one_pass(kind):
    """Inputs big enough for several thread chunks: input and parameter gradients (accumulated per chunk in
    the same pass over the rows) against torch."""
    rng = np.random.default_rng(14)
    if kind.startswith("layer_norm"):
        x, g = rng.standard_normal((8, 128, 256)), rng.standard_normal((8, 128, 256))
        mods = (flow.nn.LayerNorm(256, elementwise_affine=kind == "layer_norm"),
                torch.nn.LayerNorm(256, elementwise_affine=kind == "layer_norm"))
    else:
        x, g = rng.standard_normal((16, 32, 24, 24)), rng.standard_normal((16, 32, 24, 24))
        mods = (flow.nn.GroupNorm(8, 32), torch.nn.GroupNorm(8, 32))
    params = [rng.standard_normal(tuple(p.shape)).astype(np.float32) for p in mods[1].parameters()]
    res = []
    for lib, m in zip((flow, torch), mods):
        with lib.no_grad():
            for p, v in zip(m.parameters(), params):
                p.copy_(lib.tensor(v))
        xt = lib.tensor(x.astype(np.float32), requires_grad=True)
        grads = lib.autograd.grad(m(xt), [xt] + list(m.parameters()), [lib.tensor(g.astype(np.float32))])
        res.append(grads)
    for a, b in zip(*res):
        assert_close(a, b, rtol=1e-4, atol=1e-4)
