"""Softmax cross-entropy fusion: which traced log_softmax + nll_loss pairs (and their backward pairs) become the
fused op, what stays unfused, and that graphs with the fused op compute what eager code does (values and
gradients; bitwise where the fused kernels round as the unfused ones)."""
import copy

import numpy as np
import pytest

import oneflow as flow
from oneflow import nn
from oneflow_graph import Graph, trace
from oneflow_graph.executor import Plan
from oneflow_graph.passes import DEFAULT, fuse_softmax_cross_entropy as fuse

F = nn.functional


def names(ir):
    return [n.name for n in ir.nodes]


def _inputs(shape=(6, 5), seed=0):
    rng = np.random.default_rng(seed)
    x = flow.tensor(rng.standard_normal(shape).astype(np.float32))
    tshape = () if len(shape) == 1 else (shape[0],) + tuple(shape[2:])
    t = flow.tensor(rng.integers(0, shape[0] if len(shape) == 1 else shape[1], size=tshape))
    return x, t


@pytest.mark.parametrize("kw", [{}, {"reduction": "sum"}, {"reduction": "none"}, {"ignore_index": 1},
                                {"label_smoothing": 0.1}, {"weight": "w"}, {"weight": "w", "label_smoothing": 0.3}])
@pytest.mark.parametrize("shape", [(6, 5), (2, 4, 3, 3), (5,)])
def test_forward_pair_becomes_one_node(shape, kw):
    x, t = _inputs(shape)
    kw = dict(kw)
    if kw.get("weight") == "w":
        kw["weight"] = flow.linspace(0.5, 2.0, shape[0] if len(shape) == 1 else shape[1])

    def f(x, t):
        return F.cross_entropy(x, t, **kw)

    ir = trace(f, (x, t))
    assert names(ir) == ["log_softmax", "nll_loss" if not kw.get("label_smoothing") else "_nll_loss_smoothed"]
    assert fuse(ir) == {"fused": 1, "fused_backward": 0, "removed": 1}
    assert names(ir) == ["_softmax_cross_entropy"]
    got = Plan(ir).run([x, t])
    want = f(x, t)
    if "weight" in kw and kw.get("label_smoothing"):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    else:
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_criterion_module_and_explicit_log_softmax_nll():
    x, t = _inputs()
    crit = nn.CrossEntropyLoss(label_smoothing=0.05)
    for f in (lambda x, t: crit(x, t), lambda x, t: F.nll_loss(F.log_softmax(x, dim=1), t),
              lambda x, t: F.nll_loss(x.log_softmax(-1), t, reduction="sum")):
        ir = trace(f, (x, t))
        assert fuse(ir)["fused"] == 1
        np.testing.assert_array_equal(Plan(ir).run([x, t]).numpy(), f(x, t).numpy())


@pytest.mark.parametrize("case", ["logp_returned", "logp_reused", "other_dim", "dtype", "softmax_log"])
def test_left_unfused(case):
    x, t = _inputs((4, 5, 3))

    def f(x, t):
        if case == "logp_returned":
            lp = F.log_softmax(x, 1)
            return F.nll_loss(lp, t), lp
        if case == "logp_reused":
            lp = F.log_softmax(x, 1)
            return F.nll_loss(lp, t) + lp.exp().sum()
        if case == "other_dim":  # nll_loss reads dim 1 as the classes: this log_softmax normalises another
            return F.nll_loss(F.log_softmax(x, 2), t)
        if case == "dtype":
            return F.nll_loss(F.log_softmax(x, 1, dtype=flow.float64), t)
        return F.nll_loss(F.softmax(x, 1).log(), t)  # underflows where log_softmax does not: stays as written

    ir = trace(f, (x, t))
    before = names(ir)
    assert fuse(ir)["fused"] == 0
    assert names(ir) == before


def test_write_to_the_logits_between_forward_and_backward_keeps_it_unfused():
    class G(Graph):
        def __init__(self, m):
            super().__init__()
            self.m = m
            self.add_optimizer(flow.optim.SGD(m.parameters(), lr=0.1))

        def build(self, x, t):
            z = self.m(x)
            loss = F.cross_entropy(z, t)
            z = z.detach()
            z.mul_(0.5)  # the fused backward would read these logits; the unfused one reads log-probabilities
            loss.backward()
            return loss, z

    x, t = flow.randn(4, 3), flow.tensor([0, 1, 2, 1])
    m = nn.Linear(3, 3)
    e = copy.deepcopy(m)
    g = G(m)
    _, zg = g(x, t)
    assert dict(g._last.report)["fuse_softmax_cross_entropy"]["fused"] == 0
    z = e(x)
    loss = F.cross_entropy(z, t)
    ze = z.detach()
    ze.mul_(0.5)
    loss.backward()
    np.testing.assert_array_equal(zg.numpy(), ze.numpy())
    with flow.no_grad():
        for p in e.parameters():
            p -= 0.1 * p.grad
    for a, b in zip(m.parameters(), e.parameters()):  # the graph's SGD op rounds p - lr * g once, eager twice
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-7)


class Train(Graph):
    def __init__(self, model, opt, **loss_kw):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)
        self.loss_kw = loss_kw

    def build(self, x, t):
        loss = F.cross_entropy(self.model(x), t, **self.loss_kw)
        loss.backward()
        return loss


@pytest.mark.parametrize("loss_kw", [{}, {"reduction": "sum", "ignore_index": 2}, {"label_smoothing": 0.2},
                                     {"weight": "w", "label_smoothing": 0.1}])
def test_training_graph_fuses_forward_and_backward_and_equals_eager(loss_kw):
    loss_kw = dict(loss_kw)
    if loss_kw.get("weight") == "w":
        loss_kw["weight"] = flow.linspace(0.5, 2.0, 7)
    flow.manual_seed(0)
    model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 7))
    eager = copy.deepcopy(model)
    g = Train(model, flow.optim.Adam(model.parameters(), lr=1e-2), **loss_kw)
    eo = flow.optim.Adam(eager.parameters(), lr=1e-2)
    rng = np.random.default_rng(1)
    exact = "weight" not in loss_kw
    for _ in range(5):
        x = flow.tensor(rng.standard_normal((9, 10)).astype(np.float32))
        t = flow.tensor(rng.integers(0, 7, 9))
        lg = g(x, t)
        le = F.cross_entropy(eager(x), t, **loss_kw)
        eo.zero_grad()
        le.backward()
        eo.step()
        if exact:
            np.testing.assert_array_equal(lg.numpy(), le.detach().numpy())
        else:
            np.testing.assert_allclose(lg.numpy(), le.detach().numpy(), rtol=1e-6)
    for a, b in zip(model.parameters(), eager.parameters()):
        if exact:
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
        else:
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    stats = dict(g._last.report)["fuse_softmax_cross_entropy"]
    assert stats == {"fused": 1, "fused_backward": 1, "removed": 2}
    ops = [n.name for n in g._last.ir.nodes]
    assert "_softmax_cross_entropy" in ops and "_softmax_cross_entropy_backward" in ops
    assert not {"log_softmax", "nll_loss", "_nll_loss_smoothed", "nll_loss_backward",
                "_log_softmax_backward_data"} & set(ops)
    assert g._last.plan.native  # the core's plan runs the fused ops


def test_enable_pass_turns_it_off_and_debug_reports_it(capsys):
    model = nn.Linear(4, 3)
    g = Train(model, flow.optim.SGD(model.parameters(), lr=0.1))
    g.config.enable_pass("fuse_softmax_cross_entropy", False)
    g(flow.randn(5, 4), flow.tensor([0, 1, 2, 0, 1]))
    assert "fuse_softmax_cross_entropy" not in dict(g._last.report)
    assert "log_softmax" in [n.name for n in g._last.ir.nodes]
    m2 = nn.Linear(4, 3)
    g2 = Train(m2, flow.optim.SGD(m2.parameters(), lr=0.1))
    g2.debug(0)
    g2(flow.randn(5, 4), flow.tensor([0, 1, 2, 0, 1]))
    out = capsys.readouterr().out
    assert "pass fuse_softmax_cross_entropy: fused=1, fused_backward=1, removed=2" in out
    order = [n for n, _ in DEFAULT]
    assert order.index("fuse_softmax_cross_entropy") > order.index("cse")  # sees the pair once, merged


class Step(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4))

    def forward(self, x, t):
        return F.cross_entropy(self.net(x), t, label_smoothing=0.1)


def test_compiled_module_fuses_and_gradients_equal_eager():
    flow.manual_seed(3)
    model = Step()
    eager = copy.deepcopy(model)
    compiled = flow.compile(model)
    x, t = flow.randn(7, 6), flow.tensor([0, 1, 2, 3, 0, 1, 2])
    lc = compiled(x, t)
    lc.backward()
    le = eager(x, t)
    le.backward()
    np.testing.assert_array_equal(lc.detach().numpy(), le.detach().numpy())
    for a, b in zip(model.parameters(), eager.parameters()):
        np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())
    region = compiled.forward.compiled.last
    fwd_ops = [n.name for n in region.ir_forward.nodes]
    bwd_ops = [n.name for n in region.ir_backward.nodes]
    assert "_softmax_cross_entropy" in fwd_ops and "log_softmax" not in fwd_ops
    assert "_softmax_cross_entropy_backward" in bwd_ops
    # the backward reads the logits and two numbers per row, not (N, C) log-probabilities
    saved = sorted(tuple(v.shape) for v in region.ir_forward.outputs[1])
    assert (7, 4) in saved and saved.count((7,)) == 2
