"""Python-kernel custom ops (oneflow.library.custom_op) in graphs: one IR node each, run by the native plan; an
op with side effects is kept even when nothing reads its result."""
import numpy as np

import oneflow as flow
import oneflow.nn as nn

log = []


def _note(x):
    log.append(float(x.sum()))
    return x.clone()


def _meta(x):
    return flow.empty(tuple(x.shape), dtype=x.dtype, device="meta")


note = flow.library.custom_op("test_graph_note", "(Tensor self) -> Tensor", kernel=_note, meta=_meta,
                              side_effects=True)
double = flow.library.custom_op("test_graph_double", "(Tensor self) -> Tensor", kernel=lambda x: x * 2, meta=_meta)


class G(nn.Graph):
    def build(self, x):
        note(x)  # unused result: kept for its side effect
        note(x)  # not merged with the first
        double(x)  # pure and unused: dropped
        return double(x) + 1


def test_custom_ops_in_a_graph_run_natively_and_keep_side_effects():
    g = G()
    x = flow.tensor(np.arange(4, dtype=np.float32))
    log.clear()
    out = g(x)
    np.testing.assert_array_equal(out.numpy(), x.numpy() * 2 + 1)
    names = [n.name for n in g.__dict__["_last"].ir.nodes]
    assert names.count("test_graph_note") == 2 and names.count("test_graph_double") == 1, names
    assert g.__dict__["_last"].plan.native, g.__dict__["_last"].plan.native_error
    assert log == [6.0, 6.0]  # the trace ran no kernel; the plan ran both notes
    g(x + 1)
    assert log == [6.0, 6.0, 10.0, 10.0]
