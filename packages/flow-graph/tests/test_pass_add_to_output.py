"""fuse_add_to_output (graph.config.allow_fuse_add_to_output): ``add(mm(a, b), r)`` becomes ``r.addmm_(a, b)`` where
``r`` dies at the add; off by default; left alone wherever the in-place accumulation could change a value."""
import numpy as np
import pytest

import oneflow as flow
from oneflow import nn
from oneflow_graph import Graph

from models import TrainGraph


class Block(nn.Module):
    """A residual MLP block with bias-free linear layers (LLaMA-style): h + W2 relu(W1 h)."""

    def __init__(self, bias_out=False):
        super().__init__()
        self.inp = nn.Linear(32, 64)
        self.w1, self.w2 = nn.Linear(64, 128, bias=False), nn.Linear(128, 64, bias=bias_out)
        self.out = nn.Linear(64, 8)

    def forward(self, x):
        h = self.inp(x)
        h = h + self.w2(flow.relu(self.w1(h)))
        return self.out(h)


class Infer(Graph):
    def __init__(self, model, fuse, returns_h=False):
        super().__init__()
        self.model, self.returns_h = model, returns_h
        self.config.allow_fuse_add_to_output(fuse)

    def build(self, x):
        if not self.returns_h:
            return self.model(x)
        h = self.model.inp(x)
        return h + self.model.w2(flow.relu(self.model.w1(h))), h  # h is returned: it must keep its value


def ops(graph):
    return [n.op.name for n in graph._last.ir.nodes]


def test_off_by_default_and_on_it_accumulates_into_the_dying_addend():
    flow.manual_seed(0)
    model = Block().eval()
    x = flow.randn(16, 32)
    default = Infer(model, False)
    fused = Infer(model, True)
    want = default(x).numpy()
    got = fused(x).numpy()
    assert "fuse_add_to_output" not in dict(default._last.report) and "addmm_" not in ops(default)
    assert dict(fused._last.report)["fuse_add_to_output"] == {"fused": 1}
    assert "addmm_" in ops(fused) and ops(fused).count("mm") == ops(default).count("mm") - 1
    assert "add" not in ops(fused) and fused._last.plan.native
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with flow.no_grad():
        np.testing.assert_allclose(got, model(x).numpy(), rtol=1e-5, atol=1e-5)
    x2 = flow.randn(16, 32)  # the next call reads fresh memory again
    np.testing.assert_allclose(fused(x2).numpy(), default(x2).numpy(), rtol=1e-5, atol=1e-5)


def test_enable_pass_names_it_too():
    flow.manual_seed(0)
    g = Infer(Block().eval(), False)
    g.config.enable_pass("fuse_add_to_output")
    g(flow.randn(4, 32))
    assert dict(g._last.report)["fuse_add_to_output"] == {"fused": 1}


def test_an_addend_still_read_afterwards_or_returned_or_broadcast_is_left_alone():
    flow.manual_seed(0)
    model = Block().eval()
    x = flow.randn(16, 32)
    returned = Infer(model, True, returns_h=True)
    out, h = returned(x)
    assert dict(returned._last.report)["fuse_add_to_output"] == {"fused": 0}
    with flow.no_grad():
        np.testing.assert_allclose(h.numpy(), model.inp(x).numpy(), rtol=1e-6)
    # with a bias the product is an addmm whose add is a broadcast bias: nothing to fuse into
    biased = Infer(Block(bias_out=True).eval(), True)
    biased(x)
    assert dict(biased._last.report)["fuse_add_to_output"] == {"fused": 0}


def test_training_a_residual_linear_equals_the_unfused_graph():
    # in training the residual stream is read again by the backward: the pass must not write it
    results = []
    for fuse in (False, True):
        flow.manual_seed(0)
        model = Block()
        opt = flow.optim.SGD(model.parameters(), lr=0.05)

        g = TrainGraph(model, opt)
        g.config.allow_fuse_add_to_output(fuse)
        rng = np.random.default_rng(0)
        losses = [g(flow.tensor(rng.standard_normal((16, 32)).astype(np.float32)),
                    flow.tensor(rng.integers(0, 8, 16))).item() for _ in range(4)]
        results.append((losses, [p.detach().numpy().copy() for p in model.parameters()]))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)


def test_bad_use_raises():
    g = Infer(Block().eval(), False)
    with pytest.raises(TypeError, match="allow_fuse_add_to_output\\(\\): mode must be a bool"):
        g.config.allow_fuse_add_to_output("yes")
    g(flow.randn(2, 32))
    with pytest.raises(RuntimeError, match="allow_fuse_add_to_output"):
        g.config.allow_fuse_add_to_output(True)


def test_an_addend_that_is_also_the_products_operand_is_left_alone():
    # h.addmm_(h, w) would overwrite h while the product still reads it
    class SelfResidual(Graph):
        def __init__(self, w):
            super().__init__()
            self.w = w
            self.config.allow_fuse_add_to_output(True)

        def build(self, x):
            h = x * 2
            return h + h @ self.w

    w = flow.randn(16, 16)
    g = SelfResidual(w)
    x = flow.randn(8, 16)
    out = g(x)
    assert dict(g._last.report)["fuse_add_to_output"] == {"fused": 0}
    np.testing.assert_allclose(out.numpy(), (x * 2 + (x * 2) @ w).numpy(), rtol=1e-6)
