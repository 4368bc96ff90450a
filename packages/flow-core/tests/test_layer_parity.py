"""PyTorch parity of nn layers: MultiheadAttention and the Transformer stacks, EmbeddingBag, Flatten/Unflatten,
the channel dropouts, alpha dropout and LazyLinear. Values, gradients, warnings, attributes and error types
against torch on the cases where they used to differ."""
import itertools
import warnings

import numpy as np
import pytest

import oneflow as flow
from helpers import assert_close, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs torch as the reference")

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def copy_weights(fm, tm):
    fm.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def same_error(flow_fn, torch_fn):
    """Both raise, with the same exception type; returns the two exceptions."""
    with pytest.raises(Exception) as te:
        torch_fn()
    with pytest.raises(te.type) as fe:
        flow_fn()
    return fe.value, te.value


def caught_warnings(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(x.message) for x in w]


# ---- MultiheadAttention -------------------------------------------------------------------------------
def _mask(kind, shape):
    hit = RNG.random(shape) < 0.3
    if kind == "bool":
        return hit
    return np.where(hit, -np.inf, RNG.standard_normal(shape)).astype("float32")


MHA_CASES = list(itertools.product([False, True], [None, "bool", "float"], [2, 3], [False, True]))


@pytest.mark.parametrize("need_weights,mask_kind,mask_dim,extra", MHA_CASES)
def test_mha_masks_match_torch(need_weights, mask_kind, mask_dim, extra):
    L, S, N, E, H = 3, 4, 2, 8, 2
    kw = dict(add_bias_kv=True, add_zero_attn=True, kdim=5, vdim=6) if extra else {}
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(E, H, dropout=0.3, **kw).eval()
    fm = flow.nn.MultiheadAttention(E, H, dropout=0.3, **kw).eval()
    copy_weights(fm, tm)
    q, k, v = rand(L, N, E), rand(S, N, kw.get("kdim", E)), rand(S, N, kw.get("vdim", E))
    am = None if mask_kind is None else _mask(mask_kind, (L, S) if mask_dim == 2 else (N * H, L, S))
    kpm = None if mask_kind is None else _mask(mask_kind, (N, S))
    fq, tq = flow.tensor(q, requires_grad=True), torch.tensor(q, requires_grad=True)
    opt = lambda lib, m: None if m is None else lib.tensor(m)  # noqa: E731
    fo, fw = fm(fq, flow.tensor(k), flow.tensor(v), key_padding_mask=opt(flow, kpm), need_weights=need_weights,
                attn_mask=opt(flow, am), average_attn_weights=False)
    to, tw = tm(tq, torch.tensor(k), torch.tensor(v), key_padding_mask=opt(torch, kpm), need_weights=need_weights,
                attn_mask=opt(torch, am), average_attn_weights=False)
    assert_close(fo, to, rtol=1e-4, atol=1e-5)
    assert (fw is None) == (tw is None)
    if tw is not None:
        assert_close(fw, tw, rtol=1e-4, atol=1e-5)
    if not torch.isnan(to).any():
        g = rand(*to.shape)
        fo.backward(flow.tensor(g))
        to.backward(torch.tensor(g))
        assert_close(fq.grad, tq.grad, rtol=1e-4, atol=1e-5)
        for n, p in tm.named_parameters():
            assert_close(dict(fm.named_parameters())[n].grad, p.grad, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_empty_batch(batch_first):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    fm = flow.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    copy_weights(fm, tm)
    x = rand(0, 3, 8) if batch_first else rand(3, 0, 8)
    for need_weights in (True, False):
        fx, tx = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        fo, fw = fm(fx, fx, fx, need_weights=need_weights)
        to, tw = tm(tx, tx, tx, need_weights=need_weights)
        assert_close(fo, to)
        assert (fw is None) == (tw is None) and (tw is None or tuple(fw.shape) == tuple(tw.shape))
        fo.sum().backward()
        assert tuple(fx.grad.shape) == tuple(x.shape)


# ---- Transformer layers -------------------------------------------------------------------------------
@pytest.mark.parametrize("activation", ["relu", "gelu", "relu_module", "gelu_module", "tanh"])
def test_encoder_layer_activation_flag(activation):
    def make(lib):
        act = {"relu_module": lib.nn.ReLU(), "gelu_module": lib.nn.GELU(), "tanh": lib.tanh}.get(activation, activation)
        return lib.nn.TransformerEncoderLayer(8, 2, 16, activation=act)

    fm, tm = make(flow), make(torch)
    assert fm.activation_relu_or_gelu == tm.activation_relu_or_gelu
    assert repr(fm) == repr(tm)


@pytest.mark.parametrize("kw", [dict(batch_first=True, nhead=1), dict(batch_first=True, activation="tanh"),
                                dict(batch_first=True, norm_first=True), dict(batch_first=False)])
def test_encoder_nested_tensor_warning(kw):
    kw = dict(kw)
    nhead = kw.pop("nhead", 2)

    def make(lib):
        layer_kw = dict(kw, activation=lib.tanh) if "activation" in kw else kw
        return lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(8, nhead, 16, **layer_kw), 2)

    fm, fw = caught_warnings(lambda: make(flow))
    tm, tw = caught_warnings(lambda: make(torch))
    assert fw == tw
    assert fm.use_nested_tensor == tm.use_nested_tensor


@pytest.mark.parametrize("stack", ["encoder", "decoder"])
def test_transformer_stack_with_registry_op_activation(stack):
    # ``oneflow.tanh`` is a registry op, which the stacks' deep copies must share rather than copy
    torch.manual_seed(0)
    kw = dict(dim_feedforward=16, dropout=0.0)
    if stack == "encoder":
        tm = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, activation=torch.tanh, **kw), 2,
                                         enable_nested_tensor=False)
        fm = flow.nn.TransformerEncoder(flow.nn.TransformerEncoderLayer(8, 2, activation=flow.tanh, **kw), 2,
                                        enable_nested_tensor=False)
        args = [rand(3, 2, 8)]
    else:
        tm = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(8, 2, activation=torch.tanh, **kw), 2)
        fm = flow.nn.TransformerDecoder(flow.nn.TransformerDecoderLayer(8, 2, activation=flow.tanh, **kw), 2)
        args = [rand(3, 2, 8), rand(4, 2, 8)]
    copy_weights(fm, tm)
    assert all(layer.activation is flow.tanh for layer in fm.layers)
    assert_close(fm(*map(flow.tensor, args)), tm(*map(torch.tensor, args)), rtol=1e-4, atol=1e-5)


def test_transformer_constants_and_encoder_layer_setstate():
    for name in ("MultiheadAttention", "TransformerEncoderLayer", "TransformerDecoderLayer", "TransformerEncoder",
                 "TransformerDecoder", "CosineSimilarity", "PairwiseDistance"):
        assert getattr(flow.nn, name).__constants__ == getattr(torch.nn, name).__constants__, name
    layer = flow.nn.TransformerEncoderLayer(8, 2, 16)
    state = dict(layer.__dict__)
    del state["activation"]
    layer.__setstate__(state)  # an old pickle without ``activation`` falls back to ReLU, as in torch
    assert layer.activation is flow.nn.functional.relu


@pytest.mark.parametrize("norm_first,batch_first", [(False, False), (True, True)])
def test_transformer_matches_torch(norm_first, batch_first):
    torch.manual_seed(0)
    kw = dict(dropout=0.0, norm_first=norm_first, batch_first=batch_first)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = torch.nn.Transformer(8, 2, 1, 1, 16, **kw)
        fm = flow.nn.Transformer(8, 2, 1, 1, 16, device="cpu", **kw)
    copy_weights(fm, tm)
    src, tgt = (rand(2, 5, 8), rand(2, 4, 8)) if batch_first else (rand(5, 2, 8), rand(4, 2, 8))
    kpm = np.zeros((2, 5), bool)
    kpm[0, -2:] = True
    fmask = flow.nn.Transformer.generate_square_subsequent_mask(4)
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(4)
    assert_close(fmask, tmask)
    fs, ts = flow.tensor(src, requires_grad=True), torch.tensor(src, requires_grad=True)
    fo = fm(fs, flow.tensor(tgt), tgt_mask=fmask, src_key_padding_mask=flow.tensor(kpm),
            memory_key_padding_mask=flow.tensor(kpm), tgt_is_causal=True)
    to = tm(ts, torch.tensor(tgt), tgt_mask=tmask, src_key_padding_mask=torch.tensor(kpm),
            memory_key_padding_mask=torch.tensor(kpm), tgt_is_causal=True)
    assert_close(fo, to, rtol=1e-4, atol=1e-5)
    g = rand(*to.shape)
    fo.backward(flow.tensor(g))
    to.backward(torch.tensor(g))
    assert_close(fs.grad, ts.grad, rtol=1e-3, atol=1e-4)


# ---- EmbeddingBag -------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_input_without_columns(mode):
    fe, te = same_error(lambda: flow.nn.functional.embedding_bag(flow.zeros(2, 0, dtype=flow.int64),
                                                                 flow.zeros(3, 2), mode=mode),
                        lambda: torch.nn.functional.embedding_bag(torch.zeros(2, 0, dtype=torch.int64),
                                                                  torch.zeros(3, 2), mode=mode))
    assert "step must be nonzero" in str(fe)
    # an empty batch of non-empty bags is fine in both
    w = rand(3, 2)
    idx = np.zeros((0, 3), np.int64)
    assert_close(flow.nn.functional.embedding_bag(flow.tensor(idx), flow.tensor(w), mode=mode),
                 torch.nn.functional.embedding_bag(torch.tensor(idx), torch.tensor(w), mode=mode))


# ---- Flatten / Unflatten ------------------------------------------------------------------------------
@pytest.mark.parametrize("start_dim,end_dim", [(0, -1), (-1, 0), (1, -1), (0, 1), (0, -2)])
def test_flatten_scalar(start_dim, end_dim):
    x = np.float32(1.5)
    try:
        expected = torch.nn.Flatten(start_dim, end_dim)(torch.tensor(x))
    except IndexError:
        same_error(lambda: flow.nn.Flatten(start_dim, end_dim)(flow.tensor(x)),
                   lambda: torch.nn.Flatten(start_dim, end_dim)(torch.tensor(x)))
        return
    assert_close(flow.nn.Flatten(start_dim, end_dim)(flow.tensor(x)), expected)


@pytest.mark.parametrize("dim", ["a", 1.0, None, True])
def test_unflatten_dim_checked_at_call(dim):
    fm, tm = flow.nn.Unflatten(dim, (2, 3)), torch.nn.Unflatten(dim, (2, 3))  # both accept any dim here
    assert repr(fm) == repr(tm)
    fe, te = same_error(lambda: fm(flow.zeros(2, 6)), lambda: tm(torch.zeros(2, 6)))
    assert str(fe) == str(te)


def test_unflatten_index_like_dim():
    assert tuple(flow.nn.Unflatten(np.int64(1), (2, 3))(flow.zeros(2, 6)).shape) == (2, 2, 3)
    same_error(lambda: flow.nn.Unflatten(1, (2.0, 3)), lambda: torch.nn.Unflatten(1, (2.0, 3)))


# ---- dropout ------------------------------------------------------------------------------------------
def _run(lib, cls, shape, p, training):
    m = getattr(lib.nn, cls)(p)
    m.train(training)
    return caught_warnings(lambda: m(lib.ones(shape)))


@pytest.mark.parametrize("cls,shape", [("Dropout2d", (4, 6)), ("Dropout2d", (2, 3, 4, 5, 6)),
                                       ("Dropout3d", (4, 6, 5)), ("Dropout3d", (2, 3, 4, 5, 6, 2))])
def test_channel_dropout_deprecation_warning(cls, shape):
    (_, fw), (_, tw) = _run(flow, cls, shape, 0.5, True), _run(torch, cls, shape, 0.5, True)
    assert fw == tw


@pytest.mark.parametrize("shape", [(40, 30, 5), (6, 30), (40, 30, 2, 2, 2, 2), (30, 2, 2, 2), (2, 30, 2, 2, 2)])
def test_dropout3d_mask_layout(shape):
    # only 5-D inputs are batched; any other rank gets one mask entry per index of its first dim
    out, _ = _run(flow, "Dropout3d", shape, 0.5, True)
    out = out.numpy()
    groups = 2 if len(shape) == 5 else 1
    flat = out.reshape(int(np.prod(shape[:groups])), -1)
    assert (flat == flat[:, :1]).all()
    assert 0 < (flat[:, 0] == 0).sum() < flat.shape[0]
    assert set(np.unique(out)) <= {0.0, 2.0}


@pytest.mark.parametrize("cls", ["Dropout2d", "Dropout3d", "FeatureAlphaDropout"])
@pytest.mark.parametrize("shape", [(6,), ()])
@pytest.mark.parametrize("p,training", [(0.0, True), (0.5, False), (1.0, True), (0.5, True)])
def test_channel_dropout_without_channel_dim(cls, shape, p, training):
    try:
        expected, _ = _run(torch, cls, shape, p, training)
    except RuntimeError:
        same_error(lambda: _run(flow, cls, shape, p, training), lambda: _run(torch, cls, shape, p, training))
        return
    out, _ = _run(flow, cls, shape, p, training)
    if training and 0 < p < 1:  # a random mask: compare what it may produce
        assert tuple(out.shape) == tuple(expected.shape) and out.dtype == flow.float32
        assert set(np.unique(out.numpy())) <= {0.0, 1 / (1 - p)}
        return
    assert_close(out, expected)


@pytest.mark.parametrize("cls", ["AlphaDropout", "FeatureAlphaDropout"])
def test_alpha_dropout_integer_input(cls):
    x = np.ones((3, 4), np.int64)
    fe, te = same_error(lambda: getattr(flow.nn, cls)(0.5)(flow.tensor(x)),
                        lambda: getattr(torch.nn, cls)(0.5)(torch.tensor(x)))
    assert str(fe) == str(te)
    # p == 1 zeroes the input whatever its dtype; eval mode passes it through
    assert_close(getattr(flow.nn, cls)(1.0)(flow.tensor(x)), getattr(torch.nn, cls)(1.0)(torch.tensor(x)))
    assert_close(getattr(flow.nn, cls)(0.5).eval()(flow.tensor(x)),
                 getattr(torch.nn, cls)(0.5).eval()(torch.tensor(x)))


# ---- LazyLinear ---------------------------------------------------------------------------------------
def test_lazy_linear_in_features_after_load_state_dict():
    src = torch.nn.Linear(5, 3)
    fm, tm = flow.nn.LazyLinear(3), torch.nn.LazyLinear(3)
    copy_weights(fm, src)
    tm.load_state_dict(src.state_dict())
    x = rand(2, 5)
    assert_close(fm(flow.tensor(x)), tm(torch.tensor(x)), atol=1e-6)
    assert fm.in_features == tm.in_features == 5
    assert repr(fm) == repr(tm)
    bad_f, bad_t = flow.nn.LazyLinear(3), torch.nn.LazyLinear(3)
    copy_weights(bad_f, src)
    bad_t.load_state_dict(src.state_dict())
    fe, te = same_error(lambda: bad_f(flow.zeros(2, 4)), lambda: bad_t(torch.zeros(2, 4)))
    assert str(fe) == str(te)
