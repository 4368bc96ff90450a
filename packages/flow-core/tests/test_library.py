"""oneflow.library.custom_op: Python-kernel ops registered into the op registry."""
import numpy as np
import pytest

import oneflow as flow
from oneflow._dispatch import DispatchMode

calls = []


def _scale(x, factor=2.0):
    calls.append(tuple(x.shape))
    return x * factor


def _scale_meta(x, factor=2.0):
    return flow.empty(tuple(x.shape), dtype=x.dtype, device="meta")


scale = flow.library.custom_op("test_lib_scale", "(Tensor self, float factor=2.0) -> Tensor", kernel=_scale,
                               meta=_scale_meta, side_effects=True)


def test_runs_the_python_kernel_with_attributes_and_defaults():
    x = flow.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(scale(x).numpy(), x.numpy() * 2)
    np.testing.assert_array_equal(scale(x, factor=0.5).numpy(), x.numpy() * 0.5)
    assert flow.ops.test_lib_scale is scale or flow.ops.test_lib_scale == scale
    assert "side_effect" in scale.traits


def test_meta_inputs_run_the_meta_function_not_the_kernel():
    calls.clear()
    out = scale(flow.empty(4, 5, device="meta"))
    assert out.is_meta and tuple(out.shape) == (4, 5)
    assert calls == []


def test_dispatch_modes_see_it_as_one_op():
    seen = []

    class Record(DispatchMode):
        def __flow_dispatch__(self, op, inputs, attrs):
            seen.append((op.name, dict(attrs)))
            return op.redispatch(inputs, attrs)

    x = flow.ones(3)
    with Record():
        y = scale(x, factor=3.0)
    assert seen == [("test_lib_scale", {"factor": 3.0})]  # the kernel's own ops run below the mode
    np.testing.assert_array_equal(y.numpy(), [3.0, 3.0, 3.0])


def test_kernel_errors_reach_the_caller_with_their_type():
    def bad(x):
        raise ValueError("bad input for test_lib_bad")

    op = flow.library.custom_op("test_lib_bad", "(Tensor self) -> Tensor", kernel=bad, meta=_scale_meta)
    with pytest.raises(ValueError, match="bad input for test_lib_bad"):
        op(flow.ones(2))


def test_kernel_returning_a_non_tensor_is_a_type_error():
    op = flow.library.custom_op("test_lib_none", "(Tensor self) -> Tensor", kernel=lambda x: 3, meta=_scale_meta)
    with pytest.raises(TypeError, match="test_lib_none"):
        op(flow.ones(2))


def test_registration_errors():
    with pytest.raises(RuntimeError, match="already registered"):
        flow.library.custom_op("test_lib_scale", "(Tensor self) -> Tensor", kernel=_scale, meta=_scale_meta)
    with pytest.raises(RuntimeError, match="already registered"):
        flow.library.custom_op("add", "(Tensor self) -> Tensor", kernel=_scale, meta=_scale_meta)
    with pytest.raises(ValueError, match="does not describe"):
        flow.library.custom_op("test_lib_x", "other(Tensor self) -> Tensor", kernel=_scale, meta=_scale_meta)
    with pytest.raises(TypeError, match="callables"):
        flow.library.custom_op("test_lib_y", "(Tensor self) -> Tensor", kernel=None, meta=_scale_meta)
    with pytest.raises(ValueError, match="unknown trait"):
        flow.library.custom_op("test_lib_z", "(Tensor self) -> Tensor", kernel=_scale, meta=_scale_meta,
                               traits=["no_such_trait"])
    assert not hasattr(flow._C.ops, "test_lib_z")
