"""split_optimizer_updates: the optimizer update split by when its parameters' gradients are ready and moved into
the backward, so large gradients die early. Training equals eager, each part runs after every node touching its
tensors, the arena shrinks, and with clipping every part waits for the total norm."""
import numpy as np
import pytest

import oneflow as flow
from oneflow import nn
from oneflow_graph.passes import split_optimizer_updates

from models import TrainGraph, assert_same_state, train_both

OPTIMIZERS = {
    "sgd_momentum": lambda p: flow.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-4),
    "adam": lambda p: flow.optim.Adam(p, lr=1e-3),
    "adamw_amsgrad": lambda p: flow.optim.AdamW(p, lr=1e-3, amsgrad=True),
}


def wide():
    # 512 x 512 weights: 1 MiB gradients, the pass's default threshold; the small head stays at the end
    return nn.Sequential(nn.Linear(32, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512),
                         nn.Tanh(), nn.Linear(512, 4))


def batches(n=4):
    rng = np.random.default_rng(0)
    return [(flow.tensor(rng.standard_normal((8, 32)).astype(np.float32)), flow.tensor(rng.integers(0, 4, 8)))
            for _ in range(n)]


def report(graph, name="split_optimizer_updates"):
    return dict(graph._last.report)[name]


@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_training_with_moved_updates_equals_the_whole_update_bitwise_and_eager(opt):
    flow.manual_seed(0)
    eager, graphed, e_losses, g_losses, graph, _ = train_both(wide, OPTIMIZERS[opt], batches())
    assert report(graph)["moved_params"] == 2 and report(graph)["parts"] == 2  # the two 512 x 512 weights
    # the same graph with the update left whole: the parts compute the same values
    flow.manual_seed(0)
    model = wide()
    whole = TrainGraph(model, OPTIMIZERS[opt](model.parameters()))
    whole.config.enable_pass("split_optimizer_updates", False)
    w_losses = [whole(x, y).item() for x, y in batches()]
    assert g_losses == w_losses
    assert_same_state(model, graphed)
    # and eager
    assert g_losses == e_losses
    assert_same_state(eager, graphed)


def test_each_part_follows_every_node_touching_its_tensors_and_the_arena_shrinks():
    flow.manual_seed(0)
    *_, graph, _ = train_both(wide, OPTIMIZERS["sgd_momentum"], batches(2))
    ir = graph._last.ir
    updates = [i for i, n in enumerate(ir.nodes) if n.op.name == "sgd_update_"]
    assert len(updates) == 3 and updates[-1] == len(ir.nodes) - 1 and updates[0] < len(ir.nodes) // 2 + 20
    for i in updates:
        n = ir.nodes[i]
        roots = {id(v.root()) for v in n.inputs if v is not None}
        later = [m for m in ir.nodes[i + 1:] if m.op.name != "sgd_update_"]
        assert not any(id(v.root()) in roots for m in later for v in m.inputs if v is not None), n
        produced = {id(v) for m in ir.nodes[:i] for v in m.new_outputs()}
        assert all(v.kind != "node" or id(v) in produced for v in n.inputs)
    flow.manual_seed(0)
    model = wide()
    whole = TrainGraph(model, OPTIMIZERS["sgd_momentum"](model.parameters()))
    whole.config.enable_pass("split_optimizer_updates", False)
    for x, y in batches(2):
        whole(x, y)
    assert "split_optimizer_updates" not in dict(whole._last.report)
    planned = graph._last.plan.memory_stats()["planned_bytes"]
    assert planned < whole._last.plan.memory_stats()["planned_bytes"]


def test_with_clipping_every_part_waits_for_the_total_norm_and_training_equals_eager():
    flow.manual_seed(0)
    eager = wide()
    graphed = wide()
    graphed.load_state_dict(eager.state_dict())
    eo = flow.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
    go = flow.optim.SGD([{"params": list(graphed.parameters()), "clip_grad_max_norm": 0.5}], lr=0.05, momentum=0.9)
    graph = TrainGraph(graphed, go)
    for x, y in batches(3):
        nn.functional.cross_entropy(eager(x), y).backward()
        flow.nn.utils.clip_grad_norm_(eager.parameters(), 0.5)
        eo.step()
        eo.zero_grad()
        graph(x, y)
    assert_same_state(eager, graphed, atol=1e-6)
    names = [n.op.name for n in graph._last.ir.nodes]
    norm = len(names) - 1 - names[::-1].index("linalg_vector_norm")  # the total norm, over every gradient
    parts = [i for i, name in enumerate(names) if name == "sgd_update_"]
    assert len(parts) == 3 and min(parts) > norm


def small():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4))


def test_small_parameters_and_pipelined_irs_are_left_alone():
    flow.manual_seed(0)
    *_, graph, _ = train_both(small, OPTIMIZERS["adam"], [(flow.randn(5, 6), flow.tensor([0, 1, 2, 3, 0]))] * 2)
    assert report(graph) == {"moved_params": 0, "parts": 0}

    class Pipelined:  # what the pass reads of a pipelined IR
        __dict__ = {"pipeline": {"stage": 0}}
        nodes = []

    assert split_optimizer_updates(Pipelined()) == {"moved_params": 0, "parts": 0}
