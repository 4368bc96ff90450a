"""nn modules against PyTorch: activations (forward, grads, repr), losses (all options,
weight buffers), RNN/LSTM/GRU and cells, MultiheadAttention and the Transformer family. Weights are copied from
a torch module into ours through state_dict, so forward outputs and all gradients must agree."""
import warnings

import numpy as np
import pytest
import torch

import oneflow as flow
from oneflow import nn
from helpers import assert_close, gradcheck, to_np


def _copy(tm, fm):
    sd = {k: flow.tensor(to_np(v)) for k, v in tm.state_dict().items()}
    res = fm.load_state_dict(sd)
    assert not res.missing_keys and not res.unexpected_keys


def _pair(arr, requires_grad=True):
    arr = np.asarray(arr)
    return flow.tensor(arr, requires_grad=requires_grad), torch.tensor(arr, requires_grad=requires_grad)


def _check_params_grads(tm, fm, rtol=1e-6, atol=1e-8):
    for (tn, tp), (fn, fp) in zip(tm.named_parameters(), fm.named_parameters()):
        assert tn == fn
        if tp.grad is None:
            assert fp.grad is None or np.allclose(to_np(fp.grad), 0)
        else:
            assert_close(fp.grad, tp.grad, rtol=rtol, atol=atol)


# ---- activations ---------------------------------------------------------------------------------------
ACTIVATIONS = [
    ("ReLU", (), {}), ("ReLU6", (), {}), ("GELU", (), {}), ("GELU", (), {"approximate": "tanh"}), ("SiLU", (), {}),
    ("Softplus", (), {}), ("Softplus", (), {"beta": 2.0, "threshold": 1.0}), ("ELU", (), {"alpha": 0.7}),
    ("SELU", (), {}), ("CELU", (), {"alpha": 1.5}), ("LeakyReLU", (), {"negative_slope": 0.2}),
    ("Hardtanh", (), {"min_val": -0.5, "max_val": 2.0}), ("Hardswish", (), {}), ("Hardsigmoid", (), {}),
    ("Mish", (), {}), ("LogSigmoid", (), {}), ("Softsign", (), {}), ("Tanhshrink", (), {}),
    ("Hardshrink", (), {"lambd": 0.3}), ("Softshrink", (), {}), ("Threshold", (0.1, 20.0), {}), ("Sigmoid", (), {}),
    ("Tanh", (), {}), ("GLU", (), {}), ("GLU", (), {"dim": 1}), ("Softmax", (), {"dim": 1}),
    ("LogSoftmax", (), {"dim": -1}), ("Softmin", (), {"dim": 0}), ("Softmax2d", (), {}),
]


@pytest.mark.parametrize("name,args,kwargs", ACTIVATIONS)
def test_activation_module_matches_torch(name, args, kwargs):
    x = np.random.randn(2, 4, 3, 6) * 3
    fm, tm = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(fm) == repr(tm)
    fx, tx = _pair(x)
    fy, ty = fm(fx), tm(tx)
    assert_close(fy, ty, rtol=1e-6, atol=1e-7)
    w = np.random.randn(*ty.shape)
    (fy * flow.tensor(w)).sum().backward()
    (ty * torch.tensor(w)).sum().backward()
    assert_close(fx.grad, tx.grad, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name,kwargs", [("ReLU", {}), ("ReLU6", {}), ("SiLU", {}), ("ELU", {"alpha": 2.0}),
                                         ("SELU", {}), ("CELU", {}), ("LeakyReLU", {"negative_slope": 0.1}),
                                         ("Hardtanh", {}), ("Hardswish", {}), ("Hardsigmoid", {}), ("Mish", {})])
def test_activation_inplace(name, kwargs):
    x = np.random.randn(3, 5).astype(np.float32) * 3
    fm = getattr(nn, name)(inplace=True, **kwargs)
    tm = getattr(torch.nn, name)(inplace=True, **kwargs)
    assert repr(fm) == repr(tm)
    fx, tx = flow.tensor(x), torch.tensor(x)
    fy = fm(fx)
    tm(tx)
    assert fy is fx or fy.data_ptr() == fx.data_ptr()
    assert_close(fx, tx)


def test_threshold_inplace_repr_and_value():
    fm, tm = nn.Threshold(0.5, -1.0, inplace=True), torch.nn.Threshold(0.5, -1.0, inplace=True)
    assert repr(fm) == repr(tm)
    x = np.random.randn(7).astype(np.float32)
    fx, tx = flow.tensor(x), torch.tensor(x)
    fm(fx), tm(tx)
    assert_close(fx, tx)


def test_activation_arg_errors():
    with pytest.raises(ValueError):
        nn.GELU(approximate="bad")
    with pytest.raises(AssertionError, match=r"max_val \(0.0\) must be greater than min_val \(1.0\)"):
        nn.Hardtanh(1.0, 0.0)  # torch's exception type
    with pytest.raises(ValueError, match="3D or 4D"):
        nn.Softmax2d()(flow.randn(2, 3))
    with pytest.raises(RuntimeError, match="even"):
        nn.GLU()(flow.randn(2, 3))


def test_softmax_implicit_dim_warns():
    x = np.random.randn(2, 3).astype(np.float32)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        y = nn.Softmax()(flow.tensor(x))
    assert_close(y, torch.softmax(torch.tensor(x), 1))


@pytest.mark.parametrize("num,shape", [(1, (2, 3, 4)), (3, (2, 3, 4)), (3, (5, 3)), (1, ()), (1, (4,))])
def test_prelu(num, shape):
    fm, tm = nn.PReLU(num, init=0.3), torch.nn.PReLU(num, init=0.3)
    assert repr(fm) == repr(tm)
    assert list(fm.state_dict()) == ["weight"]
    with torch.no_grad():
        tm.weight.copy_(torch.linspace(-0.5, 0.5, num))
    _copy(tm, fm)
    x = np.asarray(np.random.randn(*shape), dtype=np.float32)
    fx, tx = _pair(x)
    fy, ty = fm(fx), tm(tx)
    assert_close(fy, ty, rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="prelu: Type promoting not supported. Got Double and Float"):
        fm(fx.double())  # as in torch: input and weight must share a dtype
    fy.sum().backward()
    ty.sum().backward()
    assert_close(fx.grad, tx.grad, rtol=1e-5, atol=1e-6)
    assert_close(fm.weight.grad, tm.weight.grad, rtol=1e-5, atol=1e-5, check_dtype=False)


def test_prelu_gradcheck_and_errors():
    w = flow.tensor([0.2, -0.4, 0.7], dtype=flow.float64, requires_grad=True)
    x = flow.tensor(np.random.randn(2, 3, 2) + 0.05, requires_grad=True)
    from oneflow.nn.functional import prelu

    gradcheck(prelu, [x, w])
    with pytest.raises(RuntimeError, match="channel size"):
        nn.PReLU(3)(flow.randn(2, 4))
    with pytest.raises(RuntimeError, match="channel size = 1"):
        nn.PReLU(4)(flow.randn(4))


# ---- losses --------------------------------------------------------------------------------------------
REDUCTIONS = ["mean", "sum", "none"]


def _loss_check(fm, tm, f_inputs, t_inputs, rtol=1e-6, atol=1e-8):
    fo, to = fm(*f_inputs), tm(*t_inputs)
    assert_close(fo, to, rtol=rtol, atol=atol)
    w = np.random.randn(*to.shape)
    (fo * flow.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    for f, t in zip(f_inputs, t_inputs):
        if t.requires_grad:
            assert_close(f.grad, t.grad, rtol=rtol * 10, atol=atol * 10)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,kwargs", [("L1Loss", {}), ("MSELoss", {}), ("SmoothL1Loss", {"beta": 0.5}),
                                         ("HuberLoss", {"delta": 0.7}), ("SoftMarginLoss", {})])
def test_pointwise_losses(name, kwargs, reduction):
    a, b = np.random.randn(4, 5), np.random.randn(4, 5)
    if name == "SoftMarginLoss":
        b = np.sign(b)
    fm, tm = getattr(nn, name)(reduction=reduction, **kwargs), getattr(torch.nn, name)(reduction=reduction, **kwargs)
    assert repr(fm) == repr(tm)
    fa, ta = _pair(a)
    fb, tb = _pair(b, requires_grad=name != "SoftMarginLoss")
    _loss_check(fm, tm, [fa, fb], [ta, tb])


def test_legacy_reduction_args():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert nn.MSELoss(size_average=False).reduction == torch.nn.MSELoss(size_average=False).reduction
        assert nn.L1Loss(reduce=False).reduction == torch.nn.L1Loss(reduce=False).reduction


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("use_weight", [False, True])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy(reduction, use_weight, smoothing):
    x = np.random.randn(6, 4, 3)
    t = np.random.randint(0, 4, size=(6, 3))
    t[0, 0] = 2
    t[1, 1] = -100
    w = np.random.rand(4) + 0.5 if use_weight else None
    fm = nn.CrossEntropyLoss(weight=flow.tensor(w) if use_weight else None, reduction=reduction,
                             label_smoothing=smoothing, ignore_index=2)
    tm = torch.nn.CrossEntropyLoss(weight=torch.tensor(w) if use_weight else None, reduction=reduction,
                                   label_smoothing=smoothing, ignore_index=2)
    t[1, 1] = 1
    assert list(fm.state_dict()) == list(tm.state_dict())
    fx, tx = _pair(x)
    _loss_check(fm, tm, [fx, flow.tensor(t)], [tx, torch.tensor(t)])


def test_cross_entropy_probabilities_and_default():
    x, p = np.random.randn(5, 4), np.random.dirichlet(np.ones(4), size=5)
    fx, tx = _pair(x)
    _loss_check(nn.CrossEntropyLoss(label_smoothing=0.1), torch.nn.CrossEntropyLoss(label_smoothing=0.1),
                [fx, flow.tensor(p)], [tx, torch.tensor(p)])
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"
    assert nn.CrossEntropyLoss().weight is None


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(reduction):
    x = np.log(np.random.dirichlet(np.ones(5), size=7))
    t = np.random.randint(0, 5, size=7)
    t[3] = -100
    w = np.random.rand(5) + 0.1
    fx, tx = _pair(x)
    fm = nn.NLLLoss(weight=flow.tensor(w), reduction=reduction)
    tm = torch.nn.NLLLoss(weight=torch.tensor(w), reduction=reduction)
    assert list(dict(fm.named_buffers())) == ["weight"]
    _loss_check(fm, tm, [fx, flow.tensor(t)], [tx, torch.tensor(t)])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_losses(reduction):
    p = np.random.rand(4, 3) * 0.9 + 0.05
    t = np.random.rand(4, 3)
    w = np.random.rand(4, 3)
    fp, tp = _pair(p)
    ft, tt = _pair(t)
    _loss_check(nn.BCELoss(weight=flow.tensor(w), reduction=reduction),
                torch.nn.BCELoss(weight=torch.tensor(w), reduction=reduction), [fp, ft], [tp, tt])
    x = np.random.randn(4, 3) * 3
    pw = np.random.rand(3) * 2
    fx, tx = _pair(x)
    ft, tt = _pair(t)
    fm = nn.BCEWithLogitsLoss(pos_weight=flow.tensor(pw), reduction=reduction)
    tm = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(pw), reduction=reduction)
    assert list(fm.state_dict()) == list(tm.state_dict()) == ["pos_weight"]
    _loss_check(fm, tm, [fx, ft], [tx, tt])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none", "batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    x = np.log(np.random.dirichlet(np.ones(4), size=3))
    t = np.random.dirichlet(np.ones(4), size=3)
    if log_target:
        t = np.log(t)
    fx, tx = _pair(x)
    ft, tt = _pair(t)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _loss_check(nn.KLDivLoss(reduction=reduction, log_target=log_target),
                    torch.nn.KLDivLoss(reduction=reduction, log_target=log_target), [fx, ft], [tx, tt])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_losses(reduction):
    a, b = np.random.randn(6), np.random.randn(6)
    y = np.sign(np.random.randn(6))
    fa, ta = _pair(a)
    fb, tb = _pair(b)
    _loss_check(nn.MarginRankingLoss(0.3, reduction=reduction), torch.nn.MarginRankingLoss(0.3, reduction=reduction),
                [fa, fb, flow.tensor(y)], [ta, tb, torch.tensor(y)])
    fa, ta = _pair(np.abs(a))
    _loss_check(nn.HingeEmbeddingLoss(1.5, reduction=reduction),
                torch.nn.HingeEmbeddingLoss(1.5, reduction=reduction), [fa, flow.tensor(y)], [ta, torch.tensor(y)])
    x1, x2 = np.random.randn(6, 4), np.random.randn(6, 4)
    f1, t1 = _pair(x1)
    f2, t2 = _pair(x2)
    _loss_check(nn.CosineEmbeddingLoss(0.1, reduction=reduction),
                torch.nn.CosineEmbeddingLoss(0.1, reduction=reduction), [f1, f2, flow.tensor(y)],
                [t1, t2, torch.tensor(y)])


@pytest.mark.parametrize("swap", [False, True])
@pytest.mark.parametrize("p", [1.0, 2.0])
def test_triplet_margin_losses(swap, p):
    arrs = [np.random.randn(5, 4) for _ in range(3)]
    fs, ts = zip(*[_pair(a) for a in arrs])
    _loss_check(nn.TripletMarginLoss(margin=0.8, p=p, swap=swap), torch.nn.TripletMarginLoss(margin=0.8, p=p, swap=swap),
                list(fs), list(ts))
    fs, ts = zip(*[_pair(a) for a in arrs])
    _loss_check(nn.TripletMarginWithDistanceLoss(swap=swap, margin=0.5),
                torch.nn.TripletMarginWithDistanceLoss(swap=swap, margin=0.5), list(fs), list(ts))
    with pytest.raises(ValueError):
        nn.TripletMarginLoss(margin=0.0)


@pytest.mark.parametrize("log_input,full", [(True, False), (False, False), (True, True), (False, True)])
def test_poisson_nll(log_input, full):
    x = np.random.rand(4, 3) + 0.1 if not log_input else np.random.randn(4, 3)
    t = np.random.poisson(2.0, size=(4, 3)).astype(np.float64)
    fx, tx = _pair(x)
    _loss_check(nn.PoissonNLLLoss(log_input=log_input, full=full),
                torch.nn.PoissonNLLLoss(log_input=log_input, full=full), [fx, flow.tensor(t)], [tx, torch.tensor(t)])


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("var_shape", [(4, 3), (4,), (4, 1)])
def test_gaussian_nll(full, var_shape):
    x, t = np.random.randn(4, 3), np.random.randn(4, 3)
    var = np.random.rand(*var_shape) + 0.01
    var.reshape(-1)[0] = 1e-9  # clamped to eps; gradient still flows as through identity
    fx, tx = _pair(x)
    fv, tv = _pair(var)
    _loss_check(nn.GaussianNLLLoss(full=full), torch.nn.GaussianNLLLoss(full=full), [fx, flow.tensor(t), fv],
                [tx, torch.tensor(t), tv], rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="negative"):
        nn.GaussianNLLLoss()(fx, flow.tensor(t), flow.tensor(-np.ones((4, 3))))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_and_multimargin(reduction):
    x = np.random.randn(4, 5)
    y = (np.random.rand(4, 5) > 0.5).astype(np.float64)
    w = np.random.rand(5) + 0.5
    fx, tx = _pair(x)
    _loss_check(nn.MultiLabelSoftMarginLoss(weight=flow.tensor(w), reduction=reduction),
                torch.nn.MultiLabelSoftMarginLoss(weight=torch.tensor(w), reduction=reduction),
                [fx, flow.tensor(y)], [tx, torch.tensor(y)])
    c = np.random.randint(0, 5, size=4)
    for p in (1, 2):
        fx, tx = _pair(x)
        _loss_check(nn.MultiMarginLoss(p=p, margin=0.7, weight=flow.tensor(w), reduction=reduction),
                    torch.nn.MultiMarginLoss(p=p, margin=0.7, weight=torch.tensor(w), reduction=reduction),
                    [fx, flow.tensor(c)], [tx, torch.tensor(c)])
    tgt = np.array([[3, 0, -1, 1, 2], [1, 1, 4, -1, 0], [-1, 2, 2, 2, 2], [0, 1, 2, 3, 4]])
    fx, tx = _pair(x)
    _loss_check(nn.MultiLabelMarginLoss(reduction=reduction), torch.nn.MultiLabelMarginLoss(reduction=reduction),
                [fx, flow.tensor(tgt)], [tx, torch.tensor(tgt)])


def test_loss_gradcheck_composites():
    from oneflow.nn import functional as F

    x = flow.tensor(np.random.randn(3, 4), requires_grad=True)
    y = flow.tensor(np.random.randn(3, 4), requires_grad=True)
    t = flow.tensor([1.0, -1.0, 1.0])
    gradcheck(lambda a, b: F.cosine_embedding_loss(a, b, t, margin=-0.5), [x, y])
    gradcheck(lambda a, b: F.triplet_margin_loss(a, b, a * 0.5, margin=2.0), [x, y])


# ---- RNN / LSTM / GRU ----------------------------------------------------------------------------------
RNN_CASES = [
    ("LSTM", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("LSTM", dict(num_layers=1)),
    ("LSTM", dict(num_layers=2, bidirectional=True, proj_size=3)),
    ("LSTM", dict(bias=False, batch_first=True)),
    ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("GRU", dict(num_layers=3, bias=False)),
    ("RNN", dict(num_layers=2, nonlinearity="relu", bidirectional=True)),
    ("RNN", dict(num_layers=1, batch_first=True)),
]


def _rnn_pair(cls, kwargs):
    tm = getattr(torch.nn, cls)(4, 5, **kwargs).double()
    fm = getattr(nn, cls)(4, 5, dtype=flow.float64, **kwargs)
    return tm, fm


@pytest.mark.parametrize("cls,kwargs", RNN_CASES)
def test_rnn_params_match_torch(cls, kwargs):
    tm, fm = _rnn_pair(cls, kwargs)
    assert repr(fm) == repr(tm)
    tshapes = [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    fshapes = [(n, tuple(p.shape)) for n, p in fm.named_parameters()]
    assert tshapes == fshapes
    bound = 1 / np.sqrt(5)
    vals = np.concatenate([to_np(p).reshape(-1) for p in fm.parameters()])
    assert vals.min() >= -bound and vals.max() <= bound
    assert abs(vals.std() - bound / np.sqrt(3)) < bound / 6  # uniform(-b, b) has std b / sqrt(3)


@pytest.mark.parametrize("with_hx", [True, False])
@pytest.mark.parametrize("cls,kwargs", RNN_CASES)
def test_rnn_forward_backward_vs_torch(cls, kwargs, with_hx):
    tm, fm = _rnn_pair(cls, kwargs)
    _copy(tm, fm)
    bf = kwargs.get("batch_first", False)
    D = 2 if kwargs.get("bidirectional") else 1
    nl = kwargs.get("num_layers", 1)
    hout = kwargs.get("proj_size", 0) or 5
    N, L = 3, 6
    x = np.random.randn(*((N, L, 4) if bf else (L, N, 4)))
    fx, tx = _pair(x)
    if with_hx:
        fh, th = _pair(np.random.randn(D * nl, N, hout))
        if cls == "LSTM":
            fc, tc = _pair(np.random.randn(D * nl, N, 5))
            fhx, thx = (fh, fc), (th, tc)
        else:
            fhx, thx = fh, th
        fo, fhn = fm(fx, fhx)
        to, thn = tm(tx, thx)
    else:
        fo, fhn = fm(fx)
        to, thn = tm(tx)
    assert_close(fo, to, rtol=1e-9, atol=1e-12)
    f_states = fhn if isinstance(fhn, tuple) else (fhn,)
    t_states = thn if isinstance(thn, tuple) else (thn,)
    for a, b in zip(f_states, t_states):
        assert_close(a, b, rtol=1e-9, atol=1e-12)
    w = np.random.randn(*to.shape)
    ws = [np.random.randn(*s.shape) for s in t_states]
    floss = (fo * flow.tensor(w)).sum() + sum((s * flow.tensor(v)).sum() for s, v in zip(f_states, ws))
    tloss = (to * torch.tensor(w)).sum() + sum((s * torch.tensor(v)).sum() for s, v in zip(t_states, ws))
    floss.backward()
    tloss.backward()
    assert_close(fx.grad, tx.grad, rtol=1e-8, atol=1e-11)
    if with_hx:
        assert_close(fh.grad, th.grad, rtol=1e-8, atol=1e-11)
        if cls == "LSTM":
            assert_close(fc.grad, tc.grad, rtol=1e-8, atol=1e-11)
    _check_params_grads(tm, fm, rtol=1e-8, atol=1e-11)


@pytest.mark.parametrize("cls", ["LSTM", "GRU", "RNN"])
def test_rnn_unbatched_and_float32(cls):
    tm = getattr(torch.nn, cls)(3, 4, num_layers=2, bidirectional=True)
    fm = getattr(nn, cls)(3, 4, num_layers=2, bidirectional=True)
    _copy(tm, fm)
    x = np.random.randn(5, 3).astype(np.float32)
    fo, fh = fm(flow.tensor(x))
    to, th = tm(torch.tensor(x))
    assert fo.dtype == flow.float32
    assert_close(fo, to, rtol=1e-5, atol=1e-6)
    if cls == "LSTM":
        assert_close(fh[0], th[0], rtol=1e-5, atol=1e-6)
        assert_close(fh[1], th[1], rtol=1e-5, atol=1e-6)
        h0 = (flow.zeros(4, 4), flow.zeros(4, 4))
    else:
        assert_close(fh, th, rtol=1e-5, atol=1e-6)
        h0 = flow.zeros(4, 4)
    fo2, _ = fm(flow.tensor(x), h0)
    assert_close(fo2, to, rtol=1e-5, atol=1e-6)


def test_rnn_gradcheck_small_lstm():
    m = nn.LSTM(2, 3, num_layers=1, bidirectional=True, dtype=flow.float64)
    x = flow.tensor(np.random.randn(3, 2, 2), requires_grad=True)
    gradcheck(lambda a: m(a)[0], [x])
    g = nn.GRU(2, 3, dtype=flow.float64)
    gradcheck(lambda a: g(a)[1], [x])


def test_rnn_dropout_between_layers():
    m = nn.GRU(4, 6, num_layers=3, dropout=0.5)
    x = flow.randn(5, 2, 4)
    m.eval()
    a, b = m(x)[0], m(x)[0]
    assert_close(a, b)
    m.train()
    flow.manual_seed(1)
    c = m(x)[0]
    flow.manual_seed(2)
    d = m(x)[0]
    assert not np.allclose(to_np(c), to_np(d))
    with pytest.warns(UserWarning, match="dropout option adds dropout"):
        nn.LSTM(2, 3, dropout=0.2)


def test_rnn_errors():
    m = nn.LSTM(4, 5, num_layers=2)
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D"):
        m(flow.randn(1, 2, 3, 4))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 4, got 3"):
        m(flow.randn(3, 2, 3))
    with pytest.raises(RuntimeError, match="Expected hidden\\[0\\] size \\(2, 2, 5\\), got \\[1, 2, 5\\]"):
        m(flow.randn(3, 2, 4), (flow.zeros(1, 2, 5), flow.zeros(2, 2, 5)))
    with pytest.raises(RuntimeError, match="Expected hidden\\[1\\] size"):
        m(flow.randn(3, 2, 4), (flow.zeros(2, 2, 5), flow.zeros(2, 3, 5)))
    with pytest.raises(RuntimeError, match="hx should also be 3-D"):
        nn.GRU(4, 5)(flow.randn(3, 2, 4), flow.zeros(2, 5))
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(4, 5, proj_size=2)
    with pytest.raises(ValueError, match="proj_size has to be smaller"):
        nn.LSTM(4, 5, proj_size=5)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNN(4, 5, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="dropout should be a number"):
        nn.RNN(4, 5, dropout=1.5)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.GRU(4, 0)
    with pytest.raises(RuntimeError, match="Expected sequence length to be larger than 0"):
        m(flow.randn(0, 2, 4))
    out, (h, c) = m(flow.randn(3, 0, 4))
    assert tuple(out.shape) == (3, 0, 5) and tuple(h.shape) == (2, 0, 5) and tuple(c.shape) == (2, 0, 5)
    with pytest.raises(ValueError, match="does not match weight dtype"):
        nn.GRU(4, 5)(flow.randn(3, 2, 4, dtype=flow.float64))


@pytest.mark.parametrize("cls,kw", [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu", "bias": False}),
                                    ("LSTMCell", {}), ("GRUCell", {}), ("GRUCell", {"bias": False})])
def test_cells_vs_torch(cls, kw):
    tm = getattr(torch.nn, cls)(3, 4, **kw).double()
    fm = getattr(nn, cls)(3, 4, dtype=flow.float64, **kw)
    assert repr(fm) == repr(tm)
    assert [(n, tuple(p.shape)) for n, p in fm.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in tm.named_parameters()]
    _copy(tm, fm)
    fx, tx = _pair(np.random.randn(2, 3))
    fh, th = _pair(np.random.randn(2, 4))
    if cls == "LSTMCell":
        fc, tc = _pair(np.random.randn(2, 4))
        fo, to = fm(fx, (fh, fc)), tm(tx, (th, tc))
        (fo[0].sum() + (fo[1] * 2).sum()).backward()
        (to[0].sum() + (to[1] * 2).sum()).backward()
        assert_close(fo[1], to[1], rtol=1e-10, atol=1e-12)
        assert_close(fc.grad, tc.grad, rtol=1e-10, atol=1e-12)
        fo, to = fo[0], to[0]
    else:
        fo, to = fm(fx, fh), tm(tx, th)
        (fo ** 2).sum().backward()
        (to ** 2).sum().backward()
    assert_close(fo, to, rtol=1e-10, atol=1e-12)
    assert_close(fx.grad, tx.grad, rtol=1e-10, atol=1e-12)
    assert_close(fh.grad, th.grad, rtol=1e-10, atol=1e-12)
    _check_params_grads(tm, fm, rtol=1e-10, atol=1e-12)
    # unbatched input, no hidden state
    x1 = np.random.randn(3)
    fo1, to1 = fm(flow.tensor(x1)), tm(torch.tensor(x1))
    fo1, to1 = (fo1[0], to1[0]) if cls == "LSTMCell" else (fo1, to1)
    assert_close(fo1, to1, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="Expected input to be 1D or 2D"):
        fm(flow.randn(1, 2, 3, dtype=flow.float64))


# ---- MultiheadAttention --------------------------------------------------------------------------------
MHA_CASES = [dict(), dict(batch_first=True), dict(kdim=5, vdim=6), dict(add_bias_kv=True, add_zero_attn=True),
             dict(bias=False), dict(batch_first=True, kdim=3, vdim=3)]


@pytest.mark.parametrize("kw", MHA_CASES)
@pytest.mark.parametrize("masks", ["none", "bool", "float", "3d"])
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
def test_mha_vs_torch(kw, masks, need_weights, average):
    E, H, L, S, N = 8, 2, 3, 4, 2
    tm = torch.nn.MultiheadAttention(E, H, **kw).double()
    fm = nn.MultiheadAttention(E, H, dtype=flow.float64, **kw)
    assert [n for n, _ in fm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert repr(fm) == repr(tm)
    assert type(fm.out_proj).__name__ == "NonDynamicallyQuantizableLinear" and isinstance(fm.out_proj, nn.Linear)
    _copy(tm, fm)
    bf = kw.get("batch_first", False)
    kd, vd = kw.get("kdim", E), kw.get("vdim", E)

    def mk(n, d):
        return np.random.randn(*((N, n, d) if bf else (n, N, d)))

    fq, tq = _pair(mk(L, E))
    fk, tk = _pair(mk(S, kd))
    fv, tv = _pair(mk(S, vd))
    fkw, tkw = {}, {}
    if masks == "bool":
        kpm = np.zeros((N, S), bool)
        kpm[0, -1] = True
        am = np.zeros((L, S), bool)
        am[1, 0] = True
        fkw = dict(key_padding_mask=flow.tensor(kpm), attn_mask=flow.tensor(am))
        tkw = dict(key_padding_mask=torch.tensor(kpm), attn_mask=torch.tensor(am))
    elif masks == "float":
        kpm, am = np.random.randn(N, S), np.random.randn(L, S)
        fkw = dict(key_padding_mask=flow.tensor(kpm), attn_mask=flow.tensor(am))
        tkw = dict(key_padding_mask=torch.tensor(kpm), attn_mask=torch.tensor(am))
    elif masks == "3d":
        am = np.random.randn(N * H, L, S)
        fkw, tkw = dict(attn_mask=flow.tensor(am)), dict(attn_mask=torch.tensor(am))
    fo, fw = fm(fq, fk, fv, need_weights=need_weights, average_attn_weights=average, **fkw)
    to, tw = tm(tq, tk, tv, need_weights=need_weights, average_attn_weights=average, **tkw)
    assert_close(fo, to, rtol=1e-9, atol=1e-12)
    if need_weights:
        assert_close(fw, tw, rtol=1e-9, atol=1e-12)
    else:
        assert fw is None and tw is None
    w = np.random.randn(*to.shape)
    (fo * flow.tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    for a, b in ((fq, tq), (fk, tk), (fv, tv)):
        assert_close(a.grad, b.grad, rtol=1e-8, atol=1e-11)
    _check_params_grads(tm, fm, rtol=1e-8, atol=1e-11)


def test_mha_self_attention_unbatched_and_errors():
    tm = torch.nn.MultiheadAttention(6, 3).double()
    fm = nn.MultiheadAttention(6, 3, dtype=flow.float64)
    _copy(tm, fm)
    x = np.random.randn(4, 6)
    fx, tx = _pair(x)
    fo, fw = fm(fx, fx, fx)
    to, tw = tm(tx, tx, tx)
    assert_close(fo, to, rtol=1e-9, atol=1e-12)
    assert_close(fw, tw, rtol=1e-9, atol=1e-12)
    fo.sum().backward()
    to.sum().backward()
    assert_close(fx.grad, tx.grad, rtol=1e-8, atol=1e-11)
    with pytest.raises(AssertionError, match="divisible"):
        nn.MultiheadAttention(7, 2)
    with pytest.raises(ValueError, match="greater than 0"):
        nn.MultiheadAttention(0, 2)
    q = flow.randn(3, 2, 6, dtype=flow.float64)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        fm(q, q, q, is_causal=True)
    with pytest.raises(RuntimeError, match="The shape of the 2D attn_mask"):
        fm(q, q, q, attn_mask=flow.zeros(2, 2, dtype=flow.float64))


def test_mha_init_and_train_dropout():
    m = nn.MultiheadAttention(16, 4, dropout=0.5, add_bias_kv=True)
    bound = np.sqrt(6 / (16 + 48))
    w = to_np(m.in_proj_weight)
    assert w.min() >= -bound and w.max() <= bound
    assert np.all(to_np(m.in_proj_bias) == 0) and np.all(to_np(m.out_proj.bias) == 0)
    assert tuple(m.bias_k.shape) == (1, 1, 16)
    x = flow.randn(3, 2, 16)
    m.eval()
    assert_close(m(x, x, x)[0], m(x, x, x)[0])
    m.train()
    a, b = m(x, x, x)[1], m(x, x, x)[1]
    assert not np.allclose(to_np(a), to_np(b))


# ---- Transformer ---------------------------------------------------------------------------------------
def _tf_kwargs(norm_first, activation, batch_first):
    return dict(dim_feedforward=16, dropout=0.0, activation=activation, norm_first=norm_first,
                batch_first=batch_first)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu", "callable"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer_encoder_vs_torch(norm_first, activation, batch_first):
    t_act = torch.nn.functional.silu if activation == "callable" else activation
    f_act = flow.nn.functional.silu if activation == "callable" else activation
    tl = torch.nn.TransformerEncoderLayer(8, 2, **_tf_kwargs(norm_first, t_act, batch_first))
    fl = nn.TransformerEncoderLayer(8, 2, **_tf_kwargs(norm_first, f_act, batch_first))
    tm = torch.nn.TransformerEncoder(tl, 2, norm=torch.nn.LayerNorm(8), enable_nested_tensor=False).double()
    fm = nn.TransformerEncoder(fl, 2, norm=nn.TransformerEncoderLayer(8, 2).norm1).double()
    assert list(fm.state_dict()) == list(tm.state_dict())
    _copy(tm, fm)
    N, S = 2, 5
    x = np.random.randn(*((N, S, 8) if batch_first else (S, N, 8)))
    kpm = np.zeros((N, S), bool)
    kpm[1, 3:] = True
    mask = torch.nn.Transformer.generate_square_subsequent_mask(S, dtype=torch.float64)
    for train in (True, False):
        tm.train(train)
        fm.train(train)
        fx, tx = _pair(x)
        fo = fm(fx, mask=flow.tensor(to_np(mask)), src_key_padding_mask=flow.tensor(kpm))
        to = tm(tx, mask=mask, src_key_padding_mask=torch.tensor(kpm))
        assert_close(fo, to, rtol=1e-9, atol=1e-11)
        if train:
            w = np.random.randn(*to.shape)
            (fo * flow.tensor(w)).sum().backward()
            (to * torch.tensor(w)).sum().backward()
            assert_close(fx.grad, tx.grad, rtol=1e-8, atol=1e-10)
            _check_params_grads(tm, fm, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_decoder_vs_torch(norm_first):
    tl = torch.nn.TransformerDecoderLayer(8, 2, dim_feedforward=12, dropout=0.0, norm_first=norm_first)
    fl = nn.TransformerDecoderLayer(8, 2, dim_feedforward=12, dropout=0.0, norm_first=norm_first)
    assert repr(fl) == repr(tl)
    tm = torch.nn.TransformerDecoder(tl, 2).double()
    fm = nn.TransformerDecoder(fl, 2).double()
    assert list(fm.state_dict()) == list(tm.state_dict())
    _copy(tm, fm)
    T, S, N = 4, 5, 3
    tgt, mem = np.random.randn(T, N, 8), np.random.randn(S, N, 8)
    mkpm = np.zeros((N, S), bool)
    mkpm[0, -2:] = True
    tmask = torch.nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.float64)
    for train in (True, False):
        tm.train(train)
        fm.train(train)
        ft, tt = _pair(tgt)
        fmem, tmem = _pair(mem)
        fo = fm(ft, fmem, tgt_mask=flow.tensor(to_np(tmask)), memory_key_padding_mask=flow.tensor(mkpm))
        to = tm(tt, tmem, tgt_mask=tmask, memory_key_padding_mask=torch.tensor(mkpm))
        assert_close(fo, to, rtol=1e-9, atol=1e-11)
        w = np.random.randn(*to.shape)
        (fo * flow.tensor(w)).sum().backward()
        (to * torch.tensor(w)).sum().backward()
        assert_close(ft.grad, tt.grad, rtol=1e-8, atol=1e-10)
        assert_close(fmem.grad, tmem.grad, rtol=1e-8, atol=1e-10)
        if train:
            _check_params_grads(tm, fm, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("batch_first", [False, True])
def test_full_transformer_vs_torch(batch_first):
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1, dim_feedforward=16, dropout=0.0,
              batch_first=batch_first)
    tm = torch.nn.Transformer(**kw).double()
    fm = nn.Transformer(**kw).double()
    assert list(fm.state_dict()) == list(tm.state_dict())
    for (n, tp), (_, fp) in zip(tm.named_parameters(), fm.named_parameters()):
        assert tuple(tp.shape) == tuple(fp.shape), n
    _copy(tm, fm)
    N, S, T = 2, 5, 4
    src = np.random.randn(*((N, S, 8) if batch_first else (S, N, 8)))
    tgt = np.random.randn(*((N, T, 8) if batch_first else (T, N, 8)))
    fs, ts = _pair(src)
    ft, tt = _pair(tgt)
    tmask = tm.generate_square_subsequent_mask(T, dtype=torch.float64)
    fmask = fm.generate_square_subsequent_mask(T, dtype=flow.float64)
    assert_close(fmask, tmask)
    fo, to = fm(fs, ft, tgt_mask=fmask), tm(ts, tt, tgt_mask=tmask)
    assert_close(fo, to, rtol=1e-9, atol=1e-11)
    (fo ** 2).sum().backward()
    (to ** 2).sum().backward()
    assert_close(fs.grad, ts.grad, rtol=1e-8, atol=1e-10)
    assert_close(ft.grad, tt.grad, rtol=1e-8, atol=1e-10)
    _check_params_grads(tm, fm, rtol=1e-7, atol=1e-10)
    fm.eval()
    tm.eval()
    with torch.no_grad():
        to = tm(ts, tt, tgt_mask=tmask)
    assert_close(fm(fs, ft, tgt_mask=fmask), to, rtol=1e-9, atol=1e-11)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        fm(fs, flow.randn(*((3, T, 8) if batch_first else (T, 3, 8)), dtype=flow.float64))
    with pytest.raises(RuntimeError, match="feature number"):
        fm(fs, flow.randn(*((N, T, 6) if batch_first else (T, N, 6)), dtype=flow.float64))


def test_transformer_defaults_and_mask():
    m = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1, num_decoder_layers=1)
    t = torch.nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1, num_decoder_layers=1)
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == \
        [(n, tuple(p.shape)) for n, p in t.named_parameters()]
    assert repr(m) == repr(t)
    layer = m.encoder.layers[0]
    assert layer.linear1.out_features == 2048 and layer.dropout.p == 0.1 and layer.norm1.eps == 1e-5
    mask = nn.Transformer.generate_square_subsequent_mask(3)
    assert mask.dtype == flow.float32
    assert_close(mask, torch.nn.Transformer.generate_square_subsequent_mask(3))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


def test_transformer_encoder_layer_module_activation_and_unbatched():
    tl = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=10, dropout=0.0, activation=torch.nn.GELU()).double()
    fl = nn.TransformerEncoderLayer(8, 2, dim_feedforward=10, dropout=0.0, activation=nn.GELU()).double()
    assert list(fl.state_dict()) == list(tl.state_dict())
    assert "(activation): GELU(approximate='none')" in repr(fl)
    assert repr(fl) == repr(tl)
    _copy(tl, fl)
    x = np.random.randn(5, 8)
    fx, tx = _pair(x)
    fo, to = fl(fx), tl(tx)
    assert_close(fo, to, rtol=1e-9, atol=1e-11)
    fo.sum().backward()
    to.sum().backward()
    assert_close(fx.grad, tx.grad, rtol=1e-8, atol=1e-10)


def test_transformer_train_dropout_active():
    m = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.5)
    x = flow.randn(4, 2, 8)
    m.eval()
    assert_close(m(x), m(x))
    m.train()
    assert not np.allclose(to_np(m(x)), to_np(m(x)))


# ---- distances -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("p,keepdim", [(2.0, False), (1.0, True), (3.0, False)])
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((4, 5), (5,)), ((2, 3, 4), (3, 4))])
def test_pairwise_distance(p, keepdim, shapes):
    f1, t1 = _pair(np.random.randn(*shapes[0]))
    f2, t2 = _pair(np.random.randn(*shapes[1]))
    fm, tm = nn.PairwiseDistance(p=p, keepdim=keepdim), torch.nn.PairwiseDistance(p=p, keepdim=keepdim)
    _loss_check(fm, tm, [f1, f2], [t1, t2])


@pytest.mark.parametrize("dim", [1, -1, 0])
def test_cosine_similarity(dim):
    a, b = np.random.randn(4, 5), np.random.randn(4, 5)
    a[1] = 0.0  # zero vector: its norm is clamped to eps
    f1, t1 = _pair(a)
    f2, t2 = _pair(b)
    _loss_check(nn.CosineSimilarity(dim=dim), torch.nn.CosineSimilarity(dim=dim), [f1, f2], [t1, t2])
    f1, t1 = _pair(np.random.randn(3, 1, 4))
    f2, t2 = _pair(np.random.randn(1, 2, 4))
    _loss_check(nn.CosineSimilarity(dim=-1), torch.nn.CosineSimilarity(dim=-1), [f1, f2], [t1, t2])


# ---- packed sequences ----------------------------------------------------------------------------------
from oneflow.nn.utils import rnn as frnn  # noqa: E402
from torch.nn.utils import rnn as trnn  # noqa: E402


@pytest.mark.parametrize("cls,kwargs", [("LSTM", dict(num_layers=2, bidirectional=True)),
                                        ("LSTM", dict(proj_size=2, batch_first=True)),
                                        ("GRU", dict(bidirectional=True, batch_first=True)),
                                        ("RNN", dict(num_layers=2, nonlinearity="relu"))])
@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_rnn_packed_sequence_vs_torch(cls, kwargs, enforce_sorted):
    tm = getattr(torch.nn, cls)(3, 4, **kwargs).double()
    fm = getattr(nn, cls)(3, 4, dtype=flow.float64, **kwargs)
    _copy(tm, fm)
    bf = kwargs.get("batch_first", False)
    lengths = [5, 4, 3, 1] if enforce_sorted else [3, 5, 1, 4]
    x = np.random.randn(*((4, 5, 3) if bf else (5, 4, 3)))
    fx, tx = _pair(x)
    fp = frnn.pack_padded_sequence(fx, lengths, batch_first=bf, enforce_sorted=enforce_sorted)
    tp = trnn.pack_padded_sequence(tx, lengths, batch_first=bf, enforce_sorted=enforce_sorted)
    assert_close(fp.data, tp.data)
    assert fp.batch_sizes.tolist() == tp.batch_sizes.tolist()
    D = 2 if kwargs.get("bidirectional") else 1
    hout = kwargs.get("proj_size", 0) or 4
    fh, th = _pair(np.random.randn(D * kwargs.get("num_layers", 1), 4, hout))
    if cls == "LSTM":
        fc, tc = _pair(np.random.randn(D * kwargs.get("num_layers", 1), 4, 4))
        fo, (fhn, fcn) = fm(fp, (fh, fc))
        to, (thn, tcn) = tm(tp, (th, tc))
        assert_close(fcn, tcn, rtol=1e-9, atol=1e-12)
    else:
        fo, fhn = fm(fp, fh)
        to, thn = tm(tp, th)
    assert isinstance(fo, frnn.PackedSequence)
    assert_close(fhn, thn, rtol=1e-9, atol=1e-12)
    fpad, flen = frnn.pad_packed_sequence(fo, batch_first=bf, total_length=6, padding_value=-2.0)
    tpad, tlen = trnn.pad_packed_sequence(to, batch_first=bf, total_length=6, padding_value=-2.0)
    assert_close(fpad, tpad, rtol=1e-9, atol=1e-12)
    assert flen.tolist() == tlen.tolist() == lengths
    w = np.random.randn(*tpad.shape)
    ((fpad * flow.tensor(w)).sum() + fhn.sum()).backward()
    ((tpad * torch.tensor(w)).sum() + thn.sum()).backward()
    assert_close(fx.grad, tx.grad, rtol=1e-8, atol=1e-11)
    assert_close(fh.grad, th.grad, rtol=1e-8, atol=1e-11)
    _check_params_grads(tm, fm, rtol=1e-8, atol=1e-11)


def test_pack_pad_utilities():
    seqs = [np.random.randn(n, 2) for n in (2, 4, 3)]
    fs, ts = [flow.tensor(s) for s in seqs], [torch.tensor(s) for s in seqs]
    for bf in (False, True):
        for side in ("right", "left"):
            assert_close(frnn.pad_sequence(fs, batch_first=bf, padding_value=-1.0, padding_side=side),
                         trnn.pad_sequence(ts, batch_first=bf, padding_value=-1.0, padding_side=side))
    fp, tp = frnn.pack_sequence(fs, enforce_sorted=False), trnn.pack_sequence(ts, enforce_sorted=False)
    assert_close(fp.data, tp.data)
    assert fp.sorted_indices.tolist() == tp.sorted_indices.tolist()
    assert fp.unsorted_indices.tolist() == tp.unsorted_indices.tolist()
    for a, b in zip(frnn.unpack_sequence(fp), seqs):
        assert_close(a, b)
    padded, lengths = frnn.pad_packed_sequence(fp)
    for a, b in zip(frnn.unpad_sequence(padded, lengths), seqs):
        assert_close(a, b)
    assert fp.float().data.dtype == flow.float32
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        frnn.pack_sequence(fs)
    with pytest.raises(ValueError, match="Expected total_length to be at least"):
        frnn.pad_packed_sequence(fp, total_length=2)
    with pytest.raises(RuntimeError, match="greater than 0"):
        frnn.pack_padded_sequence(flow.randn(3, 2, 1), [3, 0])


def test_mha_gradcheck_and_causal_hint():
    m = nn.MultiheadAttention(4, 2, dtype=flow.float64, kdim=3, vdim=3)
    q = flow.tensor(np.random.randn(2, 1, 4), requires_grad=True)
    k = flow.tensor(np.random.randn(3, 1, 3), requires_grad=True)
    v = flow.tensor(np.random.randn(3, 1, 3), requires_grad=True)
    mask = flow.tensor(np.random.randn(2, 3))
    gradcheck(lambda a, b, c: m(a, b, c, attn_mask=mask)[0], [q, k, v])
    tm = torch.nn.MultiheadAttention(6, 2).double()
    fm = nn.MultiheadAttention(6, 2, dtype=flow.float64)
    _copy(tm, fm)
    x = np.random.randn(4, 2, 6)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    to = tm(*(torch.tensor(x),) * 3, attn_mask=causal, is_causal=True, need_weights=False)[0]
    fx = flow.tensor(x)
    fo = fm(fx, fx, fx, attn_mask=flow.tensor(to_np(causal)), is_causal=True, need_weights=False)[0]
    assert_close(fo, to, rtol=1e-9, atol=1e-12)


def test_transformer_encoder_is_causal_flag():
    tl = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=8, dropout=0.0)
    tm = torch.nn.TransformerEncoder(tl, 2, enable_nested_tensor=False).double()
    fm = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dim_feedforward=8, dropout=0.0), 2).double()
    _copy(tm, fm)
    x = np.random.randn(5, 2, 8)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    to = tm(torch.tensor(x), mask=mask, is_causal=True)
    fo = fm(flow.tensor(x), mask=flow.tensor(to_np(mask)), is_causal=True)
    assert_close(fo, to, rtol=1e-9, atol=1e-11)
    bool_mask = np.triu(np.ones((5, 5), bool), 1)
    to = tm(torch.tensor(x), mask=torch.tensor(bool_mask))
    fo = fm(flow.tensor(x), mask=flow.tensor(bool_mask))
    assert_close(fo, to, rtol=1e-9, atol=1e-11)


def test_rrelu():
    fm, tm = nn.RReLU(0.1, 0.3), torch.nn.RReLU(0.1, 0.3)
    assert repr(fm) == repr(tm)
    assert repr(nn.RReLU(inplace=True)) == repr(torch.nn.RReLU(inplace=True))
    x = np.random.randn(200)
    fm.eval()
    tm.eval()
    fx, tx = _pair(x)
    fy, ty = fm(fx), tm(tx)
    assert_close(fy, ty)
    fm.train()
    fx = flow.tensor(x, requires_grad=True)
    fy = fm(fx)
    fy.sum().backward()
    ratio = to_np(fy) / x
    neg = x < 0
    assert np.all(ratio[~neg] == 1.0)
    assert ratio[neg].min() >= 0.1 and ratio[neg].max() <= 0.3 and ratio[neg].std() > 0.02
    assert_close(fx.grad, ratio)


def test_functional_multi_head_attention_forward_matches_torch():
    # torch.nn.functional's sequence-first function with its positional signature (embed_dim_to_check first),
    # a key padding mask, bias_k/bias_v, separate projection weights, and weights per head
    rng = np.random.default_rng(5)
    L, S, N, E, H = 4, 6, 2, 8, 2
    q, k = rng.standard_normal((L, N, E)).astype(np.float32), rng.standard_normal((S, N, E)).astype(np.float32)
    w_in = (rng.standard_normal((3 * E, E)) * 0.3).astype(np.float32)
    b_in = (rng.standard_normal(3 * E) * 0.1).astype(np.float32)
    w_out, b_out = (rng.standard_normal((E, E)) * 0.3).astype(np.float32), np.zeros(E, np.float32)
    bk, bv = (rng.standard_normal((1, 1, E)) * 0.1).astype(np.float32), (rng.standard_normal((1, 1, E)) * 0.1).astype(
        np.float32)
    pad = np.zeros((N, S), bool)
    pad[1, -2:] = True

    def run(lib, sep):
        t = lib.tensor
        kw = dict(training=False, key_padding_mask=t(pad), average_attn_weights=False)
        if sep:
            kw.update(use_separate_proj_weight=True, q_proj_weight=t(w_in[:E]), k_proj_weight=t(w_in[E:2 * E]),
                      v_proj_weight=t(w_in[2 * E:]))
        o, w = lib.nn.functional.multi_head_attention_forward(
            t(q), t(k), t(k), E, H, None if sep else t(w_in), t(b_in), t(bk), t(bv), False, 0.0, t(w_out), t(b_out),
            **kw)
        return o.detach().numpy(), w.detach().numpy()

    for sep in (False, True):
        (fo, fw), (to, tw) = run(flow, sep), run(torch, sep)
        np.testing.assert_allclose(fo, to, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(fw, tw, rtol=1e-4, atol=1e-6)
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 6, but got 8"):
        flow.nn.functional.multi_head_attention_forward(flow.tensor(q), flow.tensor(k), flow.tensor(k), 6, H,
                                                        flow.tensor(w_in), None, None, None, False, 0.0,
                                                        flow.tensor(w_out), None)
