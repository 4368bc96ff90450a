"""Mixed precision: oneflow.autocast against torch.autocast('cpu', bfloat16), and oneflow.amp.GradScaler
against torch.amp.GradScaler('cpu')."""
import copy
import pickle
import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import oneflow as flow
import oneflow.nn.functional as FF
from helpers import assert_close, to_np

rng = np.random.default_rng(0)


def arr(*shape, dtype=np.float32, low=None):
    a = rng.standard_normal(shape)
    if low is not None:
        a = rng.uniform(low, 1.0 - low, shape)
    return a.astype(dtype)


def both(a, dtype=None):
    """(flow tensor, torch tensor) of array a, cast to `dtype` ('bfloat16', 'float64', ...) if given."""
    f, t = flow.tensor(a), torch.tensor(a)
    if dtype is not None:
        f, t = f.to(getattr(flow, dtype)), t.to(getattr(torch, dtype))
    return f, t


def run_both(fn, arrays, dtypes=None, dtype="bfloat16"):
    dtypes = dtypes or [None] * len(arrays)
    fins, tins = zip(*[both(a, d) for a, d in zip(arrays, dtypes)])
    with flow.autocast("cpu", dtype=getattr(flow, dtype)):
        fo = fn(flow, FF, *fins)
    with torch.autocast("cpu", dtype=getattr(torch, dtype)):
        to = fn(torch, TF, *tins)
    return fo, to


def check_same(fo, to, rtol=2e-2, atol=2e-2):
    fo = fo if isinstance(fo, (tuple, list)) else (fo,)
    to = to if isinstance(to, (tuple, list)) else (to,)
    for f, t in zip(fo, to):
        assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (f.dtype, t.dtype)
        if t.dtype.is_floating_point:
            assert_close(f, t, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(to_np(f), to_np(t))


# ---- op families: same inputs -> same output dtype (and close values) as torch's CPU autocast ----------
LONG = np.array([1, 0, 3, 2], dtype=np.int64)

CASES = {
    # lower precision
    "mm": (lambda m, F, a, b: m.mm(a, b), [arr(4, 8), arr(8, 3)], None),
    "mm_f64": (lambda m, F, a, b: m.mm(a, b), [arr(4, 8), arr(8, 3)], ["float64", "float64"]),
    "mm_int": (lambda m, F, a, b: m.mm(a, b), [np.arange(6).reshape(2, 3), np.arange(6).reshape(3, 2)], None),
    "mm_bf16_fp32": (lambda m, F, a, b: m.mm(a, b), [arr(4, 8), arr(8, 3)], ["bfloat16", None]),
    "mm_transposed": (lambda m, F, a, b: m.mm(a.t(), b), [arr(8, 4), arr(8, 3)], None),
    "bmm": (lambda m, F, a, b: m.bmm(a, b), [arr(2, 4, 8), arr(2, 8, 3)], None),
    "addmm": (lambda m, F, c, a, b: m.addmm(c, a, b), [arr(3), arr(4, 8), arr(8, 3)], None),
    "baddbmm": (lambda m, F, c, a, b: m.baddbmm(c, a, b, beta=0.5, alpha=2.0),
                [arr(2, 4, 3), arr(2, 4, 8), arr(2, 8, 3)], None),
    "matmul_2d": (lambda m, F, a, b: m.matmul(a, b), [arr(4, 8), arr(8, 3)], None),
    "matmul_1d": (lambda m, F, a, b: m.matmul(a, b), [arr(8), arr(8)], None),
    "matmul_batched": (lambda m, F, a, b: m.matmul(a, b), [arr(2, 3, 4, 8), arr(8, 5)], None),
    "matmul_op": (lambda m, F, a, b: a @ b, [arr(4, 8), arr(8, 3)], None),
    "linear_2d": (lambda m, F, x, w, b: F.linear(x, w, b), [arr(4, 8), arr(5, 8), arr(5)], None),
    "linear_3d": (lambda m, F, x, w, b: F.linear(x, w, b), [arr(2, 4, 8), arr(5, 8), arr(5)], None),
    "linear_nobias": (lambda m, F, x, w: F.linear(x, w), [arr(2, 4, 8), arr(5, 8)], None),
    "conv1d": (lambda m, F, x, w, b: F.conv1d(x, w, b, padding=1), [arr(2, 3, 9), arr(4, 3, 3), arr(4)], None),
    "conv2d": (lambda m, F, x, w, b: F.conv2d(x, w, b, stride=2), [arr(2, 3, 8, 8), arr(4, 3, 3, 3), arr(4)], None),
    "conv3d": (lambda m, F, x, w: F.conv3d(x, w), [arr(1, 2, 5, 5, 5), arr(3, 2, 2, 2, 2)], None),
    "conv_transpose2d": (lambda m, F, x, w, b: F.conv_transpose2d(x, w, b, stride=2),
                         [arr(2, 3, 4, 4), arr(3, 2, 3, 3), arr(2)], None),
    "einsum": (lambda m, F, a, b: m.einsum("ij,jk->ik", a, b), [arr(4, 8), arr(8, 3)], None),
    "sdpa": (lambda m, F, q, k, v: F.scaled_dot_product_attention(q, k, v),
             [arr(1, 2, 4, 8), arr(1, 2, 5, 8), arr(1, 2, 5, 8)], None),
    "sdpa_causal": (lambda m, F, q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                    [arr(1, 2, 4, 8), arr(1, 2, 4, 8), arr(1, 2, 4, 8)], None),
    # not listed: run in the given dtypes
    "outer": (lambda m, F, a, b: m.outer(a, b), [arr(4), arr(3)], None),
    "mv": (lambda m, F, a, b: m.mv(a, b), [arr(4, 3), arr(3)], None),
    "dot": (lambda m, F, a, b: m.dot(a, b), [arr(5), arr(5)], None),
    "add_mixed": (lambda m, F, a, b: a + b, [arr(4), arr(4)], ["bfloat16", None]),
    "softmax_bf16": (lambda m, F, a: m.softmax(a, -1), [arr(3, 5)], ["bfloat16"]),
    "log_softmax_bf16": (lambda m, F, a: F.log_softmax(a, -1), [arr(3, 5)], ["bfloat16"]),
    "sum_bf16": (lambda m, F, a: a.sum(), [arr(3, 5)], ["bfloat16"]),
    "relu_fp32": (lambda m, F, a: m.relu(a), [arr(3, 5)], None),
    "layer_norm_bf16": (lambda m, F, a: F.layer_norm(a, (5,)), [arr(3, 5)], ["bfloat16"]),
    "avg_pool2d_bf16": (lambda m, F, a: F.avg_pool2d(a, 2), [arr(1, 2, 4, 4)], ["bfloat16"]),
    "max_pool2d_bf16": (lambda m, F, a: F.max_pool2d(a, 2), [arr(1, 2, 4, 4)], ["bfloat16"]),
    "adaptive_avg_pool2d_bf16": (lambda m, F, a: F.adaptive_avg_pool2d(a, 2), [arr(1, 2, 4, 4)], ["bfloat16"]),
    "pad_constant_bf16": (lambda m, F, a: F.pad(a, (1, 1)), [arr(1, 2, 4, 4)], ["bfloat16"]),
    "pad_circular_bf16": (lambda m, F, a: F.pad(a, (1, 1, 1, 1), mode="circular"), [arr(1, 2, 4, 4)], ["bfloat16"]),
    "pad_reflect3d_bf16": (lambda m, F, a: F.pad(a, (1,) * 6, mode="reflect"), [arr(1, 2, 4, 4, 4)], ["bfloat16"]),
    # float32
    "prod": (lambda m, F, a: a.prod(), [arr(6)], ["bfloat16"]),
    "prod_dim": (lambda m, F, a: m.prod(a, 1), [arr(3, 4)], ["bfloat16"]),
    "mse_loss": (lambda m, F, a, b: F.mse_loss(a, b), [arr(4, 3), arr(4, 3)], ["bfloat16", "bfloat16"]),
    "mse_loss_none": (lambda m, F, a, b: F.mse_loss(a, b, reduction="none"), [arr(4, 3), arr(4, 3)],
                      ["bfloat16", None]),
    "l1_loss": (lambda m, F, a, b: F.l1_loss(a, b), [arr(4, 3), arr(4, 3)], ["bfloat16", "bfloat16"]),
    "smooth_l1_loss": (lambda m, F, a, b: F.smooth_l1_loss(a, b), [arr(4, 3), arr(4, 3)], ["bfloat16", "bfloat16"]),
    "huber_loss": (lambda m, F, a, b: F.huber_loss(a, b), [arr(4, 3), arr(4, 3)], ["bfloat16", "bfloat16"]),
    "nll_loss": (lambda m, F, a, t: F.nll_loss(a, t), [arr(4, 5), LONG], ["bfloat16", None]),
    "cross_entropy": (lambda m, F, a, t: F.cross_entropy(a, t), [arr(4, 5), LONG], ["bfloat16", None]),
    "cross_entropy_smooth": (lambda m, F, a, t: F.cross_entropy(a, t, label_smoothing=0.1), [arr(4, 5), LONG],
                             ["bfloat16", None]),
    "cross_entropy_probs": (lambda m, F, a, t: F.cross_entropy(a, t.softmax(1)), [arr(4, 5), arr(4, 5)],
                            ["bfloat16", "bfloat16"]),
    "kl_div": (lambda m, F, a, b: F.kl_div(a, b, reduction="batchmean"), [arr(4, 5), arr(4, 5, low=0.1)],
               ["bfloat16", "bfloat16"]),
    "bce": (lambda m, F, a, b: F.binary_cross_entropy(a, b), [arr(4, 3, low=0.1), arr(4, 3, low=0.1)],
            ["bfloat16", "bfloat16"]),
    "bce_logits": (lambda m, F, a, b: F.binary_cross_entropy_with_logits(a, b), [arr(4, 3), arr(4, 3, low=0.1)],
                   ["bfloat16", "bfloat16"]),
    "avg_pool3d": (lambda m, F, a: F.avg_pool3d(a, 2), [arr(1, 2, 4, 4, 4)], ["bfloat16"]),
    "max_pool3d": (lambda m, F, a: F.max_pool3d(a, 2), [arr(1, 2, 4, 4, 4)], ["bfloat16"]),
    "adaptive_avg_pool3d": (lambda m, F, a: F.adaptive_avg_pool3d(a, 2), [arr(1, 2, 4, 4, 4)], ["bfloat16"]),
    "adaptive_max_pool3d": (lambda m, F, a: F.adaptive_max_pool3d(a, 2), [arr(1, 2, 4, 4, 4)], ["bfloat16"]),
    "pad_reflect1d": (lambda m, F, a: F.pad(a, (1, 2), mode="reflect"), [arr(2, 3, 6)], ["bfloat16"]),
    "pad_reflect2d": (lambda m, F, a: F.pad(a, (1, 1, 2, 1), mode="reflect"), [arr(1, 2, 4, 4)], ["bfloat16"]),
    "pad_replicate": (lambda m, F, a: F.pad(a, (1, 1, 1, 1), mode="replicate"), [arr(1, 2, 4, 4)], ["bfloat16"]),
    "pad_replicate3d": (lambda m, F, a: F.pad(a, (1,) * 6, mode="replicate"), [arr(1, 2, 3, 3, 3)], ["bfloat16"]),
    # promote
    "cat_mixed": (lambda m, F, a, b: m.cat([a, b]), [arr(2, 3), arr(1, 3)], ["bfloat16", None]),
    "cat_bf16": (lambda m, F, a, b: m.cat([a, b], 1), [arr(2, 3), arr(2, 1)], ["bfloat16", "bfloat16"]),
    "cat_f64": (lambda m, F, a, b: m.cat([a, b]), [arr(2, 3), arr(1, 3)], ["float64", "bfloat16"]),
    "stack_mixed": (lambda m, F, a, b: m.stack([a, b]), [arr(2, 3), arr(2, 3)], [None, "bfloat16"]),
    "index_copy": (lambda m, F, a, i, s: m.index_copy(a, 0, i, s),
                   [arr(4, 2), np.array([0, 2]), arr(2, 2)], [None, None, "bfloat16"]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_dtype_and_value_vs_torch(name):
    fn, arrays, dtypes = CASES[name]
    fo, to = run_both(fn, arrays, dtypes)
    check_same(fo, to)


@pytest.mark.parametrize("name", ["mm", "linear_3d", "conv2d", "mse_loss", "cat_mixed", "avg_pool3d"])
def test_float16_autocast_vs_torch(name):
    fn, arrays, dtypes = CASES[name]
    fo, to = run_both(fn, arrays, dtypes and [d and d.replace("bfloat16", "float16") for d in dtypes],
                      dtype="float16")
    check_same(fo, to)


def test_promote_rejects_other_low_precision_type():
    a, b = flow.randn(2, 3).bfloat16(), flow.randn(2, 3).half()
    with flow.autocast("cpu", dtype=flow.bfloat16):
        with pytest.raises(RuntimeError, match="cat"):
            flow.cat([a, b])


def test_outside_region_nothing_is_cast():
    a, b = flow.randn(3, 4), flow.randn(4, 2)
    assert flow.mm(a, b).dtype == flow.float32
    with flow.autocast("cpu"):
        assert flow.mm(a, b).dtype == flow.bfloat16
    assert flow.mm(a, b).dtype == flow.float32
    assert flow.mm(a.bfloat16(), b.bfloat16()).dtype == flow.bfloat16


def test_inplace_and_out_variants_are_not_autocast():
    x = flow.randn(3, 4)
    with flow.autocast("cpu"):
        y = x.clone()
        y.mul_(2.0)
        assert y.dtype == flow.float32
        y.add_(x.bfloat16())
        assert y.dtype == flow.float32


# ---- autograd through the casts -------------------------------------------------------------------------
def _mlp(m, F, x, w1, b1, w2, b2, y):
    h = m.relu(F.linear(x, w1, b1))
    out = F.linear(h, w2, b2)
    return F.mse_loss(out, y)


@pytest.mark.parametrize("backward_inside", [False, True])
def test_gradients_of_float32_leaves(backward_inside):
    arrays = [arr(6, 8), arr(16, 8) * 0.3, arr(16), arr(4, 16) * 0.3, arr(4), arr(6, 4)]
    fins = [flow.tensor(a) for a in arrays]
    tins = [torch.tensor(a) for a in arrays]
    for t in fins[1:5] + tins[1:5]:
        t.requires_grad_(True)
    with flow.autocast("cpu", dtype=flow.bfloat16):
        fl = _mlp(flow, FF, *fins)
        if backward_inside:
            fl.backward()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        tl = _mlp(torch, TF, *tins)
        if backward_inside:
            tl.backward()
    if not backward_inside:
        fl.backward()
        tl.backward()
    assert fl.dtype == flow.float32 and tl.dtype == torch.float32
    assert_close(fl, tl, rtol=2e-2, atol=2e-2)
    for f, t in zip(fins[1:5], tins[1:5]):
        assert f.grad is not None and f.grad.dtype == flow.float32
        assert_close(f.grad, t.grad, rtol=5e-2, atol=5e-2)


def test_conv_gradients_vs_torch():
    x, w, b = arr(2, 3, 6, 6), arr(4, 3, 3, 3) * 0.3, arr(4)
    fins = [flow.tensor(a).requires_grad_(True) for a in (x, w, b)]
    tins = [torch.tensor(a).requires_grad_(True) for a in (x, w, b)]
    with flow.autocast("cpu"):
        fo = FF.conv2d(*fins, padding=1)
        fl = (fo.float() ** 2).mean()
    with torch.autocast("cpu"):
        to = TF.conv2d(*tins, padding=1)
        tl = (to.float() ** 2).mean()
    assert fo.dtype == flow.bfloat16
    fl.backward()
    tl.backward()
    for f, t in zip(fins, tins):
        assert f.grad.dtype == flow.float32
        assert_close(f.grad, t.grad, rtol=5e-2, atol=2e-2)


def test_cast_is_recorded_by_autograd():
    a = flow.randn(3, 4, requires_grad=True)
    b = flow.randn(4, 2, requires_grad=True)
    with flow.autocast("cpu"):
        y = flow.mm(a, b)
    assert y.dtype == flow.bfloat16 and y.requires_grad and y.grad_fn is not None
    y.float().sum().backward()
    assert a.grad.dtype == flow.float32 and b.grad.dtype == flow.float32
    expected_a = np.broadcast_to(to_np(b.bfloat16()).sum(1), (3, 4))
    np.testing.assert_allclose(to_np(a.grad), expected_a, rtol=2e-2, atol=2e-2)


def test_no_grad_region_still_casts():
    a, b = flow.randn(3, 4, requires_grad=True), flow.randn(4, 2)
    with flow.no_grad(), flow.autocast("cpu"):
        y = flow.mm(a, b)
    assert y.dtype == flow.bfloat16 and not y.requires_grad


# ---- the weight cache -----------------------------------------------------------------------------------
class _CountCasts(flow._dispatch.DispatchMode):
    def __init__(self):
        self.casts = 0

    def __flow_dispatch__(self, op, inputs, attrs):
        if op.name == "to_dtype":
            self.casts += 1
        return op.redispatch(inputs, attrs)


@pytest.mark.parametrize("cache", [True, False])
def test_cast_cache_of_leaf_parameters(cache):
    w = flow.randn(4, 4, requires_grad=True)
    x = flow.randn(2, 4)
    counter = _CountCasts()
    with flow.autocast("cpu", cache_enabled=cache):
        with counter:
            y1 = flow.mm(x, w)
            y2 = flow.mm(x, w)
    # x (not a parameter) is cast every time; w once with the cache, twice without
    assert counter.casts == (3 if cache else 4)
    (y1.float().sum() + y2.float().sum()).backward()
    np.testing.assert_allclose(to_np(w.grad), 2 * np.broadcast_to(to_np(x.bfloat16()).sum(0)[:, None], (4, 4)),
                               rtol=2e-2, atol=2e-2)


def test_cache_sees_in_place_updates_and_clears_on_exit():
    w = flow.ones(2, 2, requires_grad=True)
    x = flow.ones(1, 2)
    with flow.autocast("cpu"):
        assert to_np(flow.mm(x, w)).tolist() == [[2.0, 2.0]]
        with flow.no_grad():
            w.mul_(3.0)
        assert to_np(flow.mm(x, w)).tolist() == [[6.0, 6.0]]
    with flow.no_grad():
        w.fill_(1.0)
    with flow.autocast("cpu"):
        assert to_np(flow.mm(x, w)).tolist() == [[2.0, 2.0]]


# ---- regions: nesting, enabled=False, decorator, state -------------------------------------------------
def test_state_functions_match_torch():
    assert flow.is_autocast_enabled("cpu") is False
    assert flow.get_autocast_dtype("cpu") == flow.bfloat16
    with flow.autocast("cpu"):
        assert flow.is_autocast_enabled("cpu") is True
        assert flow.is_autocast_enabled() is torch.is_autocast_enabled()  # no argument: 'cuda', as in torch
        assert flow.amp.is_autocast_enabled("cpu")
    assert not flow.is_autocast_enabled("cpu")
    assert flow.autocast is flow.amp.autocast
    assert flow.is_autocast_available("cpu")


def test_nested_regions():
    a, b = flow.randn(3, 4), flow.randn(4, 2)
    with flow.autocast("cpu"):
        assert flow.mm(a, b).dtype == flow.bfloat16
        with flow.autocast("cpu", enabled=False):
            assert not flow.is_autocast_enabled("cpu")
            assert flow.mm(a, b).dtype == flow.float32
            with flow.autocast("cpu", dtype=flow.float16):
                assert flow.get_autocast_dtype("cpu") == flow.float16
                assert flow.mm(a, b).dtype == flow.float16
            assert flow.mm(a, b).dtype == flow.float32
        assert flow.mm(a, b).dtype == flow.bfloat16
        assert flow.get_autocast_dtype("cpu") == flow.bfloat16
    assert flow.mm(a, b).dtype == flow.float32


def test_exception_restores_state():
    with pytest.raises(ValueError):
        with flow.autocast("cpu", dtype=flow.float16):
            raise ValueError("boom")
    assert not flow.is_autocast_enabled("cpu")
    assert flow.get_autocast_dtype("cpu") == flow.bfloat16


def test_decorator_form():
    @flow.autocast("cpu")
    def f(a, b):
        assert flow.is_autocast_enabled("cpu")
        return flow.mm(a, b)

    @flow.autocast("cpu", enabled=False)
    def g(a, b):
        return flow.mm(a, b)

    a, b = flow.randn(3, 4), flow.randn(4, 2)
    assert f(a, b).dtype == flow.bfloat16
    assert f.__name__ == "f"
    assert not flow.is_autocast_enabled("cpu")
    with flow.autocast("cpu"):
        assert g(a, b).dtype == flow.float32
    with pytest.raises(TypeError, match="requires a callable"):
        flow.autocast("cpu")(3)


def test_bad_arguments_like_torch():
    with pytest.raises(ValueError, match="device_type"):
        flow.autocast(0)
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        flow.autocast("tpu")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ctx = flow.autocast("cpu", dtype=flow.float32)
    assert any("not supported. Disabling autocast" in str(x.message) for x in w)
    with ctx:
        assert not flow.is_autocast_enabled("cpu")
        assert flow.mm(flow.randn(2, 2), flow.randn(2, 2)).dtype == flow.float32
    if not flow._C.cuda_is_built():
        with pytest.warns(UserWarning, match="Disabling autocast"):
            c = flow.autocast("cuda")
        with c:
            assert not flow.is_autocast_enabled("cuda")


def test_thread_local():
    import threading

    seen = []
    with flow.autocast("cpu"):
        t = threading.Thread(target=lambda: seen.append(flow.mm(flow.randn(2, 2), flow.randn(2, 2)).dtype))
        t.start()
        t.join()
    assert seen == [flow.float32]


# ---- GradScaler vs torch.amp.GradScaler("cpu") ---------------------------------------------------------
class TinySGD:
    """A minimal optimizer with param_groups (the GradScaler contract), for either framework."""

    def __init__(self, params, lr):
        self.param_groups = [{"params": list(params), "lr": lr}]
        self.steps = 0

    def step(self):
        self.steps += 1
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is not None:
                    p.data.sub_(p.grad * g["lr"])
        return "stepped"

    def zero_grad(self):
        for g in self.param_groups:
            for p in g["params"]:
                p.grad = None


def _scaler_run(mod, scaler_cls, bad_steps, n_steps=9, clip=False, **kw):
    w0 = np.linspace(-1, 1, 6).astype(np.float32).reshape(2, 3)
    x = np.linspace(0.5, 1.5, 12).astype(np.float32).reshape(4, 3)
    w = mod.tensor(w0, requires_grad=True)
    xt = mod.tensor(x)
    opt = TinySGD([w], lr=0.1)
    scaler = scaler_cls("cpu", **kw)
    history = []
    for step in range(n_steps):
        opt.zero_grad()
        loss = (mod.matmul(xt, w.t()) ** 2).mean()
        scaler.scale(loss).backward()
        if step in bad_steps:
            w.grad[0, 1] = float("inf") if step % 2 else float("nan")
        if clip:
            scaler.unscale_(opt)
            norm = float((w.grad ** 2).sum() ** 0.5)
            grad_after_unscale = w.grad.detach().clone()
        r = scaler.step(opt)
        scaler.update()
        history.append((scaler.get_scale(), scaler._get_growth_tracker(), r, opt.steps,
                        to_np(w).copy(), norm if clip else None, to_np(grad_after_unscale) if clip else None))
    return history, scaler


@pytest.mark.parametrize("clip", [False, True])
def test_grad_scaler_matches_torch(clip):
    kw = dict(init_scale=2.0**10, growth_factor=4.0, backoff_factor=0.25, growth_interval=3)
    bad = {1, 2, 6}
    fh, fs = _scaler_run(flow, flow.amp.GradScaler, bad, clip=clip, **kw)
    th, ts = _scaler_run(torch, torch.amp.GradScaler, bad, clip=clip, **kw)
    assert fs.state_dict() == ts.state_dict()
    for f, t in zip(fh, th):
        assert f[0] == t[0] and f[1] == t[1] and f[2] == t[2] and f[3] == t[3], (f[:4], t[:4])
        np.testing.assert_allclose(f[4], t[4], rtol=1e-5, atol=1e-6)
        if clip:
            if np.isfinite(t[5]):
                np.testing.assert_allclose(f[5], t[5], rtol=1e-5)
            else:
                assert not np.isfinite(f[5])
            np.testing.assert_allclose(f[6], t[6], rtol=1e-5, atol=1e-6)


def test_grad_scaler_scale_values_over_steps():
    kw = dict(init_scale=8.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2)
    fh, _ = _scaler_run(flow, flow.amp.GradScaler, {3}, n_steps=6, **kw)
    assert [h[0] for h in fh] == [8.0, 16.0, 16.0, 8.0, 8.0, 16.0]
    assert [h[2] for h in fh] == ["stepped", "stepped", "stepped", None, "stepped", "stepped"]


def test_grad_scaler_scale_outputs_and_errors():
    s = flow.amp.GradScaler("cpu", init_scale=4.0)
    assert s.get_scale() == 4.0 and s.is_enabled()
    x = flow.ones(2)
    out = s.scale([x, (x, x)])
    assert isinstance(out, list) and isinstance(out[1], tuple)
    assert to_np(out[1][0]).tolist() == [4.0, 4.0]
    with pytest.raises(ValueError, match="outputs must be a Tensor"):
        s.scale(3)
    w = flow.ones(2, requires_grad=True)
    opt = TinySGD([w], lr=1.0)
    s.scale((w * 2).sum()).backward()
    s.unscale_(opt)
    assert to_np(w.grad).tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="already been called"):
        s.unscale_(opt)
    s.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        s.step(opt)
    with pytest.raises(RuntimeError, match="after step"):
        s.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure"):
        s.step(opt, closure=lambda: 0)
    s.update(new_scale=16.0)
    assert s.get_scale() == 16.0
    s.update(flow.tensor(32.0))
    assert s.get_scale() == 32.0
    with pytest.raises(AssertionError, match="No inf checks"):
        s.update()
    fresh = flow.amp.GradScaler("cpu")
    with pytest.raises(AssertionError, match="_scale is None"):
        fresh.step(opt)
    with pytest.raises(AssertionError, match="growth factor"):
        flow.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="backoff factor"):
        flow.amp.GradScaler("cpu", backoff_factor=1.0)


def test_grad_scaler_fp16_grads_rejected_by_unscale():
    w = flow.ones(2, dtype=flow.float16, requires_grad=True)
    opt = TinySGD([w], lr=1.0)
    s = flow.amp.GradScaler("cpu")
    s.scale(w.float().sum()).backward()
    with pytest.raises(ValueError, match="FP16 gradients"):
        s.unscale_(opt)


def test_grad_scaler_default_device_is_cpu():
    s = flow.amp.GradScaler()
    assert s.is_enabled() and s.get_scale() == 2.0**16
    assert to_np(s.scale(flow.ones(1))).tolist() == [65536.0]
    if not flow._C.cuda_is_built():
        with pytest.warns(UserWarning, match="CUDA is not available"):
            assert not flow.amp.GradScaler("cuda").is_enabled()


def test_grad_scaler_disabled():
    s = flow.amp.GradScaler("cpu", enabled=False)
    x = flow.ones(2)
    assert s.scale(x) is x
    assert s.get_scale() == 1.0 and not s.is_enabled() and s.state_dict() == {}
    w = flow.ones(2, requires_grad=True)
    opt = TinySGD([w], lr=1.0)
    w.sum().backward()
    assert s.step(opt) == "stepped"
    s.update()
    s.load_state_dict({})


def test_grad_scaler_state_dict_round_trip():
    kw = dict(init_scale=8.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=3)
    _, fs = _scaler_run(flow, flow.amp.GradScaler, {1}, n_steps=4, **kw)
    _, ts = _scaler_run(torch, torch.amp.GradScaler, {1}, n_steps=4, **kw)
    sd = fs.state_dict()
    assert sd == ts.state_dict()
    assert sd == {"scale": 4.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3,
                  "_growth_tracker": 2}
    s2 = flow.amp.GradScaler("cpu")
    s2.load_state_dict(sd)
    assert s2.state_dict() == sd and s2.get_scale() == 4.0
    s3 = pickle.loads(pickle.dumps(fs))
    assert s3.state_dict() == sd
    copy.deepcopy(s2)
    # a scaler restored mid-run continues like the original: one more clean step grows the scale
    w = flow.ones(2, requires_grad=True)
    opt = TinySGD([w], 1.0)
    s2.scale(w.sum()).backward()
    s2.step(opt)
    s2.update()
    assert s2.get_scale() == 8.0 and s2._get_growth_tracker() == 0
    with pytest.raises(RuntimeError, match="empty"):
        s2.load_state_dict({})
    # a torch state dict loads too (same keys)
    ts.load_state_dict({"scale": 4.0, "growth_factor": 3.0, "backoff_factor": 0.25, "growth_interval": 7,
                        "_growth_tracker": 2})
    s2.load_state_dict(ts.state_dict())
    assert s2.state_dict() == ts.state_dict()


def test_autocast_with_grad_scaler_training_loop():
    """A short loop in the documented pattern: loss falls, parameters stay float32."""
    rs = np.random.default_rng(3)
    X = flow.tensor(rs.standard_normal((32, 6)).astype(np.float32))
    Y = X @ flow.tensor(rs.standard_normal((6, 1)).astype(np.float32))
    w = flow.zeros(1, 6, requires_grad=True)
    b = flow.zeros(1, requires_grad=True)
    opt = TinySGD([w, b], lr=0.05)
    scaler = flow.amp.GradScaler("cpu", init_scale=2.0**8)
    losses = []
    for _ in range(40):
        opt.zero_grad()
        with flow.autocast("cpu"):
            loss = FF.mse_loss(FF.linear(X, w, b), Y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(float(loss))
    assert losses[-1] < 0.2 * losses[0]
    assert w.dtype == flow.float32 and w.grad.dtype == flow.float32


# ---- custom_fwd / custom_bwd for custom autograd Functions ----------------------------------------------
class _MyMM(flow.autograd.Function):
    @staticmethod
    @flow.amp.custom_fwd(device_type="cpu", cast_inputs=flow.float32)
    def forward(ctx, a, b):
        assert not flow.is_autocast_enabled("cpu")
        ctx.save_for_backward(a, b)
        return a.mm(b)

    @staticmethod
    @flow.amp.custom_bwd(device_type="cpu")
    def backward(ctx, g):
        assert not flow.is_autocast_enabled("cpu")
        a, b = ctx.saved_tensors
        return g.mm(b.t()), a.t().mm(g)


class _MyMMAutocast(flow.autograd.Function):
    @staticmethod
    @flow.amp.custom_fwd(device_type="cpu")
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a.mm(b)

    @staticmethod
    @flow.amp.custom_bwd(device_type="cpu")
    def backward(ctx, g):
        assert flow.is_autocast_enabled("cpu")  # runs with the state its forward saw
        a, b = ctx.saved_tensors
        return g.mm(b.t()), a.t().mm(g)


def test_custom_fwd_bwd():
    a = flow.randn(3, 4, requires_grad=True)
    b = flow.randn(4, 2, requires_grad=True)
    with flow.autocast("cpu"):
        out = _MyMM.apply(a.bfloat16(), b)
        assert out.dtype == flow.float32
        out2 = _MyMMAutocast.apply(a, b)
        assert out2.dtype == flow.bfloat16
    (out.sum() + out2.float().sum()).backward()
    assert a.grad.dtype == flow.float32 and b.grad.dtype == flow.float32
    with pytest.raises(ValueError, match="device_type"):
        flow.amp.custom_fwd(device_type=1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_unscale_kernel(dtype):
    from oneflow.amp import grad_scaler as gs

    a = np.array([[1.0, -2.0, 4.0], [8.0, 0.5, 0.25]], dtype=np.float32)
    g1 = flow.tensor(a).to(getattr(flow, dtype))
    g2 = flow.tensor(a).to(getattr(flow, dtype)).t()  # non-contiguous
    big = flow.ones(100003).to(getattr(flow, dtype))
    found = flow.zeros(())
    v = g1._version if hasattr(g1, "_version") else None
    gs._non_finite_check_and_unscale_([g1, g2, big], found, flow.tensor(0.5))
    assert float(found) == 0.0
    np.testing.assert_allclose(to_np(g1), a * 0.5)
    np.testing.assert_allclose(to_np(g2), a.T * 0.5)
    assert float(big.float().sum()) == 0.5 * 100003
    if v is not None:
        assert g1._version > v
    for bad in (float("inf"), float("-inf"), float("nan")):
        big[77777] = bad
        found = flow.zeros(())
        gs._non_finite_check_and_unscale_([g1, big], found, flow.tensor(1.0))
        assert float(found) == 1.0


def test_static_grad_scaler_scales_by_a_constant_and_never_skips():
    w = flow.nn.Parameter(flow.tensor([1.0, 2.0]))
    opt = flow.optim.SGD([w], lr=0.5)
    scaler = flow.amp.StaticGradScaler(8.0)
    assert isinstance(scaler, flow.amp.GradScaler) and scaler.get_scale() == 8.0
    loss = (w * w).sum()
    scaled = scaler.scale(loss)
    assert scaled.item() == 8.0 * loss.item()
    scaled.backward()
    np.testing.assert_array_equal(w.grad.numpy(), [16.0, 32.0])  # d(8 w^2)/dw
    scaler.unscale_(opt)
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 4.0])
    scaler.step(opt)
    scaler.update()
    np.testing.assert_array_equal(w.detach().numpy(), [0.0, 0.0])
    assert scaler.get_scale() == 8.0
    opt.zero_grad()
    # an inf gradient is not skipped (OneFlow's static loss scale checks nothing) and the scale stays
    (scaler.scale(w.sum()) * float("inf")).backward()
    scaler.step(opt)
    scaler.update()
    assert not np.isfinite(w.detach().numpy()).any()
    assert scaler.get_scale() == 8.0
    assert scaler.state_dict() == {"scale": 8.0}
    other = flow.amp.StaticGradScaler(1.0)
    other.load_state_dict(scaler.state_dict())
    assert other.get_scale() == 8.0
    with pytest.raises(RuntimeError, match="scale of a static scaler is fixed"):
        scaler.update(4.0)
    with pytest.raises(ValueError, match="scale_factor must be > 0"):
        flow.amp.StaticGradScaler(0.0)
    with pytest.raises(TypeError, match="scale_factor must be a number"):
        flow.amp.StaticGradScaler("8")
