"""Conv + batch-norm folding in inference graphs: which pairs fold, what is left alone, that folded graphs equal
eager inference, and that the fold follows parameters and buffers changed after compiling."""
import copy

import numpy as np
import pytest

import oneflow as flow
from oneflow import nn
from models import Infer, TrainGraph
from oneflow_graph import trace
from oneflow_graph.executor import Plan
from oneflow_graph.passes import fold_conv_bn

F = nn.functional


def names(ir):
    return [n.name for n in ir.nodes]


def _randomise_bn(model, seed=0):
    """Non-trivial running statistics and affine parameters (fresh ones would make the fold nearly a no-op)."""
    g = np.random.default_rng(seed)
    with flow.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                c = m.num_features
                m.running_mean.copy_(flow.tensor(g.standard_normal(c).astype(np.float32)))
                m.running_var.copy_(flow.tensor(g.uniform(0.3, 2.0, c).astype(np.float32)))
                if m.weight is not None:
                    m.weight.copy_(flow.tensor(g.uniform(0.5, 1.5, c).astype(np.float32)))
                    m.bias.copy_(flow.tensor(g.standard_normal(c).astype(np.float32)))
    return model


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("conv,bn,shape", [
    (lambda: nn.Conv2d(3, 6, 3, padding=1), lambda: nn.BatchNorm2d(6), (2, 3, 7, 7)),
    (lambda: nn.Conv2d(3, 6, 3, stride=2, bias=False), lambda: nn.BatchNorm2d(6), (2, 3, 9, 9)),
    (lambda: nn.Conv2d(4, 6, 1, groups=2), lambda: nn.BatchNorm2d(6, affine=False), (1, 4, 5, 5)),
    (lambda: nn.Conv1d(3, 5, 3), lambda: nn.BatchNorm1d(5, eps=1e-3), (2, 3, 11)),
    (lambda: nn.Conv3d(2, 4, 2), lambda: nn.BatchNorm3d(4), (1, 2, 4, 4, 4)),
])
def test_pair_folds_into_one_convolution(conv, bn, shape):
    flow.manual_seed(0)
    model = _randomise_bn(nn.Sequential(conv(), bn()).eval())
    x = flow.randn(*shape)
    ir = trace(lambda x: model(x), (x,))
    assert names(ir) == ["convolution", "native_batch_norm"]
    stats = fold_conv_bn(ir)
    assert stats["folded"] == 1 and stats["fold_ops"] > 0
    assert "native_batch_norm" not in names(ir) and names(ir).count("convolution") == 1
    with flow.no_grad():
        _close(Plan(ir).run([x]), model(x))


@pytest.mark.parametrize("case", ["training_bn", "conv_output_used", "no_running_stats", "transposed",
                                  "bn_not_after_conv", "mixed_dtype"])
def test_left_alone(case):
    flow.manual_seed(0)
    conv, bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)
    x = flow.randn(2, 3, 6, 6)
    if case == "training_bn":
        f = nn.Sequential(conv, bn).train()
    elif case == "conv_output_used":
        def f(x):
            y = conv(x)
            return bn(y) + y
        bn.eval()
    elif case == "no_running_stats":
        f = nn.Sequential(conv, nn.BatchNorm2d(4, track_running_stats=False)).eval()
    elif case == "transposed":
        f = nn.Sequential(nn.ConvTranspose2d(3, 4, 3), bn).eval()
    elif case == "bn_not_after_conv":
        f = nn.Sequential(conv, nn.ReLU(), bn).eval()
    else:  # a float64 batch norm after a float32 convolution: the fold would change the dtype
        bn = nn.BatchNorm2d(4).double().eval()

        def f(x):
            return bn(conv(x).double())
    with flow.no_grad():
        ir = trace(lambda x: f(x), (x,))
        before = names(ir)
        assert fold_conv_bn(ir)["folded"] == 0
        assert names(ir) == before
        _close(Plan(ir).run([x]), f(x))


class Block(nn.Module):
    """A ResNet basic block with a projection shortcut: conv-bn-relu, conv-bn, conv-bn shortcut, add, relu."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.down(x))


def _resnetish():
    flow.manual_seed(2)
    return _randomise_bn(nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                       Block(8, 16, 2), Block(16, 16, 1), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                                       nn.Linear(16, 5))).eval()


def _folded_at_batch_4():
    """The ResNet-like model's eval graph at batch 4, where every pair folds, checked against eager once."""
    model = _resnetish()
    g = Infer(model)
    x = flow.randn(4, 3, 16, 16)
    with flow.no_grad():
        _close(g(x), model(x))
    stats = dict(g._last.report)["fold_conv_bn"]
    assert stats["folded"] == 7 and stats["kept_costlier"] == 0
    return model, g, x


def test_resnet_block_eval_graph_equals_eager_and_follows_later_changes():
    model, g, x = _folded_at_batch_4()
    ops = [n.name for n in g._last.ir.nodes]
    # (prepack_conv_weights, which runs next, makes some of them read packed weights)
    assert "native_batch_norm" not in ops and ops.count("convolution") + ops.count("convolution_forward_packed") == 7
    assert g._last.plan.native
    # parameters and buffers changed in eager code after compiling: the next call folds the new values
    bn = model[4].bn2
    with flow.no_grad():
        bn.running_mean.add_(0.5)
        bn.weight.mul_(-2.0)
        model[3].conv1.weight.mul_(0.5)
        model[1].running_var.mul_(3.0)
    with flow.no_grad():
        want = model(x)
    got = g(x)
    assert g._compile_count == 1  # the same plan
    _close(got, want)
    # and load_state_dict into the modules
    other = _randomise_bn(_resnetish(), seed=9)
    model.load_state_dict(other.state_dict())
    with flow.no_grad():
        _close(g(x), other(x))


def test_eval_graph_sees_what_a_training_graph_trained():
    model = _resnetish()

    infer = Infer(model)
    train = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    x, t = flow.randn(4, 3, 16, 16), flow.tensor([0, 1, 2, 3])
    model.eval()
    infer(x)
    model.train()
    for _ in range(3):
        train(x, t)
    assert dict(train._last.report)["fold_conv_bn"]["folded"] == 0  # training-mode batch norm: untouched
    assert "native_batch_norm" in [n.name for n in train._last.ir.nodes]
    model.eval()
    with flow.no_grad():
        _close(infer(x), model(x))


def test_eval_mode_model_in_a_training_graph_keeps_its_batch_norm():
    # gradients flow through the eval-mode batch norm: its backward reads the convolution's output
    model = _resnetish()
    eager = copy.deepcopy(model)

    g = TrainGraph(model, flow.optim.SGD(model.parameters(), lr=0.1))
    x, t = flow.randn(4, 3, 16, 16), flow.tensor([0, 1, 2, 3])
    lg = g(x, t)
    assert dict(g._last.report)["fold_conv_bn"]["folded"] == 0
    le = F.cross_entropy(eager(x), t)
    le.backward()
    np.testing.assert_array_equal(lg.numpy(), le.detach().numpy())


def test_compiled_module_in_eval_mode_folds_without_grad_and_not_with_it():
    model = _resnetish()
    eager = copy.deepcopy(model)
    c = flow.compile(model)
    x = flow.randn(4, 3, 16, 16)
    with flow.no_grad():
        _close(c(x), eager(x))
    region = c.forward.compiled.last
    assert "native_batch_norm" not in [n.name for n in region.ir_forward.nodes]
    y = c(x)  # grad mode: the backward needs the batch norm's input
    y.sum().backward()
    eager(x).sum().backward()
    for a, b in zip(model.parameters(), eager.parameters()):
        _close(a.grad, b.grad, 1e-4)


def test_enable_pass_turns_it_off():
    model = _resnetish()
    g = Infer(model)
    g.config.enable_pass("fold_conv_bn", False)
    x = flow.randn(1, 3, 16, 16)
    with flow.no_grad():
        _close(g(x), model(x))
    assert "fold_conv_bn" not in dict(g._last.report)
    assert [n.name for n in g._last.ir.nodes].count("native_batch_norm") == 7


@pytest.mark.parametrize("hoist", [True, False])
def test_pairs_whose_weight_outweighs_the_activation_stay_unfolded(hoist):
    # at batch 1 the deep 3x3 layers (16*8*9 or 16*16*9 weights, 16*8*8 outputs) stay unfolded: run per call
    # their fold costs more than the batch norm; cached it would hold a scaled copy of the weight to save a
    # small pass. The stem and the two 1x1 shortcuts fold
    model = _resnetish()
    g = Infer(model)
    g.config.enable_pass("hoist_variables", hoist)
    x = flow.randn(1, 3, 16, 16)
    with flow.no_grad():
        _close(g(x), model(x))
    stats = dict(g._last.report)["fold_conv_bn"]
    assert stats["folded"] == 3 and stats["kept_costlier"] == 4
    assert [n.name for n in g._last.ir.nodes].count("native_batch_norm") == 4
    assert (g._last.ir.prologue is None) != hoist
    if hoist:
        assert dict(g._last.report)["hoist_variables"]["cached_values"] == 6  # a weight and a bias per fold


def test_with_hoisting_the_folds_run_once_in_the_cached_prologue():
    # the scaled weights are computed once and cached, not at each call
    model, g, x = _folded_at_batch_4()
    ir = g._last.ir
    assert "native_batch_norm" not in [n.name for n in ir.nodes]
    # the plan runs the convolutions on the cached weights and biases: what reads only variables, constants
    # and cached values is a view (the classifier's weight transpose), no fold op is left in it
    cached = {id(c) for c in ir.prologue.cached}
    for n in ir.nodes:
        if all(v is None or v.kind in ("var", "const") or id(v) in cached for v in n.inputs):
            assert n.outputs[0].alias_of is not None, n.name
    assert dict(g._last.report)["hoist_variables"]["cached_values"] == 14  # a weight and a bias per pair
    assert g._last.plan.prologue.runs == 1
    with flow.no_grad():
        _close(g(x), model(x))
    assert g._last.plan.prologue.runs == 1
