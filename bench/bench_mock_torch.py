"""A training loop written against `torch`, run under oneflow.mock_torch, against the same loop written against
`oneflow` (issue 20's target: the mocked program runs at oneflow's eager speed, within 5%).

Both programs are one source text that differs only in its import lines; they are built in one process and
timed in alternating rounds, so both see the same machine load; the Python function calls per step of each
are counted as well (cProfile), a figure machine load can't move. A small MLP (per-op overhead dominates, which
is where attribute reads through the mock's `torch` modules would show) and a small CNN.

    python bench/bench_mock_torch.py [rounds]
"""
import cProfile
import os
import pstats
import statistics
import sys
import time
import types

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "packages", "flow-core", "src"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "packages", "flow-torchcompat", "src"))

import oneflow as flow  # noqa: E402

PROGRAM = '''
{imports}

def mlp():
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def setup(kind):
    torch.manual_seed(0)
    model = mlp() if kind == "mlp" else CNN()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(32, 64) if kind == "mlp" else torch.randn(16, 1, 28, 28)
    y = torch.randint(0, 10, (x.shape[0],))
    return model, opt, x, y


def steps(state, n):
    model, opt, x, y = state
    for _ in range(n):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return loss.item()
'''

TORCH_IMPORTS = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F"
ONEFLOW_IMPORTS = "import oneflow as torch\nimport oneflow.nn as nn\nimport oneflow.nn.functional as F"


def load(imports, name):
    mod = types.ModuleType(name)
    exec(compile(PROGRAM.format(imports=imports), f"<{name}>", "exec"), mod.__dict__)
    return mod


def calls_per_step(prog, state, n=5):
    prof = cProfile.Profile()
    prof.enable()
    prog.steps(state, n)
    prof.disable()
    return pstats.Stats(prof).total_calls / n


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    flow.set_num_threads(int(os.environ.get("BENCH_THREADS", "2")))
    import oneflow.mock_torch as mock

    with mock.enable():
        mocked = load(TORCH_IMPORTS, "torch_program")
    native = load(ONEFLOW_IMPORTS, "oneflow_program")
    assert mocked.torch.nn.Linear is flow.nn.Linear and native.torch is flow
    for kind, n in (("mlp", 50), ("cnn", 10)):
        states = {"mock": mocked.setup(kind), "oneflow": native.setup(kind)}
        progs = {"mock": mocked, "oneflow": native}
        best = {k: float("inf") for k in states}
        ratios = []
        for k in states:
            progs[k].steps(states[k], 3)  # warm up
        for _ in range(rounds):
            t = {}
            for k in ("mock", "oneflow") if _ % 2 == 0 else ("oneflow", "mock"):
                start = time.perf_counter()
                progs[k].steps(states[k], n)
                t[k] = (time.perf_counter() - start) / n
                best[k] = min(best[k], t[k])
            ratios.append(t["mock"] / t["oneflow"])
        print(f"{kind}: torch program under mock_torch {best['mock'] * 1e3:8.3f} ms/step, oneflow program "
              f"{best['oneflow'] * 1e3:8.3f} ms/step; mock/oneflow best {best['mock'] / best['oneflow']:.3f}, "
              f"per round median {statistics.median(ratios):.3f} (min {min(ratios):.3f}, max {max(ratios):.3f})")
        print(f"{kind}: Python calls per step: mock {calls_per_step(mocked, states['mock']):.0f}, oneflow "
              f"{calls_per_step(native, states['oneflow']):.0f}")


if __name__ == "__main__":
    main()
