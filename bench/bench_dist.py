"""flow-dist on 2 local ranks (1 thread each): all_reduce of 16 MiB against mpi4py's own time for the same
buffer (best of 50, interleaved), and DDP training throughput of a small MLP against 1 rank, beside 2 ranks that
train without any synchronisation (the machine's own ceiling) and the share of DDP's time spent waiting for
all-reduces after backward. One run; prints the ratios.

    python bench/bench_dist.py            # starts the flowrun jobs itself
"""
import os
import subprocess
import sys
import time

ITERS = 50


def worker(kind):
    import numpy as np
    from mpi4py import MPI

    import oneflow as flow
    import oneflow.distributed as dist

    r = flow.env.get_rank()
    if kind == "allreduce":
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
        if r == 0:
            f, m = min(times["flow"]), min(times["mpi4py"])
            print(f"RESULT allreduce16MiB flow_ms={f * 1e3:.2f} mpi4py_ms={m * 1e3:.2f} ratio={f / m:.3f}")
    else:
        world = flow.env.get_world_size()
        flow.manual_seed(0)
        net = flow.nn.Sequential(flow.nn.Linear(256, 512), flow.nn.ReLU(), flow.nn.Linear(512, 512), flow.nn.ReLU(),
                                 flow.nn.Linear(512, 10))
        bucket = int(os.environ.get("BENCH_BUCKET", "10"))
        model = flow.nn.parallel.DistributedDataParallel(net, bucket_size=bucket) if kind == "ddp" else net
        opt = flow.optim.SGD(model.parameters(), lr=0.01)
        batch = 64  # per rank
        x = flow.randn(batch, 256)
        y = flow.randint(0, 10, (batch,))
        loss_fn = flow.nn.CrossEntropyLoss()
        steps = 100
        for i in range(steps + 10):
            if i == 10:
                if kind == "ddp":
                    model.comm_wait_s = 0.0
                t0 = time.perf_counter()
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            if kind == "barrier":  # no gradient sync, only a barrier per step: the cost of keeping ranks in step
                flow.env.barrier()
            opt.step()
        dt = time.perf_counter() - t0
        if r == 0:
            wait = f" comm_wait_frac={model.comm_wait_s / dt:.3f}" if kind == "ddp" else ""
            print(f"RESULT {kind} world={world} samples_per_s={steps * batch * world / dt:.0f}{wait}")


def launch(nproc, kind):
    env = dict(os.environ, OMP_NUM_THREADS="1", BENCH_DIST_WORKER=kind)
    flowrun = os.path.join(os.path.dirname(sys.executable), "flowrun")
    cmd = [flowrun] if os.path.exists(flowrun) else [sys.executable, "-m", "oneflow_dist.launcher"]
    out = subprocess.run(cmd + ["--nproc", str(nproc), __file__], env=env, capture_output=True, text=True,
                         timeout=600)
    if out.returncode:
        raise SystemExit(out.stderr)
    line = next(line for line in out.stdout.splitlines() if line.startswith("RESULT"))
    print(line)
    return dict(kv.split("=") for kv in line.split()[2:])


def main():
    ar = launch(2, "allreduce")
    one = launch(1, "local")
    local2 = launch(2, "local")
    ddp2 = launch(2, "ddp")
    barrier2 = launch(2, "barrier")
    one_s = float(one["samples_per_s"])
    print(f"all_reduce 16 MiB, 2 ranks: flow / mpi4py = {ar['ratio']} (target <= 1.2)")
    ratio = {k: float(v["samples_per_s"]) / one_s for k, v in (("ddp", ddp2), ("local", local2),
                                                                 ("barrier", barrier2))}
    print(f"MLP training, 1 thread per rank: 2-rank DDP = {ratio['ddp']:.2f}x one rank (target >= 1.8); "
          f"2 independent ranks without any sync = {ratio['local']:.2f}x (what this machine allows), with only a "
          f"barrier per step = {ratio['barrier']:.2f}x; DDP waits for all-reduce in "
          f"{float(ddp2['comm_wait_frac']) * 100:.1f}% of its time (the rest of the communication overlaps "
          f"backward)")


if __name__ == "__main__":
    if "BENCH_DIST_WORKER" in os.environ:
        worker(os.environ["BENCH_DIST_WORKER"])
    else:
        main()
