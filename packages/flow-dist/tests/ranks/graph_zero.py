"""ZeRO inside nn.Graph (graph.config.enable_zero): a data-parallel training graph (S(0) inputs, B parameters)
with stages 1, 2 and 3 trains 10 steps with Adam like single-process training; the optimizer state each rank
holds is its shard; the plan carries the sharded update's collectives."""
import numpy as np

import oneflow as flow
import oneflow.nn as nn
from oneflow_dist import zero

from reference import single_process_losses
n = flow.env.get_world_size()
p = flow.env.all_device_placement("cpu")
B, S = flow.sbp.broadcast, flow.sbp.split
rng = np.random.default_rng(1)
batch = 4 * n
xs = [rng.standard_normal((batch, 8)).astype(np.float32) for _ in range(10)]
ys = [rng.standard_normal((batch, 4)).astype(np.float32) for _ in range(10)]


def model():
    flow.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 33), nn.Tanh(), nn.Linear(33, 4))


def loss_fn(m, x, y):
    return ((m(x) - y) ** 2).mean()


class Train(nn.Graph):
    def __init__(self, m, opt, stage):
        super().__init__()
        self.m = m
        self.add_optimizer(opt)
        self.config.enable_zero(True, stage=stage, shard_min_size=16)

    def build(self, x, y):
        loss = loss_fn(self.m, x, y).to_global(sbp=B)
        loss.backward()
        return loss


ref = model()
opt = flow.optim.Adam(ref.parameters(), lr=0.01)
want = single_process_losses(ref, opt, loss_fn, zip(xs, ys))

for stage in (1, 2, 3):
    m = model().to_global(p, B)
    opt = flow.optim.Adam(m.parameters(), lr=0.01)
    g = Train(m, opt, stage)
    got = []
    for x, y in zip(xs, ys):
        gx = flow.tensor(x).to_global(p, B).to_global(sbp=S(0))
        gy = flow.tensor(y).to_global(p, B).to_global(sbp=S(0))
        got.append(float(g(gx, gy).to_local()))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"stage {stage}")
    for (name, a), b in zip(m.named_parameters(), ref.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=f"stage {stage} {name}")
    big = [q for q in m.parameters() if q.numel() >= 16]
    for q in big:
        assert q.sbp == ((S(0),) if stage == 3 else (B,)), (stage, q.sbp)
        for key in ("exp_avg", "exp_avg_sq"):
            assert opt.state[q][key].sbp == (S(0),), (stage, key, opt.state[q][key].sbp)
    if n > 1:
        full = sum(q.numel() * 2 * 4 for q in m.parameters())
        assert zero.state_bytes(opt) < full, (zero.state_bytes(opt), full)

# a graph of local parameters has nothing to shard
local = model()
g = Train(local, flow.optim.Adam(local.parameters(), lr=0.01), 1)
try:
    g(flow.tensor(xs[0]), flow.tensor(ys[0]))
except RuntimeError as e:
    assert "found no global parameter to shard" in str(e), e
else:
    raise AssertionError("enable_zero on local parameters did not raise")
print("graph zero ok")
