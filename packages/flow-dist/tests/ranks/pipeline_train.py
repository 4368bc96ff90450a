"""Pipeline parallelism (oneflow_dist.pipeline): a small GPT-like model cut into one stage per rank trains 20
steps with Schedule1F1B and ScheduleGPipe (4 and 8 micro-batches, Adam and SGD) and equals single-process
training on the whole batch (losses and parameters, 1e-5); the 1F1B order is the plan simulator's and a stage
holds at most (stages - index) micro-batches; on 4 ranks also 2 stages x 2 data-parallel replicas (DDP per stage).
With the argument "die", rank 1 exits with code 3 mid-pipeline."""
import os
import sys

import numpy as np

import oneflow as flow
from oneflow import nn
from oneflow_dist.pipeline import PipelineStage, Schedule1F1B, ScheduleGPipe
from oneflow_dist.plan.schedule import one_f_one_b

r, n = flow.env.get_rank(), flow.env.get_world_size()
V, D, T, BATCH = 32, 16, 6, 8


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(D)
        self.fc1, self.fc2 = nn.Linear(D, 2 * D), nn.Linear(2 * D, D)

    def forward(self, x):
        return x + self.fc2(nn.functional.gelu(self.fc1(self.ln(x))))


def model():
    flow.manual_seed(7)
    blocks = [Block() for _ in range(2 * n)]
    return nn.Sequential(nn.Embedding(V, D), *blocks, nn.LayerNorm(D), nn.Linear(D, V))


def stage_of(seq, i):
    """Stage i of the layers of ``seq`` (embedding and 2 blocks, ..., 2 blocks and the head)."""
    layers = list(seq)
    cuts = [0] + [1 + 2 * (k + 1) for k in range(n - 1)] + [len(layers)]
    return nn.Sequential(*layers[cuts[i]:cuts[i + 1]])


def loss_fn(logits, y):
    return nn.functional.cross_entropy(logits.reshape(-1, V), y.reshape(-1))


rng = np.random.default_rng(3)
data = [(rng.integers(0, V, (BATCH, T)), rng.integers(0, V, (BATCH, T))) for _ in range(20)]
OPTS = {"adam": lambda ps: flow.optim.Adam(ps, lr=1e-2), "sgd": lambda ps: flow.optim.SGD(ps, lr=0.1, momentum=0.9)}

def train_whole(opt_name, part=None):
    """The reference: the whole model trained on the whole batches in one process. Returns the model and the
    loss of each step, on the whole batch or, given ``part`` (a slice of the batch), on that part."""
    whole = model()
    wopt = OPTS[opt_name](whole.parameters())
    want = []
    for x, y in data:
        wopt.zero_grad()
        loss = loss_fn(whole(flow.tensor(x)), flow.tensor(y))
        if part is not None:
            with flow.no_grad():
                want.append(loss_fn(whole(flow.tensor(x[part])), flow.tensor(y[part])).item())
        loss.backward()
        wopt.step()
        if part is None:
            want.append(loss.item())
    return whole, want


die = len(sys.argv) > 1 and sys.argv[1] == "die"
for sched_cls, m, opt_name in [(Schedule1F1B, 4, "adam"), (Schedule1F1B, 8, "sgd"), (ScheduleGPipe, 4, "adam")]:
    whole, want = train_whole(opt_name)
    mine = stage_of(model(), r)
    opt = OPTS[opt_name](mine.parameters())
    sched = sched_cls(PipelineStage(mine, r, n), m, loss_fn=loss_fn)
    got = []
    for step, (x, y) in enumerate(data):
        if die and step == 3 and r == 1:
            os._exit(3)
        opt.zero_grad()
        losses = []
        if r == 0:
            out = sched.step(flow.tensor(x)) if n > 1 else sched.step(flow.tensor(x), target=flow.tensor(y),
                                                                       losses=losses)
        elif r == n - 1:
            out = sched.step(target=flow.tensor(y), losses=losses)
        else:
            out = sched.step()
        opt.step()
        if r == n - 1:
            assert len(losses) == m and tuple(out.shape) == (BATCH, T, V)
            got.append(float(np.mean([v.item() for v in losses])))
        else:
            assert out is None
        if sched_cls is Schedule1F1B:
            assert sched.executed == one_f_one_b(n, m)[r]
            assert sched.max_in_flight == min(n - r, m), (sched.max_in_flight, n, r)
        else:
            assert sched.max_in_flight == m
    if r == n - 1:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{sched_cls.__name__} m={m}")
    ref = stage_of(whole, r)
    for (name, a), b in zip(mine.named_parameters(), ref.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=f"{sched_cls.__name__} m={m} {name}")

# 2 stages x 2 data-parallel replicas on 4 ranks: replica 0 is ranks (0, 1), replica 1 ranks (2, 3); each
# stage's module is a DDP over its replicas (ranks 0, 2 and 1, 3), each replica takes half of the batch
if n == 4:
    from oneflow.nn.parallel import DistributedDataParallel as DDP

    flow.distributed.init_process_group()
    groups = [flow.distributed.new_group([0, 2]), flow.distributed.new_group([1, 3])]
    replica, index = divmod(r, 2)

    def two_stages(seq):
        layers = list(seq)
        cut = 1 + n  # the embedding and half the blocks
        return [nn.Sequential(*layers[:cut]), nn.Sequential(*layers[cut:])]

    half = slice(replica * BATCH // 2, (replica + 1) * BATCH // 2)
    whole, want_half = train_whole("adam", half)  # this replica's loss is the mean over its half
    mine = DDP(two_stages(model())[index], process_group=groups[index])
    opt = OPTS["adam"](mine.parameters())
    sched = Schedule1F1B(PipelineStage(mine, index, 2, ranks=[2 * replica, 2 * replica + 1]), 2, loss_fn=loss_fn)
    got = []
    for x, y in data:
        opt.zero_grad()
        losses = []
        if index == 0:
            sched.step(flow.tensor(x[half]))
        else:
            sched.step(target=flow.tensor(y[half]), losses=losses)
            got.append(float(np.mean([v.item() for v in losses])))
        opt.step()
    if index == 1:
        np.testing.assert_allclose(got, want_half, rtol=1e-5, atol=1e-5, err_msg="pp x dp losses")
    ref = two_stages(whole)[index]
    for (name, a), b in zip(mine.module.named_parameters(), ref.parameters()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=f"pp x dp {name}")

# bad use
stage = PipelineStage(stage_of(model(), r), r, n)
for call, err, msg in [
    (lambda: PipelineStage(nn.Linear(2, 2), n, n), ValueError, "stage_index must be in"),
    (lambda: PipelineStage(nn.Linear(2, 2), r, n, ranks=[r] * n) if n > 1 else
     PipelineStage(nn.Linear(2, 2), 0, 1, ranks=[5]), ValueError, "distinct ranks"),
    (lambda: Schedule1F1B(stage, 0, loss_fn=loss_fn), ValueError, "n_microbatches must be"),
    (lambda: Schedule1F1B(stage, 4, loss_fn=loss_fn).step(flow.zeros(2, T, dtype=flow.int64),
                                                          target=flow.zeros(2, T, dtype=flow.int64))
     if r == 0 else (_ for _ in ()).throw(ValueError("fewer than the 4 micro-batches")), ValueError,
     "fewer than the 4 micro-batches"),
]:
    try:
        call()
    except err as e:
        assert msg in str(e), e
    else:
        raise AssertionError(f"no error: {msg}")
if n > 1 and r == n - 1:
    try:
        Schedule1F1B(stage, 2, loss_fn=loss_fn).step(flow.zeros(2, T, dtype=flow.int64))
    except ValueError as e:
        assert "only the first stage takes the batch" in str(e), e
    else:
        raise AssertionError("no error for a batch given to the last stage")
print("pipeline ok")
