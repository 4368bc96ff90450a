"""How a pipelined graph's zero-bubble schedule splits a micro-batch's backward (oneflow_graph.pipeline): B is
what the sends to the previous stage depend on (through values and earlier writes), W the rest; on hand-made IR
nodes, so each rule is seen on its own."""
from types import SimpleNamespace

import pytest

from oneflow_graph import pipeline
from oneflow_graph.ir import NODE, GraphIR, Node

COLLECTIVE = ("side_effect",)  # the traits of flow-dist's collectives


def op(name, traits=()):
    # names unlike any registry op's but the collectives' (effects caches traits by name)
    return SimpleNamespace(name=name, traits=traits, is_inplace=False)


class Builder:
    def __init__(self):
        self.ir = GraphIR()
        self.x = self.ir.add_input((2,), "float32", "cpu")

    def node(self, name, *inputs, traits=(), mutates=()):
        n = Node(op(name, traits), inputs, {}, [], mutates=mutates)
        if mutates:
            n.outputs = [inputs[mutates[0]]]
        else:
            n.outputs = [self.ir.new_value(NODE, (2,), "float32", "cpu", producer=n)]
        self.ir.nodes.append(n)
        return n

    def out(self, n):
        return n.outputs[0]


def names(nodes):
    return [n.name for n in nodes]


def test_b_is_what_the_send_needs_and_w_the_weight_gradients():
    b = Builder()
    recv = b.node("dist_recv", b.x, traits=COLLECTIVE)
    act_grad = b.node("zb_input_grad", b.out(recv), b.x)
    wgrad = b.node("zb_weight_grad", b.out(recv), b.x)
    send = b.node("dist_send", b.out(act_grad), traits=COLLECTIVE)
    acc = b.node("zb_accumulate_", b.x, b.out(wgrad), mutates=(0,))
    B, W = pipeline.split_backward(b.ir.nodes)
    assert names(B) == ["dist_recv", "zb_input_grad", "dist_send"]
    assert names(W) == ["zb_weight_grad", "zb_accumulate_"]
    assert acc in W and send in B


def test_the_first_stage_sends_nothing_back_so_all_is_w():
    b = Builder()
    recv = b.node("dist_recv", b.x, traits=COLLECTIVE)
    b.node("zb_weight_grad", b.out(recv), b.x)
    B, W = pipeline.split_backward(b.ir.nodes)
    assert B == [] and names(W) == ["dist_recv", "zb_weight_grad"]


def test_an_earlier_write_to_what_b_reads_joins_b():
    b = Builder()
    buf = b.node("zb_buffer")
    other = b.node("zb_unrelated")
    write = b.node("zb_write_", b.out(buf), b.out(other), mutates=(0,))  # writes buf before the send's chain
    grad = b.node("zb_input_grad", b.out(buf))
    b.node("dist_send", b.out(grad), traits=COLLECTIVE)
    late = b.node("zb_late_write_", b.out(buf), b.x, mutates=(0,))  # after the read: may run later
    B, W = pipeline.split_backward(b.ir.nodes)
    assert write in B and other in B and buf in B
    assert W == [late]


def test_a_collective_whose_result_this_rank_drops_counts_as_a_send():
    # the other ranks of a stage gather the gradient with its first rank, which sends it: the gather must be B
    # on every rank, or the stage's ranks would run their collectives in different orders
    b = Builder()
    grad = b.node("zb_input_grad", b.x)
    gather = b.node("dist_all_gather", b.out(grad), traits=COLLECTIVE)
    b.node("zb_view", b.out(gather))  # read only by a dropped view
    wgrad = b.node("zb_weight_grad", b.x)
    reduce = b.node("dist_all_reduce", b.out(wgrad), traits=COLLECTIVE)
    b.node("zb_accumulate_", b.x, b.out(reduce), mutates=(0,))
    live = pipeline._live_values(b.ir)
    B, W = pipeline.split_backward(b.ir.nodes, lambda v: id(v) in live)
    assert names(B) == ["zb_input_grad", "dist_all_gather"]
    assert names(W) == ["zb_view", "zb_weight_grad", "dist_all_reduce", "zb_accumulate_"]


def two_micro_batches(b_reads_w):
    """Stage 1 of 2: micro-batch 1's B reads (``b_reads_w``) a tensor micro-batch 0's W writes."""
    b = Builder()
    shared = b.node("zb_buffer")
    segments = []
    for j in range(2):
        f = [b.node("zb_forward", b.x)]
        grad = b.node("zb_input_grad", b.out(shared) if (b_reads_w and j == 1) else b.x, b.out(f[0]))
        back = [grad, b.node("dist_send", b.out(grad), traits=COLLECTIVE)]
        if j == 0:
            back.append(b.node("zb_accumulate_", b.out(shared), b.out(f[0]), mutates=(0,)))
        segments.append((f, back))
    return b.ir, segments


def test_schedule_runs_w_after_the_later_b():
    ir, segments = two_micro_batches(b_reads_w=False)
    acc = segments[0][1][2]
    got = pipeline.schedule(ir, segments, 1, 2, "zero_bubble")
    assert got["order"] == [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("W", 0), ("W", 1)]
    assert ir.nodes[-1] is acc and pipeline.run_order(ir) == [("F", 0), ("B", 0), ("F", 1), ("B", 1), ("W", 0)]


def test_schedule_refuses_to_move_a_write_across_a_later_read():
    ir, segments = two_micro_batches(b_reads_w=True)
    with pytest.raises(RuntimeError, match=r"across a read or write of it in another micro-batch \(in the "
                                           r"zero-bubble schedule.*set_pipeline_schedule\('1f1b'\)"):
        pipeline.schedule(ir, segments, 1, 2, "zero_bubble")
    ir, segments = two_micro_batches(b_reads_w=True)
    assert pipeline.schedule(ir, segments, 1, 2, "1f1b")["schedule"] == "1f1b"  # each backward whole: fine
    with pytest.raises(ValueError, match=r"unknown schedule 'gpipe'; the schedules are \['1f1b', 'zero_bubble'\]"):
        pipeline.schedule(ir, segments, 1, 2, "gpipe")
