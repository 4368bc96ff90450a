"""The interception layer: dispatch modes and tensor-subclass handlers see ops below autograd."""
import numpy as np
import pytest

import oneflow as flow
from oneflow._dispatch import DispatchMode
from helpers import LoggingMode, assert_close


def test_logging_mode_records_forward_and_backward():
    x = flow.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with LoggingMode() as m:
        y = (x * x).exp().sum()
        y.backward()
    fwd = m.log[:3]
    assert fwd == ["mul", "exp", "sum"]
    bwd = m.log[3:]
    # backward formulas are registry ops too: sum -> expand, exp -> mul by output, mul -> two muls, then
    # the gradients of x are accumulated
    assert "expand" in bwd and bwd.count("mul") >= 3
    assert_close(x.grad, 2 * np.array([1, 2, 3]) * np.exp(np.array([1, 4, 9])), rtol=1e-5)


def test_mode_is_popped_while_handling_and_nests():
    outer, inner = LoggingMode(), LoggingMode()
    with outer:
        with inner:
            flow.ones(2) + 1
    assert inner.log == ["ones", "add"] and outer.log == inner.log  # creation is one registry op


def test_mode_can_replace_results():
    class Doubling(DispatchMode):
        def __flow_dispatch__(self, op, inputs, attrs):
            out = op.redispatch(inputs, attrs)
            if op.name == "add":
                return flow._C.ops.mul(out, 2)
            return out

    a = flow.ones(2)
    with Doubling():
        r = a + a
    assert r.tolist() == [4.0, 4.0]
    assert (a + a).tolist() == [2.0, 2.0]


class Wrapped(flow.Tensor):
    """A wrapper subclass: the outer tensor holds only metadata, the data lives in `inner`."""

    calls = []

    @staticmethod
    def wrap(inner, requires_grad=False):
        w = flow._C._make_wrapper(Wrapped, list(inner.shape), inner.dtype, None, requires_grad)
        w.inner = inner
        return w

    @classmethod
    def __flow_dispatch__(cls, op, inputs, attrs):
        cls.calls.append(op.name)
        unwrapped = [t.inner if isinstance(t, Wrapped) else t for t in inputs]
        out = op.redispatch(unwrapped, attrs)
        if isinstance(out, tuple):
            return tuple(Wrapped.wrap(o) if isinstance(o, flow.Tensor) else o for o in out)
        return Wrapped.wrap(out)


def test_wrapper_subclass_forward_and_backward():
    Wrapped.calls.clear()
    base = flow.tensor([1.0, 2.0, 3.0])
    w = Wrapped.wrap(base, requires_grad=True)
    assert type(w) is Wrapped and w.is_meta and w.shape == (3,)
    y = (w * w).sum()
    assert type(y) is Wrapped and y.requires_grad
    assert Wrapped.calls == ["mul", "sum"]
    y.backward()
    g = w.grad
    assert type(g) is Wrapped
    assert g.inner.tolist() == [2.0, 4.0, 6.0]
    assert "expand" in Wrapped.calls[2:]  # the backward ran through the handler too


def test_wrapper_without_handler_raises():
    class Bare(flow.Tensor):
        pass

    b = flow._C._make_wrapper(Bare, [2], flow.float32)
    with pytest.raises(RuntimeError, match="no storage"):
        b + 1


def test_op_handles_expose_schema_and_traits():
    ops = {o["name"]: o for o in flow.list_ops()}
    assert "kElementwise" not in ops["add"]["traits"]
    assert "broadcast_binary" in ops["add"]["traits"] and "elementwise" in ops["add"]["traits"]
    assert "view" in ops["view"]["traits"]
    assert "inplace" in ops["add_"]["traits"]
    assert ops["add"]["schema"].startswith("add(Tensor self, Tensor other")
    assert flow._C.ops.add.name == "add"


@pytest.mark.parametrize("entry", ["redispatch", "meta", "sbp_signatures"])
def test_op_handles_refuse_none_or_missing_required_inputs_before_any_kernel_reads_them(entry):
    ops, x = flow._C.ops, flow.randn(1, 3, 8, 8)
    conv = dict(stride=[1, 1], padding=[0, 0], dilation=[1, 1], transposed=False, output_padding=[0, 0], groups=1)
    call = getattr(ops.convolution, entry)
    with pytest.raises(TypeError, match=r"convolution\(\): argument 'weight' must be a Tensor, not None"):
        call([x, None, None], conv)
    with pytest.raises(TypeError, match=r"mm\(\): argument 'self' must be a Tensor, not None"):
        getattr(ops.mm, entry)([None, x])
    with pytest.raises(RuntimeError, match="mm: missing input 'mat2'"):
        getattr(ops.mm, entry)([x])
    # an optional input may be None: the convolution without a bias runs
    w = flow.randn(4, 3, 3, 3)
    if entry == "redispatch":
        np.testing.assert_allclose(call([x, w, None], conv).numpy(), flow.nn.functional.conv2d(x, w).numpy(),
                                   rtol=1e-5, atol=1e-5)
    else:
        call([x, w, None], conv)


def test_composite_ops_decompose_under_modes_and_keep_gradients():
    a = flow.tensor(np.random.randn(2, 3), requires_grad=True)
    b = flow.tensor(np.random.randn(3, 4), requires_grad=True)
    with LoggingMode() as m:
        y = flow.matmul(a, b)
        y.sum().backward()
    assert "matmul" not in m.log and "mm" in m.log  # the mode sees the parts, each differentiable
    assert_close(a.grad, np.ones((2, 4)) @ b.detach().numpy().T)
    ops = {o["name"]: o for o in flow.list_ops()}
    assert "composite" in ops["matmul"]["traits"]


def test_op_handles_copy_pickle_and_compare_like_builtin_functions():
    import copy
    import pickle

    t = flow.tanh
    assert copy.copy(t) is t and copy.deepcopy(t) is t and pickle.loads(pickle.dumps(t)) is t
    assert (t == "tanh") is False and t != "tanh" and t == flow._C.ops.tanh and t != flow.sin
    m = flow.nn.Sequential(flow.nn.Linear(2, 2))
    m.act = flow.sigmoid  # a module holding an op: deep copies and pickles share the op
    m2 = pickle.loads(pickle.dumps(copy.deepcopy(m)))
    assert m2.act is flow.sigmoid and m2[0].weight is not m[0].weight


def test_detach_and_saved_outputs_of_a_handler_subclass_keep_its_class_and_attributes():
    Wrapped.calls.clear()
    w = Wrapped.wrap(flow.tensor([1.0, -2.0, 3.0]), requires_grad=True)
    d = w.detach()
    assert type(d) is Wrapped and d.inner is w.inner and not d.requires_grad
    y = flow.relu(w)  # relu's backward reads its saved output: a detached copy that must stay a Wrapped
    y.sum().backward()
    assert type(w.grad) is Wrapped and w.grad.inner.tolist() == [1.0, 0.0, 1.0]
    p = flow.tensor([1.0]).detach()
    assert type(flow.nn.Parameter(flow.ones(1)).detach()) is flow.Tensor and type(p) is flow.Tensor


def test_wrapped_numbers_are_marked_for_handlers_and_promote_as_python_numbers():
    seen = []

    class Record(DispatchMode):
        def __flow_dispatch__(self, op, inputs, attrs):
            seen.append([(tuple(t.shape), t.dtype, t._is_wrapped_number) for t in inputs if t is not None])
            return op.redispatch(inputs, attrs)

    x = flow.tensor([1.0, 2.0])
    with Record():
        y = x * 2.5
    assert y.dtype == flow.float32
    assert ((2,), flow.float32, False) in seen[-1] and any(w for _, _, w in seen[-1])
    assert not x._is_wrapped_number
    # a 0-dim float64 stand-in marked as a wrapped number does not promote a float32 operand (a tracer's use)
    s = flow.tensor(0.5, dtype=flow.float64)
    assert flow.div(flow.tensor(1.0), s).dtype == flow.float64
    s._is_wrapped_number = True
    assert flow.div(flow.tensor(1.0), s).dtype == flow.float32
    with pytest.raises(ValueError, match="only a 0-dim tensor"):
        x._is_wrapped_number = True
