"""nn.RNN, nn.LSTM and nn.GRU with broadcast parameters on a split batch (batch_first or not, two layers, one
bidirectional) equal single-process forward and backward: outputs, final states, the input's and every
parameter's gradient; on a split batch the recurrence is data parallel (each rank runs its rows, the weights'
gradients come out partial)."""
import numpy as np

import oneflow as flow

r, n = flow.env.get_rank(), flow.env.get_world_size()
S, B = flow.sbp.split, flow.sbp.broadcast
p = flow.placement("cpu", ranks=list(range(n)))
rng = np.random.default_rng(2)
batch, seq = n + 1, 3  # uneven over the batch


def run(module, x, h0=None):
    out, state = module(x) if h0 is None else module(x, h0)
    hn = state[0] if isinstance(state, tuple) else state
    ((out * out).sum() + hn.sum()).backward()
    return out.detach().numpy(), hn.detach().numpy()


for cls in (flow.nn.RNN, flow.nn.LSTM, flow.nn.GRU):
    for batch_first, bidirectional in ((True, False), (False, True)):
        flow.manual_seed(0)
        m = cls(3, 4, num_layers=2, batch_first=batch_first, bidirectional=bidirectional)
        xs = rng.standard_normal((batch, seq, 3) if batch_first else (seq, batch, 3)).astype(np.float32)
        xl = flow.tensor(xs, requires_grad=True)
        want = run(m, xl)
        want_grads = [q.grad.numpy() for q in m.parameters()]
        m.zero_grad()
        m.to_global(p, B)
        for sbp in (S(0 if batch_first else 1), B):
            xg = flow.tensor(xs, placement=p, sbp=sbp).requires_grad_()
            got = run(m, xg)
            name = f"{cls.__name__} batch_first={batch_first} {sbp}"
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg=name)
            assert xg.grad.sbp == (sbp,), (name, xg.grad.sbp)
            np.testing.assert_allclose(xg.grad.numpy(), xl.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=name)
            for q, w in zip(m.parameters(), want_grads):
                assert q.grad.sbp == (B,), (name, q.grad.sbp)
                np.testing.assert_allclose(q.grad.numpy(), w, rtol=1e-4, atol=1e-5, err_msg=name)
            m.zero_grad()
# data parallelism: the recurrence runs on each rank's batch rows, forward and backward
flow.manual_seed(3)
lstm = flow.nn.LSTM(3, 4, num_layers=2, batch_first=True)
for nb in (batch, 1):
    xs = rng.standard_normal((nb, seq, 3)).astype(np.float32)
    xl = flow.tensor(xs, requires_grad=True)
    lstm.zero_grad()
    want = run(lstm, xl)
    want_grads = [q.grad.numpy() for q in lstm.parameters()]
    glstm = flow.nn.LSTM(3, 4, num_layers=2, batch_first=True)
    glstm.load_state_dict(lstm.state_dict())
    glstm.to_global(p, B)
    xg = flow.tensor(xs, placement=p, sbp=S(0)).requires_grad_()
    with flow.distributed.comm_debug() as comm:
        got = run(glstm, xg)
    # (the projections around the recurrence move some activations; the recurrence itself gathers nothing,
    # unless the batch is smaller than the rank count: the kernels take no empty batch, so it runs whole)
    rec = [c for c in comm.records if c["op"] in ("_rnn_layer", "_rnn_layer_backward")]
    gathers = any(c["collective"] == "all_gather" for c in rec)
    assert n == 1 or (gathers if nb < n else rec and not gathers), comm.records
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xg.grad.numpy(), xl.grad.numpy(), rtol=1e-5, atol=1e-6)
    for q, w in zip(glstm.parameters(), want_grads):
        np.testing.assert_allclose(q.grad.numpy(), w, rtol=1e-4, atol=1e-5)
# a given initial state (global, split like the batch)
flow.manual_seed(1)
gru = flow.nn.GRU(3, 4, batch_first=True)
xs = rng.standard_normal((batch, seq, 3)).astype(np.float32)
h0 = rng.standard_normal((1, batch, 4)).astype(np.float32)
xl, hl = flow.tensor(xs, requires_grad=True), flow.tensor(h0, requires_grad=True)
want = run(gru, xl, hl)
gru.to_global(p, B)
xg = flow.tensor(xs, placement=p, sbp=S(0)).requires_grad_()
hg = flow.tensor(h0, placement=p, sbp=S(1)).requires_grad_()
got = run(gru, xg, hg)
for g, w in zip(got, want):
    np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(hg.grad.numpy(), hl.grad.numpy(), rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(xg.grad.numpy(), xl.grad.numpy(), rtol=1e-5, atol=1e-6)
print("global rnn ok")
