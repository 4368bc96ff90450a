"""Trains the small GPT of model.py in one layout, chosen by a flag; the model code is the same in all.

    python examples/gpt_hybrid/train.py --layout single                 # one process, no global tensors
    flowrun --nproc 2 examples/gpt_hybrid/train.py --layout dp          # data parallel
    flowrun --nproc 2 examples/gpt_hybrid/train.py --layout tp          # tensor (Megatron) parallel
    flowrun --nproc 4 examples/gpt_hybrid/train.py --layout dpxtp       # 2 x 2 mesh: data x tensor parallel

Every rank prints its loss per step, then its tokens/s (the global batch's tokens over the time of the steps
after ``--warmup``) and its peak resident memory (VmHWM). The batches come from a seeded generator, so every
layout sees the same global batches as the single-process run.
"""
import argparse
import os
import sys
import time

import numpy as np

import oneflow as flow

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model as gpt  # noqa: E402

SIZES = {  # the bench size is bench_training.gpt's (and bench_dist's)
    "small": dict(vocab=64, d_model=32, n_head=4, n_layer=2, seq=16),
    "bench": dict(vocab=1024, d_model=256, n_head=4, n_layer=6, seq=128),
}


def peak_rss_mib():
    """The process's peak resident set (VmHWM) in MiB, or nan where /proc does not say it."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layout", choices=gpt.LAYOUTS, required=True)
    ap.add_argument("--size", choices=sorted(SIZES), default="small")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=2, help="steps left out of tokens/s")
    ap.add_argument("--batch", type=int, default=8, help="the global batch (samples per step)")
    ap.add_argument("--opt", choices=("adam", "sgd"), default="adam")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--tie", action="store_true", help="tie the LM head to the token embedding")
    ap.add_argument("--seed", type=int, default=0)
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    rank = flow.env.get_rank()
    size = SIZES[args.size]
    flow.manual_seed(args.seed)
    m = gpt.GPT(tie=args.tie, **size)
    if args.layout == "single":
        if flow.env.get_world_size() > 1:
            raise SystemExit("--layout single runs in one process; start it without flowrun --nproc")
        wrap = flow.tensor
    else:
        placement = gpt.lay_out(m, args.layout)

        def wrap(a):
            return gpt.to_batch(a, args.layout, placement)
    opt = (flow.optim.Adam(m.parameters(), lr=args.lr) if args.opt == "adam" else
           flow.optim.SGD(m.parameters(), lr=args.lr, momentum=0.9))
    rng = np.random.default_rng(args.seed)
    t0 = None
    for step in range(args.steps):
        if step == args.warmup:
            t0 = time.perf_counter()
        ids = rng.integers(0, size["vocab"], (args.batch, size["seq"] + 1))
        opt.zero_grad()
        loss = m(wrap(ids[:, :-1]), wrap(ids[:, 1:]))
        loss.backward()
        opt.step()
        print(f"rank {rank} step {step} loss {loss.item()!r}", flush=True)
    timed = args.steps - args.warmup
    tps = timed * args.batch * size["seq"] / (time.perf_counter() - t0) if t0 is not None and timed > 0 else 0.0
    print(f"rank {rank} layout {args.layout} tokens/s {tps:.1f} peak_mem_mib {peak_rss_mib():.1f}", flush=True)


if __name__ == "__main__":
    main()
