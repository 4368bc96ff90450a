"""straighten_memory_first (graph.config.enable_straighten_algorithm("MemoryFirst")): the nodes reordered so that
fewer bytes are alive at once, only along data and memory dependencies: results are bitwise the traced order's,
random draws and writes keep their order, and the live peak goes down where the traced order was wasteful."""
import numpy as np
import pytest

import oneflow as flow
from oneflow import nn
from oneflow_graph import Graph


class Fn(Graph):
    def __init__(self, fn, mode):
        super().__init__()
        self.fn = fn
        self.config.enable_straighten_algorithm(mode)

    def build(self, *args):
        return self.fn(*args)


def report(g):
    return dict(g._last.report).get("straighten_memory_first")


def two_branches(x):
    # traced order: both big intermediates first, then their sums; memory-first sums each as soon as it exists
    a = x * 2
    b = x * 3
    return a.sum() + b.sum()


def test_a_wasteful_order_is_reordered_and_the_live_peak_drops():
    x = flow.randn(256, 256)
    plain, straight = Fn(two_branches, "Disable"), Fn(two_branches, "MemoryFirst")
    want, got = plain(x), straight(x)
    assert report(plain) is None
    r = report(straight)
    assert r["reordered"] > 0 and r["peak_after"] < r["peak_before"]
    # one big intermediate fewer alive at once (less the few bytes of a sum kept meanwhile)
    assert r["peak_before"] - r["peak_after"] > 256 * 256 * 4 - 64
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    names = [n.op.name for n in straight._last.ir.nodes]
    assert names.index("sum") < max(i for i, n in enumerate(names) if n == "mul")  # a sum before the second mul
    assert straight._last.plan.memory_stats()["live_bytes"] < plain._last.plan.memory_stats()["live_bytes"]


def test_random_draws_and_writes_keep_their_order():
    def draws(x):
        a = flow.rand(64, 64) * 2  # the generator's order decides each draw's numbers
        b = flow.randn(64, 64) + x
        c = x.clone()
        c.mul_(a)  # a write, then a read of what it wrote
        return (b.sum(), c.sum(), a.sum())

    x = flow.randn(64, 64)
    outs = []
    for mode in ("Disable", "MemoryFirst"):
        flow.manual_seed(5)
        g = Fn(draws, mode)
        outs.append([t.numpy() for t in g(x)])
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)


def conv_net():
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(16 * 8 * 8, 10))


@pytest.mark.parametrize("scaler", [False, True], ids=["sgd", "adam_grad_scaler"])
def test_training_equals_the_traced_order_bitwise(scaler):
    # with a grad scaler the step keeps copies of the parameters (variables bound to the same tensors) to undo an
    # overflowing step: the reorder must see them as the parameters' memory
    rng = np.random.default_rng(0)
    batches = [(flow.tensor(rng.standard_normal((8, 3, 16, 16)).astype(np.float32)),
                flow.tensor(rng.integers(0, 10, 8))) for _ in range(3)]
    runs = []
    for mode in ("Disable", "MemoryFirst"):
        flow.manual_seed(0)
        model = conv_net()
        opt = (flow.optim.Adam(model.parameters(), lr=1e-3) if scaler
               else flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))

        class Train(Graph):
            def __init__(self):
                super().__init__()
                self.model = model
                self.add_optimizer(opt)
                self.config.enable_straighten_algorithm(mode)
                if scaler:
                    self.config.enable_amp(True, dtype=flow.bfloat16)
                    self.set_grad_scaler(flow.amp.GradScaler(init_scale=2.0 ** 20, growth_interval=2))

            def build(self, x, y):
                loss = nn.functional.cross_entropy(self.model(x).float(), y)
                loss.backward()
                return loss

        g = Train()
        losses = [g(x, y).item() for x, y in batches]
        runs.append((losses, [t.detach().numpy().copy() for t in model.state_dict().values()]))
    assert runs[0][0] == runs[1][0]
    for a, b in zip(runs[0][1], runs[1][1]):
        np.testing.assert_array_equal(a, b)


def test_modes():
    g = Fn(two_branches, "SpeedFirst")  # ordering for overlapping streams: the CPU plan keeps the traced order
    g(flow.randn(8, 8))
    assert report(g) is None
    assert Graph().config.enable_straighten_algorithm() is None  # default mode "MemoryFirst" is accepted
    with pytest.raises(ValueError, match="mode must be one of .*'MemoryFirst'.* but got 'fast'"):
        Graph().config.enable_straighten_algorithm("fast")
    with pytest.raises(RuntimeError, match="enable_straighten_algorithm"):
        g.config.enable_straighten_algorithm("MemoryFirst")
