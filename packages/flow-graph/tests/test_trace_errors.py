"""Reading a traced tensor's value inside build is an error that names the user's file and line."""
import inspect

import pytest

import oneflow as flow
from oneflow import nn
from oneflow_graph import Graph, GraphTraceError

HERE = __file__


def _line_of(fn, text):
    src, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(src) if text in line)


class Reads(Graph):
    def __init__(self, how):
        super().__init__()
        self.how = how
        self.lin = nn.Linear(2, 2)

    def build(self, x):
        y = self.lin(x)
        if self.how == "item":
            y.sum().item()
        elif self.how == "numpy":
            y.numpy()
        elif self.how == "tolist":
            y.tolist()
        elif self.how == "branch":
            if y.sum() > 0:
                y = y * 2
        elif self.how == "print":
            print(y)
        elif self.how == "float":
            float(y.sum())
        return y


@pytest.mark.parametrize("how,what,marker", [
    ("item", ".item()", "y.sum().item()"), ("numpy", ".numpy()", "y.numpy()"), ("tolist", ".tolist()", "y.tolist()"),
    ("branch", "a Python branch", "if y.sum() > 0"), ("print", "print", "print(y)"),
    ("float", "float()", "float(y.sum())"),
])
def test_value_reads_name_the_users_line(how, what, marker):
    g = Reads(how)
    with pytest.raises(GraphTraceError) as info:
        g(flow.randn(3, 2))
    msg = str(info.value)
    assert msg.startswith(what), msg
    assert f"{HERE}:{_line_of(Reads.build, marker)}" in msg, msg
    assert f"{g.name}.build()" in msg
    assert not g.is_compiled
    g.how = None  # the failed trace left nothing behind: the graph compiles and runs
    assert g(flow.randn(3, 2)).shape == (3, 2)


def test_a_traced_tensor_used_after_the_trace_is_an_error():
    leaked = []

    class Leaks(Graph):
        def build(self, x):
            y = x * 2
            leaked.append(y)
            return y

    Leaks()(flow.ones(2))
    with pytest.raises(GraphTraceError, match="outside the traced build"):
        leaked[0] + 1
    assert "is_lazy=True" in repr(leaked[0])


def test_shapes_strides_and_metadata_are_readable_while_tracing():
    seen = {}

    class Meta(Graph):
        def build(self, x):
            t = x.transpose(0, 1)
            seen.update(shape=tuple(t.shape), stride=t.stride(), contiguous=t.is_contiguous(), dtype=t.dtype,
                        dim=t.dim(), numel=t.numel(), device=t.device.type, lazy=t.is_lazy)
            return t.contiguous().view(-1) if not t.is_contiguous() else t.view(-1)

    x = flow.arange(6.0).reshape(2, 3)
    out = Meta()(x)
    assert seen == dict(shape=(3, 2), stride=(1, 3), contiguous=False, dtype=flow.float32, dim=2, numel=6,
                        device="cpu", lazy=True)
    assert out.tolist() == x.t().contiguous().view(-1).tolist()
