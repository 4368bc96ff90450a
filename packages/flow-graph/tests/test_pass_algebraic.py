"""Algebraic simplification on small traced IRs: which identities go, which must stay (sign of zero, type
promotion, rounding, in-place writes, non-contiguous reshapes), and that the plan still computes exactly what
eager code does."""
import numpy as np
import pytest

import oneflow as flow
from oneflow_graph import trace
from oneflow_graph.executor import Plan
from oneflow_graph.passes import DEFAULT, algebraic_simplification as alg
from oneflow_graph.passes import dead_code_elimination as dce


def names(ir):
    return [n.name for n in ir.nodes]


def simplified(f, *args):
    ir = trace(f, args)
    stats = alg(ir)
    dce(ir)
    got = Plan(ir).run(list(args))
    return ir, stats, got


def same_bits(a, b):
    a, b = np.ascontiguousarray(a.detach().numpy()), np.ascontiguousarray(b.detach().numpy())
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def test_runs_in_the_default_pipeline_after_constant_folding():
    order = [n for n, _ in DEFAULT]
    assert order.index("algebraic") == order.index("constant_folding") + 1


@pytest.mark.parametrize("f", [
    lambda x: x * 1, lambda x: 1 * x, lambda x: x * 1.0, lambda x: x / 1, lambda x: x - 0, lambda x: x + (-0.0),
    lambda x: -(-x), lambda x: x.transpose(0, 1).transpose(1, 0), lambda x: x.t().t(),
    lambda x: x.transpose(-1, 0).transpose(0, 1),
])
def test_identities_vanish_and_the_input_is_returned_bit_for_bit(f):
    x = flow.tensor([[-0.0, 1.5, float("nan")], [float("inf"), -2.0, 0.0]])
    ir, stats, got = simplified(f, x)
    assert stats["removed"] >= 1
    assert names(ir) == []
    same_bits(got, f(x))
    assert got is not x  # a returned input is still copied out: the next call cannot change it


def test_chains_collapse_through_each_other():
    x = flow.randn(2, 3)
    f = lambda x: (-(-(x * 1).t().t()) / 1).reshape(6).reshape(2, 3) - 0  # noqa: E731
    ir, stats, got = simplified(f, x)
    assert names(ir) == [] and stats["identities"] == 4 and stats["inverse_pairs"] == 2
    same_bits(got, f(x))


def test_adding_positive_zero_to_floats_stays_because_it_changes_negative_zero():
    x = flow.tensor([-0.0, 1.0])
    ir, stats, got = simplified(lambda x: x + 0, x)
    assert names(ir) == ["add"] and stats["removed"] == 0
    assert np.signbit(got.numpy()).tolist() == [False, False]  # as eager: -0.0 + 0 is +0.0
    ir, _, got = simplified(lambda x: x - (-0.0), x)
    assert names(ir) == ["sub"]
    ir, _, got = simplified(lambda x: x.add(0, alpha=2) - 0, flow.tensor([1, 2]))
    assert names(ir) == ["add"]  # alpha other than 1 is left to the kernel; int - 0 goes
    assert got.tolist() == [1, 2]


def test_integers_lose_additions_of_zero():
    x = flow.tensor([3, -4])
    ir, stats, got = simplified(lambda x: x + 0, x)
    assert names(ir) == [] and got.tolist() == [3, -4] and got.dtype == flow.int64


@pytest.mark.parametrize("f, x, kept", [
    (lambda x: x * 1.0, flow.tensor([1, 2]), ["mul"]),  # int * float promotes: the dtype changes
    (lambda x: x / 1, flow.tensor([1, 2]), ["div"]),  # true division of ints gives floats
    (lambda x: x.div(1, rounding_mode="floor"), flow.tensor([1.5, -1.5]), ["div"]),
    (lambda x: x * 2, flow.randn(3), ["mul"]),
    (lambda x: x.transpose(0, 1).transpose(1, 2), flow.randn(2, 3, 4), ["transpose", "transpose"]),
    (lambda x: x.permute(2, 0, 1).permute(2, 0, 1), flow.randn(2, 3, 4), ["permute", "permute"]),
    (lambda x: -x.abs(), flow.randn(3), ["abs", "neg"]),
])
def test_what_is_not_an_identity_stays(f, x, kept):
    ir, _, got = simplified(f, x)
    assert names(ir) == kept
    same_bits(got, f(x))


def test_an_inverse_permutation_pair_goes():
    x = flow.randn(2, 3, 4)
    ir, stats, got = simplified(lambda x: x.permute(2, 0, 1).permute(1, 2, 0), x)
    assert names(ir) == [] and stats["inverse_pairs"] == 1
    same_bits(got, x)


def test_a_result_written_in_place_is_not_made_an_alias_of_its_input():
    def f(x):
        y = x * 1
        y.add_(1)  # y must stay its own tensor: x is returned unchanged
        z = -(-x)
        x2 = x * 3
        w = x2 * 1
        x2.mul_(2)  # w was read before the write: it must keep the old values
        return x, y, z, w

    x = flow.randn(4)
    ir, stats, got = simplified(f, x)
    assert names(ir).count("mul") == 3 and stats["inverse_pairs"] == 1
    for g, e in zip(got, f(x.clone())):
        same_bits(g, e)


def test_reshape_of_reshape_reads_the_first_input_and_a_noncontiguous_one_stays():
    x = flow.randn(2, 3, 4)
    f = lambda x: x.reshape(6, 4).view(4, 6)  # noqa: E731
    ir, stats, got = simplified(f, x)
    assert names(ir) == ["view"] and ir.nodes[0].inputs[0] is ir.inputs[0] and stats["reshape_chains"] == 1
    same_bits(got, f(x))
    g = lambda x: x.transpose(0, 2).reshape(12, 2).reshape(4, 6)  # noqa: E731
    ir, stats, got = simplified(g, x)
    assert names(ir) == ["transpose", "reshape", "reshape"] and stats["reshape_chains"] == 0
    same_bits(got, g(x))
    ir, stats, got = simplified(lambda x: x.reshape(2, 12).reshape(2, 3, 4), x)
    assert names(ir) == [] and stats["identities"] == 1
    same_bits(got, x)


def test_gradients_of_a_simplified_training_graph_equal_eager():
    import oneflow_graph

    lin = flow.nn.Linear(3, 2)
    lin2 = flow.nn.Linear(3, 2)
    lin2.load_state_dict(lin.state_dict())
    opt = flow.optim.SGD(lin.parameters(), lr=0.1)
    opt2 = flow.optim.SGD(lin2.parameters(), lr=0.1)

    def loss_of(m, x):
        h = (m(x * 1).t().t() / 1)
        return (-(-h)).pow(2).sum()

    class G(oneflow_graph.Graph):
        def __init__(self):
            super().__init__()
            self.m = lin
            self.add_optimizer(opt)

        def build(self, x):
            loss = loss_of(self.m, x)
            loss.backward()
            return loss

    g = G()
    for _ in range(3):
        x = flow.randn(5, 3)
        got = g(x)
        want = loss_of(lin2, x)
        opt2.zero_grad()
        want.backward()
        opt2.step()
        same_bits(got, want)
    for a, b in zip(lin.parameters(), lin2.parameters()):
        same_bits(a.detach(), b.detach())
    stats = dict(g._last.report)["algebraic"]
    assert stats["removed"] >= 4
