"""Graph training against eager, in one process: ours eager, ours nn.Graph, PyTorch eager and torch.compile
on the training steps of bench_training.py (MLP, SimpleCNN, GPT, ResNet-18: same models, inputs and
optimizers), ResNet-18 inference at batch 1 and 32, and a tiny MLP whose step time is per-op overhead.

Each round times every variant once, alternating, so all see the same machine load; the figures are the best
per-step times over the rounds, with the ratios against our graph. The first call of our graph (trace +
compile + run) and of torch.compile are timed separately. torch.compile needs a working C++ toolchain for its
CPU code generation; where it fails, its column says why. The inference rows also time our graph with the
``hoist_variables`` pass off ("graph no hoist": the conv + batch-norm folds computed at every call, the costlier
ones left unfolded), to show what caching the variable-only work gives.

Peak RSS growth (the resident-set high-water mark over a few training steps, less the mark after the model,
optimizer and inputs were made) is measured for each variant in a fresh process.

    python bench/bench_graph.py            # every workload
    python bench/bench_graph.py mlp tiny
"""
import json
import os
import resource
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "packages", "flow-graph", "src"))

from common import best_time, flow, torch  # noqa: E402  (sets the thread counts)
import numpy as np  # noqa: E402

from bench_training import gpt, mlp, resnet18_cifar, simple_cnn  # noqa: E402
from oneflow_graph import Graph  # noqa: E402


def tiny_mlp(lib):
    """Small enough that per-op overhead, not arithmetic, sets the step time."""
    nn = lib.nn
    return nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 10))


def _images(shape, classes):
    def make(lib, rng):
        return lib.tensor(rng.random(shape, dtype=np.float32)), lib.tensor(rng.integers(0, classes, shape[0]))
    return make


def _tokens(lib, rng):
    idx = rng.integers(0, 1024, (8, 129))
    return lib.tensor(idx[:, :-1]), lib.tensor(idx[:, 1:].reshape(-1))


WORKLOADS = {
    # name: (label, model, data, optimizer, steps per timed run); "infer" marks a no-grad forward
    "mlp": ("MLP 784-1024-1024-10 train b128 Adam", mlp, _images((128, 784), 10), "adam", 10),
    "cnn": ("SimpleCNN train b64 SGD", simple_cnn, _images((64, 1, 28, 28), 10), "sgd", 8),
    "gpt": ("GPT 6x256 seq128 train b8 AdamW", gpt, _tokens, "adamw", 2),
    "resnet18": ("ResNet-18 train b32 SGD-momentum", resnet18_cifar, _images((32, 3, 32, 32), 10), "momentum", 1),
    "resnet18_infer": ("ResNet-18 inference b1 (latency)", resnet18_cifar, _images((1, 3, 32, 32), 10), "infer", 10),
    "resnet18_infer_b32": ("ResNet-18 inference b32 (throughput)", resnet18_cifar, _images((32, 3, 32, 32), 10),
                           "infer", 2),
    "tiny": ("MLP 32-32-32-10 train b8 Adam (overhead-bound)", tiny_mlp, _images((8, 32), 10), "adam", 200),
}


def _optimizer(lib, kind, params):
    if kind == "adam":
        return lib.optim.Adam(params, lr=1e-3)
    if kind == "adamw":
        return lib.optim.AdamW(params, lr=3e-4, weight_decay=0.1)
    if kind == "momentum":
        return lib.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=5e-4)
    return lib.optim.SGD(params, lr=0.01)


def _setup(lib, name):
    """(model, optimizer or None, x, y) of a workload, from fixed seeds shared by both frameworks."""
    _, make, data, kind, _ = WORKLOADS[name]
    lib.manual_seed(0)
    model = make(lib)
    x, y = data(lib, np.random.default_rng(0))
    if kind == "infer":
        model.eval()
        return model, None, x, y
    return model, _optimizer(lib, kind, model.parameters()), x, y


def _loss(lib, out, y):
    return lib.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y)


def eager_step(lib, name):
    model, opt, x, y = _setup(lib, name)
    if opt is None:
        def forward():
            with lib.no_grad():
                return model(x)
        return forward

    def step():
        loss = _loss(lib, model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step


def graph_step(name, hoist=True):
    model, opt, x, y = _setup(flow, name)

    class TrainGraph(Graph):
        def __init__(self):
            super().__init__()
            self.model = model
            self.add_optimizer(opt)

        def build(self, x, y):
            loss = _loss(flow, self.model(x), y)
            loss.backward()
            return loss

    class InferGraph(Graph):
        def __init__(self):
            super().__init__()
            self.model = model

        def build(self, x):
            return self.model(x)

    if opt is None:
        graph = InferGraph()
        graph.config.enable_pass("hoist_variables", hoist)
        return lambda: graph(x), graph
    graph = TrainGraph()
    return lambda: graph(x, y), graph


def compiled_torch_step(name):
    model, opt, x, y = _setup(torch, name)
    if opt is None:
        compiled = torch.compile(model)

        def forward():
            with torch.no_grad():
                return compiled(x)
        return forward

    @torch.compile
    def fwd_bwd(x, y):
        loss = _loss(torch, model(x), y)
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


VARIANTS = ("ours eager", "ours graph", "torch eager", "torch.compile")


def _hwm_kb():
    """This process's resident-set high-water mark. Not getrusage's ru_maxrss: Linux carries that over fork and
    exec, so a child of the (large) benchmark process would start at its parent's peak."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def rss_child(name, variant):
    """In a fresh process: the RSS high-water mark's growth over setup-excluded training steps, in MiB."""
    makers = {"ours eager": lambda: eager_step(flow, name), "ours graph": lambda: graph_step(name)[0],
              "torch eager": lambda: eager_step(torch, name), "torch.compile": lambda: compiled_torch_step(name)}
    step = makers[variant]()
    before = _hwm_kb()
    for _ in range(3):
        step()
    growth = (_hwm_kb() - before) / 1024
    print("RESULT " + json.dumps({"rss_growth_mb": growth}))


def peak_rss(name):
    out = {}
    for v in VARIANTS:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--rss", name, v], capture_output=True,
                              text=True)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        out[v] = json.loads(lines[-1][7:])["rss_growth_mb"] if lines else None
    return out


def run(name, rounds=6):
    label, *_, number = WORKLOADS[name]
    steps = {"ours eager": eager_step(flow, name), "torch eager": eager_step(torch, name)}
    t = time.perf_counter()
    g_step, graph = graph_step(name)
    g_step()  # the state-making first step (its own plan)
    g_step()  # the steady-state plan
    compile_s = {"ours graph": time.perf_counter() - t}
    steps["ours graph"] = g_step
    if WORKLOADS[name][3] == "infer":  # what caching the variable-only work (conv+bn folds) gives
        steps["graph no hoist"] = graph_step(name, hoist=False)[0]
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
    for k in ("ours eager", "ours graph", "graph no hoist", "torch eager", "torch.compile"):
        if k not in best and k not in compile_s:
            continue
        if k in best:
            print(f"  {k:<14} {best[k] * 1e3:9.2f} ms/step   graph speed-up over it x{best[k] / base:5.2f}")
        else:
            print(f"  {k:<14} {compile_s[k]}")
    for k, v in compile_s.items():
        if not isinstance(v, str):
            print(f"  first call(s) {k}: {v:.2f} s")
    rss = peak_rss(name)
    ref = rss["torch eager"]
    print("  peak RSS growth (model setup excluded, fresh process each): " + ", ".join(
        f"{k} {v:.0f} MiB" + (f" (x{v / ref:.2f} of torch eager)" if ref and k != "torch eager" else "")
        if v is not None else f"{k} failed" for k, v in rss.items()))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rss"]:
        rss_child(sys.argv[2], sys.argv[3])
        sys.exit()
    names = sys.argv[1:] or list(WORKLOADS)
    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        sys.exit(f"unknown workload(s) {unknown}; choose from {list(WORKLOADS)}")
    for n in names:
        run(n)
