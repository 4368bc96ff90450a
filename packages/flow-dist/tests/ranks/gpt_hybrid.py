"""The example's GPT (examples/gpt_hybrid/model.py) trained 20 steps with Adam and with SGD under the layout
argv[1] (dp, tp or dpxtp) equals single-process training with the same global batch and seed to 1e-5: losses
and every parameter after the last step. argv[2] (optional) says ``tie`` for a tied LM head."""
import sys
from pathlib import Path

import numpy as np

import oneflow as flow

sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "examples" / "gpt_hybrid"))
import model as gpt  # noqa: E402

layout, tie = sys.argv[1], sys.argv[2:] == ["tie"]
STEPS, BATCH, SEQ, VOCAB = 20, 4, 8, 64
rng = np.random.default_rng(0)
batches = [rng.integers(0, VOCAB, (BATCH, SEQ + 1)) for _ in range(STEPS)]
OPTS = {"adam": lambda ps: flow.optim.Adam(ps, lr=3e-3), "sgd": lambda ps: flow.optim.SGD(ps, lr=0.1, momentum=0.9)}


def train(lay, make_opt):
    flow.manual_seed(0)
    m = gpt.GPT(vocab=VOCAB, seq=SEQ, tie=tie)
    placement = gpt.lay_out(m, lay) if lay != "single" else None
    wrap = (lambda a: gpt.to_batch(a, lay, placement)) if placement else flow.tensor
    opt = make_opt(m.parameters())
    losses = []
    for ids in batches:
        opt.zero_grad()
        loss = m(wrap(ids[:, :-1]), wrap(ids[:, 1:]))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return m, losses


for name, make_opt in OPTS.items():
    ref, want = train("single", make_opt)
    got_m, got = train(layout, make_opt)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)
    ref_params = dict(ref.named_parameters())
    for key, q in got_m.named_parameters():
        assert q.sbp == gpt.param_sbp(layout, key), (key, q.sbp)  # the update keeps every parameter's layout
        np.testing.assert_allclose(q.detach().numpy(), ref_params[key].detach().numpy(), rtol=1e-5, atol=1e-5,
                                   err_msg=f"{name} {key}")
    if tie:
        assert got_m.head.weight is got_m.tok.weight
if layout == "tp" and flow.env.get_world_size() > 1:
    # Megatron's communication and no more: per block one all-reduce of the (batch, seq, hidden) activations
    # after attention and one after the MLP in forward, the same two of their gradients in backward
    n = flow.env.get_world_size()
    m, _ = train(layout, OPTS["sgd"])
    placement = flow.placement("cpu", ranks=list(range(n)))
    ids = batches[0]
    x, y = gpt.to_batch(ids[:, :-1], layout, placement), gpt.to_batch(ids[:, 1:], layout, placement)
    ring = 2 * (n - 1) * BATCH * SEQ * 32 * 4 // n
    with flow.distributed.comm_debug() as fwd:
        loss = m(x, y)
    with flow.distributed.comm_debug() as bwd:
        loss.backward()
    for comm in (fwd, bwd):
        assert comm.get_comm_counts() == {"all_reduce": 2 * len(m.blocks)}, comm.records
        assert all(r["bytes"] == ring for r in comm.records), comm.records
if layout == "dp" and flow.env.get_world_size() > 1:
    # data parallelism proper: the split batch stays split through LayerNorm and the summed cross-entropy
    # (no activation is gathered), and backward only all-reduces each parameter's gradient, once
    m, _ = train(layout, OPTS["sgd"])
    placement = flow.placement("cpu", ranks=list(range(flow.env.get_world_size())))
    ids = batches[0]
    x, y = gpt.to_batch(ids[:, :-1], layout, placement), gpt.to_batch(ids[:, 1:], layout, placement)
    with flow.distributed.comm_debug() as fwd:
        loss = m(x, y)
    with flow.distributed.comm_debug() as bwd:
        loss.backward()
    assert fwd.records == [], fwd.records
    assert {(r["op"], r["collective"]) for r in bwd.records} == {("grad_to_param_sbp", "all_reduce")}, bwd.records
    assert len(bwd.records) == len(list(m.parameters())), bwd.records
print(f"rank {flow.env.get_rank()}: gpt hybrid {layout} ok", flush=True)
