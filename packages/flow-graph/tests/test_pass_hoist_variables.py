"""Hoisting variable-only computations into a graph's cached prologue: which nodes move (small traced IRs),
that hoisted graphs equal eager code, that the cache is reused between calls and computed again after each kind
of change to the variables it reads, and that training graphs and saved runtime states keep working."""
import copy

import numpy as np
import pytest

import oneflow as flow
from oneflow import nn
from models import Infer, TrainGraph
from oneflow_graph import trace
from oneflow_graph.executor import Plan
from oneflow_graph.passes import hoist_variables

F = nn.functional


def names(nodes):
    return [n.name for n in nodes]


def _eq(a, b):
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


# ---- the pass on small IRs ------------------------------------------------------------------------------------
def test_variable_only_chain_moves_to_the_prologue_and_what_reads_inputs_stays():
    w, b = flow.randn(4, 3), flow.randn(4)

    def f(x):
        return x @ (w * 2.0).exp().t() + b.sin()

    x = flow.randn(2, 3)
    ir = trace(f, (x,))
    before = names(ir.nodes)
    stats = hoist_variables(ir)
    pro = ir.prologue
    assert names(pro.ir.nodes) == ["mul", "exp", "sin"]
    # the transpose is a view at the end of the chain: it stays, on the cached value
    assert names(ir.nodes) == [n for n in before if n not in ("mul", "exp", "sin")]
    assert stats == {"hoisted": 3, "cached_values": 2, "cached_bytes": (12 + 4) * 4}
    assert [v.tensor for v in pro.ir.variables] == [w, b] and ir.variables == []
    assert "prologue" in ir.format() and "%h0 = " in ir.format()
    plan = Plan(ir)
    _eq(plan.run([x]), f(x))
    _eq(plan.run([x * 3]), f(x * 3))
    assert plan.prologue.runs == 1
    w.mul_(-1.5)  # an in-place change bumps the version: the next run computes the prologue again
    _eq(plan.run([x]), f(x))
    assert plan.prologue.runs == 2


def test_readers_of_a_variable_the_plan_writes_stay_in_the_plan():
    state, w = flow.zeros(3), flow.randn(3)

    def f(x):
        y = x + state * 2.0  # state is written below: this read must see each call's state
        state.add_(x)
        return y + w.exp()

    x = flow.randn(3)
    ir = trace(f, (x,))
    hoist_variables(ir)
    assert names(ir.prologue.ir.nodes) == ["exp"]
    assert "mul" in names(ir.nodes) and "add_" in names(ir.nodes)
    state.zero_()
    plan = Plan(ir)
    got = [plan.run([x]) for _ in range(3)]
    state.zero_()
    want = [f(x) for _ in range(3)]
    for a, b in zip(got, want):
        _eq(a, b)


def test_variables_sharing_a_written_storage_are_not_hoisted():
    flat = flow.randn(6)
    a, b = flat[:3], flat[3:]  # two variables over one storage (a flat parameter buffer)

    def f(x):
        y = b * 2.0
        a.add_(x)
        return y + a

    ir = trace(f, (flow.randn(3),))
    assert hoist_variables(ir)["hoisted"] == 0 and ir.prologue is None


def test_random_and_fresh_memory_ops_are_not_hoisted():
    w = flow.randn(8)

    def f(x):
        return x + F.dropout(w, 0.5, training=True) + w.cos()

    ir = trace(f, (flow.randn(8),))
    hoist_variables(ir)
    assert names(ir.prologue.ir.nodes) == ["cos"]
    assert all(n.name != "cos" for n in ir.nodes)


def test_nothing_to_hoist_leaves_the_ir_as_it_was():
    w = flow.randn(4, 3)

    def f(x):
        return x @ w.t()  # only a view of the variable: nothing worth caching

    x = flow.randn(2, 3)
    ir = trace(f, (x,))
    before = ir.format()
    assert hoist_variables(ir) == {"hoisted": 0, "cached_values": 0, "cached_bytes": 0}
    assert ir.prologue is None and ir.format() == before


def test_a_hoisted_output_is_a_new_tensor_at_each_call():
    w = flow.randn(3)

    def f(x):
        return x + 1.0, w * 2.0

    x = flow.randn(3)
    ir = trace(f, (x,))
    hoist_variables(ir)
    plan = Plan(ir)
    _, first = plan.run([x])
    first.add_(100.0)  # what one call returned is the caller's: the cache is not changed through it
    _, second = plan.run([x])
    _eq(second, w * 2.0)
    assert plan.prologue.runs == 1


def test_zero_size_and_zero_dim_variables():
    s, e = flow.tensor(0.5), flow.zeros(0, 3)

    def f(x):
        return flow.cat([x * s.exp(), e * 2.0]), e.sum(0) + s

    x = flow.randn(2, 3)
    ir = trace(f, (x,))
    hoist_variables(ir)
    assert {"exp", "mul"} <= set(names(ir.prologue.ir.nodes))
    plan = Plan(ir)
    for a, b in zip(plan.run([x]), f(x)):
        _eq(a, b)
    s.fill_(-1.0)
    got = plan.run([x])
    assert plan.prologue.runs == 2
    for a, b in zip(got, f(x)):
        _eq(a, b)
    assert tuple(got[0].shape) == (2, 3) and tuple(got[1].shape) == (3,)


# ---- graphs -----------------------------------------------------------------------------------------------------
class WeightNormLinear(nn.Module):
    """weight = g * v / ||v|| per row: a reparametrisation computed from parameters only."""

    def __init__(self, cin, cout):
        super().__init__()
        self.v = nn.Parameter(flow.randn(cout, cin))
        self.g = nn.Parameter(flow.rand(cout, 1) + 0.5)
        self.bias = nn.Parameter(flow.randn(cout))

    def forward(self, x):
        w = self.g * self.v / self.v.norm(dim=1, keepdim=True)
        return F.linear(x, w, self.bias)


class CastLinear(nn.Module):
    """A float32 Linear run in float64: the weight goes through a cast (and the linear's transpose)."""

    def __init__(self, cin, cout):
        super().__init__()
        self.lin = nn.Linear(cin, cout)

    def forward(self, x):
        return F.linear(x.double(), self.lin.weight.double(), self.lin.bias.double())


def _convnet():
    flow.manual_seed(3)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 4))
    g = np.random.default_rng(1)
    with flow.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.copy_(flow.tensor(g.standard_normal(8).astype(np.float32)))
                m.running_var.copy_(flow.tensor(g.uniform(0.5, 2.0, 8).astype(np.float32)))
    return model.eval()


def test_weight_cast_transpose_and_reparametrisation_are_cached_and_equal_eager():
    flow.manual_seed(0)
    model = nn.Sequential(WeightNormLinear(6, 5), nn.ReLU(), CastLinear(5, 3))
    g = Infer(model)
    x = flow.randn(4, 6)
    with flow.no_grad():
        want = model(x)
    got = g(x)
    assert got.dtype == flow.float64
    _eq(got, want)
    pro = g._last.ir.prologue
    # the norm, the scaling (a division by the broadcast norm and a product: too short a chain to fuse) and the
    # two casts; the linears' transposes stay
    assert sorted(names(pro.ir.nodes)) == ["div", "linalg_vector_norm", "mul", "to_dtype", "to_dtype"]
    hoist = dict(g._last.report)["hoist_variables"]
    assert hoist["cached_values"] >= 3 and hoist["cached_bytes"] >= (5 * 6 + 3 * 5) * 4
    for _ in range(3):
        _eq(g(x), want)
    assert g._last.plan.prologue.runs == 1


def test_amp_inference_graph_caches_the_weight_casts():
    flow.manual_seed(1)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    g = Infer(model)
    g.config.enable_amp(True, dtype=flow.bfloat16)
    x = flow.randn(3, 8)
    with flow.no_grad(), flow.autocast("cpu", dtype=flow.bfloat16):
        want = model(x)
    got = g(x)
    assert got.dtype == want.dtype
    _eq(got.float(), want.float())
    casts = [n for n in g._last.ir.prologue.ir.nodes]
    assert len(casts) >= 4  # both weights and both biases cast once, not at every call
    with flow.no_grad():
        model[0].weight.mul_(0.5)
    with flow.no_grad(), flow.autocast("cpu", dtype=flow.bfloat16):
        want = model(x)
    _eq(g(x).float(), want.float())
    assert g._last.plan.prologue.runs == 2


def _check(g, model, x, runs, compiles=1):
    with flow.no_grad():
        want = model(x)
    _close(g(x), want)
    _close(g(x), want)  # a second call with nothing changed reuses the cache
    assert g._last.plan.prologue.runs == runs
    assert g._compile_count == compiles


def test_cache_is_recomputed_after_each_kind_of_change():
    model = _convnet()
    g = Infer(model)
    x = flow.randn(2, 3, 8, 8)
    _check(g, model, x, 1)
    assert dict(g._last.report)["fold_conv_bn"]["folded"] == 2
    conv = model[0]
    with flow.no_grad():  # an eager in-place change through .data
        conv.weight.data.mul_(2.0)
    _check(g, model, x, 2)
    other = _convnet()  # load_state_dict copies into the same tensors
    with flow.no_grad():
        for p in other.parameters():
            p.mul_(-0.7)
    model.load_state_dict(other.state_dict())
    _check(g, model, x, 3)
    opt = flow.optim.SGD(model.parameters(), lr=0.5)  # an eager optimizer step
    model(x).sum().backward()
    opt.step()
    opt.zero_grad()
    _check(g, model, x, 4)
    new = flow.randn(*conv.weight.shape)  # new memory swapped in, no write at all
    while new._version != conv.weight._version:  # with the same version: only the storage tells the change
        (new if new._version < conv.weight._version else conv.weight)._bump_version()
    conv.weight.data = new
    _check(g, model, x, 5)
    model.train()  # an eager training-mode forward updates the running statistics
    with flow.no_grad():
        model(x)
    model.eval()
    _check(g, model, x, 6)


def test_eval_graph_sees_what_a_training_graph_trained():
    model = _convnet()

    infer = Infer(model)
    train = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    x, t = flow.randn(2, 3, 8, 8), flow.tensor([0, 3])
    _check(infer, model, x, 1)
    model.train()
    for _ in range(3):
        train(x, t)
    # the training graph writes every parameter (and batch norm's statistics): nothing of it is hoisted
    assert train._last.ir.prologue is None
    model.eval()
    _check(infer, model, x, 2)


def test_training_graph_with_a_frozen_part_trains_equal_to_eager():
    flow.manual_seed(4)
    model = nn.Sequential(WeightNormLinear(6, 8), nn.ReLU(), nn.Linear(8, 3))
    for p in model[0].parameters():
        p.requires_grad_(False)  # frozen: the optimizer never writes it, so its reparametrisation is cached
    eager = copy.deepcopy(model)
    opt_g = flow.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1, momentum=0.9)
    opt_e = flow.optim.SGD([p for p in eager.parameters() if p.requires_grad], lr=0.1, momentum=0.9)

    g = TrainGraph(model, opt_g)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x = flow.tensor(rng.standard_normal((4, 6)).astype(np.float32))
        t = flow.tensor(rng.integers(0, 3, 4))
        lg = g(x, t)
        le = F.cross_entropy(eager(x), t)
        opt_e.zero_grad()
        le.backward()
        opt_e.step()
        _eq(lg, le)
    for a, b in zip(model.parameters(), eager.parameters()):
        _eq(a, b)
    pro = g._last.ir.prologue
    trained = {id(p) for p in model[2].parameters()}
    assert pro is not None and not any(id(v.tensor) in trained for v in pro.ir.variables)
    assert {id(v.tensor) for v in pro.ir.variables} == {id(model[0].v), id(model[0].g)}


def test_runtime_state_round_trip_recomputes_the_prologue_on_the_first_call(tmp_path):
    model = _convnet()
    g = Infer(model)
    x = flow.randn(2, 3, 8, 8)
    g(x)
    sd = g.runtime_state_dict()
    assert sd["signatures"][0]["ir"]["hoisted"] is True
    path = tmp_path / "g.pt"
    flow.save(sd, str(path))
    model2 = _convnet()
    with flow.no_grad():
        for p in model2.parameters():
            p.zero_()
    g2 = Infer(model2)
    g2.load_runtime_state_dict(flow.load(str(path)))
    assert g2._last.plan.prologue is not None and g2._last.plan.prologue.runs == 0
    _check(g2, model, x, 1, compiles=0)  # model2 now holds model's state; loaded, not traced
    _close(g2(x), g(x))
    with flow.no_grad():
        model2[4].running_var.mul_(4.0)
    with flow.no_grad():
        _close(g2(x), model2(x))
    assert g2._last.plan.prologue.runs == 2


def test_turning_the_pass_off_and_debug_statistics(capsys):
    model = _convnet()
    off = Infer(model)
    off.config.enable_pass("hoist_variables", False)
    x = flow.randn(2, 3, 8, 8)  # both pairs fold at batch 2
    with flow.no_grad():
        _close(off(x), model(x))
    assert off._last.ir.prologue is None and off._last.plan.prologue is None
    assert "hoist_variables" not in dict(off._last.report)
    on = Infer(model)
    on.config.enable_pass("prepack_conv_weights", False)  # its signature's own part: test_pass_prepack_conv.py
    on(x)
    capsys.readouterr()
    on.debug(0)
    out = capsys.readouterr().out
    stats = on._last.plan.prologue.stats()
    assert "pass hoist_variables: hoisted=" in out
    assert f"prologue cache: ops={stats['ops']}, cached_values={stats['cached_values']}, " \
           f"cached_bytes={stats['cached_bytes']}" in out
    assert on._last.plan.memory_stats()["prologue_bytes"] == stats["cached_bytes"] + stats["arena_bytes"]
    assert stats["cached_bytes"] == sum(v.numel() * 4 for m in (model[0], model[3]) for v in
                                        [m.weight, flow.zeros(8)])


def test_unknown_pass_name_lists_hoisting():
    g = Infer(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="hoist_variables"):
        g.config.enable_pass("hoist_variable")


def test_signatures_of_one_graph_share_one_cache():
    # another batch size traces the same prologue: the folded weights are cached once per graph
    model = _convnet()
    g = Infer(model)
    x1, x4 = flow.randn(2, 3, 8, 8), flow.randn(4, 3, 8, 8)
    g(x1)
    first = g._last.plan.prologue
    with flow.no_grad():
        _close(g(x4), model(x4))
    assert g._compile_count == 2 and g._last.plan.prologue is first and first.runs == 1
    with flow.no_grad():
        model[1].running_mean.add_(1.0)
        want1, want4 = model(x1), model(x4)
    _close(g(x1), want1)
    _close(g(x4), want4)
    assert first.runs == 2
    other = Infer(model)  # another graph has its own
    other(x1)
    assert other._last.plan.prologue is not first
