"""Eager per-op overhead of global tensors on 2 local ranks (1 thread each): ``a + b`` on small S(0) global
tensors (no communication: the signature keeps both split) and on broadcast ones, against the same op on the
local shards, best of several rounds (the machine is shared). One run; prints microseconds per op.

    python bench/bench_global.py          # starts the flowrun job itself
"""
import os
import subprocess
import sys
import time

ITERS = 2000


def worker():
    import oneflow as flow

    r = flow.env.get_rank()
    p = flow.placement("cpu", ranks=[0, 1])
    a = flow.randn(8, 4, placement=p, sbp=flow.sbp.split(0))
    b = flow.randn(8, 4, placement=p, sbp=flow.sbp.split(0))
    ba = flow.randn(8, 4, placement=p, sbp=flow.sbp.broadcast)
    bb = flow.randn(8, 4, placement=p, sbp=flow.sbp.broadcast)
    la, lb = a.to_local(), b.to_local()
    rows = {}
    for name, fn in [("local a + b", lambda: la + lb), ("global a + b", lambda: a + b),
                     ("global B a + b", lambda: ba + bb),
                     ("global relu(a)", lambda: flow.relu(a)), ("global a.sum(1)", lambda: a.sum(1))]:
        fn()
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(ITERS):
                fn()
            best = min(best, (time.perf_counter() - t0) / ITERS)
        rows[name] = best * 1e6
    if r == 0:
        for name, us in rows.items():
            print(f"{name:<18} {us:8.2f} us/op")
        print(f"global overhead of a + b: {rows['global a + b'] - rows['local a + b']:.2f} us/op")


if __name__ == "__main__":
    if os.environ.get("BENCH_GLOBAL_WORKER"):
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        worker()
    else:
        flowrun = os.path.join(os.path.dirname(sys.executable), "flowrun")
        cmd = [flowrun] if os.path.exists(flowrun) else [sys.executable, "-m", "oneflow_dist.launcher"]
        env = dict(os.environ, BENCH_GLOBAL_WORKER="1", OMP_NUM_THREADS="1")
        sys.exit(subprocess.call(cmd + ["--nproc", "2", __file__], env=env))
