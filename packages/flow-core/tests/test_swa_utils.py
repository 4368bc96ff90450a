"""oneflow.optim.swa_utils against torch.optim.swa_utils: AveragedModel (SWA, EMA, custom averages,
buffers), update_bn, SWALR."""
import numpy as np
import pytest
import torch
import torch.optim.swa_utils as tswa

import oneflow as flow
import oneflow.optim.swa_utils as fswa
from helpers import to_np


def pair(seed=0):
    """The same small conv + batch-norm + linear model in both frameworks."""
    def build(L):
        L.manual_seed(seed)
        return L.nn.Sequential(L.nn.Conv2d(2, 3, 3, padding=1), L.nn.BatchNorm2d(3), L.nn.ReLU(), L.nn.Flatten(),
                               L.nn.Linear(3 * 4 * 4, 2))
    fm, tm = build(flow), build(torch)
    fm.load_state_dict({k: flow.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    return fm, tm


def train_steps(fm, tm, steps, rng, hook):
    fo = flow.optim.SGD(fm.parameters(), lr=0.1, momentum=0.9)
    to = torch.optim.SGD(tm.parameters(), lr=0.1, momentum=0.9)
    for _ in range(steps):
        x = rng.standard_normal((4, 2, 4, 4)).astype(np.float32)
        for m, o, L in ((fm, fo, flow), (tm, to, torch)):
            o.zero_grad()
            m(L.tensor(x)).square().mean().backward()
            o.step()
        hook()


def assert_same(fa, ta, rtol=1e-5, atol=1e-6):
    fs, ts = fa.state_dict(), ta.state_dict()
    assert list(fs) == list(ts)
    for k in ts:
        np.testing.assert_allclose(to_np(fs[k]).astype(np.float64), ts[k].numpy().astype(np.float64), rtol=rtol,
                                   atol=atol, err_msg=k)


@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema_avg_fn", "swa_avg_fn", "buffers", "swa_multi"])
def test_averaged_model_matches_torch(kind):
    fm, tm = pair()
    kw = {
        "swa": ({}, {}),
        "ema_multi": ({"multi_avg_fn": fswa.get_ema_multi_avg_fn(0.9)},
                      {"multi_avg_fn": tswa.get_ema_multi_avg_fn(0.9)}),
        "ema_avg_fn": ({"avg_fn": fswa.get_ema_avg_fn(0.8)}, {"avg_fn": tswa.get_ema_avg_fn(0.8)}),
        "swa_avg_fn": ({"avg_fn": fswa.get_swa_avg_fn()}, {"avg_fn": tswa.get_swa_avg_fn()}),
        # buffers averaged too: batch-norm statistics, and the integer step count (cast back on copy)
        "buffers": ({"use_buffers": True}, {"use_buffers": True}),
        "swa_multi": ({"multi_avg_fn": fswa.get_swa_multi_avg_fn()}, {"multi_avg_fn": tswa.get_swa_multi_avg_fn()}),
    }[kind]
    fa, ta = fswa.AveragedModel(fm, **kw[0]), tswa.AveragedModel(tm, **kw[1])
    assert int(fa.n_averaged) == 0
    rng = np.random.default_rng(1)

    def update():
        fa.update_parameters(fm)
        ta.update_parameters(tm)

    train_steps(fm, tm, 5, rng, update)
    assert int(fa.n_averaged) == 5
    assert_same(fa, ta)
    # the average is a copy: the source model's parameters are untouched by it and differ from it
    assert not np.allclose(to_np(fa.module[0].weight), to_np(fm[0].weight))
    x = rng.standard_normal((3, 2, 4, 4)).astype(np.float32)
    fa.eval(), ta.eval()
    np.testing.assert_allclose(to_np(fa(flow.tensor(x))), ta(torch.tensor(x)).detach().numpy(), rtol=1e-4, atol=1e-5)


def test_averaged_model_argument_checks_and_no_grad():
    fm, _ = pair()
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        fswa.AveragedModel(fm, avg_fn=fswa.get_swa_avg_fn(), multi_avg_fn=fswa.get_swa_multi_avg_fn())
    fa = fswa.AveragedModel(fm)
    fa.update_parameters(fm)
    fa.update_parameters(fm)
    assert all(p.grad is None for p in fa.parameters())
    assert sorted(fa.state_dict())[-1] == "n_averaged"


def test_update_bn_matches_torch():
    fm, tm = pair(3)
    rng = np.random.default_rng(2)
    batches = [rng.standard_normal((5, 2, 4, 4)).astype(np.float32) for _ in range(4)]
    floader = [(flow.tensor(b), 0) for b in batches]  # (input, label) pairs: the input is taken
    tloader = [(torch.tensor(b), 0) for b in batches]
    fm.eval(), tm.eval()
    bn_f, bn_t = fm[1], tm[1]
    bn_f.momentum = bn_t.momentum = 0.3
    fswa.update_bn(floader, fm)
    tswa.update_bn(tloader, tm)
    assert not fm.training and bn_f.momentum == 0.3
    np.testing.assert_allclose(to_np(bn_f.running_mean), bn_t.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(to_np(bn_f.running_var), bn_t.running_var.numpy(), rtol=1e-5, atol=1e-6)
    assert int(bn_f.num_batches_tracked) == int(bn_t.num_batches_tracked) == 4
    # a model without batch norm is left alone
    lin = flow.nn.Linear(2, 2)
    fswa.update_bn([flow.ones(1, 2)], lin)


@pytest.mark.parametrize("strategy,anneal", [("cos", 3), ("linear", 4), ("cos", 0)])
def test_swalr_matches_torch(strategy, anneal):
    fp = [flow.nn.Parameter(flow.zeros(2)), flow.nn.Parameter(flow.zeros(2))]
    tp = [torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(2))]
    fo = flow.optim.SGD([{"params": fp[:1]}, {"params": fp[1:], "lr": 0.5}], lr=1.0)
    to = torch.optim.SGD([{"params": tp[:1]}, {"params": tp[1:], "lr": 0.5}], lr=1.0)
    fs = fswa.SWALR(fo, swa_lr=[0.05, 0.01], anneal_epochs=anneal, anneal_strategy=strategy)
    ts = tswa.SWALR(to, swa_lr=[0.05, 0.01], anneal_epochs=anneal, anneal_strategy=strategy)
    for _ in range(7):
        assert fs.get_last_lr() == pytest.approx(ts.get_last_lr(), rel=1e-12)
        fo.step(), to.step()
        fs.step(), ts.step()
    assert fs.get_last_lr() == pytest.approx([0.05, 0.01])
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        fswa.SWALR(fo, 0.1, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        fswa.SWALR(fo, 0.1, anneal_epochs=-1)
    with pytest.raises(ValueError, match="swa_lr must have the same length as optimizer.param_groups"):
        fswa.SWALR(fo, [0.1])
