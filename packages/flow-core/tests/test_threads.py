"""The thread pool: results must not depend on how many threads OpenMP actually grants."""
import os
import subprocess
import sys
import textwrap

import oneflow as flow

PROBE = textwrap.dedent("""
    import numpy as np, oneflow as flow
    flow.set_num_threads(2)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(1 << 20).astype(np.float32)
    assert np.allclose(flow.exp(flow.tensor(x)).numpy(), np.exp(x), rtol=1e-5), "exp"
    # a Winograd convolution: weight transform, tile blocks and backward all split across threads
    a = rng.standard_normal((4, 16, 16, 16)).astype(np.float32)
    w = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
    y = flow.nn.functional.conv2d(flow.tensor(a), flow.tensor(w), padding=1).numpy()
    flow.set_num_threads(1)
    ref = flow.nn.functional.conv2d(flow.tensor(a), flow.tensor(w), padding=1).numpy()
    assert np.allclose(y, ref, rtol=1e-5, atol=1e-4), "conv"
    print("ok")
""")


def test_fewer_threads_granted_than_requested():
    # OMP_THREAD_LIMIT=1 makes OpenMP grant one thread to every region that asks for two; the loops must
    # still cover the whole range (they split by what was asked for and left half of it undone)
    env = dict(os.environ, OMP_THREAD_LIMIT="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in [os.path.dirname(os.path.dirname(flow.__file__)),
                                                    env.get("PYTHONPATH", "")] if p)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
