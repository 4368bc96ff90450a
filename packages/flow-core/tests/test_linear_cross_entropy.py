"""linear_cross_entropy / LinearCrossEntropyLoss (torch 2.13) against torch, on the reference path and the
chunked one (options), and nn.grad's convolution gradients."""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from torch.nn.modules.linear_cross_entropy_options import LinearCrossEntropyOptions as TorchOptions

import oneflow as flow
import oneflow.nn.functional as FF


def both(a, grad=True):
    return flow.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


@pytest.mark.parametrize("chunk", [None, 5, 100])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("case", [dict(), dict(bias=True, weight=True, ignore=3), dict(weight=True)])
def test_matches_torch(chunk, reduction, case):
    rng = np.random.default_rng(0)
    N, I, C = 37, 8, 11
    fx, tx = both(rng.standard_normal((N, I)).astype(np.float32))
    fw, tw = both(rng.standard_normal((C, I)).astype(np.float32))
    fb, tb = both(rng.standard_normal(C).astype(np.float32))
    target = rng.integers(0, C, N)
    target[::7] = case.get("ignore", 0)  # some rows hit the ignored class
    cw = rng.random(C).astype(np.float32)
    common = dict(reduction=reduction, ignore_index=case.get("ignore"))
    f_opts = None if chunk is None else flow.nn.LinearCrossEntropyOptions(batch_chunk_size=chunk)
    lf = FF.linear_cross_entropy(fx, fw, flow.tensor(target), linear_bias=fb if case.get("bias") else None,
                                 weight=flow.tensor(cw) if case.get("weight") else None, options=f_opts, **common)
    lt = TF.linear_cross_entropy(tx, tw, torch.tensor(target), linear_bias=tb if case.get("bias") else None,
                                 weight=torch.tensor(cw) if case.get("weight") else None,
                                 options=None if chunk is None else TorchOptions(batch_chunk_size=chunk), **common)
    np.testing.assert_allclose(lf.detach().numpy(), lt.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = rng.standard_normal(tuple(lt.shape)).astype(np.float32)
    (lf * flow.tensor(g)).sum().backward()
    (lt * torch.tensor(g)).sum().backward()
    pairs = [(fx, tx), (fw, tw)] + ([(fb, tb)] if case.get("bias") else [])
    for a, b in pairs:
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_reference_only_configurations_fall_back_with_a_warning():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((6, 4)).astype(np.float32), rng.standard_normal((5, 4)).astype(np.float32)
    probs = rng.random((6, 5)).astype(np.float32)
    probs /= probs.sum(1, keepdims=True)
    for target, kw in [(probs, {}), (rng.integers(0, 5, 6), dict(label_smoothing=0.1))]:
        with pytest.warns(UserWarning, match="reference implementation"):
            lf = FF.linear_cross_entropy(flow.tensor(x), flow.tensor(w), flow.tensor(target),
                                         options=flow.nn.LinearCrossEntropyOptions(), **kw)
        lt = TF.linear_cross_entropy(torch.tensor(x), torch.tensor(w), torch.tensor(target), **kw)
        np.testing.assert_allclose(lf.numpy(), lt.numpy(), rtol=1e-5)


def test_k_dimensional_and_unbatched():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((5, 2, 4)).astype(np.float32)
    b = rng.standard_normal((5, 2)).astype(np.float32)
    t = rng.integers(0, 5, (3, 2))
    lf = FF.linear_cross_entropy(flow.tensor(x), flow.tensor(w), flow.tensor(t), linear_bias=flow.tensor(b))
    lt = TF.linear_cross_entropy(torch.tensor(x), torch.tensor(w), torch.tensor(t), linear_bias=torch.tensor(b))
    np.testing.assert_allclose(lf.numpy(), lt.numpy(), rtol=1e-5)
    w1 = rng.standard_normal((5, 4)).astype(np.float32)
    lf = FF.linear_cross_entropy(flow.tensor(x[0]), flow.tensor(w1), flow.tensor(2))
    lt = TF.linear_cross_entropy(torch.tensor(x[0]), torch.tensor(w1), torch.tensor(2))
    np.testing.assert_allclose(lf.numpy(), lt.numpy(), rtol=1e-5)


def test_module_matches_torch_and_checks_arguments():
    tm = torch.nn.LinearCrossEntropyLoss(4, 5, bias=True, reduction="sum", ignore_index=1)
    fm = flow.nn.LinearCrossEntropyLoss(4, 5, bias=True, reduction="sum", ignore_index=1)
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    fm.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x, t = np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32), np.array([0, 1, 2, 3, 4, 1])
    np.testing.assert_allclose(fm(flow.tensor(x), flow.tensor(t)).detach().numpy(),
                               tm(torch.tensor(x), torch.tensor(t)).detach().numpy(), rtol=1e-5)
    assert repr(fm).replace("oneflow", "torch") == repr(tm)
    for kw in (dict(weight=flow.ones(3)), dict(label_smoothing=1.5)):
        with pytest.raises(RuntimeError) as ef:
            flow.nn.LinearCrossEntropyLoss(4, 5, **kw)
        tkw = {k: (torch.ones(3) if k == "weight" else v) for k, v in kw.items()}
        with pytest.raises(RuntimeError) as et:
            torch.nn.LinearCrossEntropyLoss(4, 5, **tkw)
        assert str(ef.value) == str(et.value)


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_nn_grad_convolution_gradients(dims):
    rng = np.random.default_rng(dims)
    spatial = (7,) * dims
    x = rng.standard_normal((2, 4) + spatial).astype(np.float32)
    w = rng.standard_normal((6, 2) + (3,) * dims).astype(np.float32)  # groups=2
    kw = dict(stride=2, padding=1, dilation=1, groups=2)
    out = getattr(torch.nn.functional, f"conv{dims}d")(torch.tensor(x), torch.tensor(w), **kw)
    go = rng.standard_normal(tuple(out.shape)).astype(np.float32)
    fi = getattr(flow.nn.grad, f"conv{dims}d_input")(x.shape, flow.tensor(w), flow.tensor(go), **kw)
    ti = getattr(torch.nn.grad, f"conv{dims}d_input")(x.shape, torch.tensor(w), torch.tensor(go), **kw)
    np.testing.assert_allclose(fi.numpy(), ti.numpy(), rtol=1e-4, atol=1e-4)
    fw = getattr(flow.nn.grad, f"conv{dims}d_weight")(flow.tensor(x), w.shape, flow.tensor(go), **kw)
    tw = getattr(torch.nn.grad, f"conv{dims}d_weight")(torch.tensor(x), w.shape, torch.tensor(go), **kw)
    np.testing.assert_allclose(fw.numpy(), tw.numpy(), rtol=1e-4, atol=1e-4)
