"""Training throughput and peak memory against PyTorch (issue 3 targets: >= 1.2x PyTorch's steps/s on every
workload, peak memory no higher than PyTorch's).

Each model is written once against a framework module `lib` (oneflow or torch), so both run the same code.
Peak memory: every (workload, framework) pair runs in its own subprocess, so that the peak resident set
(getrusage ru_maxrss) belongs to that framework's run alone; both kinds of child import both frameworks
(bench/common.py does), so their baselines match. Speed: one more subprocess builds the workload in both
frameworks and alternates timed runs between them, so both see the same machine load (these machines are
shared); each figure is the best per-step time over the alternating rounds, and the per-round ratios (min,
median, max) show how far the load moved during the run.

    python bench/bench_training.py                 # all workloads
    python bench/bench_training.py cnn mlp         # some of them
"""
import json
import math
import os
import resource
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------------------------- the models
def simple_cnn(lib):
    """The documentation's MNIST network."""
    nn = lib.nn

    class SimpleCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 32, kernel_size=3, stride=1, padding=1)
            self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
            self.conv2 = nn.Conv2d(32, 64, kernel_size=3, stride=1, padding=1)
            self.fc1 = nn.Linear(64 * 7 * 7, 128)
            self.fc2 = nn.Linear(128, 10)

        def forward(self, x):
            x = self.pool(lib.relu(self.conv1(x)))
            x = self.pool(lib.relu(self.conv2(x)))
            x = x.view(-1, 64 * 7 * 7)
            x = lib.relu(self.fc1(x))
            return self.fc2(x)

    return SimpleCNN()


def resnet18_cifar(lib, num_classes=10):
    """ResNet-18 for 32x32 inputs: 3x3 stem without max-pool, BasicBlocks [2, 2, 2, 2], global average pool."""
    nn = lib.nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = lib.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return lib.relu(out + self.shortcut(x))

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 3, stride=1, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            layers, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
                cin = cout
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(512, num_classes)

        def forward(self, x):
            x = lib.relu(self.bn1(self.conv1(x)))
            x = self.layers(x)
            return self.fc(x.mean(dim=(2, 3)))

    return ResNet18()


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))


def gpt(lib, vocab=1024, d_model=256, n_head=4, n_layer=6, seq=128):
    """A GPT-2-shaped decoder: learned positions, pre-LayerNorm blocks, attention as matmul + causal mask + softmax."""
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(d_model)
            self.qkv = nn.Linear(d_model, 3 * d_model)
            self.proj = nn.Linear(d_model, d_model)
            self.ln2 = nn.LayerNorm(d_model)
            self.fc = nn.Linear(d_model, 4 * d_model)
            self.act = nn.GELU()
            self.out = nn.Linear(4 * d_model, d_model)

        def attention(self, x, mask):
            b, t, c = x.shape
            hd = c // n_head
            q, k, v = self.qkv(x).split(c, dim=2)
            q = q.view(b, t, n_head, hd).transpose(1, 2)
            k = k.view(b, t, n_head, hd).transpose(1, 2)
            v = v.view(b, t, n_head, hd).transpose(1, 2)
            att = lib.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(hd)) + mask[:t, :t]
            att = lib.softmax(att, dim=-1)
            y = lib.matmul(att, v).transpose(1, 2).contiguous().view(b, t, c)
            return self.proj(y)

        def forward(self, x, mask):
            x = x + self.attention(self.ln1(x), mask)
            return x + self.out(self.act(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(vocab, d_model)
            self.pos = nn.Embedding(seq, d_model)
            self.blocks = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(d_model)
            self.head = nn.Linear(d_model, vocab, bias=False)
            # additive causal mask: -inf above the diagonal
            self.register_buffer("mask", lib.triu(lib.full((seq, seq), float("-inf")), diagonal=1), persistent=False)

        def forward(self, idx):
            t = idx.shape[1]
            x = self.tok(idx) + self.pos(lib.arange(t))
            for block in self.blocks:
                x = block(x, self.mask)
            return self.head(self.ln_f(x))

    return GPT()


# ------------------------------------------------------------------------------------------- the workloads
def _train_step(lib, model, opt, x, y, flatten_logits=False):
    def step():
        out = model(x)
        if flatten_logits:
            out = out.view(-1, out.shape[-1])
        loss = lib.nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return step


def build(name, lib):
    """(step function, samples per step, unit) of one workload, with fixed-seed inputs shared by both frameworks."""
    rng = np.random.default_rng(0)
    lib.manual_seed(0)
    if name == "cnn":
        model = simple_cnn(lib)
        x = lib.tensor(rng.random((64, 1, 28, 28), dtype=np.float32))
        y = lib.tensor(rng.integers(0, 10, 64))
        return _train_step(lib, model, lib.optim.SGD(model.parameters(), lr=0.01), x, y), 64
    if name == "resnet18":
        model = resnet18_cifar(lib)
        x = lib.tensor(rng.standard_normal((32, 3, 32, 32), dtype=np.float32))
        y = lib.tensor(rng.integers(0, 10, 32))
        opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
        return _train_step(lib, model, opt, x, y), 32
    if name == "mlp":
        model = mlp(lib)
        x = lib.tensor(rng.random((128, 784), dtype=np.float32))
        y = lib.tensor(rng.integers(0, 10, 128))
        return _train_step(lib, model, lib.optim.Adam(model.parameters(), lr=1e-3), x, y), 128
    if name == "gpt":
        model = gpt(lib)
        idx = rng.integers(0, 1024, (8, 129))
        x, y = lib.tensor(idx[:, :-1]), lib.tensor(idx[:, 1:].reshape(-1))
        opt = lib.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
        return _train_step(lib, model, opt, x, y, flatten_logits=True), 8
    if name == "resnet18_infer":
        model = resnet18_cifar(lib)
        model.eval()
        x = lib.tensor(rng.standard_normal((1, 3, 32, 32), dtype=np.float32))

        def forward():
            with lib.no_grad():
                model(x)
        return forward, 1
    raise ValueError(f"unknown workload {name!r}")


# (label, steps per timed run, alternating rounds, is latency)
WORKLOADS = {
    "cnn": ("SimpleCNN train b64 SGD", 8, 6, False),
    "resnet18": ("ResNet-18 train b32 SGD-momentum", 1, 12, False),
    "mlp": ("MLP 784-1024-1024-10 train b128 Adam", 10, 6, False),
    "gpt": ("GPT 6x256 seq128 train b8 AdamW", 2, 12, False),
    "resnet18_infer": ("ResNet-18 inference b1 (latency)", 10, 6, True),
}


def child(name, framework):
    sys.path.insert(0, HERE)
    from common import best_time, flow, torch  # noqa: F401  (sets the thread counts)

    lib = flow if framework == "oneflow" else torch
    base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if framework == "oneflow":
        flow._C._reset_peak_stats()
    step, samples = build(name, lib)
    _, number, _, _ = WORKLOADS[name]
    seconds = best_time(step, repeat=1, number=number)  # a few steps reach the steady-state peak
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = {"seconds": seconds, "samples": samples, "peak_rss_mb": peak_kb / 1024,
              "rss_growth_mb": (peak_kb - base_kb) / 1024}
    if framework == "oneflow":
        result["allocator_peak_mb"] = flow._C._allocator_stats()["peak_allocated_bytes"] / 2 ** 20
    print("RESULT " + json.dumps(result))


def pair_child(name):
    """Time both frameworks on one workload, alternating rounds."""
    sys.path.insert(0, HERE)
    from common import best_time, flow, torch  # noqa: F401  (sets the thread counts)

    steps = {fw: build(name, lib)[0] for fw, lib in (("oneflow", flow), ("torch", torch))}
    _, number, repeat, _ = WORKLOADS[name]
    best = {fw: float("inf") for fw in steps}
    ratios = []  # torch / oneflow time of each round: the spread shows how much the machine's load moved
    for _ in range(repeat):
        t = {fw: best_time(step, repeat=1, number=number) for fw, step in steps.items()}
        ratios.append(t["torch"] / t["oneflow"])
        best = {fw: min(best[fw], t[fw]) for fw in steps}
    ratios.sort()
    best["round_ratios"] = [ratios[0], ratios[len(ratios) // 2], ratios[-1]]
    print("RESULT " + json.dumps(best))


def run_child(name, framework):
    args = ["--pair", name] if framework == "pair" else ["--child", name, framework]
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), *args], capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no output)"]
    return {"error": tail[0]}


def main(names):
    sys.path.insert(0, HERE)
    from common import THREADS, report

    print(f"threads: {THREADS}; speed: best of alternating timed runs of both frameworks in one process; "
          f"memory: each framework in its own process")
    rows = []
    for name in names:
        label, _, _, latency = WORKLOADS[name]
        f, t, pair = run_child(name, "oneflow"), run_child(name, "torch"), run_child(name, "pair")
        if "error" in f or "error" in t or "error" in pair:
            print(f"{label:<44} failed: oneflow: {f.get('error', 'ok')} | torch: {t.get('error', 'ok')} | "
                  f"alternating: {pair.get('error', 'ok')}")
            continue
        if latency:
            speedup = report(label, pair["oneflow"], pair["torch"], unit="ms", scale=1e3)
        else:
            speedup = report(label + " (steps/s)", pair["oneflow"], pair["torch"], unit="steps/s", work=1.0)
        lo, med, hi = pair["round_ratios"]
        print(f"{'':<44} per-round speed-up: min x{lo:.2f}  median x{med:.2f}  max x{hi:.2f}")
        rows.append((label, speedup, f, t))
    if rows:
        print()
        print(f"{'peak memory (MB)':<44} {'oneflow RSS':>12} {'torch RSS':>10} {'ratio':>6}   "
              f"{'growth: oneflow':>15} {'torch':>7}   {'oneflow allocator peak':>22}")
        for label, _, f, t in rows:
            print(f"{label:<44} {f['peak_rss_mb']:12.1f} {t['peak_rss_mb']:10.1f} "
                  f"{f['peak_rss_mb'] / t['peak_rss_mb']:6.2f}   {f['rss_growth_mb']:15.1f} {t['rss_growth_mb']:7.1f}"
                  f"   {f['allocator_peak_mb']:22.1f}")
        print()
        short = [(label.split(" train")[0].replace(" b1 (latency)", ""), s) for label, s, _, _ in rows]
        print("speed-up over PyTorch (target >= 1.2): " + ", ".join(f"{n} x{s:.2f}" for n, s in short))


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 3 and sys.argv[1] == "--pair":
        pair_child(sys.argv[2])
    else:
        chosen = sys.argv[1:] or list(WORKLOADS)
        unknown = [n for n in chosen if n not in WORKLOADS]
        if unknown:
            sys.exit(f"unknown workload(s) {unknown}; choose from {list(WORKLOADS)}")
        main(chosen)
