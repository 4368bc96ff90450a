"""Tensor parallelism inside nn.Graph: an MLP and a GPT block whose first weights are column-split (S(1)) and
whose output weights are row-split (S(0)), trained in a graph, equal single-process training; the boxing the
global tensors' sbp inference inserts is in the graph's plan as IR nodes, exactly Megatron's: per block one
all-reduce of the hidden states in forward per sub-block and one of their gradient in backward, the same
collectives an eager step issues."""
import numpy as np

import oneflow as flow
import oneflow.nn as nn
from reference import single_process_losses
from tp_model import B, attention, b, c, layout, make_values, mlp, t

n = flow.env.get_world_size()
p = flow.env.all_device_placement("cpu")
rng = np.random.default_rng(0)
STEPS = 10


class MLP(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.w1, self.w2 = nn.Parameter(w["w1"]), nn.Parameter(w["w2"])

    def forward(self, x):
        return mlp(x, {"w1": self.w1, "w2": self.w2})


class Block(nn.Module):
    def __init__(self, w):
        super().__init__()
        for k in ("wq", "wk", "wv", "wo"):
            setattr(self, k, nn.Parameter(w[k]))
        self.mlp = MLP(w)

    def forward(self, x):
        return self.mlp(attention(x, {k: getattr(self, k) for k in ("wq", "wk", "wv", "wo")}))


values = make_values(rng)
xs = [rng.standard_normal((b, t, c)).astype(np.float32) for _ in range(STEPS)]


def loss_fn(m, x):
    out = m(x)
    if out.is_global:
        out = out.to_global(sbp=B)
    return (out * out).mean()


def local_weights():
    return {k: flow.tensor(v) for k, v in values.items()}


def global_weights():
    return {k: flow.tensor(v).to_global(p, B).to_global(sbp=layout[k]) for k, v in values.items()}


class Train(nn.Graph):
    def __init__(self, m, opt):
        super().__init__()
        self.m = m
        self.add_optimizer(opt)

    def build(self, x):
        loss = loss_fn(self.m, x)
        loss.backward()
        return loss


class Forward(nn.Graph):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def build(self, x):
        return loss_fn(self.m, x)


# (module, all-reduces in forward, in a training step): the input needs no gradient, so only the block's
# inner MLP input has its gradient all-reduced in backward
for cls, forward, step in ((MLP, 1, 1), (Block, 2, 3)):
    ref = cls(local_weights())
    opt = flow.optim.SGD(ref.parameters(), lr=0.05)
    ref_losses = single_process_losses(ref, opt, loss_fn, ((x,) for x in xs))

    eager = cls(global_weights())
    opt = flow.optim.SGD(eager.parameters(), lr=0.05)
    for x in xs[:2]:
        gx = flow.tensor(x).to_global(p, B)
        with flow.distributed.comm_debug() as comm:
            loss = loss_fn(eager, gx)
            opt.zero_grad()
            loss.backward()
            opt.step()
    eager_step = comm.get_comm_counts()

    m = cls(global_weights())
    g = Train(m, flow.optim.SGD(m.parameters(), lr=0.05))
    losses = []
    for i, x in enumerate(xs):
        gx = flow.tensor(x).to_global(p, B)
        with flow.distributed.comm_debug() as comm:
            loss = g(gx)
        assert loss.is_global and loss.sbp == (B,)
        losses.append(float(loss.to_local()))
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-6, err_msg=cls.__name__)
    for (name, a), r in zip(m.named_parameters(), ref.parameters()):
        key = name.split(".")[-1]
        assert a.sbp == (layout[key],), (name, a.sbp)  # each rank keeps and updates its shard only
        np.testing.assert_allclose(a.detach().to_global(sbp=B).to_local().numpy(), r.detach().numpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=f"{cls.__name__} {name}")
    ir = g.__dict__["_last"].ir
    coll = [nd.name for nd in ir.nodes if nd.name.startswith("dist_")]
    if n > 1:
        assert coll == ["dist_all_reduce"] * step, coll
        assert comm.get_comm_counts() == eager_step == {"all_reduce": step}, (comm.records, eager_step)
        hidden = 2 * (n - 1) * b * t * c * 4 // n  # ring bytes of one all-reduce of the hidden states, per rank
        assert all(r["bytes"] == hidden for r in comm.records), comm.records
    fwd = Forward(m)
    gx = flow.tensor(xs[0]).to_global(p, B)
    with flow.distributed.comm_debug() as comm:
        out = fwd(gx)
    coll = [nd.name for nd in fwd.__dict__["_last"].ir.nodes if nd.name.startswith("dist_")]
    if n > 1:  # one all-reduce of the hidden states per sub-block, as Megatron
        assert coll == ["dist_all_reduce"] * forward and comm.get_comm_counts() == {"all_reduce": forward}, (coll, comm.records)
    with flow.no_grad():
        want = loss_fn(m, flow.tensor(xs[0]).to_global(p, B))
    np.testing.assert_allclose(out.to_local().numpy(), want.to_local().numpy(), rtol=1e-6)
print(f"rank {flow.env.get_rank()}: graph global tp ok", flush=True)
