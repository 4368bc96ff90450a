"""A sharded MultiTableEmbedding trained inside nn.Graph (add_optimizer(..., is_sparse=True)) equals the same
training in eager code (which equals one single-rank table: equal_single.py): the exchange and the owners'
lookups and updates are registry ops the compiled step runs. SGD with momentum and Adam, 5 steps, duplicate ids.
Argument: a scratch folder."""
import os
import sys

import numpy as np

import oneflow as flow
from oneflow_graph import Graph

oe = flow.one_embedding
r, n = flow.env.get_rank(), flow.env.get_world_size()
root = sys.argv[1]
NT, DIM, IDS, B = 2, 4, 20, 6


def make(name):
    tables = [oe.make_table_options(oe.make_uniform_initializer(-0.5, 0.5)) for _ in range(NT)]
    store = oe.make_device_mem_store_options(os.path.join(root, name), capacity=4 * NT * IDS, size_factor=3)
    return oe.MultiTableEmbedding(name, DIM, flow.float32, flow.int64, tables, store, seed=3)


def loss_of(emb, ids, y):
    return ((emb(ids).reshape(B, -1) - y) ** 2).mean()


class TrainGraph(Graph):
    def __init__(self, emb, opt):
        super().__init__()
        self.emb = emb
        self.add_optimizer(opt, is_sparse=True)

    def build(self, ids, y):
        loss = loss_of(self.emb, ids, y)
        loss.backward()
        return loss


rng = np.random.default_rng(10 + r)  # each rank its own batches
data = [(flow.tensor(rng.integers(0, IDS, (B, NT)), dtype=flow.int64),
         flow.tensor(rng.standard_normal((B, NT * DIM)), dtype=flow.float32)) for _ in range(5)]
every = flow.tensor(np.tile(np.arange(IDS, dtype=np.int64), NT))
tabs = flow.tensor(np.repeat(np.arange(NT, dtype=np.int64), IDS))
for kind, make_opt in [("momentum", lambda p: flow.optim.SGD(p, lr=0.1, momentum=0.9)),
                       ("adam", lambda p: flow.optim.Adam(p, lr=0.05))]:
    eager, graphed = make(f"eager_{kind}"), make(f"graph_{kind}")
    eo, go = make_opt(eager.parameters()), make_opt(graphed.parameters())
    g = TrainGraph(graphed, go)
    for ids, y in data:
        eo.zero_grad()
        e_loss = loss_of(eager, ids, y)
        e_loss.backward()
        eo.step()
        g_loss = g(ids, y)
        np.testing.assert_allclose(g_loss.numpy(), e_loss.detach().numpy(), rtol=1e-6, err_msg=kind)
    with flow.no_grad():
        np.testing.assert_allclose(graphed(every, tabs).numpy(), eager(every, tabs).numpy(), rtol=1e-6,
                                   atol=1e-7, err_msg=kind)
    assert g._last.plan.native, g._last.plan.native_error
    text = g.ir().format()
    assert "one_embedding_sharded_lookup" in text and "one_embedding_sharded_update" in text
print("graph sharding ok")
