"""Creation goes through the registry (modes see every allocation, device= is an attribute), op handles expose
structured schemas and meta inference, and interception covers out=, in-place writes and value reads."""
import numpy as np
import pytest

import oneflow as flow
from helpers import LoggingMode as Log


@pytest.mark.parametrize("make, op", [
    (lambda: flow.zeros(2, 3), "zeros"), (lambda: flow.ones(4, dtype=flow.int32), "ones"),
    (lambda: flow.full((2,), 1.5), "full"), (lambda: flow.empty(3), "empty"),
    (lambda: flow.empty_strided((2, 2), (1, 2)), "empty_strided"), (lambda: flow.arange(4), "arange"),
    (lambda: flow.linspace(0, 1, 3), "linspace"), (lambda: flow.eye(2), "eye"), (lambda: flow.randn(2), "empty"),
    (lambda: flow.randperm(5), "randperm"), (lambda: flow.tensor([1, 2]), "lift_fresh"),
    (lambda: flow.zeros_like(flow.ones(2)), "full"),
])
def test_modes_see_creation_as_registry_ops_with_a_device_attribute(make, op):
    with Log() as log:
        make()
    assert op in log.log, log.log
    attrs = dict(log.seen)[op]
    if op != "lift_fresh":
        assert "device" in attrs and attrs["device"] is None  # the CPU


def test_device_attribute_reaches_the_op():
    with Log() as log:
        flow.zeros(2, device="meta")
    assert log.seen[0][1]["device"] == flow.device("meta")
    with Log() as log:
        flow.tensor([1.0], device="meta")
    assert log.log[-2:] == ["lift_fresh", "to_device"]


def test_backward_formulas_allocate_through_the_registry():
    x = flow.ones(3, 4, requires_grad=True)
    y = x[flow.tensor([0, 2])].sum()
    with Log() as log:
        y.backward()
    # index's backward scatters into zeros made by ops::zeros, now the registry's full op
    assert ("full", {"size": [3, 4], "fill_value": 0, "dtype": flow.float32, "device": flow.device("cpu")}) in log.seen
    np.testing.assert_allclose(x.grad.numpy(), [[1] * 4, [0] * 4, [1] * 4])


def test_registry_creation_ops_direct():
    ops = flow._C.ops
    np.testing.assert_array_equal(ops.full([2, 2], 3).numpy(), np.full((2, 2), 3))
    assert ops.full([2], True).dtype == flow.bool and ops.full([2], 2.5).dtype == flow.float32
    assert ops.zeros([3], dtype=flow.float64).dtype == flow.float64
    np.testing.assert_array_equal(ops.ones([2], dtype=flow.int8).numpy(), [1, 1])
    assert ops.empty_strided([2, 3], [1, 2]).stride() == (1, 2)
    with pytest.raises(RuntimeError, match="negative dimension"):
        ops.zeros([-1])
    with pytest.raises(TypeError, match="argument 'device'"):
        ops.zeros([1], device=1.5)
    with pytest.raises(RuntimeError, match="without CUDA"):
        ops.zeros([1], device="cuda")


def test_structured_schema_and_meta():
    args = flow._C.ops.add.arguments
    assert [(a["name"], a["type"], a["is_tensor"]) for a in args] == [
        ("self", "Tensor", True), ("other", "Tensor", True), ("alpha", "Scalar", False)]
    assert args[2]["has_default"] and args[2]["default"] == 1 and flow._C.ops.add.num_outputs == 1
    full = {a["name"]: a for a in flow._C.ops.full.arguments}
    assert full["device"]["type"] == "Device?" and full["device"]["kwarg_only"]
    assert flow._C.ops.max.num_outputs in (1, 2) and flow._C.ops.unbind.num_outputs == -1
    assert flow._C.ops.matmul.meta([flow.zeros(5, 2, 3), flow.zeros(3, 4)]) == \
        [((5, 2, 4), flow.float32, flow.device("cpu"))]
    with pytest.raises(NotImplementedError, match="nonzero"):
        flow._C.ops.nonzero.meta([flow.zeros(3)])
    with pytest.raises(RuntimeError, match="size of tensor a"):
        flow._C.ops.add.meta([flow.zeros(2), flow.zeros(3)])


def test_schema_defaults_of_every_type_reach_kernels():
    # defaults are parsed with the schema: lists of floats too (Muon's Newton-Schulz coefficients)
    muon = {a["name"]: a for a in flow._C.ops.muon_update_.arguments}
    assert muon["ns_coefficients"]["default"] == pytest.approx([3.4445, -4.775, 2.0315])
    assert muon["adjust_lr_fn"]["default"] == "" and muon["ns_steps"]["default"] == 5
    conv = {a["name"]: a for a in flow._C.ops.conv2d.arguments} if hasattr(flow._C.ops, "conv2d") else {}
    if "stride" in conv:
        assert conv["stride"]["default"] == [1]
    p, g, buf = flow.randn(4, 3), flow.randn(4, 3), flow.zeros(4, 3)
    expected = p.clone()
    flow._C.ops.muon_update_([expected], [g], [buf.clone()], flow.tensor(0.02),
                             ns_coefficients=[3.4445, -4.775, 2.0315])
    flow._C.ops.muon_update_([p], [g], [buf], flow.tensor(0.02))  # the default coefficients
    assert flow.equal(p, expected) and not flow.equal(p, flow.randn(4, 3))


class Boxed(flow.Tensor):
    """A storage-less wrapper whose values live in `inner`: every op and every read reaches its handler."""

    seen = []

    @staticmethod
    def wrap(inner):
        w = flow._C._make_wrapper(Boxed, list(inner.shape), inner.dtype, None, False)
        w.inner = inner
        return w

    @classmethod
    def __flow_dispatch__(cls, op, inputs, attrs):
        cls.seen.append(op.name)
        plain = [t.inner if isinstance(t, Boxed) else t for t in inputs]
        out = op.redispatch(plain, attrs)
        if op.name == "_materialize":
            return out  # a readable local tensor
        if op.is_inplace:
            return inputs[0]
        if isinstance(out, tuple):
            return tuple(Boxed.wrap(o) for o in out)
        return Boxed.wrap(out)


def test_item_numpy_and_tolist_of_a_subclass_reach_its_handler():
    b = Boxed.wrap(flow.tensor([1.5, 2.5]))
    Boxed.seen.clear()
    np.testing.assert_allclose(b.numpy(), [1.5, 2.5])
    assert b.tolist() == [1.5, 2.5]
    assert Boxed.wrap(flow.tensor(4.0)).item() == 4.0
    assert float(Boxed.wrap(flow.tensor([3.0]))) == 3.0
    assert Boxed.seen.count("_materialize") == 4


def test_out_and_in_place_writes_into_a_subclass_reach_its_handler():
    b = Boxed.wrap(flow.zeros(3))
    Boxed.seen.clear()
    flow.add(flow.ones(3), flow.ones(3), out=b)
    assert "copy_" in Boxed.seen
    np.testing.assert_allclose(b.inner.numpy(), [2.0, 2.0, 2.0])
    b.mul_(3)
    np.testing.assert_allclose(b.inner.numpy(), [6.0, 6.0, 6.0])


def test_a_mode_sees_reads_and_writes_before_subclass_handlers():
    b = Boxed.wrap(flow.tensor([1.0, 2.0]))
    Boxed.seen.clear()
    with Log() as log:
        b.numpy()
        flow.neg(flow.ones(2), out=b)
    assert log.log[0] == "_materialize" and "copy_" in log.log
    # the mode came first, then the subclass handled the same ops
    assert Boxed.seen[0] == "_materialize" and "copy_" in Boxed.seen
    np.testing.assert_allclose(b.inner.numpy(), [-1.0, -1.0])


def test_in_place_on_a_view_that_requires_grad_writes_through_the_dispatcher():
    base = flow.zeros(4, requires_grad=True).clone()
    v = base[1:3]
    with Log() as log:
        v.add_(flow.ones(2, requires_grad=True))
    assert "copy_" in log.log
    base.sum().backward()  # the history of base and the view survive the write
    np.testing.assert_allclose(base.detach().numpy(), [0.0, 1.0, 1.0, 0.0])
