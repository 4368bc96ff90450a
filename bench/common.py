"""Benchmark helpers: time the same workload in oneflow and PyTorch in one process and report ratios.

These machines are shared and noisy, so each figure is the best of several repeats, and only the ratio
between the two frameworks measured side by side means much.
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "packages", "flow-core", "src"))

import oneflow as flow  # noqa: E402
import torch  # noqa: E402

THREADS = int(os.environ.get("BENCH_THREADS", "2"))
flow.set_num_threads(THREADS)
torch.set_num_threads(THREADS)


def best_time(fn, repeat=7, number=None, min_time=0.2):
    """Best per-call seconds over `repeat` runs of `number` calls (auto-sized to ~min_time per run)."""
    fn()
    if number is None:
        number = 1
        while True:
            t = time.perf_counter()
            for _ in range(number):
                fn()
            if time.perf_counter() - t > min_time / 4 or number >= 1 << 20:
                break
            number *= 4
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t) / number)
    return best


def report(name, flow_s, torch_s, unit="us", scale=1e6, higher_is_better=False, work=None):
    """Print one row: times (or throughput when `work` is given) and our speed-up over PyTorch."""
    speedup = torch_s / flow_s
    if work is not None:
        f, t = work / flow_s, work / torch_s
        print(f"{name:<44} oneflow {f:10.2f} {unit:<8} torch {t:10.2f} {unit:<8} speed-up x{speedup:.2f}")
    else:
        print(f"{name:<44} oneflow {flow_s * scale:10.2f} {unit:<8} torch {torch_s * scale:10.2f} {unit:<8} "
              f"speed-up x{speedup:.2f}")
    return speedup
