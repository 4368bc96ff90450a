"""ZeRO stages 1-3 on global parameters (oneflow_dist.zero): 20 steps of data-parallel training equal unsharded
(and single-process) training for SGD with momentum, Adam, AdamW with clipping and LAMB; the optimizer state this
rank holds drops by the number of replicas; stage 2 gradients and stage 3 parameters are split; stage 2 moves
the gradients by reduce-scatter, not all-reduce. On 4 ranks also a 2 x 2 mesh, data x tensor parallel."""
import numpy as np

import oneflow as flow
import oneflow.distributed as dist
from oneflow import _C
from oneflow_dist import _layout, zero

r, n = flow.env.get_rank(), flow.env.get_world_size()
S, B = flow.sbp.split, flow.sbp.broadcast
p = flow.placement("cpu", ranks=list(range(n)))
rng = np.random.default_rng(4)
d_in, d_h, d_out, batch = 6, 33, 5, 4 * n + 2  # 33 rows: uneven shards
init = [rng.standard_normal(s).astype(np.float32) * 0.4 for s in [(d_in, d_h), (d_h,), (d_h, d_out), (d_out,)]]
data = [(rng.standard_normal((batch, d_in)).astype(np.float32), rng.standard_normal((batch, d_out)).astype(np.float32))
        for _ in range(20)]
OPTS = {
    "momentum": lambda ps: flow.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=1e-3),
    "adam": lambda ps: flow.optim.Adam(ps, lr=0.01),
    "clipped_adamw": lambda ps: flow.optim.AdamW([{"params": ps, "clip_grad_max_norm": 0.5}], lr=0.01),
    "lamb": lambda ps: flow.optim.LAMB(ps, lr=0.01),
}


def train(params, wrap, opt, steps=20):
    losses = []
    for xb, yb in data[:steps]:
        w1, b1, w2, b2 = params
        opt.zero_grad()
        loss = ((flow.matmul(flow.tanh(flow.matmul(wrap(xb), w1) + b1), w2) + b2 - wrap(yb)) ** 2).mean()
        loss.backward()
        for g in opt.param_groups:
            if g.get("clip_grad_max_norm") is not None:
                flow.nn.utils.clip_grad_norm_(g["params"], g["clip_grad_max_norm"])
        opt.step()
        losses.append(loss.item())
    return losses, [q.detach().numpy() for q in params]


def glob(v, sbp, requires_grad=False):
    return flow.tensor(v, placement=p, sbp=sbp, requires_grad=requires_grad)


for name, make in OPTS.items():
    single = [flow.tensor(v, requires_grad=True) for v in init]
    want_losses, want = train(single, flow.tensor, make(single))
    plain = [glob(v, B, True) for v in init]
    plain_opt = make(plain)
    train(plain, lambda v: glob(v, S(0)), plain_opt)
    full_bytes = zero.state_bytes(plain_opt)
    for stage in (1, 2, 3):
        params = [glob(v, B, True) for v in init]
        opt = make(params)
        sharded = zero.shard_optimizer(opt, stage=stage, shard_min_size=8)
        assert [tuple(q.shape) for q in sharded] == [(d_in, d_h), (d_h,), (d_h, d_out)]  # (5,) is too small
        with dist.comm_debug() as comm:
            losses, got = train(params, lambda v: glob(v, S(0)), opt)
        np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=1e-6, err_msg=f"{name} stage {stage}")
        for g_, w_ in zip(got, want):
            np.testing.assert_allclose(g_, w_, rtol=1e-5, atol=1e-6, err_msg=f"{name} stage {stage}")
        for q in params[:3]:
            assert q.sbp == ((S(0),) if stage == 3 else (B,)), (stage, q.sbp)
            st = opt.state[q]
            for key, t in st.items():
                if tuple(t.shape) == tuple(q.shape):
                    assert t.sbp == (S(0),), (name, stage, key, t.sbp)
        assert params[3].sbp == (B,)
        if n > 1:
            # per-rank optimizer state: each sharded parameter's state holds only this rank's rows
            want_bytes = 0
            for q in plain:
                for t in plain_opt.state[q].values():
                    if tuple(t.shape) == tuple(q.shape) and q.numel() >= 8:
                        want_bytes += int(np.prod(_layout.local_shape(tuple(q.shape), p, (S(0),)))) * t.element_size()
                    else:
                        want_bytes += t.numel() * t.element_size()
            assert zero.state_bytes(opt) == want_bytes < full_bytes, (zero.state_bytes(opt), want_bytes, full_bytes)
            grads = [c for c in comm.records if c["op"] == "grad_to_param_sbp"]
            kinds = {c["collective"] for c in grads}
            if stage == 1:
                assert "all_reduce" in kinds and "reduce_scatter" not in kinds, kinds
            else:
                assert "reduce_scatter" in kinds, kinds
        if stage >= 2:
            for q in params[:3]:
                assert q.grad is None or q.grad.sbp == (S(0),)

# each parameter's state is sharded as soon as it is created (the optimizer's state-init hook): the whole state
# of all parameters never exists at once, which would be ZeRO's peak otherwise
if n > 1:
    big = [glob(rng.standard_normal((16 * n, 256)).astype(np.float32), B, True) for _ in range(8)]
    opt = flow.optim.Adam(big, lr=0.01)
    zero.shard_optimizer(opt, stage=2, shard_min_size=8)
    sum((q * q).sum() for q in big).backward()
    whole_state = 2 * sum(q.numel() * 4 for q in big)  # exp_avg and exp_avg_sq of every parameter
    before = _C._allocator_stats()["allocated_bytes"]
    _C._reset_peak_stats()
    opt.step()
    stats = _C._allocator_stats()
    kept = stats["allocated_bytes"] - before  # the state shards, and the step counts (a 512-byte block each)
    assert whole_state // n <= kept <= whole_state // n + 8 * 1024, (kept, whole_state)
    assert stats["peak_allocated_bytes"] - before < whole_state, (stats["peak_allocated_bytes"] - before, whole_state)

# bad arguments
opt = flow.optim.SGD([glob(init[0], B, True)], lr=0.1)
for bad, msg in [(dict(stage=4), "stage must be 1, 2 or 3"), (dict(shard_min_size=-1), "shard_min_size")]:
    try:
        zero.shard_optimizer(opt, **bad)
    except ValueError as e:
        assert msg in str(e), e
    else:
        raise AssertionError(f"no error for {bad}")

# a 2 x 2 mesh: data parallel along the first dimension, weights column-split along the second
if n == 4:
    mesh = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    w1, w2 = init[0], init[2]

    def train2(wrap_p, wrap_x, stage):
        ps = [wrap_p(w1, (B, S(1))), wrap_p(w2, (B, S(0)))]
        opt = flow.optim.Adam(ps, lr=0.01)
        if stage:
            zero.shard_optimizer(opt, stage=stage, shard_min_size=8)
        for xb, _ in data[:8]:
            opt.zero_grad()
            (flow.matmul(flow.tanh(flow.matmul(wrap_x(xb), ps[0])), ps[1]) ** 2).mean().backward()
            opt.step()
        return [q.detach().numpy() for q in ps], opt, ps

    want, _, _ = train2(lambda v, s: flow.tensor(v, requires_grad=True), flow.tensor, 0)
    for stage in (1, 2, 3):
        got, opt, ps = train2(lambda v, s: flow.tensor(v, placement=mesh, sbp=s, requires_grad=True),
                              lambda v: flow.tensor(v, placement=mesh, sbp=(S(0), B)), stage)
        for g_, w_ in zip(got, want):
            np.testing.assert_allclose(g_, w_, rtol=1e-5, atol=1e-6, err_msg=f"mesh stage {stage}")
        assert opt.state[ps[0]]["exp_avg"].sbp == (S(0), S(1))
        assert opt.state[ps[1]]["exp_avg"].sbp == (S(0), S(0))
print("zero ok")
