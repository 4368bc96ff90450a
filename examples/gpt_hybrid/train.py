"""Trains the small GPT of model.py in one layout, chosen by a flag; the model code is the same in all.

    python examples/gpt_hybrid/train.py --layout single                 # one process, no global tensors
    flowrun --nproc 2 examples/gpt_hybrid/train.py --layout dp          # data parallel
    flowrun --nproc 2 examples/gpt_hybrid/train.py --layout tp          # tensor (Megatron) parallel
    flowrun --nproc 4 examples/gpt_hybrid/train.py --layout dpxtp       # 2 x 2 mesh: data x tensor parallel
    flowrun --nproc 2 examples/gpt_hybrid/train.py --layout zero2       # data parallel, ZeRO stage 2
    flowrun --nproc 2 examples/gpt_hybrid/train.py --layout pp          # one pipeline stage per rank (1F1B)
    flowrun --nproc 4 examples/gpt_hybrid/train.py --layout ppxdp       # 2 stages x 2 data-parallel replicas
    flowrun --nproc 2 examples/gpt_hybrid/train.py --layout pp --graph  # the pipeline inside an nn.Graph
    flowrun --nproc 2 examples/gpt_hybrid/train.py --layout tp --graph  # any layout: trained by an nn.Graph
    flowrun --nproc 2 examples/gpt_hybrid/train.py --layout pp --graph --schedule 1f1b  # (default: zero_bubble)

Every rank prints its loss per step, then its tokens/s (the global batch's tokens over the median time of the
steps after ``--warmup``), its peak resident memory (VmHWM), the peak of its tensors' bytes (params, grads,
optimizer state, activations) and the tensor bytes left after the last step (the model states). The batches
come from a seeded generator, so every layout sees the same global batches as the single-process run.
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


def tensor_peak_mib():
    """The peak of the bytes held by live tensors since the model was built (the core allocator's count, as
    PyTorch's max_memory_allocated): the model, gradients, optimizer state and activations, without the
    runtime's own memory or the allocator's cache."""
    return flow._C._allocator_stats()["peak_allocated_bytes"] / 2**20


def tensor_mib():
    """The bytes held by live tensors now: after a step, the model states (parameters, gradients, optimizer
    state), which ZeRO shards."""
    return flow._C._allocator_stats()["allocated_bytes"] / 2**20


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
    ap.add_argument("--micro-batches", type=int, default=4, help="pp, ppxdp: micro-batches per step (1F1B)")
    ap.add_argument("--graph", action="store_true",
                    help="train in an nn.Graph (pp, ppxdp: the pipeline inside it, with set_stage; zero2: "
                         "config.enable_zero)")
    ap.add_argument("--schedule", choices=("1f1b", "zero_bubble"), default="zero_bubble",
                    help="pp, ppxdp with --graph: the pipeline schedule (graph.config.set_pipeline_schedule)")
    return ap.parse_args(argv)


def plain_step(model, wrap):
    """One forward and backward of ``model`` on a batch made by ``wrap``; returns the loss as a float."""
    def step(x, y):
        loss = model(wrap(x), wrap(y))
        loss.backward()
        return loss.item()
    return step


def pipeline_step(model, args):
    """This rank's pipeline stage of ``model`` (pp: one stage per rank; ppxdp: 2 stages per data-parallel
    replica of 2 ranks, each stage a DistributedDataParallel over its replicas) and a step running the 1F1B
    schedule on this replica's share of the batch; the step returns the mean loss of the whole batch (every
    rank receives it)."""
    from oneflow.nn.parallel import DistributedDataParallel
    from oneflow_dist.pipeline import PipelineStage, Schedule1F1B

    rank, world = flow.env.get_rank(), flow.env.get_world_size()
    if args.layout == "pp":
        stages, replica, index = world, 0, rank
    else:
        if world % 2:
            raise SystemExit("--layout ppxdp runs 2 pipeline stages per replica: it needs an even rank count")
        stages, (replica, index) = 2, divmod(rank, 2)
    replicas = world // stages
    stage_mod = gpt.stage_of(model, index, stages)
    if replicas > 1:
        flow.distributed.init_process_group()
        groups = [flow.distributed.new_group(list(range(i, world, stages))) for i in range(stages)]
        stage_mod = DistributedDataParallel(stage_mod, process_group=groups[index])
    ranks = list(range(replica * stages, (replica + 1) * stages))
    sched = Schedule1F1B(PipelineStage(stage_mod, index, stages, ranks=ranks), args.micro_batches,
                         loss_fn=gpt.lm_loss)
    share = slice(replica * args.batch // replicas, (replica + 1) * args.batch // replicas)

    def step(x, y):
        losses = []
        if index == 0 and stages > 1:
            sched.step(flow.tensor(x[share]))
        elif index == stages - 1:
            sched.step(*([flow.tensor(x[share])] if stages == 1 else []), target=flow.tensor(y[share]),
                       losses=losses)
        else:
            sched.step()
        # the last stages know their replica's loss: the mean over the replicas reaches every rank
        mine = flow.tensor([float(np.mean([v.item() for v in losses])) / replicas if losses else 0.0],
                           dtype=flow.float64)
        flow.comm.all_reduce(mine)
        return mine.item()
    return stage_mod, step


def _make_optimizer(params, args):
    return (flow.optim.Adam(params, lr=args.lr) if args.opt == "adam" else
            flow.optim.SGD(params, lr=args.lr, momentum=0.9))


def graph_step(model, args):
    """``--graph``: the model trained by an nn.Graph. pp / ppxdp: the model's stages set with set_stage (one per
    rank; ppxdp: 2 stages of 2 data-parallel ranks each, ranks [0, 1] and [2, 3] on 4) and the graph's gradient
    accumulation over ``--micro-batches`` runs the pipeline in the ``--schedule`` order; dp / tp / dpxtp: the
    global model of :func:`model.lay_out`; zero2: dp with ``config.enable_zero(stage=2)``; single: the local
    model. Returns the optimizer and a step that returns the mean loss of the whole batch (every rank receives it)."""
    world = flow.env.get_world_size()
    B, S = flow.sbp.broadcast, flow.sbp.split
    pipelined = args.layout in ("pp", "ppxdp")
    if pipelined:
        if args.layout == "pp":
            groups, data_sbp = [[r] for r in range(world)], B
        else:
            if world % 2:
                raise SystemExit("--layout ppxdp runs 2 pipeline stages: it needs an even rank count")
            half = world // 2
            groups, data_sbp = [list(range(half)), list(range(half, world))], S(0)
        placements = [flow.placement("cpu", ranks=g) for g in groups]
        everyone = flow.placement("cpu", ranks=list(range(world)))
        gpt.set_stages(model, placements)
    elif args.layout != "single":
        placement = gpt.lay_out(model, args.layout)
    opt = _make_optimizer(model.parameters(), args)

    class TrainGraph(flow.nn.Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)
            if pipelined:
                self.config.set_gradient_accumulation_steps(args.micro_batches)
                self.config.set_pipeline_schedule(args.schedule)
            if args.layout == "zero2":
                self.config.enable_zero(True, stage=2, shard_min_size=1)

        def build(self, idx, targets):
            loss = self.model(idx, targets)
            loss.backward()
            return loss

    graph = TrainGraph()
    if not pipelined:
        wrap = flow.tensor if args.layout == "single" else (lambda a: gpt.to_batch(a, args.layout, placement))

        def step(x, y):
            return graph(wrap(x), wrap(y)).item()
        return opt, step

    def put(a, placement):
        return flow.tensor(a).to_global(everyone, B).to_global(placement, data_sbp)

    def step(x, y):
        losses = graph(put(x, placements[0]), put(y, placements[-1]))  # one loss per micro-batch
        return losses.to_global(everyone, B).to_local().mean().item()
    return opt, step


def main(argv=None):
    args = parse_args(argv)
    rank = flow.env.get_rank()
    size = SIZES[args.size]
    flow.manual_seed(args.seed)
    flow._C._reset_peak_stats()
    m = gpt.GPT(tie=args.tie, **size)
    if args.layout == "single":
        if flow.env.get_world_size() > 1:
            raise SystemExit("--layout single runs in one process; start it without flowrun --nproc")
    if args.graph:
        opt, step_fn = graph_step(m, args)
    elif args.layout == "single":
        step_fn = plain_step(m, flow.tensor)
    elif args.layout in ("pp", "ppxdp"):
        m, step_fn = pipeline_step(m, args)
    else:
        placement = gpt.lay_out(m, args.layout)
        step_fn = plain_step(m, lambda a: gpt.to_batch(a, args.layout, placement))
    if not args.graph:
        opt = _make_optimizer(m.parameters(), args)
    if args.layout == "zero2" and not args.graph:
        from oneflow_dist import zero

        zero.shard_optimizer(opt, stage=2, shard_min_size=1)
    rng = np.random.default_rng(args.seed)
    times = []  # seconds of each step after --warmup
    for step in range(args.steps):
        t0 = time.perf_counter()
        ids = rng.integers(0, size["vocab"], (args.batch, size["seq"] + 1))
        if args.graph:  # the graph steps the optimizer itself
            loss = step_fn(ids[:, :-1], ids[:, 1:])
        else:
            opt.zero_grad()
            loss = step_fn(ids[:, :-1], ids[:, 1:])
            opt.step()
        print(f"rank {rank} step {step} loss {loss!r}", flush=True)
        if step >= args.warmup:
            times.append(time.perf_counter() - t0)
    # the median step: on a shared machine a few steps slowed by other work would otherwise set the figure
    tps = args.batch * size["seq"] / float(np.median(times)) if times else 0.0
    print(f"rank {rank} layout {args.layout} tokens/s {tps:.1f} peak_mem_mib {peak_rss_mib():.1f} "
          f"tensor_peak_mib {tensor_peak_mib():.1f} state_mib {tensor_mib():.1f}", flush=True)


if __name__ == "__main__":
    main()
