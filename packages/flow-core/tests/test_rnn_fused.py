"""The fused recurrent layer (``_rnn_layer``: float32 RNN/LSTM/GRU passes run as one op with a C++ backward
through time): outputs, final states and every gradient against torch, across cell kinds, projections,
directions, batch sizes that leave ragged GEMM panels, hidden sizes past one GEMM K block, and double backward
(which replays the layer through differentiable ops)."""
import numpy as np
import pytest
import torch

import oneflow as flow

KINDS = ["LSTM", "GRU", "RNN", "RNN_RELU"]


def pair(kind, I, H, **kw):
    if kind == "RNN_RELU":
        tm, fm = torch.nn.RNN(I, H, nonlinearity="relu", **kw), flow.nn.RNN(I, H, nonlinearity="relu", **kw)
    else:
        tm, fm = getattr(torch.nn, kind)(I, H, **kw), getattr(flow.nn, kind)(I, H, **kw)
    fm.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, fm


def close(a, b, tol=1e-4):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol * 0.1)


def run_both(kind, N=5, L=7, I=6, H=8, layers=2, proj=0, bidir=False, batch_first=True, hx=True, bias=True):
    kw = dict(num_layers=layers, batch_first=batch_first, bidirectional=bidir, bias=bias)
    if proj:
        kw["proj_size"] = proj
    tm, fm = pair(kind, I, H, **kw)
    rng = np.random.default_rng(N * 100 + H)
    x = rng.standard_normal((N, L, I) if batch_first else (L, N, I)).astype(np.float32)
    D, P = (2 if bidir else 1), (proj or H)
    h0 = rng.standard_normal((layers * D, N, P)).astype(np.float32)
    c0 = rng.standard_normal((layers * D, N, H)).astype(np.float32)
    tx, fx = torch.tensor(x, requires_grad=True), flow.tensor(x, requires_grad=True)
    th, fh = torch.tensor(h0, requires_grad=True), flow.tensor(h0, requires_grad=True)
    tc, fc = torch.tensor(c0, requires_grad=True), flow.tensor(c0, requires_grad=True)
    if not hx:
        (to, ts), (fo, fs) = tm(tx), fm(fx)
    elif kind == "LSTM":
        (to, ts), (fo, fs) = tm(tx, (th, tc)), fm(fx, (fh, fc))
    else:
        (to, ts), (fo, fs) = tm(tx, th), fm(fx, fh)
    ts = ts if isinstance(ts, tuple) else (ts,)
    fs = fs if isinstance(fs, tuple) else (fs,)
    close(fo, to)
    for a, b in zip(fs, ts):
        close(a, b)
    w = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    ((to * torch.tensor(w)).sum() + sum((s * (i + 2)).sum() for i, s in enumerate(ts))).backward()
    ((fo * flow.tensor(w)).sum() + sum((s * (i + 2)).sum() for i, s in enumerate(fs))).backward()
    close(fx.grad, tx.grad)
    if hx:
        close(fh.grad, th.grad)
        if kind == "LSTM":
            close(fc.grad, tc.grad)
    tp = dict(tm.named_parameters())
    for name, p in fm.named_parameters():
        close(p.grad, tp[name].grad)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", [dict(), dict(bidir=True), dict(N=1, layers=1), dict(N=13, batch_first=False,
                                                                                    hx=False), dict(bias=False)])
def test_layer_matches_torch(kind, case):
    run_both(kind, **case)


@pytest.mark.parametrize("case", [dict(proj=5), dict(proj=5, bidir=True, N=7)])
def test_lstm_projection(case):
    run_both("LSTM", **case)


@pytest.mark.parametrize("kind,case", [("LSTM", dict(N=40, L=4, I=33, H=300, layers=1)),
                                       ("GRU", dict(N=41, L=3, I=70, H=270, layers=1, bidir=True)),
                                       ("LSTM", dict(N=9, L=3, I=20, H=290, proj=260, layers=1))])
def test_large_hidden_sizes(kind, case):
    # hidden sizes past the GEMM's 256-deep K block and gate widths that are not multiples of 16
    run_both(kind, **case)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_double_backward(kind):
    tm, fm = pair(kind, 4, 6, batch_first=True)
    x = np.random.default_rng(1).standard_normal((3, 5, 4)).astype(np.float32)
    tx, fx = torch.tensor(x, requires_grad=True), flow.tensor(x, requires_grad=True)
    (tg,) = torch.autograd.grad(tm(tx)[0].pow(2).sum(), tx, create_graph=True)
    (fg,) = flow.autograd.grad(fm(fx)[0].pow(2).sum(), fx, create_graph=True)
    close(fg, tg)
    tg.pow(2).sum().backward()
    fg.pow(2).sum().backward()
    close(fx.grad, tx.grad, 1e-3)
    tp = dict(tm.named_parameters())
    for name, p in fm.named_parameters():
        close(p.grad, tp[name].grad, 1e-3)


def test_float32_is_fused_and_float64_steps_agree():
    fm = flow.nn.LSTM(3, 4, batch_first=False)
    x = flow.randn(5, 2, 3)
    out32 = fm(x)[0]
    assert out32.grad_fn.name() == "RnnLayerBackward0"
    out64 = fm.double()(x.double())[0]
    assert out64.grad_fn.name() != "RnnLayerBackward0"
    np.testing.assert_allclose(out32.detach().numpy(), out64.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_rnn_layer_argument_checks():
    ops = flow._C.ops
    xg, h0, w = flow.zeros(3, 2, 8), flow.zeros(2, 2), flow.zeros(8, 2)
    with pytest.raises(RuntimeError, match="unknown mode"):
        ops._rnn_layer(xg, h0, None, w, None, None, "LSTMX", False)
    with pytest.raises(RuntimeError, match="c0 must be"):
        ops._rnn_layer(xg, h0, None, w, None, None, "LSTM", False)
    with pytest.raises(RuntimeError, match="inconsistent shapes"):
        ops._rnn_layer(xg, flow.zeros(3, 2), flow.zeros(2, 2), w, None, None, "LSTM", False)
    with pytest.raises(RuntimeError, match="float32"):
        ops._rnn_layer(xg.double(), h0.double(), flow.zeros(2, 2).double(), w.double(), None, None, "LSTM", False)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("bidir", [False, True])
def test_packed_sequences(kind, bidir):
    # packed input runs fused too: at step t only the rows still inside their sequence advance
    from torch.nn.utils.rnn import pack_padded_sequence as tpack, pad_packed_sequence as tunpack

    fpack, funpack = flow.nn.utils.rnn.pack_padded_sequence, flow.nn.utils.rnn.pad_packed_sequence
    tm, fm = pair(kind, 5, 7, batch_first=True, bidirectional=bidir, num_layers=2)
    rng = np.random.default_rng(3)
    lengths = [3, 6, 1, 6, 4]
    x = rng.standard_normal((5, 6, 5)).astype(np.float32)
    h0 = rng.standard_normal((4 if bidir else 2, 5, 7)).astype(np.float32)
    tx, fx = torch.tensor(x, requires_grad=True), flow.tensor(x, requires_grad=True)
    th, fh = torch.tensor(h0, requires_grad=True), flow.tensor(h0, requires_grad=True)
    tp = tpack(tx, torch.tensor(lengths), batch_first=True, enforce_sorted=False)
    fp = fpack(fx, flow.tensor(lengths), batch_first=True, enforce_sorted=False)
    if kind == "LSTM":
        (to, ts), (fo, fs) = tm(tp, (th, th * 0.5)), fm(fp, (fh, fh * 0.5))
        ts, fs = ts[0] + 2 * ts[1], fs[0] + 2 * fs[1]
    else:
        (to, ts), (fo, fs) = tm(tp, th), fm(fp, fh)
    assert fo.data.grad_fn is not None
    to, fo = tunpack(to, batch_first=True)[0], funpack(fo, batch_first=True)[0]
    close(fo, to)
    close(fs, ts)
    w = rng.standard_normal(tuple(to.shape)).astype(np.float32)
    ((to * torch.tensor(w)).sum() + ts.sum()).backward()
    ((fo * flow.tensor(w)).sum() + fs.sum()).backward()
    close(fx.grad, tx.grad, 1e-3)
    close(fh.grad, th.grad, 1e-3)
    tpd = dict(tm.named_parameters())
    for name, p in fm.named_parameters():
        close(p.grad, tpd[name].grad, 1e-3)


def test_packed_sequences_use_the_fused_layer():
    m = flow.nn.GRU(3, 4)
    packed = flow.nn.utils.rnn.pack_padded_sequence(flow.randn(5, 2, 3), flow.tensor([5, 2]))
    out = m(packed)[0]
    stack, depth = [out.data.grad_fn], 0
    while stack and depth < 50:  # the graph is a short chain from the output to the layer
        node, depth = stack.pop(), depth + 1
        if node is None:
            continue
        if node.name() == "RnnLayerBackward0":
            return
        stack.extend(n for n, _ in node.next_functions)
    raise AssertionError("the packed GRU did not go through _rnn_layer")


def test_rnn_layer_backward_checks_what_it_indexes():
    # the backward helper is callable directly: saved tensors of the wrong size must raise, not be read
    ops = flow._C.ops
    xg, h0, c0, w = flow.zeros(3, 2, 8), flow.zeros(2, 2), flow.zeros(2, 2), flow.zeros(8, 2)
    out, hn, cn, ws = ops._rnn_layer(xg, h0, c0, w, None, None, "LSTM", False)
    bad = [((None, None, None, h0, c0, w, None, None, out, flow.zeros(3)), "do not match"),
           ((flow.zeros(5), None, None, h0, c0, w, None, None, out, ws), "grad_out"),
           ((None, flow.zeros(1), None, h0, c0, w, None, None, out, ws), "grad_hn"),
           ((None, None, flow.zeros(1), h0, c0, w, None, None, out, ws), "grad_cn")]
    for args, msg in bad:
        with pytest.raises(RuntimeError, match=msg):
            ops._rnn_layer_backward(*args, "LSTM", False)
    with pytest.raises(RuntimeError, match="b_hn"):
        ops._rnn_layer(flow.zeros(3, 2, 6), h0, None, flow.zeros(6, 2), flow.zeros(5), None, "GRU", False)
