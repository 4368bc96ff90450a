"""oneflow.optim.lr_scheduler against torch.optim.lr_scheduler: lr (and momentum) sequences over 40 steps for
every scheduler and several parameter sets, state_dict round trips, OneFlow's WarmupLR against its formula."""
import copy
import math
import warnings

import numpy as np
import pytest
import torch

import oneflow as flow

FS, TS = flow.optim.lr_scheduler, torch.optim.lr_scheduler
STEPS = 40


def make_opt(lib, kind="SGD"):
    P = flow.nn.Parameter if lib is flow else torch.nn.Parameter
    mk = (lambda: P(flow.zeros(2))) if lib is flow else (lambda: P(torch.zeros(2)))
    groups = [{"params": [mk()]}, {"params": [mk()], "lr": 0.05}]
    if kind == "SGD":
        return lib.optim.SGD(groups, lr=0.1, momentum=0.9)
    return lib.optim.Adam(groups, lr=0.1)


class Scale:
    """A callable object (its state is saved by LambdaLR.state_dict)."""

    def __init__(self, f):
        self.f = f

    def __call__(self, e):
        return self.f ** e


SCHEDULERS = {
    "lambda": lambda S, o: S.LambdaLR(o, lambda e: 0.95 ** e),
    "lambda_list": lambda S, o: S.LambdaLR(o, [lambda e: 1.0 / (e + 1), Scale(0.9)]),
    "multiplicative": lambda S, o: S.MultiplicativeLR(o, lambda e: 0.9 if e % 2 else 0.99),
    "step": lambda S, o: S.StepLR(o, 7, gamma=0.5),
    "step_default": lambda S, o: S.StepLR(o, 3),
    "multistep": lambda S, o: S.MultiStepLR(o, [5, 12, 12, 20], gamma=0.3),
    "constant": lambda S, o: S.ConstantLR(o),
    "constant2": lambda S, o: S.ConstantLR(o, factor=0.5, total_iters=10),
    "linear": lambda S, o: S.LinearLR(o),
    "linear2": lambda S, o: S.LinearLR(o, start_factor=0.1, end_factor=0.9, total_iters=12),
    "exponential": lambda S, o: S.ExponentialLR(o, 0.9),
    "cosine": lambda S, o: S.CosineAnnealingLR(o, T_max=10, eta_min=0.001),
    "cosine2": lambda S, o: S.CosineAnnealingLR(o, T_max=7),
    "warm_restarts": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=0.01),
    "warm_restarts2": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=7),
    "onecycle": lambda S, o: S.OneCycleLR(o, max_lr=1.0, total_steps=STEPS),
    "onecycle_linear3": lambda S, o: S.OneCycleLR(o, max_lr=[1.0, 0.5], epochs=4, steps_per_epoch=10,
                                                  anneal_strategy="linear", three_phase=True, pct_start=0.25),
    "onecycle_nomom": lambda S, o: S.OneCycleLR(o, max_lr=0.3, total_steps=STEPS, cycle_momentum=False,
                                                div_factor=10.0, final_div_factor=100.0),
    "polynomial": lambda S, o: S.PolynomialLR(o, total_iters=20, power=2.0),
    "polynomial_default": lambda S, o: S.PolynomialLR(o),
    "sequential": lambda S, o: S.SequentialLR(o, [S.LinearLR(o, 0.1, total_iters=5), S.ExponentialLR(o, 0.9)],
                                              milestones=[5]),
    "sequential3": lambda S, o: S.SequentialLR(
        o, [S.ConstantLR(o, 0.5, total_iters=3), S.StepLR(o, 4, 0.5), S.CosineAnnealingLR(o, 10)],
        milestones=[6, 20]),
    "chained": lambda S, o: S.ChainedScheduler([S.ConstantLR(o, 0.5, total_iters=4), S.ExponentialLR(o, 0.9)]),
    "cyclic": lambda S, o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=5),
    "cyclic_tri2": lambda S, o: S.CyclicLR(o, [0.01, 0.02], [0.1, 0.3], step_size_up=4, step_size_down=7,
                                           mode="triangular2", base_momentum=0.7, max_momentum=0.95),
    "cyclic_exp": lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=3, mode="exp_range", gamma=0.97),
    "cyclic_fn": lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=6, scale_fn=Scale(0.9),
                                         scale_mode="iterations", cycle_momentum=False),
}


def lrs(opt, key="lr"):
    return [g[key] for g in opt.param_groups]


def assert_seq_close(a, b):
    np.testing.assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=1e-12,
                               atol=1e-15)


def run_pair(name, kind="SGD", steps=STEPS):
    fo, to = make_opt(flow, kind), make_opt(torch, kind)
    fs, ts = SCHEDULERS[name](FS, fo), SCHEDULERS[name](TS, to)
    mkey = "momentum" if kind == "SGD" else "betas"
    assert_seq_close(fs.get_last_lr(), ts.get_last_lr())
    for _ in range(steps - 1 if name.startswith("onecycle") else steps):
        fo.step()
        to.step()
        fs.step()
        ts.step()
        assert_seq_close(fs.get_last_lr(), ts.get_last_lr())
        assert_seq_close(lrs(fo), lrs(to))
        assert lrs(fo, mkey) == lrs(to, mkey)
    return fo, to, fs, ts


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_sequence_matches_torch(name):
    run_pair(name)


@pytest.mark.parametrize("name", ["onecycle", "onecycle_linear3", "cosine", "sequential", "cyclic_tri2"])
def test_sequence_matches_torch_adam(name):
    run_pair(name, kind="Adam")


def test_state_dict_keys_match_torch():
    for name in ["step", "multistep", "cosine", "onecycle", "warm_restarts", "linear", "lambda_list", "cyclic",
                 "cyclic_fn"]:
        fo, to = make_opt(flow), make_opt(torch)
        fsd = SCHEDULERS[name](FS, fo).state_dict()
        tsd = SCHEDULERS[name](TS, to).state_dict()
        assert sorted(fsd) == sorted(tsd), name


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_state_dict_round_trip(name):
    fo = make_opt(flow)
    fs = SCHEDULERS[name](FS, fo)
    for _ in range(15):
        fo.step()
        fs.step()
    sd = copy.deepcopy(fs.state_dict())
    osd = fo.state_dict()
    fo2 = make_opt(flow)
    fs2 = SCHEDULERS[name](FS, fo2)
    fo2.load_state_dict(osd)
    fs2.load_state_dict(sd)
    assert getattr(fs2, "last_epoch", None) == getattr(fs, "last_epoch", None)
    for _ in range(STEPS - 16):
        fo.step()
        fo2.step()
        fs.step()
        fs2.step()
        assert fs2.get_last_lr() == fs.get_last_lr()
        assert lrs(fo2) == lrs(fo)


def test_lambda_state_dict_saves_callable_objects():
    o = make_opt(flow)
    s = FS.LambdaLR(o, [lambda e: 1.0, Scale(0.9)])
    sd = s.state_dict()
    assert sd["lr_lambdas"][0] is None and sd["lr_lambdas"][1] == {"f": 0.9}
    o2 = make_opt(flow)
    s2 = FS.LambdaLR(o2, [lambda e: 1.0, Scale(0.5)])
    s2.load_state_dict(sd)
    assert s2.lr_lambdas[1].f == 0.9


@pytest.mark.parametrize("kw", [dict(), dict(mode="max", threshold_mode="abs", threshold=0.1),
                                dict(patience=2, factor=0.5, cooldown=2, min_lr=[0.01, 0.02]),
                                dict(mode="max", patience=0, eps=0.2)])
def test_reduce_on_plateau(kw):
    fo, to = make_opt(flow), make_opt(torch)
    fs, ts = FS.ReduceLROnPlateau(fo, **kw), TS.ReduceLROnPlateau(to, **kw)
    rng = np.random.RandomState(1)
    metrics = np.concatenate([np.linspace(1, 0.5, 8), 0.5 + 0.01 * rng.rand(30)])
    for i, m in enumerate(metrics):
        fs.step(m)
        ts.step(torch.tensor(m) if i % 2 else m)
        assert fs.get_last_lr() == ts.get_last_lr()
        assert lrs(fo) == lrs(to)
    sd = fs.state_dict()
    fo2 = make_opt(flow)
    fs2 = FS.ReduceLROnPlateau(fo2)
    fs2.load_state_dict(copy.deepcopy(sd))
    assert fs2.best == fs.best and fs2.num_bad_epochs == fs.num_bad_epochs and fs2.mode == fs.mode
    better = 0.1 if fs.mode == "min" else 10.0
    fs.step(flow.tensor(better))  # a 0-dim tensor metric works too
    assert fs.best == pytest.approx(better)


def test_step_with_epoch_uses_closed_form():
    fo, to = make_opt(flow), make_opt(torch)
    fs, ts = FS.StepLR(fo, 3, gamma=0.5), TS.StepLR(to, 3, gamma=0.5)
    fo.step()
    to.step()
    for e in [4, 9, 2]:
        with pytest.warns(UserWarning, match="epoch parameter"):
            fs.step(e)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ts.step(e)
        assert fs.get_last_lr() == ts.get_last_lr()
    fs2, ts2 = FS.CosineAnnealingWarmRestarts(fo, T_0=4, T_mult=2), TS.CosineAnnealingWarmRestarts(to, T_0=4, T_mult=2)
    for e in [0.5, 3.2, 13.7, 5]:
        fs2.step(e)
        ts2.step(e)
        assert_seq_close(fs2.get_last_lr(), ts2.get_last_lr())


def test_errors():
    o = make_opt(flow)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        FS.StepLR(object(), 3)
    with pytest.raises(KeyError, match="initial_lr"):
        FS.StepLR(make_opt(flow), 3, last_epoch=4)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        FS.LambdaLR(o, [lambda e: 1.0])
    with pytest.raises(ValueError, match="Constant multiplicative factor"):
        FS.ConstantLR(o, factor=2.0)
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        FS.LinearLR(o, start_factor=0)
    with pytest.raises(ValueError, match="Expected positive integer T_0"):
        FS.CosineAnnealingWarmRestarts(o, T_0=0)
    with pytest.raises(ValueError, match="You must define either total_steps OR"):
        FS.OneCycleLR(o, max_lr=1.0)
    with pytest.raises(ValueError, match="anneal_strategy must be one of"):
        FS.OneCycleLR(o, max_lr=1.0, total_steps=10, anneal_strategy="exp")
    s = FS.OneCycleLR(make_opt(flow), max_lr=1.0, total_steps=3)
    with pytest.raises(ValueError, match="Tried to step 4 times"):
        for _ in range(4):
            s.optimizer.step()
            s.step()
    with pytest.raises(ValueError, match="Factor should be < 1.0"):
        FS.ReduceLROnPlateau(o, factor=1.0)
    with pytest.raises(ValueError, match="mode foo is unknown"):
        FS.ReduceLROnPlateau(o, mode="foo")
    with pytest.raises(ValueError, match="does not support `ReduceLROnPlateau`"):
        FS.SequentialLR(o, [FS.ReduceLROnPlateau(o), FS.StepLR(o, 2)], milestones=[2])
    with pytest.raises(ValueError, match="number of milestone points"):
        FS.SequentialLR(o, [FS.StepLR(o, 2)], milestones=[2])
    with pytest.raises(ValueError, match="expects at least one scheduler"):
        FS.ChainedScheduler([])
    with pytest.raises(ValueError, match="warmup_method"):
        FS.WarmupLR(o, warmup_method="exp")


def test_warns_when_scheduler_steps_before_optimizer():
    o = make_opt(flow)
    s = FS.StepLR(o, 3)
    with pytest.warns(UserWarning, match=r"before `optimizer.step\(\)`"):
        s.step()


# ---- OneFlow's WarmupLR -----------------------------------------------------------------------------------
def warm_factor(t, factor, iters, method):
    if t >= iters:
        return 1.0
    return factor if method == "constant" else factor + (1 - factor) * t / iters


@pytest.mark.parametrize("method", ["linear", "constant"])
@pytest.mark.parametrize("factor,iters", [(1.0 / 3, 5), (0.1, 10), (0.5, 0)])
def test_warmup_on_optimizer(method, factor, iters):
    o = make_opt(flow)
    s = FS.WarmupLR(o, warmup_factor=factor, warmup_iters=iters, warmup_method=method)
    base = [0.1, 0.05]
    for t in range(STEPS):
        expect = [b * warm_factor(t, factor, iters, method) for b in base]
        assert_seq_close(s.get_last_lr(), expect)
        assert_seq_close(lrs(o), expect)
        o.step()
        s.step()


def test_warmup_defaults():
    o = make_opt(flow)
    s = FS.WarmupLR(o)
    assert s.warmup_factor == 0.3333333333333333 and s.warmup_iters == 5 and s.warmup_method == "linear"


@pytest.mark.parametrize("method", ["linear", "constant"])
@pytest.mark.parametrize("inner,closed", [
    (lambda S, o: S.StepLR(o, 3, gamma=0.5), lambda b, t: b * 0.5 ** (t // 3)),
    (lambda S, o: S.CosineAnnealingLR(o, T_max=20, eta_min=0.001),
     lambda b, t: 0.001 + (b - 0.001) * (1 + math.cos(math.pi * t / 20)) / 2),
    (lambda S, o: S.ExponentialLR(o, 0.9), lambda b, t: b * 0.9 ** t),
])
def test_warmup_wraps_scheduler(method, inner, closed):
    o = make_opt(flow)
    s = FS.WarmupLR(inner(FS, o), warmup_factor=0.2, warmup_iters=7, warmup_method=method)
    for t in range(STEPS):
        expect = [closed(b, t) * warm_factor(t, 0.2, 7, method) for b in (0.1, 0.05)]
        np.testing.assert_allclose(s.get_last_lr(), expect, rtol=1e-10)
        o.step()
        s.step()


def test_warmup_prefix():
    o = make_opt(flow)
    s = FS.WarmupLR(FS.StepLR(o, 3, gamma=0.5), warmup_factor=0.2, warmup_iters=4, warmup_prefix=True)
    for t in range(STEPS):
        inner_t = max(0, t - 4)
        expect = [b * 0.5 ** (inner_t // 3) * warm_factor(t, 0.2, 4, "linear") for b in (0.1, 0.05)]
        np.testing.assert_allclose(s.get_last_lr(), expect, rtol=1e-10)
        o.step()
        s.step()


def test_warmup_state_dict_round_trip():
    o = make_opt(flow)
    s = FS.WarmupLR(FS.CosineAnnealingLR(o, T_max=10), warmup_factor=0.1, warmup_iters=6)
    for _ in range(4):
        o.step()
        s.step()
    sd = copy.deepcopy(s.state_dict())
    o2 = make_opt(flow)
    s2 = FS.WarmupLR(FS.CosineAnnealingLR(o2, T_max=10), warmup_factor=0.1, warmup_iters=6)
    o2.load_state_dict(o.state_dict())
    s2.load_state_dict(sd)
    for _ in range(20):
        o.step()
        o2.step()
        s.step()
        s2.step()
        assert s2.get_last_lr() == s.get_last_lr()
        assert lrs(o2) == lrs(o)


def test_cyclic_errors_match_torch():
    for S, lib in ((FS, flow), (TS, torch)):
        o = make_opt(lib)
        with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
            S.CyclicLR(o, 0.01, 0.1, mode="zigzag")
        with pytest.raises(ValueError, match="base_lr must have the same length"):
            S.CyclicLR(o, [0.01], 0.1)
        P = flow.nn.Parameter(flow.zeros(2)) if lib is flow else torch.nn.Parameter(torch.zeros(2))
        with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
            S.CyclicLR(lib.optim.Adagrad([P]), 0.01, 0.1)
