"""matmul (1024^3, float32) and conv2d (64x64x56x56, 3x3, pad 1) forward: oneflow vs torch, 2 threads each.

    PYTHONPATH=packages/flow-core/src python bench/bench_linalg.py [--reps N]

Prints GFLOP/s (best of N runs) and the ratio ours / torch. The CPU may be shared: take the best of runs.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn.functional as TF

import oneflow as flow
import oneflow.nn.functional as F


def best_time(fn, reps, warmup=2):
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def report(name, flops, t_ours, t_torch):
    g_o, g_t = flops / t_ours / 1e9, flops / t_torch / 1e9
    print(f"{name:28s} oneflow {g_o:7.1f} GFLOP/s   torch {g_t:7.1f} GFLOP/s   ratio {g_o / g_t:5.2f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    flow.set_num_threads(2)
    torch.set_num_threads(2)
    rng = np.random.default_rng(0)

    n = 1024
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    fa, fb, ta, tb = flow.tensor(a), flow.tensor(b), torch.tensor(a), torch.tensor(b)
    # interleave so that both see the same machine load
    t_o = t_t = float("inf")
    for _ in range(3):
        t_o = min(t_o, best_time(lambda: flow.matmul(fa, fb), args.reps))
        t_t = min(t_t, best_time(lambda: torch.matmul(ta, tb), args.reps))
    report("matmul 1024^3 f32", 2 * n ** 3, t_o, t_t)

    x = rng.standard_normal((64, 64, 56, 56), dtype=np.float32)
    w = rng.standard_normal((64, 64, 3, 3), dtype=np.float32)
    fx, fw, tx, tw = flow.tensor(x), flow.tensor(w), torch.tensor(x), torch.tensor(w)
    reps = max(2, args.reps // 3)
    t_o = t_t = float("inf")
    for _ in range(3):
        t_o = min(t_o, best_time(lambda: F.conv2d(fx, fw, padding=1), reps, warmup=1))
        with torch.no_grad():
            t_t = min(t_t, best_time(lambda: TF.conv2d(tx, tw, padding=1), reps, warmup=1))
    report("conv2d 64x64x56x56 k3 f32", 2 * 64 * 64 * 64 * 56 * 56 * 9, t_o, t_t)


if __name__ == "__main__":
    main()
