"""flow.utils.checkpoint inside compiled code: the recomputation its backward traces survives CSE, so the forward's
activations are not kept (flow.compile saves only the regions' inputs; nn.Graph's arena shrinks), and the results
and gradients stay equal to eager checkpointed code."""
import copy

import numpy as np
import pytest

import oneflow as flow
from oneflow import nn
from oneflow.utils.checkpoint import checkpoint
from oneflow_graph import Graph, trace
from oneflow_graph.aot import compile_region
from oneflow_graph.passes import DEFAULT, checkpoint_recompute
from oneflow_graph.passes import common_subexpression_elimination as cse


def _blocks(n=3, wide=256):
    flow.manual_seed(0)  # wide inside, narrow at the edges: recomputing keeps only the narrow edges
    return nn.ModuleList([nn.Sequential(nn.Linear(16, wide), nn.Tanh(), nn.Linear(wide, wide), nn.Tanh(),
                                        nn.Linear(wide, 16)) for _ in range(n)])


class Net(nn.Module):
    def __init__(self, ckpt):
        super().__init__()
        self.blocks, self.head, self.ckpt = _blocks(), nn.Linear(16, 4), ckpt

    def forward(self, x):
        for b in self.blocks:
            x = checkpoint(b, x, use_reentrant=False) if self.ckpt else b(x)
        return self.head(x)


def test_recomputed_ops_are_tagged_and_cse_keeps_them_apart():
    block = _blocks(1, 8)[0]

    def step(x):
        y = checkpoint(block, x, use_reentrant=False)
        y.sum().backward()
        return y

    x = flow.randn(4, 16)
    for keep in (True, False):
        ir = trace(step, (x,), grad=True)
        assert [n.name for n in ir.nodes].count("tanh") == 4  # the forward's two, the recomputation's two
        (recomputed,) = ir.recomputed.values()
        assert [n.name for n in recomputed if n.name == "tanh"] == ["tanh", "tanh"]
        if keep:
            assert checkpoint_recompute(ir) == {"regions": 1, "recomputed_ops": len(recomputed)}
        cse(ir)
        assert [n.name for n in ir.nodes].count("tanh") == (4 if keep else 2)


def _saved_bytes(region):
    return sum(int(np.prod(v.shape)) * 4 for v in region.ir_forward.outputs[1])


def _peak(region):
    """Planned peak of a call: the saved values live from the forward to the backward, each plan's arena while
    it runs."""
    arenas = [region.forward.memory_stats()["planned_bytes"], region.backward.memory_stats()["planned_bytes"]]
    return _saved_bytes(region) + max(arenas)


def _compile(model, x, passes=None):
    names = {id(t): n for n, t in model.named_parameters()}
    return compile_region(model, (x,), {}, name="net", names=names, grad=True, passes=passes)


def test_compiled_checkpointed_regions_save_only_their_inputs():
    x = flow.randn(512, 16, requires_grad=True)
    plain, ckpt = _compile(Net(False), x), _compile(Net(True), x)
    merged = _compile(Net(True), x, passes=tuple(p for p in DEFAULT if p[0] != "checkpoint_recompute"))
    # each block's transposes, matmuls and tanh again
    assert dict(ckpt.report)["checkpoint_recompute"] == {"regions": 3, "recomputed_ops": 24}
    # without the tags CSE merged the recomputation into the forward: as much kept as without checkpointing
    assert _saved_bytes(merged) == _saved_bytes(plain)
    assert sorted(tuple(v.shape) for v in ckpt.ir_forward.outputs[1]) == [(512, 16)] * 3  # the three inputs
    assert _saved_bytes(ckpt) < _saved_bytes(plain) / 20
    assert _peak(ckpt) < 0.7 * _peak(plain)  # measured: 2.2 MB against 4.3 MB


@pytest.mark.parametrize("compiled", ["flow.compile", "module.compile"])
def test_compiled_gradients_equal_eager_checkpointing(compiled):
    model = Net(True)
    eager = copy.deepcopy(model)
    if compiled == "flow.compile":
        c = flow.compile(model)
    else:
        c = model
        model.compile()
    rng = np.random.default_rng(0)
    for _ in range(2):
        x = flow.tensor(rng.standard_normal((64, 16)).astype(np.float32))
        xc, xe = x.clone().requires_grad_(), x.clone().requires_grad_()
        yc, ye = c(xc), eager(xe)
        np.testing.assert_allclose(yc.detach().numpy(), ye.detach().numpy(), rtol=1e-6, atol=1e-6)
        (yc ** 2).sum().backward()
        (ye ** 2).sum().backward()
        np.testing.assert_allclose(xc.grad.numpy(), xe.grad.numpy(), rtol=1e-6, atol=1e-6)
        for a, b in zip(model.parameters(), eager.parameters()):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-6)
    region = (c.forward.compiled if compiled == "flow.compile" else model._compiled_call_impl.compiled).last
    assert dict(region.report)["checkpoint_recompute"]["regions"] == 3


class Train(Graph):
    def __init__(self, model):
        super().__init__()
        self.model = model
        trained = [p for p in model.parameters() if p.requires_grad]
        self.add_optimizer(flow.optim.SGD(trained, lr=0.05, momentum=0.9))

    def build(self, x, t):
        loss = ((self.model(x) - t) ** 2).mean()
        loss.backward()
        return loss


def _partly_frozen(ckpt):
    # blocks 1 and 2 frozen: the graph does not write their weights, so CSE could merge their recomputation (the
    # optimizer's writes to block 0's weights keep its recomputed ops apart anyway)
    net = Net(ckpt)
    for p in list(net.blocks[1].parameters()) + list(net.blocks[2].parameters()):
        p.requires_grad_(False)
    return net


def test_graph_training_with_checkpoint_keeps_less_and_equals_eager(capsys):
    plain, ckpt, off = _partly_frozen(False), _partly_frozen(True), _partly_frozen(True)
    eager = copy.deepcopy(ckpt)
    gp, gc, go = Train(plain), Train(ckpt), Train(off)
    go.config.enable_pass("checkpoint_recompute", False)
    gc.debug(0)
    oe = flow.optim.SGD([p for p in eager.parameters() if p.requires_grad], lr=0.05, momentum=0.9)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x = flow.tensor(rng.standard_normal((512, 16)).astype(np.float32))
        t = flow.tensor(rng.standard_normal((512, 4)).astype(np.float32))
        lp, lc, lo = gp(x, t), gc(x, t), go(x, t)
        oe.zero_grad()
        le = ((eager(x) - t) ** 2).mean()
        le.backward()
        oe.step()
        np.testing.assert_array_equal(lc.numpy(), lp.numpy())  # the same kernels on the same values
        np.testing.assert_array_equal(lo.numpy(), lp.numpy())
        np.testing.assert_allclose(lc.numpy(), le.detach().numpy(), rtol=1e-6, atol=1e-7)
    for a, b in zip(ckpt.parameters(), plain.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert "pass checkpoint_recompute: regions=3, recomputed_ops=24" in capsys.readouterr().out
    mp, mc, mo = (g._last.plan.memory_stats()["planned_bytes"] for g in (gp, gc, go))
    assert mc < 0.75 * mp  # measured: 2.4 MB against 4.2 MB (3.1 MB turned off)
    # turned off, CSE merges the frozen blocks' recomputation back into the forward: their activations are kept
    assert mc < mo <= mp
    assert "checkpoint_recompute" not in dict(go._last.report)
