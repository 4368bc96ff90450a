"""Parity with torch of lr schedulers (param groups added after construction), nn.init (tail-exact
trunc_normal_, deprecated aliases) and nn.utils (clip_grad_norm_ warnings, vector_to_parameters aliasing,
skip_init/fusion errors, pad_sequence errors, removing a multi-tensor parametrization, weight memory format)."""
import warnings

import numpy as np
import pytest

import oneflow as flow
from helpers import assert_close, torch

FS, TS = flow.optim.lr_scheduler, torch.optim.lr_scheduler


def _sgd(lib):
    groups = [{"params": [lib.nn.Parameter(lib.zeros(2))]}, {"params": [lib.nn.Parameter(lib.zeros(2))], "lr": 0.05}]
    return lib.optim.SGD(groups, lr=0.1, momentum=0.9)


SCHEDULERS = {
    "lambda": lambda S, o: S.LambdaLR(o, lambda e: 0.9 ** e),
    "multiplicative": lambda S, o: S.MultiplicativeLR(o, lambda e: 0.9),
    "cosine": lambda S, o: S.CosineAnnealingLR(o, T_max=4),
    "warm_restarts": lambda S, o: S.CosineAnnealingWarmRestarts(o, T_0=3),
    "cyclic": lambda S, o: S.CyclicLR(o, 0.01, 0.1, step_size_up=2),
    "sequential": lambda S, o: S.SequentialLR(o, [S.LinearLR(o, 0.5, total_iters=2), S.ExponentialLR(o, 0.9)],
                                              milestones=[2]),
    "step": lambda S, o: S.StepLR(o, 2),
}


def _run_with_added_group(lib, S, build, steps=8):
    """lrs after each step, or the exception raised, once a param group is added after construction."""
    opt = _sgd(lib)
    sched = build(S, opt)
    opt.add_param_group({"params": [lib.nn.Parameter(lib.zeros(2))], "lr": 0.3})
    lrs = []
    try:
        for _ in range(steps):
            opt.step()
            sched.step()
            lrs.append([g["lr"] for g in opt.param_groups])
    except Exception as e:  # noqa: BLE001 - the exception itself is compared
        return type(e), str(e)
    return lrs


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_scheduler_param_group_added_later(name):
    # torch zips the lrs with the param groups strictly: a group added later is a ValueError, not ignored
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = _run_with_added_group(flow, FS, SCHEDULERS[name])
        want = _run_with_added_group(torch, TS, SCHEDULERS[name])
    if isinstance(want, tuple):
        assert got == want
    else:
        np.testing.assert_allclose(np.array(got), np.array(want), rtol=1e-12)


def _trunc_stats(lib, dtype, **kw):
    t = lib.nn.init.trunc_normal_(lib.empty(40000, dtype=getattr(lib, dtype)), **kw).double()
    return np.array([t.min().item(), t.max().item(), t.mean().item(), t.std().item()])


@pytest.mark.filterwarnings("ignore:mean is more than 2 std")
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("kw", [dict(a=8.0, b=9.0), dict(a=-9.0, b=-8.0), dict(mean=1.0, std=0.5, a=4.0, b=4.5),
                                dict(mean=0.5, std=2.0, a=-1.0, b=3.0)])
def test_trunc_normal_tails(dtype, kw):
    # far in a tail, inverting the CDF in float32 collapses every value onto one bound; torch samples exactly
    flow.manual_seed(0)
    torch.manual_seed(0)
    got, want = _trunc_stats(flow, dtype, **kw), _trunc_stats(torch, dtype, **kw)
    assert kw["a"] <= got[0] and got[1] <= kw["b"]
    np.testing.assert_allclose(got, want, atol=0.03, rtol=0.05)


def test_trunc_normal_generator_and_grad():
    g1, g2 = flow.Generator().manual_seed(5), flow.Generator().manual_seed(5)
    a = flow.nn.init.trunc_normal_(flow.empty(300), a=2.0, b=2.5, generator=g1)
    b = flow.nn.init.trunc_normal_(flow.empty(300), a=2.0, b=2.5, generator=g2)
    assert bool((a == b).all())
    p = flow.nn.Parameter(flow.empty(4, 3))
    assert flow.nn.init.trunc_normal_(p) is p and p.is_leaf and p.requires_grad


@pytest.mark.parametrize("name", ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
                                  "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"])
def test_init_deprecated_aliases(name):
    def call(lib):
        fn = getattr(lib.nn.init, name)
        t = lib.empty(4, 3) if name in ("eye", "sparse", "constant") else lib.empty(4, 3, 3)
        args = {"sparse": (0.5,), "constant": (1.0,)}.get(name, ())
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            out = fn(t, *args)
        return tuple(out.shape), [(x.category, str(x.message)) for x in w]

    assert call(flow) == call(torch)
    assert name in flow.nn.init.__all__


def test_init_all_matches_torch():
    assert set(flow.nn.init.__all__) == set(torch.nn.init.__all__)


def test_clip_grad_norm_empty_generator_warns():
    for lib in (flow, torch):
        with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient clipping will occur"):
            norm = lib.nn.utils.clip_grad_norm_((p for p in []), 1.0)
        assert float(norm) == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        flow.nn.utils.clip_grad_norm_([], 1.0)  # a list, even empty, is not suspicious


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vector_to_parameters_aliases_vec(dtype):
    def run(lib):
        lin = lib.nn.Linear(3, 2)
        vec = lib.arange(8, dtype=getattr(lib, dtype))
        lib.nn.utils.vector_to_parameters(vec, lin.parameters())
        vec[0] = 100.0  # the parameters are views of vec, as in torch
        return lin.weight, lin.bias, lin.weight.requires_grad, type(lin.weight).__name__

    got, want = run(flow), run(torch)
    assert_close(got[0], want[0])
    assert_close(got[1], want[1])
    assert got[2:] == want[2:]


def test_vector_to_parameters_type_error():
    for lib in (flow, torch):
        with pytest.raises(TypeError, match="expected torch.Tensor, but got: numpy.ndarray"):
            lib.nn.utils.vector_to_parameters(np.zeros(3), [lib.nn.Parameter(lib.zeros(3))])


def test_skip_init_rejects_non_modules():
    for lib in (flow, torch):
        with pytest.raises(RuntimeError, match="Expected a Module; got <class 'int'>"):
            lib.nn.utils.skip_init(int, 3)


def _bn(lib, n, **kw):
    return lib.nn.BatchNorm1d(n, **kw).eval()


@pytest.mark.parametrize("case", ["mismatch", "no_stats", "training"])
def test_fusion_errors(case):
    def run(lib):
        lin = lib.nn.Linear(2, 3).eval()
        if case == "mismatch":
            return lib.nn.utils.fuse_linear_bn_eval(lin, _bn(lib, 4))
        if case == "no_stats":
            return lib.nn.utils.fuse_linear_bn_eval(lin, _bn(lib, 3, track_running_stats=False))
        return lib.nn.utils.fuse_conv_bn_eval(lib.nn.Conv1d(2, 3, 1), lib.nn.BatchNorm1d(3))

    with pytest.raises(AssertionError) as want:
        run(torch)
    with pytest.raises(AssertionError) as got:
        run(flow)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("case", ["side", "not_iterable", "zero_dim"])
def test_pad_sequence_errors(case):
    def run(lib):
        if case == "side":
            return lib.nn.utils.rnn.pad_sequence([lib.ones(2), lib.ones(3)], padding_side="middle")
        if case == "not_iterable":
            return lib.nn.utils.rnn.pad_sequence(5)
        return lib.nn.utils.rnn.pad_sequence([lib.tensor(1.0), lib.tensor(2.0)])

    with pytest.raises(RuntimeError) as want:
        run(torch)
    with pytest.raises(RuntimeError) as got:
        run(flow)
    if case != "zero_dim":  # torch's own message there is an internal ArrayRef one
        assert str(got.value) == str(want.value)


def test_remove_weight_norm_parametrization_keeps_parameter():
    def run(lib):
        lib.manual_seed(0)
        m = lib.nn.Linear(4, 3)
        with lib.no_grad():
            m.weight.copy_(lib.tensor(np.arange(12, dtype=np.float32).reshape(3, 4) / 7 - 0.8))
        lib.nn.utils.parametrizations.weight_norm(m)
        lib.nn.utils.parametrize.remove_parametrizations(m, "weight")
        return m.weight, sorted(n for n, _ in m.named_parameters()), type(m.weight).__name__, m.weight.requires_grad

    got, want = run(flow), run(torch)
    assert_close(got[0], want[0])
    assert got[1:] == want[1:]


def test_convert_conv_weight_memory_format():
    def run(lib):
        m = lib.nn.Sequential(lib.nn.Conv2d(2, 3, 3), lib.nn.Sequential(lib.nn.ConvTranspose2d(3, 4, 2)),
                              lib.nn.Conv3d(2, 3, 2), lib.nn.Linear(2, 2))
        w = m[0].weight
        assert lib.nn.utils.convert_conv2d_weight_memory_format(m, lib.channels_last) is m
        assert m[0].weight is w  # the Parameter is kept, only its data restrided
        lib.nn.utils.convert_conv3d_weight_memory_format(m, lib.channels_last_3d)
        return [m[0].weight.stride(), m[1][0].weight.stride(), m[2].weight.stride(), m[3].weight.stride()]

    assert run(flow) == run(torch)


def test_nn_utils_all_matches_torch():
    assert set(flow.nn.utils.__all__) == set(torch.nn.utils.__all__)
    for name in flow.nn.utils.__all__:
        assert hasattr(flow.nn.utils, name)
