"""nn.utils.prune against torch.nn.utils.prune: for the deterministic methods the same module pruned in both
frameworks has the same masks, ``*_orig`` parameters, state_dict keys, outputs and gradients; random methods
prune the right number of entries/channels; remove, is_pruned and the argument errors behave alike."""
import math

import numpy as np
import pytest

import oneflow as flow
import oneflow.nn.utils.prune as fprune

torch = pytest.importorskip("torch")
tprune = pytest.importorskip("torch.nn.utils.prune")


def pair(make_t, make_f, seed=0):
    """The same module in both frameworks: torch's weights copied into oneflow's."""
    torch.manual_seed(seed)
    tm = make_t()
    fm = make_f()
    fm.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, fm


def linear_pair(seed=0):
    return pair(lambda: torch.nn.Linear(6, 5), lambda: flow.nn.Linear(6, 5), seed)


def conv_pair(seed=0):
    return pair(lambda: torch.nn.Conv2d(3, 4, 3), lambda: flow.nn.Conv2d(3, 4, 3), seed)


def close(f, t, **kw):
    np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), **kw)


def check_same(tm, fm, names, x_shape):
    """Masks, *_orig parameters, state_dict keys, forward output and gradients w.r.t. *_orig agree."""
    assert list(fm.state_dict().keys()) == list(tm.state_dict().keys())
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    for name in names:
        fmask, tmask = getattr(fm, name + "_mask"), getattr(tm, name + "_mask")
        assert fmask.shape == tuple(tmask.shape)
        np.testing.assert_array_equal(fmask.numpy(), tmask.numpy())
        assert isinstance(getattr(fm, name + "_orig"), flow.nn.Parameter)
        close(getattr(fm, name + "_orig"), getattr(tm, name + "_orig"))
        assert name not in fm._parameters
        close(getattr(fm, name), getattr(tm, name))
    x = np.random.default_rng(1).standard_normal(x_shape).astype(np.float32)
    fy, ty = fm(flow.tensor(x)), tm(torch.tensor(x))
    close(fy, ty, rtol=1e-5, atol=1e-6)
    (fy * fy).sum().backward()
    (ty * ty).sum().backward()
    for name in names:
        fg, tg = getattr(fm, name + "_orig").grad, getattr(tm, name + "_orig").grad
        close(fg, tg, rtol=1e-4, atol=1e-5)
        # pruned entries get no gradient
        assert np.all(fg.numpy()[getattr(fm, name + "_mask").numpy() == 0] == 0)


@pytest.mark.parametrize("amount", [0, 7, 0.0, 0.3, 1.0, 30])
def test_l1_unstructured(amount):
    tm, fm = linear_pair()
    assert fprune.l1_unstructured(fm, "weight", amount=amount) is fm
    tprune.l1_unstructured(tm, "weight", amount=amount)
    check_same(tm, fm, ["weight"], (2, 6))
    assert int((fm.weight_mask == 0).sum()) == (amount if isinstance(amount, int) else round(amount * 30))


@pytest.mark.parametrize("n", [1, 2, math.inf])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("amount", [1, 0.5])
def test_ln_structured(n, dim, amount):
    tm, fm = conv_pair()
    fprune.ln_structured(fm, "weight", amount=amount, n=n, dim=dim)
    tprune.ln_structured(tm, "weight", amount=amount, n=n, dim=dim)
    check_same(tm, fm, ["weight"], (2, 3, 6, 6))


def test_custom_from_mask_and_identity():
    tm, fm = linear_pair()
    mask = np.array([0, 1, 0, 1, 1], dtype=np.float32)
    fprune.custom_from_mask(fm, "bias", mask=flow.tensor(mask))
    tprune.custom_from_mask(tm, "bias", mask=torch.tensor(mask))
    fprune.identity(fm, "weight")
    tprune.identity(tm, "weight")
    check_same(tm, fm, ["bias", "weight"], (3, 6))
    assert fm.weight_mask.numpy().all()
    # a boolean mask still yields a float mask
    _, fm2 = linear_pair()
    fprune.custom_from_mask(fm2, "bias", mask=flow.tensor(mask > 0))
    assert fm2.bias_mask.dtype == flow.float32


@pytest.mark.parametrize("amount", [12, 0.4])
def test_global_unstructured(amount):
    def tnet():
        return torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3))

    def fnet():
        return flow.nn.Sequential(flow.nn.Linear(6, 5), flow.nn.ReLU(), flow.nn.Linear(5, 3))

    tm, fm = pair(tnet, fnet)
    tprune.global_unstructured([(tm[0], "weight"), (tm[2], "weight"), (tm[2], "bias")],
                               pruning_method=tprune.L1Unstructured, amount=amount)
    fprune.global_unstructured([(fm[0], "weight"), (fm[2], "weight"), (fm[2], "bias")],
                               pruning_method=fprune.L1Unstructured, amount=amount)
    check_same(tm, fm, [], (4, 6))
    for i, names in ((0, ["weight"]), (2, ["weight", "bias"])):
        check_same(tm[i], fm[i], names, (2, 6 if i == 0 else 5))
    total = sum(int((getattr(fm[i], n + "_mask") == 0).sum()) for i, n in ((0, "weight"), (2, "weight"), (2, "bias")))
    assert total == (amount if isinstance(amount, int) else round(amount * 48))


def test_global_unstructured_rejects_structured_and_bad_scores():
    _, fm = linear_pair()
    with pytest.raises(TypeError):
        fprune.global_unstructured([(fm, "weight")], pruning_method=fprune.LnStructured, amount=1, n=2, dim=0)
    with pytest.raises(TypeError):
        fprune.global_unstructured([(fm, "weight")], pruning_method=fprune.L1Unstructured,
                                   importance_scores=[1], amount=1)
    with pytest.raises(TypeError):
        fprune.global_unstructured(3, pruning_method=fprune.L1Unstructured, amount=1)


def test_iterative_l1_then_ln_structured():
    tm, fm = conv_pair(3)
    for prune in (fprune, tprune):
        m = fm if prune is fprune else tm
        prune.l1_unstructured(m, "weight", amount=0.3)
        prune.ln_structured(m, "weight", amount=1, n=2, dim=0)
        prune.l1_unstructured(m, "weight", amount=5)
        prune.random_unstructured(m, "bias", amount=0)
    check_same(tm, fm, ["weight", "bias"], (2, 3, 6, 6))
    hooks = [h for h in fm._forward_pre_hooks.values() if h._tensor_name == "weight"]
    assert len(hooks) == 1 and isinstance(hooks[0], fprune.PruningContainer) and len(hooks[0]) == 3
    assert [type(m) for m in hooks[0]] == [fprune.L1Unstructured, fprune.LnStructured, fprune.L1Unstructured]


def test_iterative_global_on_pruned():
    tm, fm = linear_pair(4)
    tprune.l1_unstructured(tm, "weight", amount=10)
    fprune.l1_unstructured(fm, "weight", amount=10)
    tprune.global_unstructured([(tm, "weight"), (tm, "bias")], pruning_method=tprune.L1Unstructured, amount=4)
    fprune.global_unstructured([(fm, "weight"), (fm, "bias")], pruning_method=fprune.L1Unstructured, amount=4)
    check_same(tm, fm, ["weight", "bias"], (2, 6))
    assert int((fm.weight_mask == 0).sum() + (fm.bias_mask == 0).sum()) == 14


def test_importance_scores():
    tm, fm = conv_pair(5)
    scores = np.random.default_rng(2).standard_normal(tuple(tm.weight.shape)).astype(np.float32)
    fprune.l1_unstructured(fm, "weight", amount=0.5, importance_scores=flow.tensor(scores))
    tprune.l1_unstructured(tm, "weight", amount=0.5, importance_scores=torch.tensor(scores))
    fprune.ln_structured(fm, "weight", amount=2, n=1, dim=1, importance_scores=flow.tensor(scores))
    tprune.ln_structured(tm, "weight", amount=2, n=1, dim=1, importance_scores=torch.tensor(scores))
    check_same(tm, fm, ["weight"], (1, 3, 5, 5))
    with pytest.raises(AssertionError):
        fprune.l1_unstructured(fm, "bias", amount=1, importance_scores=flow.ones(3))
    assert isinstance(fm.bias, flow.nn.Parameter)


def test_prune_method_on_tensor():
    t = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
    close(fprune.L1Unstructured(amount=6).prune(flow.tensor(t)), tprune.L1Unstructured(amount=6).prune(torch.tensor(t)))
    close(fprune.LnStructured(amount=2, n=2, dim=1).prune(flow.tensor(t)),
          tprune.LnStructured(amount=2, n=2, dim=1).prune(torch.tensor(t)))


def test_random_unstructured_counts():
    _, fm = linear_pair()
    fprune.random_unstructured(fm, "weight", amount=0.4)
    assert fm.weight_mask.dtype == flow.float32 and fm.weight_mask.shape == (5, 6)
    assert int((fm.weight_mask == 0).sum()) == 12
    fprune.random_unstructured(fm, "weight", amount=3)
    assert int((fm.weight_mask == 0).sum()) == 15
    np.testing.assert_array_equal(fm.weight.detach().numpy(), (fm.weight_orig * fm.weight_mask).detach().numpy())


@pytest.mark.parametrize("dim", [0, 1])
def test_random_structured_counts(dim):
    _, fm = conv_pair()
    fprune.random_structured(fm, "weight", amount=2, dim=dim)
    mask = fm.weight_mask.numpy()
    assert fm.weight_mask.dtype == flow.float32 and mask.shape == (4, 3, 3, 3)
    other = tuple(d for d in range(4) if d != dim)
    channel_on = mask.sum(axis=other) != 0
    assert int((~channel_on).sum()) == 2
    assert np.all(mask.max(axis=other) == mask.min(axis=other))  # whole channels pruned
    with pytest.raises(ValueError):
        fprune.random_structured(fm, "bias", amount=1, dim=0)  # 1-D


def test_remove():
    tm, fm = linear_pair()
    tprune.l1_unstructured(tm, "weight", amount=0.5)
    fprune.l1_unstructured(fm, "weight", amount=0.5)
    orig = fm.weight_orig
    assert fprune.remove(fm, "weight") is fm
    tprune.remove(tm, "weight")
    assert fm.weight is orig and isinstance(fm.weight, flow.nn.Parameter)
    assert list(fm.state_dict().keys()) == list(tm.state_dict().keys()) == ["bias", "weight"]
    close(fm.weight, tm.weight)
    assert not fprune.is_pruned(fm) and "weight_orig" not in fm._parameters and "weight_mask" not in fm._buffers
    with pytest.raises(ValueError):
        fprune.remove(fm, "weight")
    with pytest.raises(ValueError):
        fprune.remove(fm, "bias")


def test_is_pruned():
    net = flow.nn.Sequential(flow.nn.Linear(3, 4), flow.nn.Linear(4, 2))
    assert not fprune.is_pruned(net)
    fprune.random_unstructured(net[1], "bias", amount=1)
    assert fprune.is_pruned(net) and fprune.is_pruned(net[1]) and not fprune.is_pruned(net[0])
    fprune.remove(net[1], "bias")
    assert not fprune.is_pruned(net)


def test_bad_amounts():
    _, fm = linear_pair()
    for bad, err in ((-1, ValueError), (1.5, ValueError), (-0.1, ValueError), ("1", TypeError)):
        with pytest.raises(err):
            fprune.l1_unstructured(fm, "weight", amount=bad)
        with pytest.raises(err):
            fprune.RandomStructured(amount=bad)
    with pytest.raises(ValueError):
        fprune.l1_unstructured(fm, "weight", amount=31)
    with pytest.raises(ValueError):
        fprune.ln_structured(fm, "weight", amount=6, n=2, dim=0)
    with pytest.raises(IndexError):
        fprune.ln_structured(fm, "weight", amount=1, n=2, dim=2)
    # a failed first pruning leaves the module as it was
    assert isinstance(fm.weight, flow.nn.Parameter) and not fprune.is_pruned(fm)
    assert sorted(fm.state_dict().keys()) == ["bias", "weight"]


def test_container_checks():
    a = fprune.L1Unstructured(amount=1)
    a._tensor_name = "weight"
    b = fprune.RandomUnstructured(amount=1)
    b._tensor_name = "bias"
    c = fprune.PruningContainer(a)
    with pytest.raises(ValueError):
        c.add_pruning_method(b)
    with pytest.raises(TypeError):
        c.add_pruning_method(object())
    assert len(c) == 1 and c[0] is a and list(c) == [a]


def test_exposed_in_nn_utils():
    assert flow.nn.utils.prune is fprune
    assert issubclass(fprune.LnStructured, fprune.BasePruningMethod)
