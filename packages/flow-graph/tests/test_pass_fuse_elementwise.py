"""Elementwise-chain fusion: which groups become one ``_fused_elementwise`` node, what stays unfused, and that
the fused kernel gives bitwise what the unfused ops give (it calls their own kernels chunk by chunk)."""
import numpy as np
import pytest

import oneflow as flow
from oneflow import _C, nn
from oneflow_graph import Graph, trace
from oneflow_graph.executor import Plan
from oneflow_graph.passes import fuse_elementwise

F = nn.functional


def names(ir):
    return [n.name for n in ir.nodes]


def fused(f, *args):
    ir = trace(f, args)
    stats = fuse_elementwise(ir)
    got = Plan(ir).run(list(args))
    return ir, stats, got


def test_a_chain_with_broadcast_and_scalar_inputs_becomes_one_node_bitwise():
    def f(x, b):
        return F.gelu(x + b) * 1.5 - flow.clamp(x, -1.0, 1.0).sigmoid()

    x, b = flow.randn(7, 3000), flow.randn(3000)
    ir, stats, got = fused(f, x, b)
    assert names(ir) == ["_fused_elementwise"]
    assert stats == {"groups": 1, "fused_ops": 6, "kept_gathering": 0}
    np.testing.assert_array_equal(got.numpy(), f(x, b).numpy())


def test_non_contiguous_and_column_broadcast_inputs():
    def f(x, c):
        return (x.exp() * c).tanh() + x

    x = flow.randn(40, 600)[:, ::2]  # strided
    c = flow.randn(40, 1)
    ir, stats, got = fused(f, x, c)
    assert stats["groups"] == 1
    np.testing.assert_array_equal(got.numpy(), f(x, c).numpy())


def test_a_group_saving_no_more_intermediates_than_it_gathers_stays_unfused():
    # attention's scores * scale + mask: one intermediate saved, one broadcast input copied per chunk
    mask = flow.randn(16, 16)
    ir, stats, got = fused(lambda s: s * 0.125 + mask, flow.randn(2, 4, 16, 16))
    assert stats == {"groups": 0, "fused_ops": 0, "kept_gathering": 1} and names(ir) == ["mul", "add"]
    # a third op saves a second intermediate: now it pays
    s = flow.randn(2, 4, 16, 16)
    ir, stats, got = fused(lambda s: (s * 0.125 + mask).exp(), s)
    assert stats["groups"] == 1 and names(ir) == ["_fused_elementwise"]
    np.testing.assert_array_equal(got.numpy(), (s * 0.125 + mask).exp().numpy())


@pytest.mark.parametrize("inner", [1111, 1, 3])
def test_broadcast_inputs_across_chunk_and_row_boundaries(inner):
    # more elements than one chunk holds, rows that do not divide a chunk (a chunk begins mid-row): a row
    # input, a column input, a transposed (strided inner) input and a strided dense one, all gathered per run
    def f(x, row, col, tr, xs):
        return ((x + row) * col - tr).tanh() + xs

    shape = (5, 4000 // inner + 3, inner)
    x = flow.randn(*shape)
    row, col = flow.randn(inner), flow.randn(shape[0], shape[1], 1)
    tr = flow.randn(inner, shape[1]).t()
    xs = flow.randn(shape[0], shape[1], 2 * inner)[..., ::2]
    ir, stats, got = fused(f, x, row, col, tr, xs)
    assert stats["groups"] == 1 and x.numel() > 16384
    np.testing.assert_array_equal(got.numpy(), f(x, row, col, tr, xs).numpy())


def test_large_outputs_take_longer_chunks_that_still_meet_the_rows():
    # over 4 x threads x 64K elements: the kernel's longest chunks (65536), each starting mid-row of 70001
    def f(x, row, col):
        return ((x * row) + col).sigmoid() * 0.5

    x = flow.randn(9, 70001)
    row, col = flow.randn(70001), flow.randn(9, 1)
    ir, stats, got = fused(f, x, row, col)
    assert stats["groups"] == 1 and x.numel() > 4 * 2 * 65536  # (2 threads here)
    np.testing.assert_array_equal(got.numpy(), f(x, row, col).numpy())


def test_mixed_dtypes_promote_as_the_unfused_ops_do():
    def f(x, i):
        return (x * i + 2).relu() / 3

    x, i = flow.randn(5, 9), flow.randint(-3, 4, (5, 9), dtype=flow.int32)
    ir, stats, got = fused(f, x, i)
    assert stats["groups"] == 1
    assert got.dtype == flow.float32
    np.testing.assert_array_equal(got.numpy(), f(x, i).numpy())
    # an integer chain stays integer
    ir, _, got = fused(lambda a: (a * 3 + 1).abs(), i)
    assert names(ir) == ["_fused_elementwise"] and got.dtype == flow.int32
    np.testing.assert_array_equal(got.numpy(), ((i * 3 + 1).abs()).numpy())


def test_zero_size_and_zero_dim():
    ir, _, got = fused(lambda x: (x * 2).exp() + 1, flow.randn(0, 4))
    assert tuple(got.shape) == (0, 4)
    s = flow.tensor(0.3)
    ir, stats, got = fused(lambda x: (x * 2).exp() + 1, s)
    assert stats["groups"] == 0  # 0-dim results stay unfused: nothing to stream
    np.testing.assert_array_equal(got.numpy(), ((s * 2).exp() + 1).numpy())


def test_values_used_outside_the_group_are_kept():
    def f(x):
        h = x.sigmoid() * 2
        return h.exp() + 1, h

    x = flow.randn(4, 5)
    ir, stats, (a, h) = fused(f, x)
    assert stats == {"groups": 2, "fused_ops": 4, "kept_gathering": 0}  # h is a result: two groups, each of two ops
    np.testing.assert_array_equal(a.numpy(), f(x)[0].numpy())
    np.testing.assert_array_equal(h.numpy(), f(x)[1].numpy())


def test_no_group_reads_across_a_write_to_its_inputs():
    state = flow.zeros(6)

    def f(x):
        a = x * state  # reads state before the write
        state.add_(1)
        return (a + 1).exp()

    x = flow.randn(6)
    ir = trace(f, (x,))
    fuse_elementwise(ir)
    # the mul may not move past the add_: it stays with the nodes before the write
    assert names(ir).index("mul") < names(ir).index("add_")


@pytest.mark.parametrize("src,dst", [(flow.bfloat16, flow.float32), (flow.float32, flow.float16),
                                     (flow.float64, flow.float32)])
def test_casts_join_a_chain_only_when_allowed_and_stay_bitwise(src, dst):
    def f(x, scale):
        return (x.to(dst) * scale).exp()  # a cast feeding a scale (OneFlow's allow_fuse_cast_scale pattern)

    x, scale = flow.randn(33, 70).to(src), flow.tensor(0.75, dtype=dst)
    ir, stats, got = fused(f, x, scale)
    assert names(ir) == ["to_dtype", "_fused_elementwise"]  # by default a cast stays its own op
    ir = trace(f, (x, scale))
    stats = fuse_elementwise(ir, casts=True)
    assert names(ir) == ["_fused_elementwise"] and stats["fused_ops"] == 3
    assert ir.nodes[0].attrs["program"].startswith(f"to_dtype;{str(dst)[8:]};i0;D{str(dst)[8:]}|")
    np.testing.assert_array_equal(Plan(ir).run([x, scale]).numpy(), f(x, scale).numpy())


def test_graph_config_allow_fuse_cast_scale_and_model_update_ops():
    class G(Graph):
        def __init__(self, cast_scale):
            super().__init__()
            self.config.allow_fuse_cast_scale(cast_scale)

        def build(self, x):
            return x.float() * 2.0 + 1.0

    x = flow.randn(8, 8).to(flow.bfloat16)
    off, on = G(False), G(True)
    np.testing.assert_array_equal(off(x).numpy(), on(x).numpy())
    assert names(off._last.ir) == ["to_dtype", "_fused_elementwise"] and names(on._last.ir) == ["_fused_elementwise"]
    with pytest.raises(RuntimeError, match="allow_fuse_cast_scale"):
        on.config.allow_fuse_cast_scale(False)
    with pytest.raises(TypeError, match="allow_fuse_cast_scale\\(\\): mode must be a bool"):
        Graph().config.allow_fuse_cast_scale(None)
    # the model update is one fused op per parameter group with or without OneFlow's switch
    for mode in (False, True):
        model = nn.Linear(4, 3)
        g = Train(model, flow.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1))
        g.config.allow_fuse_model_update_ops(mode)
        g(flow.randn(5, 4), flow.randn(5, 3))
        g(flow.randn(5, 4), flow.randn(5, 3))
        assert names(g._last.ir).count("adam_update_") == 1
    with pytest.raises(TypeError, match="allow_fuse_model_update_ops\\(\\): mode must be a bool"):
        Graph().config.allow_fuse_model_update_ops(1)


def test_bad_programs_raise_value_errors():
    op = _C.ops._fused_elementwise
    x = flow.randn(3)
    for prog in ["nosuchop;float32;i0", "mm;float32;i0,i0", "exp;float32;i5", "exp;float32;r0", "add;float32;i0,i0",
                 "to_dtype;float32;i0;Dnotadtype", "to_dtype;float32;i0;D"]:
        with pytest.raises(ValueError, match="_fused_elementwise"):
            op.redispatch([x], {"program": prog, "shape": [3], "dtype": flow.float32})


class Train(Graph):
    def __init__(self, model, opt):
        super().__init__()
        self.model = model
        self.add_optimizer(opt)

    def build(self, x, y):
        loss = F.mse_loss(self.model(x), y)
        loss.backward()
        return loss


class _Block(nn.Module):
    """Hand-written elementwise chains (a scaled tanh-GELU-like gate and a residual) around two linears: their
    forward and their backward (the derivative formulas' own chains) are what fusion finds."""

    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(16, 64), nn.Linear(64, 4)
        self.alpha = nn.Parameter(flow.full((64,), 0.7))

    def forward(self, x):
        h = self.l1(x)
        h = (h * self.alpha).tanh() * 0.5 * h + h.sigmoid() - 0.25
        return self.l2(h)


def _mlp():
    return _Block()


def test_training_graph_with_fused_chains_equals_eager_bitwise():
    flow.manual_seed(3)
    eager, graphed = _mlp(), _mlp()
    graphed.load_state_dict(eager.state_dict())
    eo = flow.optim.AdamW(eager.parameters(), lr=1e-2, weight_decay=0.1)
    g = Train(graphed, flow.optim.AdamW(graphed.parameters(), lr=1e-2, weight_decay=0.1))
    rng = np.random.default_rng(0)
    for _ in range(8):
        x = flow.tensor(rng.standard_normal((32, 16)), dtype=flow.float32)
        y = flow.tensor(rng.standard_normal((32, 4)), dtype=flow.float32)
        loss = F.mse_loss(eager(x), y)
        eo.zero_grad()
        loss.backward()
        eo.step()
        assert g(x, y).item() == loss.item()
    for a, b in zip(eager.parameters(), graphed.parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    report = dict(g._last.report)
    assert report["fuse_elementwise"]["fused_ops"] >= 2
    assert "_fused_elementwise" in names(g._last.ir)
