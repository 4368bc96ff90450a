"""Compiled plans compute what eager code computes, op family by op family (the same kernels run, so the
results are bitwise equal), forward and gradients, with the layouts, dtypes and edge shapes eager code sees."""
import numpy as np
import pytest

import oneflow as flow
from oneflow import nn
from oneflow_graph import Graph
from oneflow_graph.executor import Plan

F = nn.functional


class Fn(Graph):
    def __init__(self, fn):
        super().__init__()
        self.__dict__["fn"] = fn

    def build(self, *args):
        return self.fn(*args)


def rand(*shape, dtype=np.float32, seed=0):
    return flow.tensor(np.random.default_rng(seed).standard_normal(shape).astype(dtype))


CASES = {
    "elementwise": (lambda a, b: (a * b + a.exp() - b.sigmoid()) / (b.abs() + 1), lambda: (rand(3, 4), rand(3, 4, seed=1))),
    "broadcast_mixed_dtype": (lambda a, b: a + b * 2, lambda: (rand(3, 1, 4), flow.arange(4, dtype=flow.int64))),
    "zero_dim": (lambda a, b: (a * b).sqrt() + a, lambda: (rand(2, 2).abs(), flow.tensor(3.0))),
    "zero_size": (lambda a: (a * 2).sum(0), lambda: (flow.zeros(0, 3),)),
    "non_contiguous_input": (lambda a: a.exp() + 1, lambda: (rand(4, 5).t(),)),
    "views": (lambda a: a.transpose(0, 1)[1:, ::2].reshape(-1) * a.view(-1)[:6].flip(0).repeat(1),
              lambda: (rand(3, 4),)),
    "reductions": (lambda a: (a.sum(1), a.mean(), a.max(0)[1], a.amin(1, keepdim=True), a.var(0), a.norm()),
                   lambda: (rand(5, 6),)),
    "matmul_family": (lambda a, b: (a @ b, flow.bmm(a.unsqueeze(0), b.unsqueeze(0)), F.linear(a, b.t())),
                      lambda: (rand(3, 4), rand(4, 5, seed=2))),
    "softmax_losses": (lambda a, y: (a.softmax(-1), F.log_softmax(a, 1), F.cross_entropy(a, y), F.mse_loss(a, a * 0.5)),
                       lambda: (rand(4, 6), flow.tensor([0, 5, 2, 1]))),
    "conv_pool_norm": (lambda x, w: F.max_pool2d(F.relu(F.conv2d(x, w, padding=1)), 2) + F.avg_pool2d(x.sum(1, keepdim=True), 2),
                       lambda: (rand(2, 3, 8, 8), rand(4, 3, 3, 3, seed=3))),
    "indexing_and_joins": (lambda a, i: (a[i], a.index_select(1, i), flow.cat([a, a * 2], 0), flow.stack([a, a], 2),
                                         flow.where(a > 0, a, -a), a.gather(1, i.view(1, -1).expand(3, 2))),
                           lambda: (rand(3, 4), flow.tensor([2, 0]))),
    "comparisons_and_casts": (lambda a: ((a > 0).float() + (a <= 0.5).to(flow.float64), a.to(flow.int32), a.round()),
                              lambda: (rand(6),)),
    "in_place_on_a_temporary": (lambda a: a.clone().mul_(2).add_(1).clamp_(min=0), lambda: (rand(5),)),
    "layer_norm_and_embedding": (lambda a, i: (F.layer_norm(a, (4,)), F.embedding(i, a)), lambda: (rand(5, 4), flow.tensor([[0, 4], [2, 2]]))),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_equals_eager(name):
    fn, make = CASES[name]
    args = make()
    expected = fn(*args)
    g = Fn(fn)
    for _ in range(2):  # the first call traces and runs, the second runs the plan only
        got = g(*args)
        flat_e = expected if isinstance(expected, tuple) else (expected,)
        flat_g = got if isinstance(got, tuple) else (got,)
        assert len(flat_e) == len(flat_g)
        for e, o in zip(flat_e, flat_g):
            assert o.dtype == e.dtype and tuple(o.shape) == tuple(e.shape)
            np.testing.assert_array_equal(o.numpy(), e.numpy())
    assert g._compile_count == 1


def test_in_place_ops_on_inputs_write_the_callers_tensors():
    g = Fn(lambda a: a.add_(1))
    x = flow.zeros(3)
    out = g(x)
    assert x.tolist() == [1.0, 1.0, 1.0]
    g(x)
    assert x.tolist() == [2.0, 2.0, 2.0]
    assert out.tolist() == [1.0, 1.0, 1.0]  # the returned input was copied when returned


def test_random_ops_draw_what_eager_draws():
    g = Fn(lambda a: (F.dropout(a, 0.5, training=True), flow.rand(3)))
    x = flow.ones(100)
    flow.manual_seed(7)
    e1 = (F.dropout(x, 0.5, training=True), flow.rand(3))
    e2 = (F.dropout(x, 0.5, training=True), flow.rand(3))
    flow.manual_seed(7)
    g1, g2 = g(x), g(x)
    for e, o in zip(e1 + e2, g1 + g2):
        np.testing.assert_array_equal(o.numpy(), e.numpy())


class GradGraph(Graph):
    """Returns the loss and the gradients of the model's parameters (an lr-0 optimizer makes it train)."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.add_optimizer(flow.optim.SGD(model.parameters(), lr=0.0))

    def build(self, x):
        loss = self.model(x).square().mean()
        loss.backward()
        return loss, [p.grad for p in self.model.parameters()]


@pytest.mark.parametrize("make", [
    lambda: nn.Sequential(nn.Linear(5, 7), nn.GELU(), nn.LayerNorm(7), nn.Linear(7, 3)),
    lambda: nn.Sequential(nn.Conv2d(2, 4, 3, stride=2), nn.BatchNorm2d(4), nn.SiLU(), nn.AdaptiveAvgPool2d(1),
                          nn.Flatten(), nn.Linear(4, 2)),
    lambda: nn.Sequential(nn.Embedding(10, 4), nn.Flatten(), nn.Linear(12, 2)),
])
def test_gradients_equal_eager(make):
    model = make()
    if isinstance(model[0], nn.Embedding):
        x = flow.tensor([[1, 2, 3], [3, 9, 0]])
    elif isinstance(model[0], nn.Conv2d):
        x = rand(3, 2, 9, 9)
    else:
        x = rand(4, 5)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    loss = model(x).square().mean()
    loss.backward()
    eager = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    model.load_state_dict(state)  # batch norm's running stats back to where they were
    g_loss, grads = GradGraph(model)(x)
    assert g_loss.item() == loss.item()
    assert len(grads) == len(eager)
    for e, o in zip(eager, grads):
        np.testing.assert_array_equal(o.numpy(), e)


def test_plans_free_intermediates_after_their_last_use():
    def chain(a):
        for _ in range(10):
            a = a * 1.5
        return a

    g = Fn(chain)
    g.config.enable_pass("fuse_elementwise", False)  # the ten steps stay ten steps
    x = rand(8)
    np.testing.assert_array_equal(g(x).numpy(), chain(x).numpy())
    plan = g._last.plan
    assert isinstance(plan, Plan) and len(plan) == 10
    frees = [step[4] for step in plan._steps]
    assert frees[0] == () and all(len(f) == 1 for f in frees[1:])  # each step drops the value before it


def test_the_core_plan_and_the_python_loop_agree():
    from oneflow import _C

    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.ReLU(), nn.Flatten(), nn.Linear(3 * 4 * 4, 2))
    model.eval()
    g = Fn(lambda x: (model(x).softmax(-1), model(x).sum()))
    x = rand(2, 2, 6, 6)
    g(x)
    ir = g._last.ir
    native, loop = Plan(ir), Plan(ir, use_native=False)
    assert native.native == hasattr(_C, "Plan") and not loop.native and loop.native_error is None
    for a, b in zip(native.run([x]), loop.run([x])):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # a training step (backward and the optimizer's update) runs on the core's plan too
    train = GradGraph(nn.Linear(3, 2))
    train(rand(4, 3))
    assert train._last.plan.native == hasattr(_C, "Plan"), train._last.plan.native_error


def test_a_training_step_failing_after_a_write_raises_and_is_not_redone():
    from oneflow import _C

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn, self.emb = nn.BatchNorm1d(3), nn.Embedding(4, 3)

        def forward(self, x, idx):
            return self.bn(x).sum() + self.emb(idx).sum()

    class Step(Graph):
        def __init__(self, net):
            super().__init__()
            self.net = net
            self.add_optimizer(flow.optim.SGD(net.parameters(), lr=0.1))

        def build(self, x, idx):
            loss = self.net(x, idx)
            loss.backward()
            return loss

    net = Net()
    g = Step(net)
    x = rand(5, 3)
    g(x, flow.tensor([0, 1, 3]))
    assert g._last.plan.native == hasattr(_C, "Plan")
    before = net.bn.running_mean.numpy().copy()
    weight = net.emb.weight.detach().numpy().copy()
    with pytest.raises(IndexError):
        g(x, flow.tensor([0, 1, 9]))  # the lookup fails after the running stats were updated
    ref = nn.BatchNorm1d(3)
    ref.running_mean.copy_(flow.tensor(before))
    ref(x)  # one eager update from the same stats: the failed call must not have applied two
    np.testing.assert_array_equal(net.bn.running_mean.numpy(), ref.running_mean.numpy())
    np.testing.assert_array_equal(net.emb.weight.detach().numpy(), weight)  # the step never ran
