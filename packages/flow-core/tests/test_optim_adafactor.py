"""Adafactor against torch.optim.Adafactor: parameter and state trajectories (factored matrices and 3-D
parameters, vectors, 0-dim and size-1 dims), options, argument errors, state_dict round trips (also from
torch), strided parameters."""
import copy

import numpy as np
import pytest
import torch

import oneflow as flow
from helpers import step_optimizers

SHAPES = [(5, 7), (3, 4, 6), (9,), (), (1, 1), (2, 1, 3)]


def run_both(kwargs, steps=6, seed=0, shapes=SHAPES, tensor_lr=False):
    return step_optimizers("Adafactor", kwargs, shapes, steps, seed, tensor_lr)


def assert_same(fp, tp, fo, to):
    for a, b in zip(fp, tp):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
        fs, ts = fo.state[a], to.state[b]
        assert set(fs) == set(ts)
        for k in ts:
            assert tuple(fs[k].shape) == tuple(ts[k].shape), k
            np.testing.assert_allclose(fs[k].numpy(), ts[k].numpy(), rtol=1e-5, atol=1e-7, err_msg=k)


@pytest.mark.parametrize("kwargs", [dict(), dict(lr=0.1, weight_decay=0.1),
                                    dict(eps=(1e-5, 1e-2), d=1.5, maximize=True), dict(beta2_decay=-0.5, lr=1e-3)])
@pytest.mark.parametrize("tensor_lr", [False, True])
def test_trajectory_matches_torch(kwargs, tensor_lr):
    if tensor_lr and "lr" not in kwargs:
        kwargs = dict(kwargs, lr=0.05)
    assert_same(*run_both(kwargs, tensor_lr=tensor_lr))


def test_float64_and_strided_parameters():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((6, 4))
    fw = flow.tensor(a.T.copy()).t().detach().requires_grad_()  # a (4, 6)-strided leaf
    assert not fw.is_contiguous()
    tw = torch.tensor(a, requires_grad=True)
    fo, to = flow.optim.Adafactor([fw], lr=0.2), torch.optim.Adafactor([tw], lr=0.2)
    for _ in range(3):
        g = rng.standard_normal((6, 4))
        fw.grad, tw.grad = flow.tensor(g), torch.tensor(g)
        fo.step()
        to.step()
    np.testing.assert_allclose(fw.detach().numpy(), tw.detach().numpy(), rtol=1e-10)
    fd = flow.tensor(a, requires_grad=True)
    fd.grad = flow.ones_like(fd)
    flow.optim.Adafactor([fd]).step()
    assert fd.dtype == flow.float64


@pytest.mark.parametrize("kwargs", [dict(lr=-1.0), dict(beta2_decay=0.5), dict(eps=(-1.0, 1e-3)),
                                    dict(eps=(None, -1.0)), dict(d=0.5), dict(weight_decay=-0.1)])
def test_argument_errors_match_torch(kwargs):
    with pytest.raises(ValueError) as et:
        torch.optim.Adafactor([torch.zeros(2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as ef:
        flow.optim.Adafactor([flow.zeros(2, requires_grad=True)], **kwargs)
    assert str(ef.value) == str(et.value)


def test_state_dict_round_trip_and_from_torch():
    fp, tp, fo, to = run_both(dict(lr=0.05), steps=3)
    sd = copy.deepcopy(fo.state_dict())  # state_dict() holds the live state tensors, as torch's
    fresh = [flow.tensor(p.detach().numpy(), requires_grad=True) for p in fp]
    fo2 = flow.optim.Adafactor(fresh, lr=0.05)
    fo2.load_state_dict(sd)
    # state from torch's optimizer, tensors converted
    tsd = to.state_dict()
    conv = {"state": {k: {n: flow.tensor(v.numpy()) for n, v in st.items()} for k, st in tsd["state"].items()},
            "param_groups": tsd["param_groups"]}
    fresh3 = [flow.tensor(p.detach().numpy(), requires_grad=True) for p in tp]
    fo3 = flow.optim.Adafactor(fresh3, lr=0.05)
    fo3.load_state_dict(conv)
    rng = np.random.default_rng(5)
    grads = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    for opt, params in ((fo, fp), (fo2, fresh), (fo3, fresh3)):
        for p, g in zip(params, grads):
            p.grad = flow.tensor(g)
        opt.step()
    for p, g in zip(tp, grads):
        p.grad = torch.tensor(g)
    to.step()
    for a, b, c, d in zip(fp, fresh, fresh3, tp):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        np.testing.assert_allclose(c.detach().numpy(), d.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_params_without_grad_are_skipped():
    p, q = flow.ones(3, requires_grad=True), flow.ones(2, 2, requires_grad=True)
    opt = flow.optim.Adafactor([p, q])
    p.grad = flow.ones(3)
    opt.step()
    assert q not in opt.state and float(opt.state[p]["step"]) == 1.0
    assert flow.equal(q.detach(), flow.ones(2, 2))
