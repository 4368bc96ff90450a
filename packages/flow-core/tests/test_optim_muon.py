"""Muon against torch.optim.Muon: parameter and momentum trajectories for wide, tall and square matrices
(the Newton-Schulz iteration runs in bfloat16 in both), options, argument errors, state_dict loading."""
import copy

import numpy as np
import pytest
import torch

import oneflow as flow
from helpers import step_optimizers

SHAPES = [(6, 10), (12, 5), (7, 7)]


def run_both(kwargs, steps=4, tensor_lr=False):
    return step_optimizers("Muon", kwargs, SHAPES, steps, tensor_lr=tensor_lr, default_lr=1e-3)


def assert_same(fp, tp, fo, to):
    for a, b in zip(fp, tp):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(fo.state[a]["momentum_buffer"].numpy(), to.state[b]["momentum_buffer"].numpy(),
                                   rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("kwargs", [dict(), dict(lr=0.02, weight_decay=0.01, nesterov=False),
                                    dict(adjust_lr_fn="match_rms_adamw", momentum=0.9, ns_steps=3),
                                    dict(adjust_lr_fn="original", ns_coefficients=(2.0, -1.5, 0.5), eps=1e-3)])
@pytest.mark.parametrize("tensor_lr", [False, True])
def test_trajectory_matches_torch(kwargs, tensor_lr):
    assert_same(*run_both(kwargs, tensor_lr=tensor_lr))


@pytest.mark.parametrize("kwargs", [dict(lr=-1.0), dict(momentum=-0.5), dict(weight_decay=-1.0),
                                    dict(adjust_lr_fn="nope")])
def test_argument_errors_match_torch(kwargs):
    with pytest.raises(ValueError) as et:
        torch.optim.Muon([torch.zeros(2, 2, requires_grad=True)], **kwargs)
    with pytest.raises(ValueError) as ef:
        flow.optim.Muon([flow.zeros(2, 2, requires_grad=True)], **kwargs)
    assert str(ef.value) == str(et.value)


def test_only_matrices():
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        flow.optim.Muon([flow.zeros(3, requires_grad=True)])
    with pytest.raises(ValueError, match="Muon only supports 2D parameters"):
        torch.optim.Muon([torch.zeros(3, requires_grad=True)])


def test_state_dict_round_trip():
    fp, _, fo, _ = run_both({}, steps=2)
    fresh = [flow.tensor(p.detach().numpy(), requires_grad=True) for p in fp]
    fo2 = flow.optim.Muon(fresh)
    fo2.load_state_dict(copy.deepcopy(fo.state_dict()))
    g = [flow.ones(*s) for s in SHAPES]
    for opt, params in ((fo, fp), (fo2, fresh)):
        for p, gg in zip(params, g):
            p.grad = gg
        opt.step()
    for a, b in zip(fp, fresh):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
