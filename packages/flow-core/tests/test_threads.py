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


FORK_PROBE = textwrap.dedent("""
    import multiprocessing as mp, oneflow as flow
    flow.set_num_threads(2)
    x = flow.randn(1000, 1000)
    (x @ x).exp().sum()  # the parent's OpenMP pool is now running

    def child(q):
        z = flow.randn(1000, 1000)
        (z @ z).exp().sum()  # would wait forever on the parent's pool threads
        msg = ""
        try:
            flow.set_num_threads(2)
        except RuntimeError as e:
            msg = str(e)
        q.put((flow.get_num_threads(), msg))

    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    p.join(60)
    assert p.exitcode == 0, p.exitcode
    n, msg = q.get(timeout=5)
    assert n == 1 and "GNU OpenMP is not fork-safe" in msg, (n, msg)
    assert flow.get_num_threads() == 2  # the parent keeps its threads
    print("ok")
""")


def test_forked_child_runs_serial_instead_of_hanging():
    # GNU OpenMP's pool does not survive fork: a child's parallel region would wait on threads that no longer
    # exist. Children of a process with threads run on one thread and refuse more.
    env = dict(os.environ, OMP_NUM_THREADS="2")
    env["PYTHONPATH"] = os.pathsep.join(p for p in [os.path.dirname(os.path.dirname(flow.__file__)),
                                                    env.get("PYTHONPATH")] if p)
    r = subprocess.run([sys.executable, "-c", FORK_PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr
