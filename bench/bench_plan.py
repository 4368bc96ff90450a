"""The core's plan executor against eager calls of the same kernels: an MLP forward (mm, add, relu per layer)
built by hand as a oneflow._C.Plan, timed against the eager ops under no_grad and against PyTorch eager in the
same run. Small layers show the per-op overhead a plan removes; large ones, that kernels are the same.

    python bench/bench_plan.py [--layers 6] [--width 64] [--batch 32]
"""
import argparse
from common import best_time  # (common also puts the repository's flow-core sources on sys.path)
import oneflow as flow
import torch


def mlp(lib, x, ws, bs):
    """The forward in `lib` (oneflow or torch), eagerly, without autograd."""
    with lib.no_grad():
        for w, b in zip(ws, bs):
            x = lib.relu(lib.mm(x, w) + b)
        return x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--width", type=int, default=64)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    flow.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    flow.manual_seed(0)
    ws = [flow.randn(args.width, args.width) * 0.1 for _ in range(args.layers)]
    bs = [flow.randn(args.width) * 0.1 for _ in range(args.layers)]
    x = flow.randn(args.batch, args.width)

    ops = flow._C.ops
    p = flow._C.Plan()
    h = p.add_input(list(x.shape), flow.float32)
    for w, b in zip(ws, bs):
        (h,) = p.add_step(ops.mm, [h, p.add_constant(w)])
        (h,) = p.add_step(ops.add, [h, p.add_constant(b)])
        (h,) = p.add_step(ops.relu, [h])
    p.set_outputs([h])
    p.finalize()

    tws = [torch.from_numpy(w.numpy()) for w in ws]
    tbs = [torch.from_numpy(b.numpy()) for b in bs]
    tx = torch.from_numpy(x.numpy())

    assert (p.run([x])[0] - mlp(flow, x, ws, bs)).abs().max().item() == 0
    t_plan = best_time(lambda: p.run([x]))
    t_eager = best_time(lambda: mlp(flow, x, ws, bs))
    t_torch = best_time(lambda: mlp(torch, tx, tws, tbs))
    ops_per_call = args.layers * 3
    print(f"MLP forward, {args.layers} layers x {args.width}, batch {args.batch}, {args.threads} thread(s); "
          f"{ops_per_call} ops per call; arena {p.memory['arena_bytes']} bytes for {p.memory['arena_values']} values")
    print(f"  plan.run      {t_plan * 1e6:9.1f} us   ({t_plan / ops_per_call * 1e9:6.0f} ns/op)")
    print(f"  oneflow eager {t_eager * 1e6:9.1f} us   ({t_eager / ops_per_call * 1e9:6.0f} ns/op)")
    print(f"  torch eager   {t_torch * 1e6:9.1f} us   ({t_torch / ops_per_call * 1e9:6.0f} ns/op)")
    print(f"  plan vs oneflow eager: {t_eager / t_plan:.2f}x faster; vs torch eager: {t_torch / t_plan:.2f}x faster")


if __name__ == "__main__":
    main()
