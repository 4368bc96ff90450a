"""matmul (1024^3, float32) and conv2d (batch 64, 64->64 channels, 56x56, 3x3, pad 1) forward, against
PyTorch in the same run (issue targets: matmul >= 1.8x, conv2d >= 1.5x PyTorch); then the products of a
transformer's training step: linear layers forward + backward (every GEMM layout: x W^T, g W, g^T x) and
attention's head-split batched products forward + backward.

    python bench/bench_linalg.py
"""
import numpy as np

from common import best_time, flow, report, torch


def interleaved(f_fn, t_fn, rounds=3, **kw):
    """Best time of each, alternating so that both see the same machine load."""
    f = t = float("inf")
    for _ in range(rounds):
        f = min(f, best_time(f_fn, **kw))
        t = min(t, best_time(t_fn, **kw))
    return f, t


def main():
    rng = np.random.default_rng(0)
    n = 1024
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    fa, fb, ta, tb = flow.tensor(a), flow.tensor(b), torch.tensor(a), torch.tensor(b)
    f, t = interleaved(lambda: flow.matmul(fa, fb), lambda: torch.matmul(ta, tb), repeat=5)
    report("matmul 1024^3 f32 (GFLOP/s)", f, t, unit="GFLOP/s", work=2 * n ** 3 / 1e9)

    x = rng.standard_normal((64, 64, 56, 56), dtype=np.float32)
    w = rng.standard_normal((64, 64, 3, 3), dtype=np.float32)
    fx, fw, tx, tw = flow.tensor(x), flow.tensor(w), torch.tensor(x), torch.tensor(w)
    with torch.no_grad():
        f, t = interleaved(lambda: flow.nn.functional.conv2d(fx, fw, padding=1),
                           lambda: torch.nn.functional.conv2d(tx, tw, padding=1), repeat=3, number=1)
    report("conv2d 64x64x56x56 k3 f32 (GFLOP/s)", f, t, unit="GFLOP/s", work=2 * 64 * 64 * 64 * 56 * 56 * 9 / 1e9)

    for tokens, cin, cout in ((1024, 256, 1024), (1024, 1024, 256), (1024, 256, 768)):
        x = rng.standard_normal((tokens, cin), dtype=np.float32)
        w = rng.standard_normal((cout, cin), dtype=np.float32) * 0.05
        steps = {}
        for lib in (flow, torch):
            lx, lw = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
            lb = lib.zeros(cout, requires_grad=True)

            def step(lib=lib, lx=lx, lw=lw, lb=lb):
                lib.nn.functional.linear(lx, lw, lb).sum().backward()
            steps[lib] = step
        f, t = interleaved(steps[flow], steps[torch], repeat=5)
        report(f"linear {tokens}x{cin}->{cout} fwd+bwd (GFLOP/s)", f, t, unit="GFLOP/s",
               work=3 * 2 * tokens * cin * cout / 1e9)

    b, t_, nh, hd = 8, 128, 4, 64
    qkv = rng.standard_normal((b, t_, 3 * nh * hd), dtype=np.float32)
    steps = {}
    for lib in (flow, torch):
        lq = lib.tensor(qkv, requires_grad=True)

        def attn(lib=lib, lq=lq):
            q, k, v = (z.view(b, t_, nh, hd).transpose(1, 2) for z in lq.split(nh * hd, dim=2))
            lib.matmul(lib.matmul(q, k.transpose(-2, -1)), v).sum().backward()
        steps[lib] = attn
    f, t = interleaved(steps[flow], steps[torch], repeat=5)
    report("attention q@k^T, @v 8x4x128x64 fwd+bwd (GFLOP/s)", f, t, unit="GFLOP/s",
           work=3 * 2 * 2 * b * nh * t_ * t_ * hd / 1e9)


if __name__ == "__main__":
    main()
