"""module.to(flow.nn.graph.GraphModule): activation checkpointing and set_stage."""
import copy
import pickle

import numpy as np
import oneflow as flow
import pytest


class Train(flow.nn.Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, t):
        loss = ((self.model(x) - t) ** 2).mean()
        loss.backward()
        return loss


def _model():
    flow.manual_seed(0)

    def block():  # wide inside, narrow at its edges: checkpointing keeps only the narrow edges
        return flow.nn.Sequential(flow.nn.Linear(16, 256), flow.nn.Tanh(), flow.nn.Linear(256, 256),
                                  flow.nn.Tanh(), flow.nn.Linear(256, 16))

    return flow.nn.Sequential(block(), block(), block(), flow.nn.ReLU(), flow.nn.Linear(16, 4))


def test_graph_module_proxy_and_set_stage():
    m = _model()
    proxy = m[0].to(flow.nn.graph.GraphModule)
    assert isinstance(proxy, flow.nn.graph.GraphModule) and proxy.origin is m[0]
    assert m[0].to(flow.nn.graph.GraphModule) is proxy  # one proxy per module
    assert proxy.activation_checkpointing is False and proxy.stage_id is None
    proxy.set_stage(1)  # a local module: the stage is recorded, with no placement
    assert proxy.stage_id == 1 and proxy.stage_placement is None
    with pytest.raises(TypeError, match="stage_id"):
        proxy.set_stage(-1)
    with pytest.raises(TypeError, match="placement must be a oneflow.placement"):
        proxy.set_stage(0, "placement-1")
    assert proxy.stage_id == 1
    with pytest.raises(TypeError, match="bool"):
        proxy.activation_checkpointing = 1
    assert proxy.training is True and proxy.state_dict().keys() == m[0].state_dict().keys()  # reads go through
    x = flow.randn(2, 16)
    assert flow.equal(proxy(x), m[0](x))
    for back in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):  # the options travel with the module
        p2 = back[0].to(flow.nn.graph.GraphModule)
        assert p2.origin is back[0] and p2.stage_id == 1


def test_activation_checkpointing_equal_and_keeps_less():
    plain, ckpt = _model(), _model()
    for i in range(3):
        ckpt[i].to(flow.nn.graph.GraphModule).activation_checkpointing = True
    eager = copy.deepcopy(plain)
    gp = Train(plain, flow.optim.SGD(plain.parameters(), lr=0.05, momentum=0.9))
    gc = Train(ckpt, flow.optim.SGD(ckpt.parameters(), lr=0.05, momentum=0.9))
    oe = flow.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
    flow.manual_seed(5)
    for _ in range(5):
        x, t = flow.randn(512, 16), flow.randn(512, 4)  # activations outweigh the weight gradients
        lp, lc = gp(x, t), gc(x, t)
        oe.zero_grad()
        le = ((eager(x) - t) ** 2).mean()
        le.backward()
        oe.step()
        np.testing.assert_array_equal(lp.numpy(), lc.numpy())
        np.testing.assert_allclose(lc.numpy(), le.detach().numpy(), rtol=1e-6, atol=1e-7)
    for a, b in zip(plain.parameters(), ckpt.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    stats = dict(gc._last.report)["activation_checkpointing"]
    assert stats["regions"] == 3 and stats["recomputed_ops"] > 0
    assert stats["saved_values_after"] < stats["saved_values_before"]
    assert "activation_checkpointing" not in dict(gp._last.report)
    mp, mc = gp._last.plan.memory_stats(), gc._last.plan.memory_stats()
    assert mc["planned_bytes"] < mp["planned_bytes"]  # measured: 2.74 MB against 4.54 MB


def test_checkpointed_block_with_batchnorm_is_bitwise_equal():
    # BatchNorm updates its running stats: it is not recomputed (its output stays saved); the rest is
    def make():
        flow.manual_seed(0)
        block = flow.nn.Sequential(flow.nn.Conv2d(2, 8, 3, padding=1), flow.nn.BatchNorm2d(8), flow.nn.ReLU(),
                                   flow.nn.Conv2d(8, 2, 3, padding=1))
        return flow.nn.Sequential(block, flow.nn.Flatten(), flow.nn.Linear(2 * 6 * 6, 3))

    a, b = make(), make()
    b[0].to(flow.nn.graph.GraphModule).activation_checkpointing = True
    ga = Train(a, flow.optim.Adam(a.parameters(), lr=1e-2))
    gb = Train(b, flow.optim.Adam(b.parameters(), lr=1e-2))
    for _ in range(4):
        x, t = flow.randn(4, 2, 6, 6), flow.randn(4, 3)
        np.testing.assert_array_equal(ga(x, t).numpy(), gb(x, t).numpy())
    for p, q in zip(a.state_dict().values(), b.state_dict().values()):  # running stats included
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    stats = dict(gb._last.report)["activation_checkpointing"]
    assert stats["recomputed_ops"] > 0 and stats["saved_values_after"] < stats["saved_values_before"]
