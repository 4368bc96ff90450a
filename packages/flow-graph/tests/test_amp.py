"""Mixed precision in graphs: enable_amp traces build under autocast (the IR holds the casts eager autocast
makes) and set_grad_scaler runs GradScaler's scale / unscale / skip-on-inf / update inside the plan; training
equals eager autocast + GradScaler training bitwise, step by step, including skipped steps."""
import copy

import numpy as np
import pytest

import oneflow as flow
from oneflow import _C, nn
from oneflow_graph import Graph

from models import assert_same_state, cnn, mlp

OPTIMIZERS = {
    "sgd": lambda p: flow.optim.SGD(p, lr=0.1),
    "momentum": lambda p: flow.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.1, weight_decay=1e-3),
    "adam": lambda p: flow.optim.Adam(p, lr=1e-2),
    "clipped_adamw": lambda p: flow.optim.AdamW([{"params": list(p), "clip_grad_max_norm": 0.5}], lr=1e-2),
}


class AmpGraph(Graph):
    def __init__(self, model, optimizer, dtype, scaler=None, acc=1):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer)
        self.config.enable_amp(True, dtype=dtype)
        if scaler is not None:
            self.set_grad_scaler(scaler)
        self.config.set_gradient_accumulation_steps(acc)

    def build(self, x, y):
        logits = self.model(x)
        loss = nn.functional.cross_entropy(logits, y)
        loss.backward()
        return loss, logits


def _batch(model, rng, rows, poison):
    if model == "mlp":
        x = rng.standard_normal((rows, 6)).astype(np.float32)
        y = rng.integers(0, 4, rows)
    else:
        x = rng.standard_normal((rows, 3, 8, 8)).astype(np.float32)
        y = rng.integers(0, 5, rows)
    if poison:  # inf/NaN gradients: the scaler skips this step
        x[0, 1] = np.inf
    return flow.tensor(x), flow.tensor(y)


def _eager_step(model, opt, scaler, dtype, x, y, acc):
    losses, logits = [], []
    for xm, ym in zip(x.chunk(acc, 0), y.chunk(acc, 0)):
        with flow.autocast("cpu", dtype=dtype):
            out = model(xm)
            loss = nn.functional.cross_entropy(out, ym)
        (scaler.scale(loss / acc) if acc > 1 else scaler.scale(loss)).backward()
        losses.append(loss.item())
        logits.append(out.detach().float().numpy())
    scaler.unscale_(opt)
    for group in opt.param_groups:
        if group.get("clip_grad_max_norm") is not None:
            flow.nn.utils.clip_grad_norm_(group["params"], group["clip_grad_max_norm"])
    scaler.step(opt)
    scaler.update()
    opt.zero_grad()
    return losses, np.concatenate(logits)


@pytest.mark.parametrize("dtype", [flow.bfloat16, flow.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
@pytest.mark.parametrize("model,acc", [("mlp", 1), ("cnn", 1), ("cnn", 2)])
def test_amp_training_with_grad_scaler_equals_eager(dtype, opt, model, acc):
    rng = np.random.default_rng(5)
    flow.manual_seed(2)
    eager = mlp() if model == "mlp" else cnn()
    graphed = copy.deepcopy(eager)
    eo, go = OPTIMIZERS[opt](eager.parameters()), OPTIMIZERS[opt](graphed.parameters())
    make = dict(init_scale=2.0**10, growth_factor=4.0, backoff_factor=0.25, growth_interval=2)
    es, gs = flow.amp.GradScaler(**make), flow.amp.GradScaler(**make)
    graph = AmpGraph(graphed, go, dtype, gs, acc)
    scales = []
    for step in range(7):
        x, y = _batch(model, rng, 4, poison=step in (0, 4))  # the first step (no optimizer state yet) skips too
        e_losses, e_logits = _eager_step(eager, eo, es, dtype, x, y, acc)
        g_loss, g_logits = graph(x, y)
        assert g_logits.dtype == dtype  # the model's output was computed in the low precision
        np.testing.assert_array_equal(g_loss.numpy().reshape(-1), np.array(e_losses, dtype=np.float32))
        np.testing.assert_array_equal(g_logits.float().numpy(), e_logits)
        assert gs.get_scale() == es.get_scale()
        assert gs._get_growth_tracker() == es._get_growth_tracker()
        assert len(go.state) == len(eo.state)  # a skipped first step leaves no optimizer state, as eager
        assert graph._last.plan.native == hasattr(_C, "Plan"), graph._last.plan.native_error
        scales.append(gs.get_scale())
        assert_same_state(eager, graphed)
    # backoff after each poisoned step, growth after two clean ones
    assert scales == [256.0, 256.0, 1024.0, 1024.0, 256.0, 256.0, 1024.0]
    for pe, pg in zip(eager.parameters(), graphed.parameters()):
        for k in eo.state[pe]:
            np.testing.assert_array_equal(go.state[pg][k].numpy(), eo.state[pe][k].numpy())


@pytest.mark.parametrize("dtype", [flow.bfloat16, flow.float16], ids=["bf16", "fp16"])
def test_amp_without_scaler_has_the_casts_of_eager_autocast(dtype):
    rng = np.random.default_rng(1)
    eager = cnn()
    graphed = copy.deepcopy(eager)
    eo, go = flow.optim.SGD(eager.parameters(), lr=0.1), flow.optim.SGD(graphed.parameters(), lr=0.1)
    graph = AmpGraph(graphed, go, dtype)
    for _ in range(3):
        x, y = _batch("cnn", rng, 4, poison=False)
        with flow.autocast("cpu", dtype=dtype):
            loss = nn.functional.cross_entropy(eager(x), y)
        loss.backward()
        eo.step()
        eo.zero_grad()
        g_loss, _ = graph(x, y)
        assert g_loss.item() == loss.item()
    assert_same_state(eager, graphed)
    text = graph.ir().format()
    assert str(dtype) in text  # the casts to the low precision are IR nodes
    # without enable_amp the same graph computes in float32 only
    plain = AmpGraph(copy.deepcopy(eager), flow.optim.SGD(eager.parameters(), lr=0.1), dtype)
    plain.config.enable_amp(False)
    _, logits = plain(*_batch("cnn", rng, 4, poison=False))
    assert logits.dtype == flow.float32 and str(dtype) not in plain.ir().format()


def test_amp_arguments_are_checked():
    m = mlp()
    g = AmpGraph(m, flow.optim.SGD(m.parameters(), lr=0.1), flow.bfloat16)
    with pytest.raises(ValueError, match="float16 or oneflow.bfloat16"):
        g.config.enable_amp(True, dtype=flow.float64)
    with pytest.raises(TypeError, match="mode must be a bool"):
        g.config.enable_amp("yes")
    with pytest.raises(TypeError, match="expects an oneflow.amp.GradScaler"):
        g.set_grad_scaler(object())
    g(flow.randn(4, 6), flow.tensor([0, 1, 2, 3]))
    with pytest.raises(RuntimeError, match="before the graph is first called"):
        g.set_grad_scaler(flow.amp.GradScaler())


def test_runtime_state_with_amp_scaler_and_accumulation_resumes_bitwise(tmp_path):
    flow.manual_seed(0)
    m = mlp()
    m2 = copy.deepcopy(m)
    make = dict(init_scale=2.0**10, growth_interval=2)
    s1, s2 = flow.amp.GradScaler(**make), flow.amp.GradScaler(**make)
    g = AmpGraph(m, flow.optim.Adam(m.parameters(), lr=1e-2), flow.bfloat16, s1, acc=2)
    x, y = flow.randn(4, 6), flow.tensor([0, 1, 2, 3])
    for _ in range(3):
        g(x, y)
    flow.save(g.runtime_state_dict(), str(tmp_path / "g.pt"))
    g2 = AmpGraph(m2, flow.optim.Adam(m2.parameters(), lr=1e-2), flow.bfloat16, s2, acc=2)
    g2.load_runtime_state_dict(flow.load(str(tmp_path / "g.pt")))
    assert s2.get_scale() == s1.get_scale() == 2.0**11  # grown once, after two clean steps
    for _ in range(2):
        (a, _), (b, _) = g(x, y), g2(x, y)
        assert a.tolist() == b.tolist() and tuple(b.shape) == (2,)
    assert g2._compile_count == 0  # ran the loaded plan, no trace
    assert s2.get_scale() == s1.get_scale()
    assert_same_state(m, m2)


class TwoOptGraph(Graph):
    def __init__(self, model, opts, scaler):
        super().__init__()
        self.model = model
        for o in opts:
            self.add_optimizer(o)
        self.set_grad_scaler(scaler)

    def build(self, x, y):
        loss = nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        return loss


@pytest.mark.parametrize("enabled", [True, False])
def test_two_optimizers_and_a_disabled_scaler_equal_eager(enabled):
    rng = np.random.default_rng(9)
    eager = mlp()
    graphed = copy.deepcopy(eager)

    def opts(m):  # the first layer by Adam, the rest by momentum SGD
        ps = list(m.parameters())
        return [flow.optim.Adam(ps[:2], lr=1e-2), flow.optim.SGD(ps[2:], lr=0.05, momentum=0.9)]

    eos, gos = opts(eager), opts(graphed)
    es, gs = (flow.amp.GradScaler(init_scale=2.0**8, growth_interval=1, enabled=enabled) for _ in range(2))
    graph = TwoOptGraph(graphed, gos, gs)
    for step in range(4):
        x, y = _batch("mlp", rng, 4, poison=step == 2)
        loss = nn.functional.cross_entropy(eager(x), y)
        es.scale(loss).backward()
        for o in eos:
            es.step(o)
        es.update()
        for o in eos:
            o.zero_grad()
        np.testing.assert_array_equal(graph(x, y).numpy(), loss.detach().numpy())
        assert gs.get_scale() == es.get_scale()
        if enabled and step < 2:
            assert gs.get_scale() == 2.0 ** (9 + step)
        assert_same_state(eager, graphed)  # disabled: the NaN step runs as in eager (NaNs compare equal)
        assert np.isnan(graphed[0].weight.detach().numpy()).any() == (not enabled and step >= 2)


@pytest.mark.parametrize("opt", ["sgd", "adam", "clipped_adamw"])
def test_static_grad_scaler_in_graph_equals_eager(opt):
    rng = np.random.default_rng(8)
    flow.manual_seed(3)
    eager = mlp()
    graphed = copy.deepcopy(eager)
    eo, go = OPTIMIZERS[opt](eager.parameters()), OPTIMIZERS[opt](graphed.parameters())
    es, gs = flow.amp.StaticGradScaler(512.0), flow.amp.StaticGradScaler(512.0)
    graph = AmpGraph(graphed, go, flow.bfloat16, gs)
    for _ in range(4):
        x, y = _batch("mlp", rng, 4, poison=False)
        e_losses, e_logits = _eager_step(eager, eo, es, flow.bfloat16, x, y, 1)
        g_loss, g_logits = graph(x, y)
        np.testing.assert_array_equal(g_loss.numpy().reshape(-1), np.array(e_losses, dtype=np.float32))
        np.testing.assert_array_equal(g_logits.float().numpy(), e_logits)
        assert_same_state(eager, graphed)
        assert gs.get_scale() == es.get_scale() == 512.0
    # no inf check, no skip: an inf gradient reaches the parameters in both, as OneFlow's static loss scale
    x, y = _batch("mlp", rng, 4, poison=True)
    _eager_step(eager, eo, es, flow.bfloat16, x, y, 1)
    graph(x, y)
    assert not all(np.isfinite(p.detach().numpy()).all() for p in eager.parameters())
    for pe, pg in zip(eager.parameters(), graphed.parameters()):
        np.testing.assert_array_equal(pg.detach().numpy(), pe.detach().numpy())
    assert "grad_scaler.scale" in graph.state_dict()
