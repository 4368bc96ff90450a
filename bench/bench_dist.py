"""flow-dist on 2 local ranks (1 thread each).

1. all_reduce of 16 MiB: ``flow.distributed.all_reduce`` against mpi4py's own ``Allreduce`` on the same kind of
   buffer (interleaved, best of 50).
2. Data-parallel training of the seed workloads (bench_training's SimpleCNN b64 and GPT 6x256 b8, SGD), per-rank
   batch fixed, against one rank with one thread. The machine is shared, so every variant runs inside one
   2-rank job, in alternating rounds, and each figure is the best round:
   - ``one``: rank 0 trains alone while rank 1 sleeps (it waits without spinning);
   - ``ddp``: DistributedDataParallel; its backward is split into the time until the last gradient's hook and
     the time spent waiting for the all-reduces after it (the part the overlap did not hide);
   - ``global``: the module made global (B parameters) and fed S(0) data: data parallelism with no extra code;
   - ``nosync``: both ranks train on their own (what this machine allows at best).
   The throughput ratio of a variant is 2 x (one's step time) / (its step time).
3. The all-reduce of all the gradients of a workload on its own, blocking: what DDP would add without overlap.

    python bench/bench_dist.py              # all of it (starts the flowrun jobs itself)
    python bench/bench_dist.py cnn          # one workload's training only
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ITERS = 50
WORKLOADS = {"cnn": (8, 7), "gpt": (2, 6)}  # steps per round, rounds
VARIANTS = ("one", "ddp", "global", "nosync")


def allreduce_worker():
    import numpy as np
    from mpi4py import MPI

    import oneflow as flow
    import oneflow.distributed as dist

    n = 16 * 2**20 // 4
    t = flow.ones(n)
    a = np.ones(n, np.float32)
    comm = MPI.COMM_WORLD
    dist.init_process_group()
    for _ in range(3):  # warm up both paths
        dist.all_reduce(t)
        comm.Allreduce(MPI.IN_PLACE, a)
    times = {"flow": [], "mpi4py": []}
    for _ in range(ITERS):  # interleaved, best of each: the machine is shared
        comm.Barrier()
        t0 = time.perf_counter()
        dist.all_reduce(t)
        times["flow"].append(time.perf_counter() - t0)
        comm.Barrier()
        t0 = time.perf_counter()
        comm.Allreduce(MPI.IN_PLACE, a)
        times["mpi4py"].append(time.perf_counter() - t0)
    if comm.Get_rank() == 0:
        f, m = min(times["flow"]), min(times["mpi4py"])
        print(f"RESULT allreduce flow_ms={f * 1e3:.2f} mpi4py_ms={m * 1e3:.2f} ratio={f / m:.3f}")


def _idle_barrier(comm):
    """A barrier that sleeps instead of spinning, so a waiting rank leaves its core to the other one."""
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(0.0005)


def _workload(flow, name, rank):
    """(model, x, y, flatten) of a workload with this rank's own batch."""
    import numpy as np

    sys.path.insert(0, HERE)
    from bench_training import gpt, simple_cnn

    rng = np.random.default_rng(rank)
    flow.manual_seed(0)  # the same initial parameters on every rank and in every variant
    if name == "cnn":
        model = simple_cnn(flow)
        return model, flow.tensor(rng.random((64, 1, 28, 28), dtype=np.float32)), \
            flow.tensor(rng.integers(0, 10, 64)), False
    model = gpt(flow)
    idx = rng.integers(0, 1024, (8, 129))
    return model, flow.tensor(idx[:, :-1]), flow.tensor(idx[:, 1:].reshape(-1)), True


def train_worker(name):
    from mpi4py import MPI

    import oneflow as flow

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    p = flow.placement("cpu", ranks=[0, 1])
    runs = {}
    for variant in VARIANTS:
        model, x, y, flat = _workload(flow, name, rank)
        if variant == "ddp":
            model = flow.nn.parallel.DistributedDataParallel(model)
        elif variant == "global":
            model.to_global(p, flow.sbp.broadcast)
            x, y = x.to_global(p, flow.sbp.split(0)), y.to_global(p, flow.sbp.split(0))
        runs[variant] = (model, x, y, flat, flow.optim.SGD(model.parameters(), lr=0.01))
    batch = x.shape[0]

    def run(variant, steps):
        model, x, y, flat, opt = runs[variant]
        phases = [0.0, 0.0, 0.0]  # forward, backward, optimizer step
        t0 = time.perf_counter()
        for _ in range(steps):
            a = time.perf_counter()
            out = model(x)
            loss = flow.nn.functional.cross_entropy(out.view(-1, out.shape[-1]) if flat else out, y)
            b = time.perf_counter()
            opt.zero_grad()
            loss.backward()
            c = time.perf_counter()
            opt.step()
            d = time.perf_counter()
            phases[0] += b - a
            phases[1] += c - b
            phases[2] += d - c
        return (time.perf_counter() - t0) / steps, [v / steps for v in phases]

    steps, rounds = WORKLOADS[name]
    best = {v: (float("inf"), None, 0.0) for v in VARIANTS}
    for rnd in range(rounds + 1):  # round 0 warms every variant up
        for variant in VARIANTS:
            _idle_barrier(comm)
            if variant == "one" and rank != 0:
                continue
            ddp = runs["ddp"][0]
            ddp.comm_wait_s = 0.0
            step_s, phases = run(variant, steps)
            wait = ddp.comm_wait_s / steps if variant == "ddp" else 0.0
            if rnd and step_s < best[variant][0]:
                best[variant] = (step_s, phases, wait)
    # the gradients' all-reduce alone, blocking: what DDP would add to a step without any overlap
    grads = [q.grad for q in runs["ddp"][0].parameters()]
    flat = flow.cat([g.reshape(-1) for g in grads])
    best_ar = float("inf")
    for _ in range(10):
        comm.Barrier()
        t0 = time.perf_counter()
        flow.comm.all_reduce(flat)
        best_ar = min(best_ar, time.perf_counter() - t0)
    if rank == 0:
        one = best["one"][0]
        fields = [f"grad_mb={flat.numel() * 4 / 2**20:.1f}", f"allreduce_all_grads_ms={best_ar * 1e3:.2f}",
                  f"batch={batch}"]
        for v in VARIANTS:
            s, ph, wait = best[v]
            ratio = one / s * (1 if v == "one" else 2)
            fields.append(f"{v}_ms={s * 1e3:.1f}")
            fields.append(f"{v}_x={ratio:.2f}")
            fields.append(f"{v}_split=fwd:{ph[0] * 1e3:.1f}/bwd:{(ph[1] - wait) * 1e3:.1f}/"
                          f"wait:{wait * 1e3:.2f}/step:{ph[2] * 1e3:.1f}")
        print(f"RESULT train_{name} " + " ".join(fields))


def launch(nproc, mode):
    env = dict(os.environ, OMP_NUM_THREADS="1", BENCH_DIST_WORKER=mode)
    flowrun = os.path.join(os.path.dirname(sys.executable), "flowrun")
    cmd = [flowrun] if os.path.exists(flowrun) else [sys.executable, "-m", "oneflow_dist.launcher"]
    out = subprocess.run(cmd + ["--nproc", str(nproc), __file__], env=env, capture_output=True, text=True,
                         timeout=1200)
    if out.returncode:
        raise SystemExit(out.stderr)
    line = next(line for line in out.stdout.splitlines() if line.startswith("RESULT"))
    print(line)
    return dict(kv.split("=", 1) for kv in line.split()[2:])


def main(names):
    print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores)")
    if not names:
        ar = launch(2, "allreduce")
        print(f"all_reduce 16 MiB, 2 ranks: flow {ar['flow_ms']} ms / mpi4py {ar['mpi4py_ms']} ms = {ar['ratio']} "
              f"(target <= 1.2)")
    for name in names or list(WORKLOADS):
        r = launch(2, "train_" + name)
        print(f"{name}: 2-rank DDP = {r['ddp_x']}x one rank, global S(0)/B = {r['global_x']}x (target >= 1.8); "
              f"2 ranks without sync = {r['nosync_x']}x (this machine's ceiling)")
        print(f"  step split (ms) one {r['one_split']} | ddp {r['ddp_split']} | global {r['global_split']}")
        print(f"  all-reducing its {r['grad_mb']} MB of gradients alone takes {r['allreduce_all_grads_ms']} ms; "
              f"DDP waits {r['ddp_split'].split('wait:')[1].split('/')[0]} ms after backward (the rest overlaps)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    mode = os.environ.get("BENCH_DIST_WORKER")
    if mode == "allreduce":
        allreduce_worker()
    elif mode:
        train_worker(mode[len("train_"):])
    else:
        unknown = [n for n in sys.argv[1:] if n not in WORKLOADS]
        if unknown:
            sys.exit(f"unknown workload(s) {unknown}; choose from {list(WORKLOADS)}")
        main(sys.argv[1:])
