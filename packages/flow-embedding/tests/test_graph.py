"""OneEmbedding inside nn.Graph (flow-graph): lookups and sparse updates run in the compiled step and train
exactly as eager code does."""
import numpy as np
import pytest

import oneflow as flow
from oneflow import _C

from helpers import make_emb

Graph = pytest.importorskip("oneflow_graph").Graph  # flow-graph is a test dependency (tox env embedding)


class Model(flow.nn.Module):
    def __init__(self, path, size_factor):
        super().__init__()
        self.emb = make_emb(path, dim=4, num_tables=2, size_factor=size_factor)
        self.fc = flow.nn.Linear(8, 1)

    def forward(self, ids):
        return self.fc(self.emb(ids).reshape(ids.shape[0], -1))


class TrainGraph(Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt, is_sparse=True)

    def build(self, ids, y):
        loss = flow.nn.functional.mse_loss(self.model(ids), y)
        loss.backward()
        return loss


OPTIMIZERS = {
    "sgd": (lambda p: flow.optim.SGD(p, lr=0.1), 1),
    "sgd_momentum": (lambda p: flow.optim.SGD(p, lr=0.1, momentum=0.9), 2),
    "adam": (lambda p: flow.optim.Adam(p, lr=0.01), 3),
    "adagrad": (lambda p: flow.optim.Adagrad(p, lr=0.1, lr_decay=0.01), 2),
    "ftrl": (lambda p: flow.one_embedding.Ftrl(p, lr=0.1, lambda1=0.01), 3),
}


def batches(n, batch):
    rng = np.random.default_rng(0)
    for _ in range(n):  # few distinct ids: rows repeat within and across steps
        ids = flow.tensor(rng.integers(0, 6, size=(batch, 2)), dtype=flow.int64)
        yield ids, flow.tensor(rng.standard_normal((batch, 1)), dtype=flow.float32)


def store_rows(emb):
    """Every row of the store (values and optimizer state), sorted by (table, id)."""
    n = len(emb._store)
    tables, ids = np.empty(n, np.int32), np.empty(n, np.int64)
    rows = np.empty((n, emb._store.row_floats), np.float32)
    emb._store.export_rows(0, tables, ids, rows)
    order = np.lexsort((ids, tables))
    return tables[order], ids[order], rows[order]


def pair(tmp_path, name):
    make, size_factor = OPTIMIZERS[name]
    eager, graphed = Model(tmp_path / "eager", size_factor), Model(tmp_path / "graph", size_factor)
    graphed.fc.load_state_dict(eager.fc.state_dict())
    return eager, make(eager.parameters()), graphed, make(graphed.parameters())


def eager_step(model, opt, ids, y):
    loss = flow.nn.functional.mse_loss(model(ids), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss.detach()


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_graph_training_equals_eager(tmp_path, name):
    eager, eager_opt, graphed, graph_opt = pair(tmp_path, name)
    graph = TrainGraph(graphed, graph_opt)
    for ids, y in batches(5, 8):
        want = eager_step(eager, eager_opt, ids, y)
        got = graph(ids, y)
        assert graph._last.plan.native == hasattr(_C, "Plan"), graph._last.plan.native_error
        np.testing.assert_array_equal(got.numpy(), want.numpy())  # the same kernels in the same order: bitwise
    for a, b in zip(store_rows(eager.emb), store_rows(graphed.emb)):  # values and optimizer state
        np.testing.assert_array_equal(b, a)
    assert len(store_rows(eager.emb)[1]) == 12  # ids 0..5 of two tables
    np.testing.assert_allclose(graphed.fc.weight.detach().numpy(), eager.fc.weight.detach().numpy(), rtol=1e-6, atol=1e-7)
    assert graph_opt.state[graphed.emb.shadow]["step"].item() == eager_opt.state[eager.emb.shadow]["step"].item() == 5


def test_the_lookup_and_update_are_ops_of_the_compiled_step(tmp_path):
    eager, eager_opt, graphed, graph_opt = pair(tmp_path, "adam")
    graph = TrainGraph(graphed, graph_opt)
    data = list(batches(3, 4))
    for ids, y in data:
        graph(ids, y)
    names = [n.op.name for n in graph.ir().nodes]
    assert names.count("one_embedding_lookup") == 1 and names.count("one_embedding_sparse_update_") == 1
    assert names.index("one_embedding_lookup") < names.index("one_embedding_sparse_update_")


def test_a_second_signature_compiles_and_still_matches(tmp_path):
    eager, eager_opt, graphed, graph_opt = pair(tmp_path, "adam")
    graph = TrainGraph(graphed, graph_opt)
    for batch in (8, 8, 8, 5, 5, 8):
        (ids, y), = batches(1, batch)
        want = eager_step(eager, eager_opt, ids, y)
        np.testing.assert_allclose(graph(ids, y).numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
    assert len(graph._cache) == 2  # batch 8 and batch 5
    for a, b in zip(store_rows(eager.emb), store_rows(graphed.emb)):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


def test_lr_scheduler_reaches_the_compiled_sparse_update(tmp_path):
    eager, eager_opt, graphed, graph_opt = pair(tmp_path, "sgd")
    eager_sch = flow.optim.lr_scheduler.StepLR(eager_opt, 1, gamma=0.5)

    class G(TrainGraph):
        def __init__(self, model, opt):
            Graph.__init__(self)
            self.model = model
            self.add_optimizer(opt, lr_sch=flow.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5), is_sparse=True)

    graph = G(graphed, graph_opt)
    for ids, y in batches(4, 8):
        eager_step(eager, eager_opt, ids, y)
        eager_sch.step()
        graph(ids, y)
    for a, b in zip(store_rows(eager.emb), store_rows(graphed.emb)):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)


def test_is_sparse_needs_a_sparse_rule(tmp_path):
    model = Model(tmp_path, 3)
    with pytest.raises(TypeError, match="RMSprop has no sparse update for OneEmbedding parameters"):
        TrainGraph(model, flow.optim.RMSprop(model.parameters()))
    with pytest.raises(ValueError, match="needs size_factor >= 3"):
        small = Model(tmp_path / "small", 1)
        TrainGraph(small, flow.optim.Adam(small.parameters()))
    with pytest.raises(ValueError, match="holds no sparse"):
        TrainGraph(model, flow.optim.SGD(model.fc.parameters(), lr=0.1))


def test_bad_table_ids_raise_in_the_graph(tmp_path):
    model = Model(tmp_path, 1)

    class Lookup(Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, ids, tables):
            return self.model.emb(ids, tables)

    g = Lookup()
    ids = flow.tensor([[1, 2]], dtype=flow.int64)
    np.testing.assert_array_equal(g(ids, flow.tensor([[0, 1]])).numpy(), model.emb(ids).detach().numpy())
    with pytest.raises(IndexError, match="table_ids holds 2, out of range for 2 table"):
        g(ids, flow.tensor([[0, 2]]))


def test_a_lookup_of_constant_ids_reads_the_store_at_each_call(tmp_path):
    model = Model(tmp_path, 1)
    opt = flow.optim.SGD(model.emb.parameters(), lr=1.0)

    class Lookup(Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):  # ids made inside build are constants of the graph: the lookup must not fold
            return self.model.emb(flow.tensor([[1, 2]])) + x

    g, x = Lookup(), flow.zeros(1, 2, 4)
    before = g(x).numpy()
    model.emb(flow.tensor([[1, 2]])).sum().backward()
    opt.step()
    np.testing.assert_allclose(g(x).numpy(), before - 1.0, rtol=1e-6)  # SGD with gradient 1, lr 1
    assert "one_embedding_lookup" in [n.op.name for n in g.ir().nodes]


def test_gradient_accumulation_and_eager_steps_after_the_graph(tmp_path):
    eager, eager_opt, graphed, graph_opt = pair(tmp_path, "adam")

    class Accumulating(TrainGraph):
        def __init__(self, model, opt):
            super().__init__(model, opt)
            self.config.set_gradient_accumulation_steps(2)

    graph = Accumulating(graphed, graph_opt)
    for ids, y in batches(3, 8):  # the graph splits the batch into two micro-batches and steps once
        for half in (slice(0, 4), slice(4, 8)):
            (flow.nn.functional.mse_loss(eager(ids[half]), y[half]) / 2).backward()
        eager_opt.step()
        eager_opt.zero_grad()
        graph(ids, y)
    for a, b in zip(store_rows(eager.emb), store_rows(graphed.emb)):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
    for ids, y in batches(2, 8):  # eager training goes on from the state the graph left
        eager_step(eager, eager_opt, ids, y)
        eager_step(graphed, graph_opt, ids, y)
    for a, b in zip(store_rows(eager.emb), store_rows(graphed.emb)):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
    assert graph_opt.state[graphed.emb.shadow]["step"].item() == 5


def test_a_graph_with_an_embedding_refuses_to_save_a_runtime_state(tmp_path):
    eager, eager_opt, graphed, graph_opt = pair(tmp_path, "adam")
    graph = TrainGraph(graphed, graph_opt)
    for ids, y in batches(2, 4):
        graph(ids, y)
    with pytest.raises(RuntimeError, match="one_embedding_lookup reads a store that lives in this process"):
        graph.runtime_state_dict()
