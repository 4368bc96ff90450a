"""Against torch: parametrizations.orthogonal (every map, with and without trivialization),
parametrize.transfer_parametrizations_and_params, the RNNBase / LSTM argument-check helpers, PackedSequence's
conversions, pad_sequence's dtype and Unflatten of a zero-size input."""
import numpy as np
import pytest

import oneflow as flow

torch = pytest.importorskip("torch")

FP, TP = flow.nn.utils.parametrizations, torch.nn.utils.parametrizations
MAPS = ["matrix_exp", "cayley", "householder"]
SHAPES = [(4, 4), (6, 3), (3, 6)]  # square, tall, wide (out_features, in_features)


def t2f(t):
    return flow.tensor(t.detach().numpy().copy())


def f2np(t):
    return t.detach().numpy()


def linear_pair(shape, seed=0):
    torch.manual_seed(seed)
    tl = torch.nn.Linear(shape[1], shape[0])
    fl = flow.nn.Linear(shape[1], shape[0])
    with flow.no_grad():
        fl.weight.copy_(t2f(tl.weight))
        fl.bias.copy_(t2f(tl.bias))
    return fl, tl


def assert_orthogonal(W, atol=1e-5):
    W = f2np(W).astype(np.float64)
    m, n = W.shape[-2:]
    G = W @ np.swapaxes(W, -1, -2) if m < n else np.swapaxes(W, -1, -2) @ W
    np.testing.assert_allclose(G, np.broadcast_to(np.eye(min(m, n)), G.shape), atol=atol)


def copy_state(fl, tl):
    """The torch module's original (and base) into the oneflow one: the non-square trivialization starts from a
    random completion, so the two only agree once they hold the same tensors."""
    tp, fp = tl.parametrizations.weight, fl.parametrizations.weight
    with flow.no_grad():
        fp.original.copy_(t2f(tp.original))
        if hasattr(tp[0], "base"):
            fp[0].base.copy_(t2f(tp[0].base))


def deterministic_init(shape, use_trivialization):
    # the trivialization of a non-square matrix completes it with random columns
    return not use_trivialization or shape[0] == shape[1]


# ---- orthogonal -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("orthogonal_map", MAPS)
@pytest.mark.parametrize("use_trivialization", [True, False])
def test_orthogonal_matches_torch(shape, orthogonal_map, use_trivialization):
    fl, tl = linear_pair(shape)
    FP.orthogonal(fl, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    TP.orthogonal(tl, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    assert type(fl).__name__ == "ParametrizedLinear"
    assert sorted(fl.state_dict().keys()) == sorted(tl.state_dict().keys())
    if use_trivialization or orthogonal_map == "householder":
        # the initial value is the QR-orthogonalised weight, so orthogonal
        assert_orthogonal(fl.weight)
    if deterministic_init(shape, use_trivialization):
        np.testing.assert_allclose(f2np(fl.weight), f2np(tl.weight), atol=1e-5)
        np.testing.assert_allclose(f2np(fl.parametrizations.weight.original),
                                   f2np(tl.parametrizations.weight.original), atol=1e-5)
    copy_state(fl, tl)
    W = fl.weight
    np.testing.assert_allclose(f2np(W), f2np(tl.weight), atol=1e-5)
    if use_trivialization or orthogonal_map == "householder":
        assert_orthogonal(W)
    x = np.random.default_rng(1).standard_normal((5, shape[1])).astype(np.float32)
    fy, ty = fl(flow.tensor(x)), tl(torch.tensor(x))
    np.testing.assert_allclose(f2np(fy), f2np(ty), atol=1e-5)
    (fy ** 2).sum().backward()
    (ty ** 2).sum().backward()
    fg = fl.parametrizations.weight.original.grad
    assert fg is not None
    np.testing.assert_allclose(f2np(fg), f2np(tl.parametrizations.weight.original.grad), atol=1e-4)
    np.testing.assert_allclose(f2np(fl.bias.grad), f2np(tl.bias.grad), atol=1e-5)
    if use_trivialization:
        assert fl.parametrizations.weight[0].base.grad is None  # a buffer


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("orthogonal_map", MAPS)
def test_orthogonal_stays_orthogonal_under_sgd(shape, orthogonal_map):
    fl, _ = linear_pair(shape)
    FP.orthogonal(fl, orthogonal_map=orthogonal_map)
    opt = flow.optim.SGD(fl.parameters(), lr=0.1)
    x = flow.tensor(np.random.default_rng(2).standard_normal((8, shape[1])).astype(np.float32))
    for _ in range(3):
        opt.zero_grad()
        (fl(x) ** 2).sum().backward()
        opt.step()
    assert_orthogonal(fl.weight)


@pytest.mark.parametrize("shape", SHAPES)
def test_orthogonal_default_map(shape):
    fl, tl = linear_pair(shape)
    FP.orthogonal(fl)
    TP.orthogonal(tl)
    assert fl.parametrizations.weight[0].orthogonal_map.name == tl.parametrizations.weight[0].orthogonal_map.name
    assert fl.parametrizations.weight[0].orthogonal_map.name == ("matrix_exp" if shape[0] == shape[1]
                                                                 else "householder")


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("orthogonal_map", MAPS)
@pytest.mark.parametrize("use_trivialization", [True, False])
def test_orthogonal_right_inverse(shape, orthogonal_map, use_trivialization):
    fl, tl = linear_pair(shape)
    FP.orthogonal(fl, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    TP.orthogonal(tl, orthogonal_map=orthogonal_map, use_trivialization=use_trivialization)
    m, n = shape
    torch.manual_seed(3)
    Q = torch.linalg.qr(torch.randn(max(m, n), min(m, n)))[0]
    Q = Q if m >= n else Q.T
    if not use_trivialization and orthogonal_map != "householder":
        for mod, value in ((fl, t2f(Q)), (tl, Q)):
            with pytest.raises(NotImplementedError, match="use_trivialization=False"):
                mod.weight = value
        return
    fl.weight = t2f(Q)
    tl.weight = Q
    np.testing.assert_allclose(f2np(fl.weight), Q.numpy(), atol=1e-5)
    assert_orthogonal(fl.weight)
    # a square matrix that is not orthogonal is replaced by the Q of its QR decomposition (unique: diag(R) > 0)
    if m == n:
        A = torch.randn(m, n)
        fl.weight = t2f(A)
        tl.weight = A
        assert_orthogonal(fl.weight)
        np.testing.assert_allclose(f2np(fl.weight), f2np(tl.weight), atol=1e-5)
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices of shape"):
        fl.weight = flow.zeros(m + 1, n)


@pytest.mark.parametrize("orthogonal_map", MAPS)
def test_orthogonal_batched_float64(orthogonal_map):
    class Batched(flow.nn.Module):
        def __init__(self, w):
            super().__init__()
            self.weight = flow.nn.Parameter(w)

    w = np.random.default_rng(4).standard_normal((2, 5, 3))
    fm = FP.orthogonal(Batched(flow.tensor(w)), orthogonal_map=orthogonal_map)
    tm = TP.orthogonal(_torch_batched(torch.tensor(w)), orthogonal_map=orthogonal_map)
    assert fm.weight.dtype == flow.float64 and tuple(fm.weight.shape) == (2, 5, 3)
    assert_orthogonal(fm.weight, atol=1e-12)
    with flow.no_grad():
        fm.parametrizations.weight.original.copy_(t2f(tm.parametrizations.weight.original))
        fm.parametrizations.weight[0].base.copy_(t2f(tm.parametrizations.weight[0].base))
        fm.parametrizations.weight.original.add_(0.1)
    with torch.no_grad():
        tm.parametrizations.weight.original.add_(0.1)
    np.testing.assert_allclose(f2np(fm.weight), f2np(tm.weight), atol=1e-10)
    fm.weight.sum().backward()
    tm.weight.sum().backward()
    np.testing.assert_allclose(f2np(fm.parametrizations.weight.original.grad),
                               f2np(tm.parametrizations.weight.original.grad), atol=1e-10)


def _torch_batched(w):
    m = torch.nn.Module()
    m.weight = torch.nn.Parameter(w)
    return m


def test_orthogonal_errors():
    for lib, P in ((flow, FP), (torch, TP)):
        with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dim"):
            P.orthogonal(lib.nn.Linear(3, 3), name="bias")
        with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", "cayley", '
                                             '"householder". Got: qr'):
            P.orthogonal(lib.nn.Linear(3, 3), orthogonal_map="qr")
        with pytest.raises(ValueError, match="has no parameter or buffer with name 'nope'"):
            P.orthogonal(lib.nn.Linear(3, 3), name="nope")


def test_orthogonal_remove_keeps_value():
    fl, _ = linear_pair((5, 3))
    FP.orthogonal(fl)
    W = f2np(fl.weight).copy()
    flow.nn.utils.parametrize.remove_parametrizations(fl, "weight")
    assert type(fl) is flow.nn.Linear
    np.testing.assert_allclose(f2np(fl.weight), W)


# ---- transfer_parametrizations_and_params -------------------------------------------------------------------
@pytest.mark.parametrize("tensor_name", [None, "weight"])
def test_transfer_parametrizations_and_params(tensor_name):
    fl, tl = linear_pair((4, 4))
    FP.orthogonal(fl)
    TP.orthogonal(tl)
    copy_state(fl, tl)
    if tensor_name is None:
        FP.weight_norm(fl, name="bias", dim=None)
        TP.weight_norm(tl, name="bias", dim=None)
    # registering on to_module re-initialises the shared parametrization's base from to_module's weight
    fto, tto = linear_pair((4, 4), seed=1)
    out_f = flow.nn.utils.parametrize.transfer_parametrizations_and_params(fl, fto, tensor_name)
    out_t = torch.nn.utils.parametrize.transfer_parametrizations_and_params(tl, tto, tensor_name)
    assert out_f is fto and type(fto).__name__ == type(tto).__name__ == "ParametrizedLinear"
    assert sorted(fto.state_dict().keys()) == sorted(out_t.state_dict().keys())
    assert fto.parametrizations.weight.original is fl.parametrizations.weight.original
    np.testing.assert_allclose(f2np(fto.weight), f2np(fl.weight), atol=1e-6)
    np.testing.assert_allclose(f2np(fto.weight), f2np(tto.weight), atol=1e-5)
    if tensor_name is None:
        assert fto.parametrizations.bias.original1 is fl.parametrizations.bias.original1
        np.testing.assert_allclose(f2np(fto.bias), f2np(tto.bias), atol=1e-6)
    else:
        assert not flow.nn.utils.parametrize.is_parametrized(fto, "bias")


def test_transfer_creates_missing_param_and_ignores_plain_module():
    fl, _ = linear_pair((3, 5))
    FP.orthogonal(fl)
    to = flow.nn.Module()
    flow.nn.utils.parametrize.transfer_parametrizations_and_params(fl, to, "weight")
    np.testing.assert_allclose(f2np(to.weight), f2np(fl.weight), atol=1e-6)
    plain = flow.nn.Linear(2, 2)
    other = flow.nn.Linear(2, 2)
    assert flow.nn.utils.parametrize.transfer_parametrizations_and_params(plain, other) is other
    assert not flow.nn.utils.parametrize.is_parametrized(other)


# ---- RNN helpers --------------------------------------------------------------------------------------------
def rnn_pair(kind, **kw):
    torch.manual_seed(0)
    tm = getattr(torch.nn, kind)(3, 5, **kw)
    fm = getattr(flow.nn, kind)(3, 5, **kw)
    fm.load_state_dict({k: t2f(v) for k, v in tm.state_dict().items()})
    return fm, tm


def same_error(f_call, t_call):
    with pytest.raises(Exception) as fe:
        f_call()
    with pytest.raises(Exception) as te:
        t_call()
    assert fe.type is te.type
    assert str(fe.value).replace("oneflow.", "torch.") == str(te.value)


CONFIGS = [("RNN", {}), ("GRU", {"num_layers": 2, "bidirectional": True}), ("LSTM", {"batch_first": True}),
           ("LSTM", {"proj_size": 2, "num_layers": 2, "bidirectional": True})]


@pytest.mark.parametrize("kind,kw", CONFIGS)
def test_rnn_expected_sizes(kind, kw):
    fm, tm = rnn_pair(kind, **kw)
    x = np.zeros((4, 2, 3), np.float32)
    fx, tx = flow.tensor(x), torch.tensor(x)
    assert fm.get_expected_hidden_size(fx, None) == tm.get_expected_hidden_size(tx, None)
    bs = [3, 2, 1]
    packed = np.zeros((6, 3), np.float32)
    assert (fm.get_expected_hidden_size(flow.tensor(packed), flow.tensor(bs))
            == tm.get_expected_hidden_size(torch.tensor(packed), torch.tensor(bs)))
    assert isinstance(fm.get_expected_hidden_size(fx, None), tuple)
    if kind == "LSTM":
        assert fm.get_expected_cell_size(fx, None) == tm.get_expected_cell_size(tx, None)
        assert (fm.get_expected_cell_size(flow.tensor(packed), flow.tensor(bs))
                == tm.get_expected_cell_size(torch.tensor(packed), torch.tensor(bs)))
    else:
        assert not hasattr(fm, "get_expected_cell_size")


@pytest.mark.parametrize("kind,kw", CONFIGS)
def test_rnn_check_input(kind, kw):
    fm, tm = rnn_pair(kind, **kw)
    assert fm.check_input(flow.zeros(4, 2, 3), None) is None
    assert fm.check_input(flow.zeros(6, 3), flow.tensor([3, 2, 1])) is None
    for shape, bs, dtype in [((4, 2, 3), None, "float64"), ((4, 3), None, "float32"),
                             ((4, 2, 3), [2, 2], "float32"), ((4, 2, 4), None, "float32")]:
        fb = None if bs is None else flow.tensor(bs)
        tb = None if bs is None else torch.tensor(bs)
        same_error(lambda: fm.check_input(flow.zeros(*shape, dtype=getattr(flow, dtype)), fb),
                   lambda: tm.check_input(torch.zeros(*shape, dtype=getattr(torch, dtype)), tb))


@pytest.mark.parametrize("kind,kw", CONFIGS)
def test_rnn_check_hidden_size_and_forward_args(kind, kw):
    fm, tm = rnn_pair(kind, **kw)
    x = np.zeros((4, 2, 3), np.float32)
    fx, tx = flow.tensor(x), torch.tensor(x)
    expected = tm.get_expected_hidden_size(tx, None)
    assert fm.check_hidden_size(flow.zeros(*expected), expected) is None
    wrong = (expected[0], expected[1] + 1, expected[2])
    same_error(lambda: fm.check_hidden_size(flow.zeros(*wrong), expected),
               lambda: tm.check_hidden_size(torch.zeros(*wrong), expected))
    same_error(lambda: fm.check_hidden_size(flow.zeros(*wrong), expected, "want {} have {}"),
               lambda: tm.check_hidden_size(torch.zeros(*wrong), expected, "want {} have {}"))
    if kind == "LSTM":
        cell = tm.get_expected_cell_size(tx, None)
        fm.check_forward_args(fx, (flow.zeros(*expected), flow.zeros(*cell)), None)
        for h, c in [(wrong, cell), (expected, (cell[0] + 1,) + cell[1:])]:
            same_error(lambda: fm.check_forward_args(fx, (flow.zeros(*h), flow.zeros(*c)), None),
                       lambda: tm.check_forward_args(tx, (torch.zeros(*h), torch.zeros(*c)), None))
    else:
        fm.check_forward_args(fx, flow.zeros(*expected), None)
        same_error(lambda: fm.check_forward_args(fx, flow.zeros(*wrong), None),
                   lambda: tm.check_forward_args(tx, torch.zeros(*wrong), None))
    same_error(lambda: fm.check_forward_args(flow.zeros(4, 2, 7), None, None),
               lambda: tm.check_forward_args(torch.zeros(4, 2, 7), None, None))


@pytest.mark.parametrize("kind,kw", CONFIGS)
def test_rnn_permute_hidden(kind, kw):
    fm, tm = rnn_pair(kind, **kw)
    h = np.random.default_rng(5).standard_normal((2, 3, 4)).astype(np.float32)
    perm = [2, 0, 1]
    fh = (flow.tensor(h), flow.tensor(h + 1)) if kind == "LSTM" else flow.tensor(h)
    th = (torch.tensor(h), torch.tensor(h + 1)) if kind == "LSTM" else torch.tensor(h)
    assert fm.permute_hidden(fh, None) is fh
    fo, to = fm.permute_hidden(fh, flow.tensor(perm)), tm.permute_hidden(th, torch.tensor(perm))
    if kind == "LSTM":
        assert isinstance(fo, tuple) and len(fo) == 2
        for a, b in zip(fo, to):
            np.testing.assert_array_equal(f2np(a), f2np(b))
    else:
        np.testing.assert_array_equal(f2np(fo), f2np(to))


@pytest.mark.parametrize("kind,kw", CONFIGS)
def test_rnn_packed_forward_with_hidden_uses_helpers(kind, kw):
    fm, tm = rnn_pair(kind, **kw)
    rng = np.random.default_rng(6)
    seqs = [rng.standard_normal((n, 3)).astype(np.float32) for n in (2, 4, 3)]
    fpk = flow.nn.utils.rnn.pack_sequence([flow.tensor(s) for s in seqs], enforce_sorted=False)
    tpk = torch.nn.utils.rnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    hs = tm.get_expected_hidden_size(tpk.data, tpk.batch_sizes)
    h = rng.standard_normal(hs).astype(np.float32)
    if kind == "LSTM":
        c = rng.standard_normal(tm.get_expected_cell_size(tpk.data, tpk.batch_sizes)).astype(np.float32)
        fh, th = (flow.tensor(h), flow.tensor(c)), (torch.tensor(h), torch.tensor(c))
    else:
        fh, th = flow.tensor(h), torch.tensor(h)
    fo, fhn = fm(fpk, fh)
    to, thn = tm(tpk, th)
    np.testing.assert_allclose(f2np(fo.data), f2np(to.data), atol=1e-5)
    for a, b in zip(fhn if kind == "LSTM" else [fhn], thn if kind == "LSTM" else [thn]):
        np.testing.assert_allclose(f2np(a), f2np(b), atol=1e-5)
    bad = np.zeros((hs[0], hs[1], hs[2] + 1), np.float32)
    with pytest.raises(RuntimeError, match="Expected hidden"):
        fm(fpk, (flow.tensor(bad), flow.tensor(c)) if kind == "LSTM" else flow.tensor(bad))


def test_rnn_forward_calls_overridden_check_forward_args():
    calls = []

    class MyGRU(flow.nn.GRU):
        def check_forward_args(self, input, hidden, batch_sizes):
            calls.append((tuple(input.shape), tuple(hidden.shape), batch_sizes))
            super().check_forward_args(input, hidden, batch_sizes)

    m = MyGRU(3, 5)
    m(flow.zeros(4, 2, 3), flow.zeros(1, 2, 5))
    assert calls == [((4, 2, 3), (1, 2, 5), None)]


# ---- PackedSequence ------------------------------------------------------------------------------------------
def packed_pair():
    seqs = [np.arange(n * 2, dtype=np.float32).reshape(n, 2) + 0.5 for n in (2, 3, 1)]
    fp = flow.nn.utils.rnn.pack_sequence([flow.tensor(s) for s in seqs], enforce_sorted=False)
    tp = torch.nn.utils.rnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    return fp, tp


@pytest.mark.parametrize("method", ["long", "int", "short", "char", "byte", "double", "float", "half"])
def test_packed_sequence_dtype_conversions(method):
    fp, tp = packed_pair()
    fo, to = getattr(fp, method)(), getattr(tp, method)()
    assert type(fo) is type(fp)
    assert str(fo.data.dtype).replace("oneflow.", "torch.") == str(to.data.dtype)
    np.testing.assert_array_equal(f2np(fo.data), to.data.numpy())
    assert fo.batch_sizes is fp.batch_sizes and fo.batch_sizes.dtype == flow.int64
    np.testing.assert_array_equal(f2np(fo.sorted_indices), tp.sorted_indices.numpy())
    np.testing.assert_array_equal(f2np(fo.unsorted_indices), tp.unsorted_indices.numpy())
    assert getattr(fo, method)() is fo  # nothing to convert: the same object, as torch


def test_packed_sequence_devices():
    fp, tp = packed_pair()
    assert fp.is_cuda is False and fp.is_pinned() is False
    assert fp.cpu() is fp and tp.cpu() is tp
    if not flow.cuda.is_available():
        with pytest.raises(RuntimeError):
            flow.zeros(1).cuda()
        with pytest.raises(RuntimeError):
            fp.cuda()
        with pytest.raises(RuntimeError):
            fp.pin_memory()
    else:
        fc = fp.cuda()
        assert fc.is_cuda and fc.data.is_cuda and fc.sorted_indices.is_cuda and not fc.batch_sizes.is_cuda
        assert fc.cpu().is_cuda is False
    if not torch.cuda.is_available():
        with pytest.raises(RuntimeError):
            tp.pin_memory()


# ---- pad_sequence, Unflatten --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtypes", [("int64", "float32"), ("float32", "float64"), ("float64", "int32"),
                                    ("int32", "float64")])
@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_sequence_takes_first_dtype(dtypes, batch_first):
    a = np.array([1.5, -2.25, 3.0])
    b = np.array([2.7, 4.1])
    fs = [flow.tensor(a).to(getattr(flow, dtypes[0])), flow.tensor(b).to(getattr(flow, dtypes[1]))]
    ts = [torch.tensor(a).to(getattr(torch, dtypes[0])), torch.tensor(b).to(getattr(torch, dtypes[1]))]
    fo = flow.nn.utils.rnn.pad_sequence(fs, batch_first=batch_first, padding_value=1.5)
    to = torch.nn.utils.rnn.pad_sequence(ts, batch_first=batch_first, padding_value=1.5)
    assert str(fo.dtype).replace("oneflow.", "torch.") == str(to.dtype)
    np.testing.assert_array_equal(f2np(fo), to.numpy())


@pytest.mark.parametrize("shape,dim,sizes", [((0, 6), 1, (2, -1)), ((0, 6), 1, (2, 3)), ((3, 0), 1, (2, -1)),
                                             ((0, 6), -1, (-1, 3)), ((4, 6), 0, (2, -1)), ((2, 0, 5), 1, (0, 4))])
def test_unflatten_zero_size(shape, dim, sizes):
    fo = flow.nn.Unflatten(dim, sizes)(flow.zeros(*shape))
    to = torch.nn.Unflatten(dim, sizes)(torch.zeros(*shape))
    assert tuple(fo.shape) == tuple(to.shape)
    assert tuple(flow.zeros(*shape).unflatten(dim, sizes).shape) == tuple(to.shape)


@pytest.mark.parametrize("shape,dim,sizes", [((2, 6), 1, (4, -1)), ((2, 6), 1, (-1, -1)), ((2, 0), 1, (0, -1)),
                                             ((2, 6), 1, (2, 4)), ((2, 6), 1, ()), ((2, 6), 5, (2, 3)),
                                             ((2, 6), 1, (-2, -3))])
def test_unflatten_errors_match_torch(shape, dim, sizes):
    with pytest.raises(Exception) as fe:
        flow.zeros(*shape).unflatten(dim, sizes)
    with pytest.raises(Exception) as te:
        torch.zeros(*shape).unflatten(dim, sizes)
    assert fe.type is te.type
    # torch appends its C++ stack to some of them
    assert str(te.value).startswith(str(fe.value))
