"""DLPack exchange with JAX, both ways and without copies (the third framework the issue names beside NumPy and
PyTorch, whose exchange flow-core's own tests cover)."""
import jax.numpy as jnp  # the torchcompat env installs jax
import numpy as np
import pytest

import oneflow as flow


@pytest.mark.parametrize("dtype, flow_dtype", [(jnp.float32, flow.float32), (jnp.int32, flow.int32),
                                               (jnp.bool_, flow.bool), (jnp.bfloat16, flow.bfloat16),
                                               (jnp.float16, flow.float16), (jnp.uint8, flow.uint8)])
def test_jax_to_oneflow_keeps_values_dtype_and_shape(dtype, flow_dtype):
    a = (jnp.arange(12).reshape(3, 4) % 3).astype(dtype)
    t = flow.from_dlpack(a)
    assert t.dtype == flow_dtype and tuple(t.shape) == (3, 4)
    np.testing.assert_array_equal(t.float().numpy(), np.asarray(a.astype(jnp.float32)))


def test_oneflow_to_jax_shares_memory_and_keeps_it_alive():
    x = flow.arange(6, dtype=flow.float32).reshape(2, 3) * 2
    j = jnp.from_dlpack(x)
    np.testing.assert_array_equal(np.asarray(j), x.numpy())
    x[0, 0] = 100.0  # a write on our side is seen by JAX: the same memory
    assert float(j[0, 0]) == 100.0
    del x  # JAX's array keeps the storage alive through the capsule's deleter
    assert float(j.sum()) == 100.0 + 2 + 4 + 6 + 8 + 10


def test_zero_size_and_0_dim_cross_both_ways():
    for shape in [(), (0, 3)]:
        t = flow.zeros(*shape) + 1 if shape else flow.tensor(3.5)
        j = jnp.from_dlpack(t)
        assert j.shape == shape
        back = flow.from_dlpack(j)
        assert tuple(back.shape) == shape
        np.testing.assert_array_equal(back.numpy(), t.numpy())
