"""Data parallelism inside nn.Graph: S(0) inputs, broadcast parameters. 20 training steps with SGD (momentum)
and with Adam equal single-process training and eager global training; the loss comes back as a global tensor;
the graph's plan holds the gradients' all-reduces as IR nodes and issues the same collectives as eager code; a
call whose input sbp differs compiles again; the graph's state_dict holds global tensors; local tensors made
global inside build()."""
import numpy as np

import oneflow as flow
import oneflow.nn as nn

from reference import mse_loss as loss_fn, optimizer, single_process_losses
n = flow.env.get_world_size()
rank = flow.env.get_rank()
p = flow.env.all_device_placement("cpu")
B, S = flow.sbp.broadcast, flow.sbp.split
rng = np.random.default_rng(0)
batch = 4 * n
xs = [rng.standard_normal((batch, 8)).astype(np.float32) for _ in range(20)]
ys = [rng.standard_normal((batch, 4)).astype(np.float32) for _ in range(20)]


def model():
    flow.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))


class Train(nn.Graph):
    def __init__(self, m, opt):
        super().__init__()
        self.m = m
        self.add_optimizer(opt)

    def build(self, x, y):
        loss = loss_fn(self.m, x, y).to_global(sbp=B)
        loss.backward()
        return loss


def glob(a, sbp):
    return flow.tensor(a).to_global(p, B).to_global(sbp=sbp)


for kind in ("sgd", "adam"):
    ref = model()
    opt = optimizer(kind, ref.parameters())
    ref_losses = single_process_losses(ref, opt, loss_fn, zip(xs, ys))

    eager = model().to_global(p, B)
    opt = optimizer(kind, eager.parameters())
    eager_losses = []
    for i, (x, y) in enumerate(zip(xs, ys)):
        gx, gy = glob(x, S(0)), glob(y, S(0))
        with flow.distributed.comm_debug() as comm:
            loss = loss_fn(eager, gx, gy).to_global(sbp=B)
            opt.zero_grad()
            loss.backward()
            opt.step()
        eager_losses.append(float(loss.to_local()))
        if i == 1:
            eager_step = comm.get_comm_counts()

    m = model().to_global(p, B)
    g = Train(m, optimizer(kind, m.parameters()))
    graph_losses = []
    for i, (x, y) in enumerate(zip(xs, ys)):
        gx, gy = glob(x, S(0)), glob(y, S(0))
        with flow.distributed.comm_debug() as comm:
            loss = g(gx, gy)
        assert loss.is_global and loss.sbp == (B,) and loss.placement == p, (type(loss), loss.sbp)
        assert tuple(loss.shape) == ()
        graph_losses.append(float(loss.to_local()))
        if i == 1:  # a steady step (the first, building Adam's state, is compiled for that call only)
            graph_step = comm.get_comm_counts()
    np.testing.assert_allclose(graph_losses, ref_losses, rtol=1e-5, atol=1e-6, err_msg=kind)
    np.testing.assert_allclose(eager_losses, ref_losses, rtol=1e-5, atol=1e-6, err_msg=kind)
    for (name, a), b in zip(m.named_parameters(), ref.parameters()):
        assert a.is_global and a.sbp == (B,), name
        np.testing.assert_allclose(a.detach().to_local().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6,
                                   err_msg=f"{kind} {name}")
    # the gradients' reductions are IR nodes of the plan, and a graph step communicates as an eager one
    ir = g.__dict__["_last"].ir
    reduces = [nd for nd in ir.nodes if nd.name == "dist_all_reduce"]
    assert n == 1 or len(reduces) == 4 + 1, [nd.name for nd in ir.nodes]  # 4 parameters' gradients, the loss
    assert graph_step == eager_step, (graph_step, eager_step)
    plan = g.__dict__["_last"].plan
    assert plan.native, plan.native_error  # the core's plan executor runs the collectives among its steps
    sd = g.state_dict()
    assert all(t.is_global for t in sd["m"].values()), sd["m"].keys()
    if kind == "adam":
        assert all(v.is_global for k, v in sd.items() if k.endswith("exp_avg")), list(sd)

# another sbp of an input compiles another plan, which gives the same result
m = model().to_global(p, B)
g = Train(m, flow.optim.SGD(m.parameters(), lr=0.0))
a = g(glob(xs[0], S(0)), glob(ys[0], S(0)))
b = g(glob(xs[0], B), glob(ys[0], S(0)))
assert g.__dict__["_compile_count"] == 2
g(glob(xs[1], B), glob(ys[1], S(0)))
assert g.__dict__["_compile_count"] == 2
np.testing.assert_allclose(a.to_local().numpy(), b.to_local().numpy(), rtol=1e-6)

# global tensors on two placements in one op: a clear error naming both, from the trace
if n > 1:
    other = flow.placement("cpu", ranks=[0])
    g = Train(model().to_global(p, B), flow.optim.SGD(model().parameters(), lr=0.1))
    try:
        g(flow.tensor(xs[0]).to_global(other, B), glob(ys[0], S(0)))
    except RuntimeError as e:
        assert "same placement" in str(e), e
    else:
        raise AssertionError("mixing placements did not raise")


# a local tensor made global inside build(): each rank's tensor is its shard (split), or the first rank's value
# (broadcast), in every run of the plan (the broadcast is a plan step)
class MakeGlobal(nn.Graph):
    def build(self, x):
        return x.to_global(p, S(0)).to_global(sbp=B), x.to_global(p, B)


g = MakeGlobal()
for call in range(2):
    local = flow.full((2, 3), float(rank + 10 * call))
    with flow.distributed.comm_debug() as comm:
        split, bcast = g(local)
    assert split.sbp == (B,) and tuple(split.shape) == (2 * n, 3) and tuple(bcast.shape) == (2, 3)
    want = np.repeat(np.arange(n, dtype=np.float32) + 10 * call, 2)[:, None] * np.ones((1, 3), np.float32)
    np.testing.assert_array_equal(split.to_local().numpy(), want)
    np.testing.assert_array_equal(bcast.to_local().numpy(), np.full((2, 3), 10.0 * call, np.float32))
    assert n == 1 or comm.get_comm_counts() == {"all_gather": 1, "broadcast": 1}, comm.get_comm_counts()
assert g.__dict__["_compile_count"] == 1
print(f"rank {rank}: graph global dp ok", flush=True)
