"""DLPack exchange with JAX, both ways and without copies (the third framework the issue names beside NumPy and
PyTorch, whose exchange flow-core's own tests cover). JAX runs in a child process: it starts threads at import,
and the other tests fork DataLoader workers, which must not inherit them."""
import subprocess
import sys

CHECKS = r'''
import jax.numpy as jnp
import numpy as np
import oneflow as flow

# JAX -> oneflow: values, dtype and shape kept
for dtype, flow_dtype in [(jnp.float32, flow.float32), (jnp.int32, flow.int32), (jnp.bool_, flow.bool),
                          (jnp.bfloat16, flow.bfloat16), (jnp.float16, flow.float16), (jnp.uint8, flow.uint8)]:
    a = (jnp.arange(12).reshape(3, 4) % 3).astype(dtype)
    t = flow.from_dlpack(a)
    assert t.dtype == flow_dtype and tuple(t.shape) == (3, 4), (dtype, t.dtype, t.shape)
    np.testing.assert_array_equal(t.float().numpy(), np.asarray(a.astype(jnp.float32)))

# oneflow -> JAX: the same memory, kept alive by the capsule
x = flow.arange(6, dtype=flow.float32).reshape(2, 3) * 2
j = jnp.from_dlpack(x)
np.testing.assert_array_equal(np.asarray(j), x.numpy())
x[0, 0] = 100.0  # a write on our side is seen by JAX
assert float(j[0, 0]) == 100.0
del x
assert float(j.sum()) == 100.0 + 2 + 4 + 6 + 8 + 10

# 0-dim and zero-size, both ways
for t in [flow.tensor(3.5), flow.zeros(0, 3) + 1]:
    j = jnp.from_dlpack(t)
    assert j.shape == tuple(t.shape)
    back = flow.from_dlpack(j)
    assert tuple(back.shape) == tuple(t.shape)
    np.testing.assert_array_equal(back.numpy(), t.numpy())
print("ok")
'''


def test_dlpack_exchange_with_jax_both_ways():
    r = subprocess.run([sys.executable, "-c", CHECKS], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "ok"
