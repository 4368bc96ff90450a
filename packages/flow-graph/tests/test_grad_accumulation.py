"""Gradient accumulation (graph.config.set_gradient_accumulation_steps): a graph call over a whole batch equals
eager training that back-propagates loss / n for each of the n micro-batches and then steps once (bitwise: the
trace issues the same ops in the same order)."""
import copy

import numpy as np
import pytest

import oneflow as flow
from oneflow import _C, nn
from oneflow_graph import Graph

from models import assert_same_state, cnn, mlp

OPTIMIZERS = {
    "sgd": lambda p: flow.optim.SGD(p, lr=0.1),
    "momentum": lambda p: flow.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-3),
    "adam": lambda p: flow.optim.Adam(p, lr=1e-2),
    "clipped_adam_with_scheduler": lambda p: flow.optim.Adam(
        [{"params": list(p), "clip_grad_max_norm": 0.05, "clip_grad_norm_type": 2.0}], lr=1e-2),
}


class AccGraph(Graph):
    def __init__(self, model, optimizer, steps, lr_sch=None):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer, lr_sch=lr_sch)
        self.config.set_gradient_accumulation_steps(steps)

    def build(self, x, y):
        logits = self.model(x)
        loss = nn.functional.cross_entropy(logits, y)
        loss.backward()
        return loss, logits


def _batches(model, n, rng, count):
    if model == "mlp":
        return [(flow.tensor(rng.standard_normal((3 * n, 6)).astype(np.float32)), flow.tensor(rng.integers(0, 4, 3 * n)))
                for _ in range(count)]
    return [(flow.tensor(rng.standard_normal((2 * n, 3, 8, 8)).astype(np.float32)),
             flow.tensor(rng.integers(0, 5, 2 * n))) for _ in range(count)]


@pytest.mark.parametrize("model,n", [("mlp", 4), ("cnn", 2), ("cnn", 3)])
@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_accumulated_training_equals_eager_micro_batches(model, n, opt):
    rng = np.random.default_rng(n)
    flow.manual_seed(3)
    eager = mlp() if model == "mlp" else cnn()
    graphed = copy.deepcopy(eager)
    eo, go = OPTIMIZERS[opt](eager.parameters()), OPTIMIZERS[opt](graphed.parameters())
    sch = opt.endswith("scheduler")
    es = flow.optim.lr_scheduler.StepLR(eo, step_size=2, gamma=0.5) if sch else None
    gs = flow.optim.lr_scheduler.StepLR(go, step_size=2, gamma=0.5) if sch else None
    graph = AccGraph(graphed, go, n, gs)
    steps = 5
    for x, y in _batches(model, n, rng, steps):
        e_losses, e_logits = [], []
        for xm, ym in zip(x.chunk(n, 0), y.chunk(n, 0)):
            logits = eager(xm)
            loss = nn.functional.cross_entropy(logits, ym)
            (loss / n).backward()
            e_losses.append(loss.item())
            e_logits.append(logits.detach().numpy())
        for group in eo.param_groups:
            if group.get("clip_grad_max_norm") is not None:
                flow.nn.utils.clip_grad_norm_(group["params"], group["clip_grad_max_norm"], group["clip_grad_norm_type"])
        eo.step()
        eo.zero_grad()
        if es is not None:
            es.step()
        g_loss, g_logits = graph(x, y)
        assert tuple(g_loss.shape) == (n,)  # one loss per micro-batch, packed along dim 0
        assert g_loss.tolist() == e_losses
        assert tuple(g_logits.shape) == (x.shape[0], e_logits[0].shape[1])
        np.testing.assert_array_equal(g_logits.numpy(), np.concatenate(e_logits))
        assert graph._last.plan.native == hasattr(_C, "Plan"), graph._last.plan.native_error
    assert_same_state(eager, graphed)
    if model == "cnn":  # batch norm counted every micro-batch, as eager
        assert graphed[1].num_batches_tracked.item() == steps * n
    if sch:
        assert go.param_groups[0]["lr"] == eo.param_groups[0]["lr"] != 1e-2
    for pe, pg in zip(eager.parameters(), graphed.parameters()):
        for k in eo.state[pe]:
            np.testing.assert_array_equal(go.state[pg][k].numpy(), eo.state[pe][k].numpy())
    assert all(p.grad is None for p in graphed.parameters())
    assert graph._compile_count <= 2  # the first call (making optimizer state) and the reused plan


def test_one_step_accumulation_is_plain_training():
    x, y = flow.randn(4, 6), flow.tensor([0, 1, 2, 3])
    m = mlp()
    g = AccGraph(m, flow.optim.SGD(m.parameters(), lr=0.1), 1)
    loss, logits = g(x, y)
    assert loss.dim() == 0 and tuple(logits.shape) == (4, 4)


def test_indivisible_or_zero_dim_input_is_an_error_naming_it():
    m = mlp()
    before = [p.detach().clone() for p in m.parameters()]
    g = AccGraph(m, flow.optim.SGD(m.parameters(), lr=0.1), 4)
    with pytest.raises(ValueError, match=r"input 'x' has shape \(6, 6\), whose dim 0 is not divisible by 4"):
        g(flow.randn(6, 6), flow.zeros(8, dtype=flow.int64))
    with pytest.raises(ValueError, match=r"input 'y' has shape \(\)"):
        g(flow.randn(8, 6), flow.tensor(1))
    assert not g.is_compiled
    for a, b in zip(before, m.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.detach().numpy())
    assert all(p.grad is None for p in m.parameters())
    loss, _ = g(flow.randn(8, 6), flow.zeros(8, dtype=flow.int64))  # the graph still works afterwards
    assert tuple(loss.shape) == (4,)


def test_steps_argument_is_checked():
    g = AccGraph(mlp(), flow.optim.SGD(mlp().parameters(), lr=0.1), 1)
    with pytest.raises(ValueError, match="at least 1"):
        g.config.set_gradient_accumulation_steps(0)
    with pytest.raises(TypeError, match="expects an int"):
        g.config.set_gradient_accumulation_steps(2.0)
    g.config.set_gradient_accumulation_steps(3)
    assert "gradient_accumulation_steps=3" in repr(g.config)


def test_pipeline_schedule_argument_is_checked():
    g = AccGraph(mlp(), flow.optim.SGD(mlp().parameters(), lr=0.1), 2)
    assert g.config._pipeline_schedule == "zero_bubble"  # the default
    with pytest.raises(ValueError, match=r"schedule must be one of \['1f1b', 'zero_bubble'\], but got 'gpipe'"):
        g.config.set_pipeline_schedule("gpipe")
    g.config.set_pipeline_schedule("1f1b")
    assert g.config._pipeline_schedule == "1f1b"
    g(flow.randn(8, 6), flow.zeros(8, dtype=flow.int64))  # no stages: the schedule changes nothing
    with pytest.raises(RuntimeError, match=r"set_pipeline_schedule\(\) must be called before the graph is first"):
        g.config.set_pipeline_schedule("zero_bubble")


class DictGraph(Graph):
    """Nested inputs, a non-tensor argument and backward with an explicit gradient."""

    def __init__(self, model, optimizer, steps):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer)
        self.config.set_gradient_accumulation_steps(steps)

    def build(self, batch, weight=1.0):
        per_sample = nn.functional.cross_entropy(self.model(batch["x"]), batch["y"], reduction="none")
        per_sample.backward(flow.full(per_sample.shape, weight / per_sample.shape[0]))
        return {"per_sample": per_sample, "tag": "ok"}


def test_nested_inputs_and_explicit_backward_gradient_equal_eager():
    rng = np.random.default_rng(4)
    eager = mlp()
    graphed = copy.deepcopy(eager)
    eo, go = flow.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9), flow.optim.SGD(graphed.parameters(), lr=0.1,
                                                                                        momentum=0.9)
    graph = DictGraph(graphed, go, 2)
    for _ in range(3):
        x, y = flow.tensor(rng.standard_normal((6, 6)).astype(np.float32)), flow.tensor(rng.integers(0, 4, 6))
        expected = []
        for xm, ym in zip(x.chunk(2), y.chunk(2)):
            ps = nn.functional.cross_entropy(eager(xm), ym, reduction="none")
            (ps / 2).backward(flow.full(ps.shape, 0.5 / ps.shape[0]))
            expected.append(ps.detach().numpy())
        eo.step()
        eo.zero_grad()
        out = graph({"x": x, "y": y}, weight=0.5)
        assert out["tag"] == "ok" and tuple(out["per_sample"].shape) == (6,)
        np.testing.assert_array_equal(out["per_sample"].numpy(), np.concatenate(expected))
    assert_same_state(eager, graphed)
    with pytest.raises(ValueError, match=r"input 'batch \(tensor 1\)' has shape \(5,\)"):
        graph({"x": flow.randn(6, 6), "y": flow.zeros(5, dtype=flow.int64)})


def test_options_are_fixed_after_the_first_call():
    m = mlp()
    g = AccGraph(m, flow.optim.SGD(m.parameters(), lr=0.1), 2)
    g(flow.randn(4, 6), flow.tensor([0, 1, 2, 3]))
    with pytest.raises(RuntimeError, match="before the graph is first called"):
        g.config.set_gradient_accumulation_steps(4)
    with pytest.raises(RuntimeError, match="before the graph is first called"):
        g.config.enable_amp(True, dtype=flow.bfloat16)
    loss, _ = g(flow.randn(4, 6), flow.tensor([0, 1, 2, 3]))
    assert tuple(loss.shape) == (2,)
