"""Graph training against eager, in one process: ours eager, ours nn.Graph, PyTorch eager and torch.compile
on the MLP and SimpleCNN training steps of bench_training.py (same models, inputs and optimizers), and on a
tiny MLP whose step time is per-op overhead.

Each round times every variant once, alternating, so all see the same machine load; the figures are the best
per-step times over the rounds, with the ratios against our graph. The first call of our graph (trace +
compile + run) and of torch.compile are timed separately. torch.compile needs a working C++ toolchain for its
CPU code generation; where it fails, its column says why.

    python bench/bench_graph.py            # mlp, cnn and tiny
    python bench/bench_graph.py mlp tiny
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "packages", "flow-graph", "src"))

from common import best_time, flow, torch  # noqa: E402  (sets the thread counts)
import numpy as np  # noqa: E402

from bench_training import mlp, simple_cnn  # noqa: E402
from oneflow_graph import Graph  # noqa: E402

def tiny_mlp(lib):
    """Small enough that per-op overhead, not arithmetic, sets the step time."""
    nn = lib.nn
    return nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 10))


WORKLOADS = {
    # name: (label, model, input shape, classes, optimizer, steps per timed run)
    "mlp": ("MLP 784-1024-1024-10 train b128 Adam", mlp, (128, 784), 10, "adam", 10),
    "cnn": ("SimpleCNN train b64 SGD", simple_cnn, (64, 1, 28, 28), 10, "sgd", 8),
    "tiny": ("MLP 32-32-32-10 train b8 Adam (overhead-bound)", tiny_mlp, (8, 32), 10, "adam", 200),
}


def _optimizer(lib, kind, params):
    return lib.optim.Adam(params, lr=1e-3) if kind == "adam" else lib.optim.SGD(params, lr=0.01)


def _data(lib, shape, classes):
    rng = np.random.default_rng(0)
    return lib.tensor(rng.random(shape, dtype=np.float32)), lib.tensor(rng.integers(0, classes, shape[0]))


def eager_step(lib, name):
    _, make, shape, classes, kind, _ = WORKLOADS[name]
    lib.manual_seed(0)
    model = make(lib)
    opt = _optimizer(lib, kind, model.parameters())
    x, y = _data(lib, shape, classes)

    def step():
        loss = lib.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step


def graph_step(name):
    _, make, shape, classes, kind, _ = WORKLOADS[name]
    flow.manual_seed(0)
    model = make(flow)
    opt = _optimizer(flow, kind, model.parameters())
    x, y = _data(flow, shape, classes)

    class TrainGraph(Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, x, y):
            loss = flow.nn.functional.cross_entropy(self.model(x), y)
            loss.backward()
            return loss

    graph = TrainGraph()
    return lambda: graph(x, y), graph


def compiled_torch_step(name):
    _, make, shape, classes, kind, _ = WORKLOADS[name]
    torch.manual_seed(0)
    model = make(torch)
    opt = _optimizer(torch, kind, model.parameters())
    x, y = _data(torch, shape, classes)

    @torch.compile
    def fwd_bwd(x, y):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        return loss

    def step():
        opt.zero_grad()
        loss = fwd_bwd(x, y)
        opt.step()
        return loss
    return step


def _first_call(make):
    t = time.perf_counter()
    step = make()
    step() if callable(step) else step[0]()
    return step, time.perf_counter() - t


def run(name, rounds=6):
    label, *_, number = WORKLOADS[name]
    steps = {"ours eager": eager_step(flow, name), "torch eager": eager_step(torch, name)}
    t = time.perf_counter()
    g_step, graph = graph_step(name)
    g_step()  # the state-making first step (its own plan)
    g_step()  # the steady-state plan
    compile_s = {"ours graph": time.perf_counter() - t}
    steps["ours graph"] = g_step
    try:
        t = time.perf_counter()
        c_step = compiled_torch_step(name)
        c_step()
        compile_s["torch.compile"] = time.perf_counter() - t
        steps["torch.compile"] = c_step
    except Exception as e:  # no toolchain, or an unsupported pattern: say so, keep the other columns
        compile_s["torch.compile"] = f"failed: {type(e).__name__}: {str(e).splitlines()[0][:80]}"
    best = {k: float("inf") for k in steps}
    for _ in range(rounds):
        for k, step in steps.items():
            best[k] = min(best[k], best_time(step, repeat=1, number=number))
    print(f"\n{label}   ({len(graph._last.plan)} plan steps, passes: "
          + "; ".join(f"{n} {s}" for n, s in graph._last.report) + ")")
    base = best["ours graph"]
    for k in ("ours eager", "ours graph", "torch eager", "torch.compile"):
        if k in best:
            print(f"  {k:<14} {best[k] * 1e3:9.2f} ms/step   graph speed-up over it x{best[k] / base:5.2f}")
        else:
            print(f"  {k:<14} {compile_s[k]}")
    for k, v in compile_s.items():
        if not isinstance(v, str):
            print(f"  first call(s) {k}: {v:.2f} s")


if __name__ == "__main__":
    names = sys.argv[1:] or list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        sys.exit(f"unknown workload(s) {unknown}; choose from {list(WORKLOADS)}")
    for n in names:
        run(n)
