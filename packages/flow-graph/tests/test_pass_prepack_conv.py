"""Weight prepacking in graphs: convolutions whose weights the graph never writes read them packed into their
kernel's layout, the pack cached in the prologue; results stay bitwise eager's, follow weights changed after
compiling, and training graphs' parameters are left alone."""
import copy

import numpy as np

import oneflow as flow
from oneflow import nn
from models import Infer, TrainGraph
from oneflow_graph import trace
from oneflow_graph.executor import Plan
from oneflow_graph.passes import prepack_conv_weights

# (input shape, conv) pairs: a strided 3x3 runs on oneDNN with a blocked weight layout (packing pays wherever
# oneDNN has a blocked kernel); the 1x1 reads its weight as it is, and the 3-channel stem takes the plain path
CASES = [((2, 64, 16, 16), lambda: nn.Conv2d(64, 128, 3, stride=2, padding=1)),
         ((2, 32, 8, 8), lambda: nn.Conv2d(32, 48, 3, padding=1, bias=False)),
         ((2, 64, 8, 8), lambda: nn.Conv2d(64, 64, 1)),
         ((2, 3, 16, 16), lambda: nn.Conv2d(3, 16, 3, padding=1))]


def _pays(conv, shape):
    y = conv(flow.randn(*shape))
    k = len(conv.weight.shape) - 2
    return flow._C._conv_weight_packing_pays(list(shape), list(conv.weight.shape), list(y.shape), list(conv.stride),
                                             list(conv.padding), list(conv.dilation), conv.groups,
                                             conv.bias is not None) if k == 2 else False


def test_pass_packs_where_the_core_says_it_pays_and_equals_eager_bitwise():
    flow.manual_seed(0)
    assert _pays(CASES[0][1](), CASES[0][0])  # the strided 3x3 is the case that exercises the packed path
    for shape, make in CASES:
        conv = make().eval()
        x = flow.randn(*shape)
        ir = trace(lambda x: conv(x), (x,))
        stats = prepack_conv_weights(ir)
        names = [n.name for n in ir.nodes]
        if _pays(conv, shape):
            assert stats == {"packed": 1} and names == ["convolution_pack_weight", "convolution_forward_packed"]
        else:
            assert stats == {"packed": 0} and names == ["convolution"]
        with flow.no_grad():
            got, want = Plan(ir).run([x]), conv(x)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def _close(a, b):  # a folded batch norm rounds differently from eager's
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_inference_graph_caches_the_pack_and_follows_weight_changes():
    flow.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
                          nn.Conv2d(128, 128, 3, stride=2, padding=1)).eval()
    x = flow.randn(4, 64, 32, 32)  # at batch 4 the batch norm folds into the first convolution
    g = Infer(model)
    with flow.no_grad():
        _close(g(x), model(x))
        entry = g._last
        assert dict(entry.report)["fold_conv_bn"]["folded"] == 1
        assert dict(entry.report)["prepack_conv_weights"]["packed"] == 2
        # the folded weight is the graph's shared prologue; the packs, made for this input's shape, its own part
        shared, local = entry.plan.prologue, entry.plan.local_prologue
        assert "convolution_pack_weight" not in [n.name for n in shared.plan.ir.nodes]
        assert [n.name for n in local.plan.ir.nodes].count("convolution_pack_weight") == 2
        packed_bytes = sum(v.nbytes() for v in local.plan.ir.outputs)
        assert local.cached_bytes == packed_bytes >= (128 * 64 + 128 * 128) * 9 * 4  # a blocked layout may pad
        assert entry.plan.memory_stats()["prologue_bytes"] >= shared.stats()["cached_bytes"] + packed_bytes
        runs = local.runs
        g(x)
        assert local.runs == runs  # weights unchanged: the packs are reused
        model[3].weight.mul_(0.5)  # an eager change after compiling: packed again, seen by the next call
        _close(g(x), model(x))
        assert local.runs == runs + 1
        model[1].running_mean.add_(0.25)  # a change the shared part folds: it runs again, so do the packs
        _close(g(x), model(x))
        assert local.runs == runs + 2
        # another batch size: its own packs over the one shared fold
        x8 = flow.randn(8, 64, 32, 32)
        _close(g(x8), model(x8))
        assert g._last.plan.prologue is shared and g._last.plan.local_prologue is not local


def test_training_graph_leaves_trained_weights_unpacked_and_packs_frozen_ones():
    flow.manual_seed(2)
    frozen, trained = nn.Conv2d(64, 64, 3, stride=2, padding=1), nn.Conv2d(64, 32, 3, stride=2, padding=1)
    frozen.requires_grad_(False)
    model = nn.Sequential(frozen, nn.ReLU(), trained, nn.Flatten(), nn.Linear(32 * 4 * 4, 10))
    opt = flow.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    g = TrainGraph(model, opt)
    x, y = flow.randn(2, 64, 16, 16), flow.tensor([1, 3])
    eager = copy.deepcopy(model)
    eopt = flow.optim.SGD([p for p in eager.parameters() if p.requires_grad], lr=0.1)
    for _ in range(3):
        loss = g(x, y)
        eloss = nn.functional.cross_entropy(eager(x), y)
        eopt.zero_grad()
        eloss.backward()
        eopt.step()
        np.testing.assert_allclose(loss.detach().numpy(), eloss.detach().numpy(), rtol=1e-5, atol=1e-6)
    packed = [n for n in g._last.ir.nodes if n.name == "convolution_forward_packed"]
    local = g._last.plan.local_prologue
    pro_names = [n.name for n in local.plan.ir.nodes] if local is not None else []
    # only the frozen layer's weight (read, never written) is packed, in the prologue
    assert len(packed) == 1 and pro_names.count("convolution_pack_weight") == 1
    np.testing.assert_allclose(trained.weight.detach().numpy(), eager[2].weight.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_runtime_state_of_a_packed_graph_round_trips(tmp_path):
    flow.manual_seed(3)

    def make():
        flow.manual_seed(3)
        return nn.Sequential(nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
                             nn.Conv2d(128, 128, 3, stride=2, padding=1)).eval()

    x = flow.randn(4, 64, 32, 32)
    g = Infer(make())
    with flow.no_grad():
        want = g(x)
    path = tmp_path / "packed.of"
    flow.save(g.runtime_state_dict(), str(path))
    g2 = Infer(make())
    g2.load_runtime_state_dict(flow.load(str(path)))
    with flow.no_grad():
        got = g2(x)
    assert g2._compile_count == 0 and g2._last.plan.local_prologue is not None
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
