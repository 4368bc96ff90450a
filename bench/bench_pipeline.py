"""Pipeline parallelism on 2 local ranks (1 thread each): bench_training's GPT (6 layers, d256, seq 128) cut
into 2 stages of 3 blocks, trained with oneflow_dist.pipeline's Schedule1F1B (and GPipe) on a batch of 16 in M
micro-batches, against one rank training the whole model on the same batch. Tokens/s, best of BENCH_ROUNDS (3)
interleaved rounds. The 1F1B bubble bounds the speed-up at 2 (1 - (p-1)/(m+p-1)): 1.6x for 4 micro-batches,
1.78x for 8.

    python bench/bench_pipeline.py [M ...]      # default: 4 8; starts the flowrun jobs itself
"""
import os
import sys
import time

BATCH, STEPS, WARM = 16, 6, 2


def _gpt():
    import oneflow as flow

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_training

    flow.manual_seed(0)
    return bench_training.gpt(flow)


def _stages(model):
    """The GPT's two halves as modules (embeddings and blocks 0-2; blocks 3-5, final norm and head)."""
    import oneflow as flow

    class First(flow.nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos, self.blocks = model.tok, model.pos, model.blocks[:3]
            self.register_buffer("mask", model.mask, persistent=False)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(flow.arange(idx.shape[1]))
            for b in self.blocks:
                x = b(x, self.mask)
            return x

    class Second(flow.nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks, self.ln_f, self.head = model.blocks[3:], model.ln_f, model.head
            self.register_buffer("mask", model.mask, persistent=False)

        def forward(self, x):
            for b in self.blocks:
                x = b(x, self.mask)
            return self.head(self.ln_f(x))

    return First(), Second()


def worker(kind):
    import numpy as np

    import oneflow as flow
    from oneflow_dist.pipeline import PipelineStage, Schedule1F1B, ScheduleGPipe

    rng = np.random.default_rng(0)
    idx = rng.integers(0, 1024, (BATCH, 129))
    x, y = flow.tensor(idx[:, :-1]), flow.tensor(idx[:, 1:])

    def loss_fn(logits, target):
        return flow.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))

    model = _gpt()
    r = flow.env.get_rank()
    if kind == "whole":
        opt = flow.optim.SGD(model.parameters(), lr=0.01)

        def step():
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
    else:
        name, m = kind.split(":")
        stage_mod = _stages(model)[r]
        opt = flow.optim.SGD(stage_mod.parameters(), lr=0.01)
        cls = Schedule1F1B if name == "1f1b" else ScheduleGPipe
        sched = cls(PipelineStage(stage_mod, r, 2), int(m), loss_fn=loss_fn)

        def step():
            opt.zero_grad()
            sched.step(x) if r == 0 else sched.step(target=y)
            opt.step()
    for i in range(STEPS + WARM):
        if i == WARM:
            flow.env.barrier()
            t0 = time.perf_counter()
        step()
    flow.env.barrier()
    dt = time.perf_counter() - t0
    if r == 0:
        print(f"RESULT {kind} tokens_per_s={STEPS * BATCH * 128 / dt:.1f}")


def launch(nproc, kind):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import bench_dist

    return float(bench_dist.launch(nproc, kind, __file__, "BENCH_PIPE_WORKER")["tokens_per_s"])


def main():
    ms = [int(a) for a in sys.argv[1:]] or [4, 8]
    rounds = int(os.environ.get("BENCH_ROUNDS", "3"))
    kinds = ["whole"] + [f"{s}:{m}" for m in ms for s in ("1f1b", "gpipe")]
    best = {}
    for _ in range(rounds):  # the shared machine's load drifts: every configuration in every round
        for k in kinds:
            best[k] = max(best.get(k, 0.0), launch(1 if k == "whole" else 2, k))
    one = best["whole"]
    print(f"GPT b{BATCH} seq128, one rank, 1 thread: {one:.0f} tokens/s")
    for m in ms:
        bound = 2 * (1 - 1 / (m + 1))
        print(f"2-stage pipeline, {m} micro-batches: 1F1B {best[f'1f1b:{m}'] / one:.2f}x one rank, GPipe "
              f"{best[f'gpipe:{m}'] / one:.2f}x (the bubble's bound: {bound:.2f}x)")


if __name__ == "__main__":
    if os.environ.get("BENCH_PIPE_WORKER"):
        worker(os.environ["BENCH_PIPE_WORKER"])
    else:
        main()
