"""The example plugin, built against the installed core, registers into the core's registry: its op behaves
like a core op (values, gradients, meta tensors, dispatch modes) and its C++ tensor handler intercepts ops on
tagged tensors after Python modes."""
import numpy as np
import pytest
import torch

import oneflow as flow
import flow_plugin_example as ex
from oneflow._dispatch import DispatchMode


def test_library_registered_its_ops():
    assert {"example_scaled_add", "example_tag", "example_handler_calls", "example_misread_attr"} <= set(ex.OPS)
    names = {o["name"] for o in flow.list_ops()}
    assert "example_scaled_add" in names
    assert flow.ops.load_library(ex.LIBRARY) == []  # a second load adds nothing
    op = flow.ops.example_scaled_add
    assert op.traits == ["elementwise", "broadcast_binary"] and op.differentiable
    assert [a["name"] for a in op.arguments] == ["self", "other", "alpha"]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_values_and_gradients_match_torch_with_broadcasting(dtype):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)).astype(dtype), rng.standard_normal((4,)).astype(dtype)
    fa, fb = flow.tensor(a, requires_grad=True), flow.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    y = ex.scaled_add(fa, fb, alpha=2.5)
    ty = torch.add(ta, tb, alpha=2.5)
    np.testing.assert_allclose(y.numpy(force=True), ty.detach().numpy(), rtol=1e-6)
    g = np.arange(12, dtype=dtype).reshape(3, 4)
    y.backward(flow.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(fa.grad.numpy(), ta.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(fb.grad.numpy(), tb.grad.numpy(), rtol=1e-6)


def test_non_contiguous_and_zero_size_and_method_form():
    x = flow.arange(12.0).reshape(3, 4).t()  # non-contiguous
    np.testing.assert_allclose(x.example_scaled_add(x, alpha=-1.0).numpy(), np.zeros((4, 3)))
    assert ex.scaled_add(flow.zeros(0, 3), flow.ones(3)).shape == (0, 3)


def test_bad_input_raises_naming_the_op():
    with pytest.raises(TypeError, match="example_scaled_add: expected float32 or float64"):
        ex.scaled_add(flow.ones(2, dtype=flow.int64), flow.ones(2, dtype=flow.int64))
    with pytest.raises(RuntimeError, match="example_scaled_add"):
        ex.scaled_add(flow.ones(2), flow.ones(3))


def test_a_kernel_reading_an_attribute_its_schema_lacks_raises_naming_both():
    with pytest.raises(RuntimeError, match=r"example_misread_attr: no attribute named 'scael' \(the schema has: "
                                           r"scale\)"):
        flow.ops.example_misread_attr(flow.ones(2), scale=2.0)


def test_meta_tensors_and_op_meta():
    m = ex.scaled_add(flow.zeros(5, 1, device="meta"), flow.zeros(3, device="meta"))
    assert m.device.type == "meta" and m.shape == (5, 3)
    assert flow.ops.example_scaled_add.meta([flow.zeros(2, 3), flow.zeros(3, dtype=flow.float64)]) == \
        [((2, 3), flow.float64, flow.device("cpu"))]


def test_dispatch_mode_sees_plugin_ops():
    seen = []

    class Log(DispatchMode):
        def __flow_dispatch__(self, op, inputs, attrs):
            seen.append((op.name, dict(attrs)))
            return op.redispatch(inputs, attrs)

    with Log():
        ex.scaled_add(flow.ones(2), flow.ones(2), alpha=3.0)
    assert ("example_scaled_add", {"alpha": 3.0}) in seen


def test_cpp_handler_intercepts_tagged_tensors_after_python_modes():
    t = ex.tag(flow.ones(3))
    before = ex.handler_calls()
    u = (t + 1) * 2
    assert ex.handler_calls() - before == 2  # add, mul: each op once, results stay tagged
    assert flow._C._handler_key(u) == flow._C._handler_key(t) != 0
    order = []

    class Log(DispatchMode):
        def __flow_dispatch__(self, op, inputs, attrs):
            if op.name == "neg":  # the count read below is made of ops too: the mode sees those as well
                order.append(("mode", op.name, ex.handler_calls()))
            return op.redispatch(inputs, attrs)

    start = ex.handler_calls()
    with Log():
        t.neg()
    # the mode saw neg before the C++ handler counted it
    assert order[0] == ("mode", "neg", start) and ex.handler_calls() == start + 1
    # reading values goes through the handler too (the _materialize op)
    before = ex.handler_calls()
    np.testing.assert_allclose(u.numpy(), [4.0, 4.0, 4.0])
    assert ex.handler_calls() == before + 1
    assert ("example.counting", 10, flow._C._handler_key(t)) in flow._C._tensor_handlers()


def test_autograd_through_handled_tensors():
    w = ex.tag(flow.ones(3)).requires_grad_()
    (w * 3).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [3.0, 3.0, 3.0])
