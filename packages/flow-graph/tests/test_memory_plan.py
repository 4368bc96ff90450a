"""The memory plan of compiled graphs: the core's plan places intermediates in one arena; no two values alive at
the same step share bytes, the arena is smaller than the values without reuse, a training step's peak
(arena included) stays below eager code's, and ``debug()`` reports the planned bytes."""
import numpy as np
import pytest

import oneflow as flow
from oneflow import _C, nn
from oneflow_graph import Graph
from models import TrainGraph


def conv_net():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(16 * 8 * 8, 10))


class Attention(nn.Module):
    """Views, transposes and batched matmuls: values that outlive their producer through views."""

    def __init__(self):
        super().__init__()
        self.qkv, self.proj, self.norm = nn.Linear(16, 48), nn.Linear(16, 16), nn.LayerNorm(16)

    def forward(self, x):
        q, k, v = self.qkv(self.norm(x)).split(16, dim=-1)
        att = (q @ k.transpose(-2, -1) / 4).softmax(-1)
        return self.proj(att @ v).reshape(-1, 16).sum(0, keepdim=True) @ flow.ones(16, 10)


def data(name, rng):
    if name == "attention":
        return flow.tensor(rng.standard_normal((4, 8, 16)).astype(np.float32)), flow.tensor(rng.integers(0, 10, 1))
    return flow.tensor(rng.standard_normal((8, 3, 16, 16)).astype(np.float32)), flow.tensor(rng.integers(0, 10, 8))


MODELS = {"conv": conv_net, "attention": Attention}


def compiled(name, compress=False):
    flow.manual_seed(0)
    model = MODELS[name]()
    g = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    g.config.enable_compress_memory(compress)
    x, y = data(name, np.random.default_rng(0))
    g(x, y)
    g(x, y)  # the steady-state plan (the first one also made the momentum buffers)
    return g, model, x, y


def _itemsize(dtype):
    return flow.empty((), dtype=dtype).element_size()


def arena_intervals(g):
    """(first step, last step, offset, bytes) of each arena value; its life runs to the last step reading it or a
    view of it (to the end when the graph returns it)."""
    ir, steps = g._last.ir, g._last.plan._native.steps
    assert len(steps) == len(ir.nodes)
    slot_of = {}
    for n, st in zip(ir.nodes, steps):
        for v, s in zip(n.outputs, st["outputs"]):
            if v is not None and v.producer is n:
                slot_of[v] = s
    last = {}  # id(root value) -> last step that reads its memory
    for i, n in enumerate(ir.nodes):
        for v in n.inputs:
            if v is not None:
                last[id(v.root())] = i
    for v in ir.output_values() + [v for v, _ in ir.escaped]:
        last[id(v.root())] = len(steps)
    out = []
    for i, (n, st) in enumerate(zip(ir.nodes, steps)):
        for v, off, meta in zip(n.outputs, st["offsets"], st["metas"]):
            if off >= 0:
                shape, dtype, _ = meta
                size = int(np.prod(shape, dtype=np.int64)) * _itemsize(dtype)
                out.append((i, max(i, last.get(id(v.root()), i)), off, size, v))
    return out


def in_place_handoff(ir, a, b):
    """Whether arena value ``b`` takes ``a``'s bytes at the step where ``a`` dies: an elementwise node whose
    first input is ``a`` writes its output over it (the planner's in-place reuse)."""
    a0, a1, ao, an, av = a
    b0, b1, bo, bn, bv = b
    node = ir.nodes[b0]
    return (a1 == b0 and ao == bo and an == bn and "elementwise" in node.op.traits and node.inputs
            and node.inputs[0] is not None and node.inputs[0].root() is av)


@pytest.mark.parametrize("compress", [False, True], ids=["default", "compress_memory"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_no_two_live_values_share_arena_bytes(name, compress):
    g, *_ = compiled(name, compress)
    stats = g._last.plan.memory_stats()
    intervals = arena_intervals(g)
    assert len(intervals) == stats["arena_values"] > 5
    ir = g._last.ir
    handoffs = 0
    for k, a in enumerate(intervals):
        a0, a1, ao, an, _ = a
        assert ao + an <= stats["planned_bytes"]
        for b in intervals[k + 1:]:
            b0, b1, bo, bn, _ = b
            if a0 <= b1 and b0 <= a1:  # alive at a common step
                if in_place_handoff(ir, a, b) or in_place_handoff(ir, b, a):
                    handoffs += 1
                    continue
                assert ao + an <= bo or bo + bn <= ao, (a0, a1, ao, an, b0, b1, bo, bn)
    if name == "conv":
        assert handoffs > 0  # its ReLUs write over the batch norms' outputs that die there
    assert 0 < stats["live_bytes"] <= stats["planned_bytes"] < stats["naive_bytes"]


def test_compress_memory_plans_no_larger_an_arena_and_trains_the_same():
    plain, m_plain, x, y = compiled("conv")
    packed, m_packed, _, _ = compiled("conv", compress=True)
    a, b = plain._last.plan.memory_stats(), packed._last.plan.memory_stats()
    assert b["live_bytes"] == a["live_bytes"] and b["live_bytes"] <= b["planned_bytes"] <= a["planned_bytes"]
    for _ in range(3):
        assert plain(x, y).item() == packed(x, y).item()
    for p, q in zip(m_plain.parameters(), m_packed.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    with pytest.raises(RuntimeError, match="enable_compress_memory"):
        packed.config.enable_compress_memory(False)  # fixed once compiled
    with pytest.raises(TypeError, match="must be a bool"):
        Graph().config.enable_compress_memory(1)


def test_a_training_step_peaks_below_eager_with_the_arena_counted():
    def peak_growth(step, held=0):
        before = _C._allocator_stats()["allocated_bytes"] - held
        _C._reset_peak_stats()
        step()
        return _C._allocator_stats()["peak_allocated_bytes"] - before

    g, _, x, y = compiled("conv")
    flow.manual_seed(0)
    model = conv_net()
    opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def eager():
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    eager()
    eager()  # momentum buffers exist, as in the graph's steady state
    eager_peak = peak_growth(eager)
    arena = g._last.plan.memory_stats()["planned_bytes"]
    graph_peak = peak_growth(lambda: g(x, y), held=arena)  # the arena a previous call kept counts as this one's
    assert 0 < graph_peak < eager_peak


def test_debug_reports_per_pass_statistics_and_planned_bytes(capsys):
    class G(Graph):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def build(self, x):
            return (self.lin(x) * 1).relu().exp()

    g = G()
    g(flow.randn(3, 4))
    capsys.readouterr()
    g.debug(1)
    out = capsys.readouterr().out
    planned = g._last.plan.memory_stats()["planned_bytes"]
    assert "pass algebraic: identities=1" in out and "pass dce: removed=" in out
    assert f"memory plan: planned_bytes={planned}, naive_bytes=" in out and planned > 0


def test_memory_stats_are_none_for_the_python_loop():
    from oneflow_graph import trace
    from oneflow_graph.executor import Plan

    ir = trace(lambda x: x.exp() + 1, (flow.randn(3),))
    assert Plan(ir, use_native=False).memory_stats() is None
    assert Plan(ir).memory_stats()["arena_values"] >= 1


def test_compiling_keeps_no_traced_tensor_alive():
    # A traced tensor (Proxy) owns never-written memory of its value's size, so that the core's layout decisions
    # see eager's; once compiled, nothing may keep them: a graph used to hold every one through its IR (~1 GB of
    # allocator blocks for the bench GPT, 8x its planned arena)
    import gc

    from oneflow_graph.tracer import Proxy

    gc.collect()
    before = _C._allocator_stats()["allocated_bytes"]
    g, model, x, y = compiled("conv")
    gc.collect()
    assert not [o for o in gc.get_objects() if isinstance(o, Proxy)]
    held = _C._allocator_stats()["allocated_bytes"] - before  # the graph's model, grads, momentum, data, arena
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    data_bytes = x.numel() * x.element_size() + y.numel() * y.element_size()
    arena = g._last.plan.memory_stats()["planned_bytes"]
    assert held <= 3 * params + data_bytes + arena + (1 << 20), (held, params, arena)


def test_tracing_takes_no_allocator_memory_for_the_traced_values():
    # the proxies' memory is reserved address space outside the allocator: the first call (trace, compile, run)
    # peaks no higher than a later call, which runs the same plan
    class G(Graph):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(256, 256)

        def build(self, x):
            h = x
            for _ in range(16):  # 16 activations of 4 MiB each, traced then planned into a small arena
                h = self.lin(h).relu()
            return h.sum()

    g, x = G(), flow.randn(4096, 256)
    base = _C._allocator_stats()["allocated_bytes"]
    _C._reset_peak_stats()
    g(x)
    first = _C._allocator_stats()["peak_allocated_bytes"] - base
    base = _C._allocator_stats()["allocated_bytes"]
    _C._reset_peak_stats()
    g(x)
    later = _C._allocator_stats()["peak_allocated_bytes"] - base
    act = 4096 * 256 * 4
    assert first < 6 * act and first <= later + g._last.plan.memory_stats()["planned_bytes"] + act, (first, later)
