"""Training graphs: forward, backward, optimizer step, zero_grad and lr schedule in one plan, equal to eager
training step by step (the same kernels run in the same order, so bitwise)."""
import numpy as np
import pytest

import oneflow as flow
from oneflow import nn
from oneflow_graph import Graph, GraphTraceError, Proxy

from models import TrainGraph, assert_same_state, batch, cnn, mlp, train_both

OPTIMIZERS = {
    "sgd": lambda p: flow.optim.SGD(p, lr=0.1),
    "momentum": lambda p: flow.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-3),
    "nesterov_dampening": lambda p: flow.optim.SGD(p, lr=0.05, momentum=0.9, dampening=0.0, nesterov=True),
    "adam": lambda p: flow.optim.Adam(p, lr=1e-2),
    "adamw": lambda p: flow.optim.AdamW(p, lr=1e-2, weight_decay=0.1),
    "adam_amsgrad": lambda p: flow.optim.Adam(p, lr=1e-2, amsgrad=True),
}


@pytest.mark.parametrize("model", ["mlp", "cnn"])
@pytest.mark.parametrize("opt", sorted(OPTIMIZERS))
def test_twenty_steps_equal_eager_training(model, opt):
    rng = np.random.default_rng(0)
    batches = [batch(model, rng) for _ in range(20)]
    flow.manual_seed(1)
    eager, graphed, el, gl, graph, (eo, go) = train_both(mlp if model == "mlp" else cnn, OPTIMIZERS[opt], batches)
    assert el == gl  # bitwise, every step
    assert_same_state(eager, graphed)  # parameters, and for the CNN batch norm's running stats and counter
    if model == "cnn":
        assert graphed[1].num_batches_tracked.item() == 20
    # optimizer state made by the graph is the optimizer's own, and equal to eager's
    for pe, pg in zip(eager.parameters(), graphed.parameters()):
        se, sg = eo.state[pe], go.state[pg]
        assert sorted(se) == sorted(sg)
        for k in se:
            np.testing.assert_array_equal(sg[k].numpy(), se[k].numpy())
    # the graph's gradients stay inside it, as zero_grad(set_to_none=True) leaves eager ones
    assert all(p.grad is None for p in graphed.parameters())


def test_transformer_layer_training_equals_eager():
    rng = np.random.default_rng(7)
    batches = [(flow.tensor(rng.standard_normal((3, 5, 16)).astype(np.float32)), flow.tensor(rng.integers(0, 4, 3)))
               for _ in range(6)]

    def make():
        return nn.Sequential(nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True),
                             nn.Flatten(), nn.Linear(16 * 5, 4))

    eager, graphed, el, gl, *_ = train_both(make, OPTIMIZERS["adamw"], batches)
    assert el == gl
    assert_same_state(eager, graphed)


def test_ops_without_meta_functions_are_named_trace_errors():
    lstm = nn.LSTM(4, 3, batch_first=True)

    class G(Graph):
        def __init__(self):
            super().__init__()
            self.lstm = lstm
            self.add_optimizer(flow.optim.SGD(lstm.parameters(), lr=0.1))

        def build(self, x):
            loss = self.lstm(x)[0].sum()
            loss.backward()  # the LSTM's backward op has no meta function
            return loss

    with pytest.raises(GraphTraceError, match=r"_rnn_layer_backward at .*test_training.py:\d+ cannot be traced"):
        G()(flow.randn(2, 3, 4))
    assert all(p.grad is None for p in lstm.parameters())


def test_first_step_creates_state_then_one_compiled_plan_serves_the_rest():
    rng = np.random.default_rng(1)
    batches = [batch("mlp", rng) for _ in range(6)]
    *_, graph, _ = train_both(mlp, OPTIMIZERS["adam"], batches)
    # the first call traced the state-creating first step, the second the steady step, cached from then on
    assert graph._compile_count == 2 and len(graph._cache) == 1
    *_, graph, _ = train_both(mlp, OPTIMIZERS["sgd"], batches)  # no state: one compile
    assert graph._compile_count == 1


@pytest.mark.parametrize("opt", ["momentum", "adam"])
def test_lr_scheduler_steps_without_recompiling(opt):
    rng = np.random.default_rng(2)
    batches = [batch("mlp", rng) for _ in range(12)]
    eager, graphed, el, gl, graph, (eo, go) = train_both(
        mlp, OPTIMIZERS[opt], batches, make_sch=lambda o: flow.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5))
    assert el == gl
    assert_same_state(eager, graphed)
    assert go.param_groups[0]["lr"] == eo.param_groups[0]["lr"] < OPTIMIZERS[opt]([flow.zeros(1)]).defaults["lr"]
    assert graph._compile_count == (2 if opt == "adam" else 2)  # momentum buffers are state too


def test_lr_changed_by_hand_reaches_the_plan():
    model = nn.Linear(3, 1)
    opt = flow.optim.SGD(model.parameters(), lr=0.0)

    class G(Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, x):
            loss = self.model(x).sum()
            loss.backward()
            return loss

    g = G()
    x = flow.ones(2, 3)
    w0 = model.weight.detach().numpy().copy()
    g(x)
    np.testing.assert_array_equal(model.weight.detach().numpy(), w0)  # lr 0: no change
    opt.param_groups[0]["lr"] = 0.5
    g(x)
    np.testing.assert_allclose(model.weight.detach().numpy(), w0 - 0.5 * 2, rtol=1e-6)  # d(sum)/dw = 2 per entry
    assert g._compile_count == 1


def test_frozen_parameters_stay_frozen_and_eval_graph_sees_training():
    model = mlp()
    model[0].weight.requires_grad_(False)
    frozen = model[0].weight.numpy().copy()
    opt = flow.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    g = TrainGraph(model, opt)
    rng = np.random.default_rng(3)
    for _ in range(3):
        g(*batch("mlp", rng))
    np.testing.assert_array_equal(model[0].weight.numpy(), frozen)

    class Eval(Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    ev = Eval()
    x, _ = batch("mlp", rng)
    np.testing.assert_array_equal(ev(x).numpy(), model(x).detach().numpy())
    g(*batch("mlp", rng))  # train more: the eval graph's next call sees the new parameters
    np.testing.assert_array_equal(ev(x).numpy(), model(x).detach().numpy())
    assert not ev.training and g.training


def test_batchnorm_eval_graph_uses_running_stats():
    model = cnn()
    rng = np.random.default_rng(4)
    g = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.01))
    for _ in range(3):
        g(*batch("cnn", rng))
    model.eval()

    class Eval(Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    x, _ = batch("cnn", rng)
    want = model(x).detach().numpy()
    unfolded = Eval()
    unfolded.config.enable_pass("fold_conv_bn", False)
    np.testing.assert_array_equal(unfolded(x).numpy(), want)  # the same kernels: bitwise
    folded = Eval()  # by default the batch norm folds into the convolution (rounding differently)
    np.testing.assert_allclose(folded(x).numpy(), want, rtol=1e-5, atol=1e-6)
    assert "native_batch_norm" not in [n.name for n in folded._last.ir.nodes]


def test_training_graph_without_backward_is_an_error():
    model = nn.Linear(2, 2)

    class G(Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(flow.optim.SGD(model.parameters(), lr=0.1))

        def build(self, x):
            return self.model(x).sum()

    with pytest.raises(RuntimeError, match="must call loss.backward\\(\\) inside build"):
        G()(flow.ones(1, 2))
    assert model.weight.grad is None


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_param_group_gradient_clipping_equals_eager_clip_grad_norm(norm_type):
    rng = np.random.default_rng(6)
    batches = [batch("mlp", rng) for _ in range(5)]
    eager = mlp()
    graphed = mlp()
    graphed.load_state_dict(eager.state_dict())
    eo = flow.optim.SGD(eager.parameters(), lr=0.5)
    go = flow.optim.SGD([{"params": list(graphed.parameters()), "clip_grad_max_norm": 0.1,
                          "clip_grad_norm_type": norm_type}], lr=0.5)
    g = TrainGraph(graphed, go)
    for x, y in batches:
        loss = nn.functional.cross_entropy(eager(x), y)
        loss.backward()
        total = flow.nn.utils.clip_grad_norm_(eager.parameters(), 0.1, norm_type)
        assert total.item() > 0.1  # the clipping does clip
        eo.step()
        eo.zero_grad()
        assert g(x, y).item() == loss.item()
    assert_same_state(eager, graphed)


def test_a_failed_trace_leaves_the_optimizer_as_it_was():
    model = nn.Linear(2, 2)
    opt = flow.optim.Adam(model.parameters(), lr=0.1)
    fail = [True]

    class G(Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, x):
            loss = self.model(x).sum()
            loss.backward()
            return loss

    original_step = opt.step

    def step_then_fail():
        original_step()  # the state is made (traced), then the trace fails
        if fail[0]:
            raise ValueError("boom")

    opt.step = step_then_fail
    with pytest.raises(ValueError, match="boom"):
        G()(flow.ones(1, 2))
    assert len(opt.state) == 0
    fail[0] = False
    g = G()
    g(flow.ones(1, 2))
    assert not any(isinstance(t, Proxy) for st in opt.state.values() for t in st.values())
    assert opt.state[model.weight]["step"].item() == 1


def test_stepping_the_optimizer_inside_build_is_an_error():
    model = nn.Linear(2, 2)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)

    class G(Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, x):
            loss = self.model(x).sum()
            loss.backward()
            opt.step()
            return loss

    w = model.weight.detach().numpy().copy()
    with pytest.raises(RuntimeError, match="must not call optimizer.step"):
        G()(flow.ones(1, 2))
    np.testing.assert_array_equal(model.weight.detach().numpy(), w)


def test_add_optimizer_checks_its_arguments():
    model = nn.Linear(2, 2)
    opt = flow.optim.SGD(model.parameters(), lr=0.1)
    other = flow.optim.SGD(model.parameters(), lr=0.1)

    class G(Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    g = G()
    with pytest.raises(TypeError, match="expects an oneflow.optim.Optimizer"):
        g.add_optimizer(model)
    with pytest.raises(ValueError, match="lr_sch must be a scheduler of the optimizer"):
        g.add_optimizer(opt, lr_sch=flow.optim.lr_scheduler.StepLR(other, 1))
    g.add_optimizer(opt)
    with pytest.raises(ValueError, match="added already"):
        g.add_optimizer(opt)
    with pytest.raises(ValueError, match=r"is_sparse=True\): SGD holds no sparse \(embedding\) parameter"):
        g.add_optimizer(other, is_sparse=True)


def test_traced_step_issues_the_ops_an_eager_step_issues():
    from oneflow._dispatch import DispatchMode

    class Log(DispatchMode):
        def __init__(self):
            self.names = []

        def __flow_dispatch__(self, op, inputs, attrs):
            self.names.append(op.name)
            return op.redispatch(inputs, attrs)

    rng = np.random.default_rng(5)
    batches = [batch("cnn", rng) for _ in range(2)]
    eager = cnn()
    eo = OPTIMIZERS["momentum"](eager.parameters())
    for i, (x, y) in enumerate(batches):
        log = Log()
        with log:
            loss = nn.functional.cross_entropy(eager(x), y)
            loss.backward()
            eo.step()
            eo.zero_grad()
    graphed = cnn()
    g = TrainGraph(graphed, OPTIMIZERS["momentum"](graphed.parameters()))
    for name in ("constant_folding", "algebraic", "cse", "dce", "fuse_softmax_cross_entropy"):
        g.config.enable_pass(name, False)
    for x, y in batches:
        g(x, y)
    # the steady-state step, op for op: the tracer sees the layouts eager code sees, so the backward formulas
    # take the same paths; the gradient copies that .grad makes while tracing (the tracer holds every tensor, so
    # none can be stolen) are what copy elision removes
    assert dict(g._last.report)["copy_elision"]["removed"] == 8
    assert [n.name for n in g._last.ir.nodes] == log.names
