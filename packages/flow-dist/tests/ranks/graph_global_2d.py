"""A 2-D mesh inside nn.Graph: data parallel along the first hierarchy dimension, tensor parallel along the
second (an MLP with (B, S(1)) and (B, S(0)) weights, (S(0), B) inputs) on 4 ranks, trained in a graph for 10
steps with Adam, equals single-process training."""
import numpy as np

import oneflow as flow
import oneflow.nn as nn

from reference import single_process_losses
F = flow.nn.functional
assert flow.env.get_world_size() == 4
mesh = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
B, S = flow.sbp.broadcast, flow.sbp.split
rng = np.random.default_rng(0)
c, batch, STEPS = 8, 8, 10
w1 = rng.standard_normal((c, 4 * c)).astype(np.float32) * 0.2
w2 = rng.standard_normal((4 * c, c)).astype(np.float32) * 0.2
xs = [rng.standard_normal((batch, c)).astype(np.float32) for _ in range(STEPS)]


class MLP(nn.Module):
    def __init__(self, a, b):
        super().__init__()
        self.w1, self.w2 = nn.Parameter(a), nn.Parameter(b)

    def forward(self, x):
        return flow.matmul(F.gelu(flow.matmul(x, self.w1)), self.w2)


def loss_fn(m, x):
    out = m(x)
    if out.is_global:
        out = out.to_global(sbp=(B, B))
    return (out * out).mean()


ref = MLP(flow.tensor(w1), flow.tensor(w2))
opt = flow.optim.Adam(ref.parameters(), lr=0.01)
ref_losses = single_process_losses(ref, opt, loss_fn, ((x,) for x in xs))


def glob(a, sbp):
    return flow.tensor(a).to_global(mesh, (B, B)).to_global(sbp=sbp)


m = MLP(glob(w1, (B, S(1))), glob(w2, (B, S(0))))


class Train(nn.Graph):
    def __init__(self):
        super().__init__()
        self.m = m
        self.add_optimizer(flow.optim.Adam(m.parameters(), lr=0.01))

    def build(self, x):
        loss = loss_fn(self.m, x)
        loss.backward()
        return loss


g = Train()
losses = []
for x in xs:
    loss = g(glob(x, (S(0), B)))
    assert loss.sbp == (B, B) and loss.placement == mesh
    losses.append(float(loss.to_local()))
np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-6)
for (name, a), r in zip(m.named_parameters(), ref.parameters()):
    np.testing.assert_allclose(a.detach().to_global(sbp=(B, B)).to_local().numpy(), r.detach().numpy(), rtol=1e-4,
                               atol=1e-6, err_msg=name)
coll = {nd.name for nd in g.__dict__["_last"].ir.nodes if nd.name.startswith("dist_")}
assert coll, "the 2-D graph issued no collective"
print(f"rank {flow.env.get_rank()}: graph global 2d ok", flush=True)
