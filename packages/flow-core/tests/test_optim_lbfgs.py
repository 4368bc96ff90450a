"""optim.LBFGS against torch.optim.LBFGS: parameter trajectories, closure-evaluation counts and state on
Rosenbrock (float64, with and without the strong-Wolfe line search) and a small regression (float32)."""
import copy

import numpy as np
import pytest
import torch

import oneflow as flow


def rosenbrock(lib, xy):
    x, y = xy[0], xy[1]
    return (1 - x) ** 2 + 100 * (y - x ** 2) ** 2


def run_rosenbrock(lib, steps, **kw):
    P = flow.nn.Parameter if lib is flow else torch.nn.Parameter
    xy = P(lib.tensor([-1.5, 2.0], dtype=lib.float64))
    opt = lib.optim.LBFGS([xy], **kw)

    def closure():
        opt.zero_grad()
        loss = rosenbrock(lib, xy)
        loss.backward()
        return loss

    traj, losses = [], []
    for _ in range(steps):
        losses.append(float(opt.step(closure).detach()))
        traj.append(xy.detach().numpy().copy())
    return np.array(traj), losses, opt


@pytest.mark.parametrize("kw", [dict(line_search_fn="strong_wolfe"), dict(lr=0.5, max_iter=7),
                                dict(line_search_fn="strong_wolfe", history_size=3, max_iter=5),
                                dict(lr=0.2, max_iter=4, max_eval=3)])
def test_rosenbrock_trajectory_matches_torch(kw):
    ft, fl, fo = run_rosenbrock(flow, 6, **kw)
    tt, tl, to = run_rosenbrock(torch, 6, **kw)
    # the same iterates up to summation order (dot products), which Rosenbrock amplifies to ~1e-8
    np.testing.assert_allclose(ft, tt, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(fl, tl, rtol=1e-6, atol=1e-10)
    fs, ts = fo.state[fo._params[0]], to.state[to.param_groups[0]["params"][0]]
    assert fs["func_evals"] == ts["func_evals"] and fs["n_iter"] == ts["n_iter"]
    assert len(fs["old_dirs"]) == len(ts["old_dirs"])
    if kw == dict(line_search_fn="strong_wolfe"):
        assert np.abs(ft[-1] - 1).max() < 1e-3  # converges to the minimum (1, 1)


def test_regression_float32_and_state_dict_round_trip():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((64, 5)).astype(np.float32)
    y = (X @ rng.standard_normal(5) + 0.3).astype(np.float32)

    def setup(lib):
        lib.manual_seed(0)
        model = lib.nn.Linear(5, 1)
        with lib.no_grad():
            model.weight.copy_(lib.tensor(np.full((1, 5), 0.1, np.float32)))
            model.bias.zero_()
        opt = lib.optim.LBFGS(model.parameters(), line_search_fn="strong_wolfe", max_iter=5)
        Xt, yt = lib.tensor(X), lib.tensor(y)

        def closure():
            opt.zero_grad()
            loss = ((model(Xt).squeeze(1) - yt) ** 2).mean()
            loss.backward()
            return loss
        return model, opt, closure

    fm, fo, fc = setup(flow)
    tm, to, tc = setup(torch)
    for _ in range(2):
        fo.step(fc)
        to.step(tc)
    np.testing.assert_allclose(fm.weight.detach().numpy(), tm.weight.detach().numpy(), rtol=1e-4, atol=1e-5)
    # a fresh optimizer loaded from the state dict continues exactly like the original
    fm2 = copy.deepcopy(fm)
    fo2 = flow.optim.LBFGS(fm2.parameters(), line_search_fn="strong_wolfe", max_iter=5)
    fo2.load_state_dict(fo.state_dict())
    Xt, yt = flow.tensor(X), flow.tensor(y)

    def fc2():
        fo2.zero_grad()
        loss = ((fm2(Xt).squeeze(1) - yt) ** 2).mean()
        loss.backward()
        return loss
    fo.step(fc)
    fo2.step(fc2)
    np.testing.assert_array_equal(fm2.weight.detach().numpy(), fm.weight.detach().numpy())


def test_errors_match_torch():
    p = flow.nn.Parameter(flow.zeros(2))
    with pytest.raises(ValueError, match="doesn't support per-parameter options"):
        flow.optim.LBFGS([{"params": [p]}, {"params": [flow.nn.Parameter(flow.zeros(1))]}])
    with pytest.raises(ValueError, match="Invalid learning rate"):
        flow.optim.LBFGS([p], lr=-1)
    opt = flow.optim.LBFGS([p], line_search_fn="backtracking")

    def closure():
        opt.zero_grad()
        loss = ((p - 1) ** 2).sum()
        loss.backward()
        return loss
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(closure)
