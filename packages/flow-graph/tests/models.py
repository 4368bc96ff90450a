"""The models and the eager/graph training comparison shared by the tests."""
import copy

import numpy as np

import oneflow as flow
from oneflow import nn
from oneflow_graph import Graph


def mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 4))


def cnn():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(8, 6, 3), nn.ReLU(), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(6, 5))


def batch(model_name, rng):
    if model_name == "mlp":
        return (flow.tensor(rng.standard_normal((5, 6)).astype(np.float32)),
                flow.tensor(rng.integers(0, 4, 5)))
    return (flow.tensor(rng.standard_normal((4, 3, 8, 8)).astype(np.float32)), flow.tensor(rng.integers(0, 5, 4)))


class TrainGraph(Graph):
    def __init__(self, model, optimizer, lr_sch=None):
        super().__init__()
        self.model = model
        self.add_optimizer(optimizer, lr_sch=lr_sch)

    def build(self, x, y):
        logits = self.model(x)
        loss = nn.functional.cross_entropy(logits, y)
        loss.backward()
        return loss


class Infer(Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def build(self, x):
        return self.model(x)


def train_both(make_model, make_opt, batches, make_sch=None):
    """Trains a model eagerly and a copy of it through a TrainGraph on the same batches; returns both models,
    the per-step losses of each and the graph."""
    eager = make_model()
    graphed = copy.deepcopy(eager)
    eo, go = make_opt(eager.parameters()), make_opt(graphed.parameters())
    es = make_sch(eo) if make_sch else None
    gs = make_sch(go) if make_sch else None
    graph = TrainGraph(graphed, go, gs)
    e_losses, g_losses = [], []
    for x, y in batches:
        loss = nn.functional.cross_entropy(eager(x), y)
        loss.backward()
        eo.step()
        if es is not None:
            es.step()
        eo.zero_grad()
        e_losses.append(loss.item())
        g_losses.append(graph(x, y).item())
    return eager, graphed, e_losses, g_losses, graph, (eo, go)


def assert_same_state(a, b, atol=0.0):
    sa, sb = a.state_dict(), b.state_dict()
    assert list(sa) == list(sb)
    for k in sa:
        x, y = sa[k].numpy(), sb[k].numpy()
        assert x.dtype == y.dtype, k
        np.testing.assert_allclose(y, x, rtol=0, atol=atol, err_msg=k)
