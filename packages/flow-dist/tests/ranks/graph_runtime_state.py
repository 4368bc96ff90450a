"""runtime_state_dict / load_runtime_state_dict of graphs over global tensors, each rank its own file.

``graph_runtime_state.py KIND MODE DIR``. KIND ``pp``: a 2-stage pipeline (set_stage after the optimizer was made,
4 micro-batches, SGD with momentum); ``dp``: data parallelism (S(0) inputs, broadcast parameters, Adam); ``tp``:
tensor parallelism (a column-split then a row-split Linear, broadcast inputs, Adam); ``zero``: ``dp`` with ZeRO
stage 2 (``config.enable_zero``: each rank's Adam state and gradients are its shard).
MODE ``save``: trains 3 steps, saves this rank's runtime state, trains 5 more and saves their losses and the
parameters as the reference. ``load`` (a fresh job, a model of other initial values): loads the runtime state,
runs 5 steps without tracing (the graph's compile counter stays 0) and equals the reference (1e-6); the
loaded plan keeps the saved plan's pipeline schedule (``ir.pipeline``, each node's step). ``mismatch``: loading into a graph laid out
otherwise, another rank's file, or (on 1 rank) a file of a 2-rank job raises RuntimeStateError naming what
differs, with nothing loaded.
"""
import os
import sys

import numpy as np

import oneflow as flow
import oneflow.nn as nn
from oneflow.nn.graph import GraphModule
from oneflow_graph.runtime_state import RuntimeStateError

from reference import mse_loss as loss_fn

kind, mode, folder = sys.argv[1], sys.argv[2], sys.argv[3]
n, rank = flow.env.get_world_size(), flow.env.get_rank()
B, S = flow.sbp.broadcast, flow.sbp.split
everyone = flow.placement("cpu", ranks=list(range(n)))
stages = [flow.placement("cpu", ranks=[r]) for r in range(n)]
M = 4  # micro-batches of the pipeline
SAVED, MORE = 3, 5
rng = np.random.default_rng(0)
xs = [rng.standard_normal((8, 6)).astype(np.float32) for _ in range(SAVED + MORE)]
ys = [rng.standard_normal((8, 3)).astype(np.float32) for _ in range(SAVED + MORE)]


def file(what, r=rank):
    return os.path.join(folder, f"{kind}_{what}_rank{r}")


class Train(nn.Graph):
    def __init__(self, m, opt, steps=1):
        super().__init__()
        self.m = m
        self.add_optimizer(opt)
        if steps > 1:
            self.config.set_gradient_accumulation_steps(steps)
        if kind == "zero":
            self.config.enable_zero(True, stage=2, shard_min_size=1)

    def build(self, x, y):
        loss = loss_fn(self.m, x, y)
        if kind != "pp":
            loss = loss.to_global(sbp=B)
        loss.backward()
        return loss


def setup(seed, param_sbp=B):
    flow.manual_seed(seed)
    m = nn.Sequential(nn.Sequential(nn.Linear(6, 8), nn.Tanh()), nn.Linear(8, 3))
    if kind == "pp":
        m = m.to_global(stages[0], B)
        opt = flow.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
        m[0].to(GraphModule).set_stage(0, stages[0])  # after the optimizer: the graph makes it adopt the moves
        m[1].to(GraphModule).set_stage(n - 1, stages[-1])
        return m, opt, Train(m, opt, M)
    m = m.to_global(everyone, param_sbp)
    if kind == "tp":  # Megatron's MLP: the first Linear split by output features, the second by input features
        first, second = m[0][0], m[1]
        first.weight = nn.Parameter(first.weight.to_global(sbp=S(0)))
        first.bias = nn.Parameter(first.bias.to_global(sbp=S(0)))
        second.weight = nn.Parameter(second.weight.to_global(sbp=S(1)))
    opt = flow.optim.Adam(m.parameters(), lr=0.01)
    return m, opt, Train(m, opt)


def inputs(i):
    def put(a, p):
        return flow.tensor(a).to_global(everyone, B).to_global(p, S(0) if kind in ("dp", "zero") else B)

    if kind == "pp":
        return put(xs[i], stages[0]), put(ys[i], stages[-1])
    return put(xs[i], everyone), put(ys[i], everyone)


def whole(t):
    return t.detach().to_global(everyone, B).to_local().numpy()


def params(m):
    return {name: whole(p) for name, p in m.named_parameters()}


def node_steps(ir):
    steps = ir.__dict__.get("pipeline_steps", {})
    return [steps.get(id(n)) for n in ir.nodes]


def train(g, steps):
    return [whole(g(*inputs(i))) for i in steps]


if mode == "save":
    m, opt, g = setup(0)
    train(g, range(SAVED))
    flow.save(g.runtime_state_dict(), file("graph"))
    (entry,) = g._cache.values()
    flow.save({"pipeline": entry.ir.__dict__.get("pipeline"), "steps": node_steps(entry.ir)}, file("schedule"))
    losses = train(g, range(SAVED, SAVED + MORE))
    np.savez(file("reference") + ".npz", losses=np.stack(losses), **params(m))
    print("runtime state saved")
elif mode == "load":
    m, opt, g = setup(1)  # other initial values: the loaded state replaces them
    g.load_runtime_state_dict(flow.load(file("graph")))
    assert g.is_compiled
    losses = train(g, range(SAVED, SAVED + MORE))
    assert g._compile_count == 0, f"the loaded graph compiled {g._compile_count} time(s)"
    ref = np.load(file("reference") + ".npz")
    np.testing.assert_allclose(np.stack(losses), ref["losses"], rtol=1e-6, atol=1e-6)
    for name, value in params(m).items():
        np.testing.assert_allclose(value, ref[name], rtol=1e-6, atol=1e-6, err_msg=name)
    (entry,) = g._cache.values()
    if kind == "tp":  # the plan ran on this rank's shards of the split weights
        assert tuple(m[0][0].weight.to_local().shape) == (8 // n, 6)
        assert tuple(m[1].weight.to_local().shape) == (3, 8 // n)
    if kind == "zero":  # the loaded Adam state is this rank's shard of each parameter's, as the saved graph's
        for p in m.parameters():
            moment = opt.state[p]["exp_avg"]
            assert moment.is_global and moment.sbp == (S(0),), (moment.placement, moment.sbp)
            assert moment.to_local().numel() < p.numel(), (tuple(moment.to_local().shape), tuple(p.shape))
    saved = flow.load(file("schedule"))
    if kind == "pp":  # the schedule the nodes were ordered by is the saved plan's: this stage's
        assert node_steps(entry.ir) == saved["steps"]  # each node's pipeline step, where a schedule gave one
        pipe = saved["pipeline"]
        assert pipe["stage"] == rank and pipe["stages"] == n and pipe["micro_batches"] == M, pipe
        assert entry.ir.pipeline == pipe, (entry.ir.pipeline, pipe)
    else:
        assert saved["pipeline"] is None and "pipeline" not in entry.ir.__dict__
    # the moved parameters are the optimizer's, as after a compile
    assert {id(p) for p in m.parameters()} == {id(p) for grp in opt.param_groups for p in grp["params"]}
    print("runtime state loaded")
else:
    def refused(sd, *needles, param_sbp=B):
        m, opt, g = setup(1, param_sbp)
        before = params(m)
        try:
            g.load_runtime_state_dict(sd)
        except RuntimeStateError as e:
            for needle in needles:
                assert needle in str(e), (needle, str(e))
        else:
            raise AssertionError("the load did not raise")
        assert not g.is_compiled
        for name, value in params(m).items():
            np.testing.assert_array_equal(value, before[name], err_msg=name)

    if n == 1:  # rank 0's file of the 2-rank job
        refused(flow.load(file("graph")), "saved by a job of 2 rank(s), this job has 1")
    else:
        refused(flow.load(file("graph", 1 - rank)), f"saved by rank {1 - rank}, this is rank {rank}")
        if kind == "dp":  # the parameters split instead of broadcast
            refused(flow.load(file("graph")), "'m.0.0.weight' was saved as placement", "with sbp (oneflow.sbp."
                    "broadcast,), this graph's is", "sbp (oneflow.sbp.split(dim=0),)", param_sbp=S(0))
    print("runtime state refused")
