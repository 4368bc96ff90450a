"""Pipeline parallelism inside nn.Graph: an MLP of one block per rank, each block a stage (set_stage) on its
rank, trained with 4 micro-batches (gradient accumulation), in the 1F1B and the zero-bubble (ZB-H1) schedules.
20 steps of SGD (momentum) and of Adam equal single-process training on the whole batch; the order in which each
rank's transfers ran is its stage's 1F1B order (ZB-H1 keeps it for forwards and input-gradient backwards), so a
stage holds at most min(stages - index, micro-batches) micro-batches' activations, and the plan runs the
schedule's steps in its order (ZB-H1: the weight-gradient steps where it puts them); set_stage's errors (stage
ids against the data flow among them). With ``--dp`` (4 ranks): 2 stages of 2 data-parallel ranks each."""
import contextlib
import io
import sys

import numpy as np

import oneflow as flow
import oneflow.nn as nn
from oneflow.nn.graph import GraphModule
from oneflow_dist.plan.schedule import one_f_one_b, zero_bubble_h1
from oneflow_graph.pipeline import run_order

from reference import mse_loss as loss_fn, optimizer, single_process_losses

n, rank = flow.env.get_world_size(), flow.env.get_rank()
B, S = flow.sbp.broadcast, flow.sbp.split
everyone = flow.placement("cpu", ranks=list(range(n)))
DP = "--dp" in sys.argv
if DP:  # 2 stages x 2 data-parallel ranks: the batch split across each stage's ranks
    stage_ranks = [[0, 1], [2, 3]]
    data_sbp = S(0)
else:
    stage_ranks = [[i] for i in range(n)]
    data_sbp = B
stages = len(stage_ranks)
placements = [flow.placement("cpu", ranks=r) for r in stage_ranks]
my_stage = next(i for i, r in enumerate(stage_ranks) if rank in r)
M = 4  # micro-batches
rng = np.random.default_rng(0)
xs = [rng.standard_normal((16, 8)).astype(np.float32) for _ in range(20)]
ys = [rng.standard_normal((16, 4)).astype(np.float32) for _ in range(20)]


def model():
    flow.manual_seed(0)
    blocks = [nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(stages)]
    return nn.Sequential(*blocks, nn.Linear(8, 4))


def staged(m):
    for i in range(stages):
        m[i].to(GraphModule).set_stage(i, placements[i])
    m[stages].to(GraphModule).set_stage(stages - 1, placements[-1])  # the head joins the last stage
    return m


class Train(nn.Graph):
    def __init__(self, m, opt, steps=M, schedule=None):
        super().__init__()
        self.m = m
        self.add_optimizer(opt)
        self.config.set_gradient_accumulation_steps(steps)
        if schedule is not None:
            self.config.set_pipeline_schedule(schedule)

    def build(self, x, y):
        loss = loss_fn(self.m, x, y)
        loss.backward()
        return loss


def glob(a, placement):
    return flow.tensor(a).to_global(everyone, B).to_global(placement, data_sbp)


def executed_order(records):
    """This stage's ("F" | "B", micro-batch) in the order its transfers ran: a forward is marked by its
    activation arriving from the previous stage (the first stage: leaving for the next), a backward by its
    gradient arriving from the next stage (the last stage: leaving for the previous)."""
    prev = set(stage_ranks[my_stage - 1]) if my_stage > 0 else set()
    nxt = set(stage_ranks[my_stage + 1]) if my_stage < stages - 1 else set()
    order, count, seen = [], {"F": 0, "B": 0}, set()
    for c in records:
        if (c["collective"], c.get("tag")) in seen:  # one transfer sent to each rank of a stage
            continue
        seen.add((c["collective"], c.get("tag")))
        kind = None
        if my_stage == 0 and c["collective"] == "send" and c["peer"] in nxt:
            kind = "F"
        elif my_stage > 0 and c["collective"] == "recv" and c["peer"] in prev:
            kind = "F"
        elif my_stage == stages - 1 and c["collective"] == "send" and c["peer"] in prev:
            kind = "B"
        elif my_stage < stages - 1 and c["collective"] == "recv" and c["peer"] in nxt:
            kind = "B"
        if kind is not None:
            order.append((kind, count[kind]))
            count[kind] += 1
    return order


SCHEDULES = {"1f1b": (one_f_one_b, "1F1B"), "zero_bubble": (zero_bubble_h1, "zero-bubble (ZB-H1)")}
for schedule, kind in [(s, k) for s in SCHEDULES for k in ("sgd", "adam")]:
    make_order, title = SCHEDULES[schedule]
    ref = model()
    ref_losses = single_process_losses(ref, optimizer(kind, ref.parameters()), loss_fn, zip(xs, ys))
    m = staged(model())
    g = Train(m, optimizer(kind, m.parameters()), schedule=None if schedule == "zero_bubble" else schedule)  # default
    losses = []
    for i, (x, y) in enumerate(zip(xs, ys)):
        gx, gy = glob(x, placements[0]), glob(y, placements[-1])
        with flow.distributed.comm_debug() as comm:
            loss = g(gx, gy)
        assert loss.placement == placements[-1] and tuple(loss.shape) == (M,), (loss.placement, loss.shape)
        if my_stage == stages - 1:
            losses.append(float(loss.to_global(sbp=B).to_local().mean()))
        if i == 2 and stages > 1 and rank == stage_ranks[my_stage][0]:  # (only a stage's first rank sends)
            want = make_order(stages, M)[my_stage]
            order = executed_order(comm.records)
            assert order == one_f_one_b(stages, M)[my_stage] == [s for s in want if s[0] != "W"], (rank, order)
            live = peak = 0
            for k, _ in order:
                live += 1 if k == "F" else -1
                peak = max(peak, live)
            assert peak == min(stages - my_stage, M), (rank, peak)
            assert g.ir().pipeline == {"stage": my_stage, "stages": stages, "micro_batches": M,
                                       "schedule": schedule, "order": want}
            ran = run_order(g.ir())
            if schedule == "zero_bubble" and my_stage == 0:  # nothing to send back: all its backward is W
                assert ran == [s for s in want if s[0] != "B"], (rank, ran)
            else:
                assert ran == want, (rank, ran, want)
            text = io.StringIO()
            with contextlib.redirect_stdout(text):
                g.debug(0)
            g.debug(-1)
            steps = " ".join(f"{k}{j}" for k, j in want)
            assert f"pipeline: stage {my_stage} of {stages}, {M} micro-batches, {title} order {steps}" in \
                text.getvalue()
    if my_stage == stages - 1:
        np.testing.assert_allclose(losses, ref_losses, rtol=1e-5, atol=1e-6, err_msg=f"{schedule} {kind}")
    for (name, a), b in zip(m.named_parameters(), ref.parameters()):
        assert a.is_global, name
        if rank in a.placement.ranks.reshape(-1).tolist():
            np.testing.assert_allclose(a.detach().to_local().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6,
                                       err_msg=f"{schedule} {kind} {name}")

# set_stage's errors: a bad stage id, a placement that is not one, stage ids with a gap, one stage on two
# placements, two stages sharing a rank
try:
    model()[0].to(GraphModule).set_stage(-1, placements[0])
except TypeError as e:
    assert "stage_id must be a non-negative int" in str(e), e
else:
    raise AssertionError("set_stage(-1) did not raise")
try:
    model()[0].to(GraphModule).set_stage(0, [0])
except TypeError as e:
    assert "placement must be a oneflow.placement" in str(e), e
else:
    raise AssertionError("set_stage(0, [0]) did not raise")


def compile_error(setup, match):
    m = model()
    setup(m)
    g = Train(m, flow.optim.SGD(m.parameters(), lr=0.1))
    try:
        g(glob(xs[0], placements[0]), glob(ys[0], placements[-1]))
    except ValueError as e:
        assert match in str(e), e
    else:
        raise AssertionError(f"no error ({match})")


def gap(m):
    m[0].to(GraphModule).set_stage(0, placements[0])
    m[1].to(GraphModule).set_stage(2, placements[-1])


compile_error(gap, "stage ids must be 0 .. n-1 with none missing, but got [0, 2]")
if stages > 1:
    def two_placements(m):
        m[0].to(GraphModule).set_stage(0, placements[0])
        m[1].to(GraphModule).set_stage(0, placements[1])

    def shared_rank(m):
        m[0].to(GraphModule).set_stage(0, placements[0])
        m[1].to(GraphModule).set_stage(1, everyone)

    def against_the_flow(m):  # the data would flow from the last stage to the first
        for i in range(stages + 1):
            j = max(stages - 1 - i, 0)
            m[i].to(GraphModule).set_stage(j, placements[j])

    compile_error(against_the_flow, f"module 'm.1' (stage {stages - 2}) runs after module 'm.0' (stage "
                                    f"{stages - 1}) in the forward")
    compile_error(two_placements, "stage 0 is given placement")
    compile_error(shared_rank, "each rank runs one stage of a pipeline")

    def tied_across_stages(m):  # one parameter on two stages would silently become two parameters
        m[1][0].weight = m[0][0].weight
        m[0].to(GraphModule).set_stage(0, placements[0])
        m[1].to(GraphModule).set_stage(1, placements[1])

    compile_error(tied_across_stages, "a tied parameter lives on one stage")
print(f"rank {rank}: graph pipeline ok", flush=True)
