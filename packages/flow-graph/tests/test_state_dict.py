"""graph.state_dict() / load_state_dict(): modules and optimizer state by OneFlow-like keys; a graph loaded from
a saved state continues training exactly as the original; bad state dicts raise and load nothing."""
import copy

import numpy as np
import pytest

import oneflow as flow
from oneflow import nn

from models import TrainGraph, assert_same_state, batch, cnn, mlp


def _train(graph, batches):
    return [graph(x, y).item() for x, y in batches]


def _snapshot(graph):
    return {k: (v.numpy().copy() if isinstance(v, flow.Tensor) else {kk: vv.numpy().copy() for kk, vv in v.items()})
            for k, v in graph.state_dict().items()}


def test_keys_are_modules_then_optimizer_state():
    model = cnn()
    opt = flow.optim.Adam(model.parameters(), lr=1e-2)
    g = TrainGraph(model, opt)
    assert list(g.state_dict()) == ["model"]  # no optimizer state before the first step
    rng = np.random.default_rng(0)
    g(*batch("cnn", rng))
    sd = g.state_dict()
    assert list(sd["model"]) == list(model.state_dict())
    assert "model.1.num_batches_tracked" not in sd  # buffers stay inside their module's entry
    opt_keys = [k for k in sd if k != "model"]
    assert sorted(opt_keys) == sorted(f"model.{n}-{s}" for n, _ in model.named_parameters()
                                      for s in ("exp_avg", "exp_avg_sq", "step"))
    p = model[0].weight
    np.testing.assert_array_equal(sd["model.0.weight-exp_avg"].numpy(), opt.state[p]["exp_avg"].numpy())
    # the values share memory with the live tensors (detached), as Module.state_dict's do
    assert sd["model"]["0.weight"].data_ptr() == p.data_ptr() and not sd["model"]["0.weight"].requires_grad


@pytest.mark.parametrize("make_opt", [lambda p: flow.optim.Adam(p, lr=1e-2),
                                      lambda p: flow.optim.SGD(p, lr=0.05, momentum=0.9)], ids=["adam", "momentum"])
@pytest.mark.parametrize("loaded_before_first_call", [True, False])
def test_a_saved_state_resumes_training_exactly(tmp_path, make_opt, loaded_before_first_call):
    rng = np.random.default_rng(1)
    batches = [batch("cnn", rng) for _ in range(8)]
    model = cnn()
    fresh = copy.deepcopy(model)  # same architecture, different (untrained) values below
    g = TrainGraph(model, make_opt(model.parameters()))
    _train(g, batches[:4])
    flow.save(g.state_dict(), tmp_path / "graph.of")
    expected = _train(g, batches[4:])  # the original graph continues

    for p in fresh.parameters():
        p.data.mul_(0.5)
    g2 = TrainGraph(fresh, make_opt(fresh.parameters()))
    if not loaded_before_first_call:
        _train(g2, batches[:2])  # compiled, with optimizer state of its own: loading copies into it
    g2.load_state_dict(flow.load(tmp_path / "graph.of"))
    got = _train(g2, batches[4:])
    assert got == expected  # bitwise: same parameters, buffers, moments and step counters
    assert_same_state(model, fresh)


def test_missing_and_unexpected_keys_raise_and_load_nothing():
    rng = np.random.default_rng(2)
    model = mlp()
    g = TrainGraph(model, flow.optim.Adam(model.parameters(), lr=1e-2))
    _train(g, [batch("mlp", rng)])
    before = _snapshot(g)
    sd = g.state_dict()
    sd = {k: (v.clone() if isinstance(v, flow.Tensor) else {kk: vv.clone() + 1 for kk, vv in v.items()})
          for k, v in sd.items()}
    del sd["model"]["4.bias"]
    del sd["model.2.weight-exp_avg"]
    sd["extra"] = flow.zeros(2)
    with pytest.raises(RuntimeError) as e:
        g.load_state_dict(sd)
    msg = str(e.value)
    assert 'Missing key(s) in state_dict: "model.4.bias", "model.2.weight-exp_avg"' in msg
    assert 'Unexpected key(s) in state_dict: "extra"' in msg and "nothing was loaded" in msg
    after = _snapshot(g)
    for k in before:  # the module values (+1 in sd) were not copied either
        if isinstance(before[k], dict):
            for kk in before[k]:
                np.testing.assert_array_equal(after[k][kk], before[k][kk])
        else:
            np.testing.assert_array_equal(after[k], before[k])
    # strict=False loads what matches and ignores the rest
    g.load_state_dict(sd, strict=False)
    np.testing.assert_array_equal(model[0].weight.detach().numpy(), before["model"]["0.weight"] + 1)
    np.testing.assert_array_equal(model[4].bias.detach().numpy(), before["model"]["4.bias"])


def test_shape_mismatch_and_wrong_types_raise():
    model = mlp()
    g = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1))
    sd = g.state_dict()
    bad = {"model": dict(sd["model"], **{"0.weight": flow.zeros(3, 3)})}
    with pytest.raises(RuntimeError, match=r"size mismatch for model.0.weight: .*\(3, 3\).*\(16, 6\)"):
        g.load_state_dict(bad)
    with pytest.raises(RuntimeError, match=r'"model": expected the state dict of module model'):
        g.load_state_dict({"model": flow.zeros(1)})
    with pytest.raises(TypeError, match=r"expected a dict, but got list"):
        g.load_state_dict([1])
    assert model[0].weight.shape == (16, 6)


def test_batchnorm_buffers_and_counter_round_trip():
    model = cnn()
    g = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1))
    rng = np.random.default_rng(3)
    _train(g, [batch("cnn", rng) for _ in range(3)])
    other = cnn()
    g2 = TrainGraph(other, flow.optim.SGD(other.parameters(), lr=0.1))
    g2.load_state_dict(g.state_dict())
    assert other[1].num_batches_tracked.item() == 3
    np.testing.assert_array_equal(other[1].running_var.numpy(), model[1].running_var.numpy())


def test_eval_graph_state_dict_has_only_modules():
    model = nn.Linear(3, 2)

    class Eval(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.lin = model

        def build(self, x):
            return self.lin(x)

    g = Eval()
    x = flow.randn(4, 3)
    g(x)
    sd = g.state_dict()
    assert list(sd) == ["lin"] and list(sd["lin"]) == ["weight", "bias"]
    sd["lin"] = {"weight": flow.ones(2, 3), "bias": flow.zeros(2)}
    g.load_state_dict(sd)
    np.testing.assert_allclose(g(x).numpy(), np.repeat(x.numpy().sum(1, keepdims=True), 2, 1), rtol=1e-6, atol=1e-6)
