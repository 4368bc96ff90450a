"""Common ops against PyTorch on 1024x1024 float32 (1M elements), the scan that finds slow kernels: each op is
timed in both frameworks back to back, alternating, and the table flags ops below 0.8x PyTorch's speed.

    python bench/bench_ops.py [name ...]      # all ops, or the named ones
"""
import sys

import numpy as np

from common import best_time, flow, report, torch

rng = np.random.default_rng(0)
A_NP = rng.standard_normal((1024, 1024)).astype(np.float32)
B_NP = rng.standard_normal((1024, 1024)).astype(np.float32)
IDX_NP = rng.integers(0, 1024, (1024, 1024))
T_NP = (rng.random((1024, 1024)) > 0.5).astype(np.float32)


def cases(L):
    """name -> zero-argument callable, built on the same data for either framework."""
    F = L.nn.functional
    A, B, IDX, T = L.tensor(A_NP), L.tensor(B_NP), L.tensor(IDX_NP), L.tensor(T_NP)
    P = L.tensor(np.abs(A_NP) + 0.1)
    OUT = L.empty(1024, 1024)
    G = L.tensor(A_NP, requires_grad=True)
    H = A.to(L.float16)
    return {
        "add out=": lambda: L.add(A, B, out=OUT),
        "abs": lambda: A.abs(),
        "clamp": lambda: A.clamp(-0.5, 0.5),
        "pow -0.5": lambda: P.pow(-0.5),
        "exp": lambda: A.exp(),
        "tanh": lambda: A.tanh(),
        "to float16": lambda: A.to(L.float16),
        "float16 to float32": lambda: H.to(L.float32),
        "to bfloat16": lambda: A.to(L.bfloat16),
        "softmax": lambda: L.softmax(A, 1),
        "logsumexp": lambda: L.logsumexp(A, 1),
        "layer_norm": lambda: F.layer_norm(A, (1024,)),
        "mse_loss": lambda: F.mse_loss(A, B),
        "bce_with_logits": lambda: F.binary_cross_entropy_with_logits(A, T),
        "bce_with_logits fwd+bwd": lambda: F.binary_cross_entropy_with_logits(G, T).backward(),
        "binary_cross_entropy": lambda: F.binary_cross_entropy(P.clamp(max=1.0) * 0.9, T),
        "cat dim 0": lambda: L.cat([A, B]),
        "cat dim 1": lambda: L.cat([A, B], 1),
        "gather last dim": lambda: L.gather(A, 1, IDX),
        "scatter_add last dim": lambda: L.zeros(1024, 1024).scatter_add_(1, IDX, A),
        "topk k=10": lambda: L.topk(A, 10, dim=1),
        "sort": lambda: L.sort(A, dim=1),
        "cumsum": lambda: A.cumsum(1),
        "randn": lambda: L.randn(1024, 1024),
        "rand": lambda: L.rand(1024, 1024),
        "arange 1M": lambda: L.arange(1 << 20),
        "linspace 1M": lambda: L.linspace(0, 1, 1 << 20),
    }


def main(names):
    print(f"threads: {flow.get_num_threads()}; best of alternating runs; flagged: below 0.8x PyTorch")
    fc, tc = cases(flow), cases(torch)
    for name in names or list(fc):
        f = t = float("inf")
        for _ in range(3):  # alternate so that both see the same machine load
            f = min(f, best_time(fc[name], repeat=5, number=5))
            t = min(t, best_time(tc[name], repeat=5, number=5))
        speedup = report(name, f, t)
        if speedup < 0.8:
            print(f"{'':<44} ^ below 0.8x")


if __name__ == "__main__":
    unknown = [n for n in sys.argv[1:] if n not in cases(flow)]
    if unknown:
        sys.exit(f"unknown op(s) {unknown}; choose from {list(cases(flow))}")
    main(sys.argv[1:])
