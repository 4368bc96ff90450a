"""oneflow_graph.plain_types: registered layout objects in a runtime state, saved in a plain form and rebuilt at
load among the registered types only; unregistered ones are refused as before."""
import sys

import numpy as np
import pytest

import oneflow as flow
from oneflow_graph import plain_types
from oneflow_graph.runtime_state import RuntimeStateError


class Layout:
    """A hashable value with a plain form: a graph argument that steers the trace (here: a scale)."""

    def __init__(self, factor, tag):
        self.factor, self.tag = factor, tag

    def __eq__(self, other):
        return isinstance(other, Layout) and (self.factor, self.tag) == (other.factor, other.tag)

    def __hash__(self):
        return hash((self.factor, self.tag))

    def __flow_plain__(self):
        return {"factor": self.factor, "tag": self.tag}

    @classmethod
    def __flow_from_plain__(cls, data):
        return cls(data["factor"], data["tag"])


class Unregistered(Layout):
    pass


NAME = "test_plain_types.Layout"


@pytest.fixture
def registered():
    plain_types.register(NAME, Layout)
    yield
    plain_types._by_name.pop(NAME, None)
    plain_types._by_type.pop(Layout, None)


class Scaled(flow.nn.Graph):
    def __init__(self):
        super().__init__()
        self.lin = flow.nn.Linear(3, 2)

    def build(self, x, layout):
        return {"y": self.lin(x) * layout.factor, "layout": layout}


def _graph():
    flow.manual_seed(0)
    return Scaled()


def test_a_registered_value_round_trips_through_save_and_load(registered, tmp_path):
    value = {"a": [Layout(2.0, "x"), (1, Layout(3.0, "y"))], "t": flow.ones(2)}
    enc = plain_types.encode(value, "value", tensors=True)
    assert enc["a"][0] == {"__flow_plain__": NAME, "data": {"factor": 2.0, "tag": "x"}}
    assert plain_types.has_encoded(enc) and not plain_types.has_encoded({"a": [1, (2, "x")]})
    flow.save(enc, tmp_path / "v.of")
    dec = plain_types.decode(flow.load(tmp_path / "v.of"))
    assert dec["a"] == [Layout(2.0, "x"), (1, Layout(3.0, "y"))]
    assert isinstance(dec["a"][1], tuple)
    np.testing.assert_array_equal(dec["t"].numpy(), np.ones(2, np.float32))


def test_unregistered_and_unknown_types_are_refused(registered):
    with pytest.raises(TypeError, match=r"where\[1\] is a test_plain_types.Unregistered, which a runtime state "
                                        r"cannot hold as plain data"):
        plain_types.encode([1, Unregistered(1.0, "z")], "where")
    with pytest.raises(TypeError, match="where is a .*Tensor"):  # tensors only inside a registered value's data
        plain_types.encode(flow.ones(1), "where")
    with pytest.raises(TypeError, match="reserved key"):
        plain_types.encode({"__flow_plain__": 1}, "where")
    # a file naming a class path is not imported: only registered names resolve
    before = set(sys.modules)
    with pytest.raises(plain_types.UnknownPlainType, match="'xml.dom.minidom:Document', which no installed plugin"):
        plain_types.decode({"__flow_plain__": "xml.dom.minidom:Document", "data": {}})
    assert set(sys.modules) == before
    with pytest.raises(ValueError, match="malformed"):
        plain_types.decode({"__flow_plain__": NAME, "data": {}, "extra": 1})


def test_register_checks_its_arguments(registered):
    with pytest.raises(TypeError, match="has no __flow_plain__"):
        plain_types.register("test_plain_types.int", int)
    with pytest.raises(ValueError, match="already taken"):
        plain_types.register(NAME, Unregistered)
    plain_types.register(NAME, Layout)  # again: nothing happens
    assert plain_types.name_of(Layout) == NAME and plain_types.name_of(Unregistered) is None


def test_graph_with_a_registered_argument_saves_and_loads_without_tracing(registered, tmp_path):
    g = _graph()
    x = flow.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    want = g(x, Layout(2.0, "a"))
    flow.save(g.runtime_state_dict(), tmp_path / "rt.of")
    h = Scaled()  # other weights: the loaded state replaces them
    h.load_runtime_state_dict(flow.load(tmp_path / "rt.of"))
    got = h(x, Layout(2.0, "a"))
    assert h._compile_count == 0
    assert got["layout"] == Layout(2.0, "a")
    np.testing.assert_array_equal(got["y"].numpy(), want["y"].numpy())


def test_graph_with_an_unregistered_argument_is_refused():
    g = _graph()
    g(flow.ones(2, 3), Unregistered(2.0, "a"))
    with pytest.raises(TypeError, match=r"Scaled_\d+.runtime_state_dict\(\) signature 0: the input signature\[.*\] is "
                                        r"a test_plain_types.Unregistered, which a runtime state cannot hold as "
                                        r"plain data"):
        g.runtime_state_dict()


def test_a_type_no_plugin_registers_fails_to_load(registered, tmp_path):
    g = _graph()
    g(flow.ones(2, 3), Layout(1.0, "b"))
    flow.save(g.runtime_state_dict(), tmp_path / "rt.of")
    plain_types._by_name.pop(NAME)
    plain_types._by_type.pop(Layout)
    h = _graph()
    with pytest.raises(RuntimeStateError, match="'test_plain_types.Layout', which no installed plugin registers"):
        h.load_runtime_state_dict(flow.load(tmp_path / "rt.of"))
    assert not h.is_compiled
