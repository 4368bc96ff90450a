"""Behaviour of nn matched to PyTorch after differential reviews: attention rows with no key to attend to,
TransformerEncoder's inference output on padded positions, binary_cross_entropy's target gradient at 0 and 1,
the exception types and messages of losses, softmax and interpolate on bad input, container reprs and
operations (ModuleList runs, Sequential insert and *, parameter containers holding any object), always_call
forward hooks, backward hooks returning the wrong number of gradients, 0-dim parameters loaded from 1-element
checkpoints, the autocast dtypes of addr and grid_sample, TripletMarginWithDistanceLoss's default distance
child, and the deprecation warning of size_average/reduce."""
import warnings

import numpy as np
import pytest

import oneflow as flow
import oneflow.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype("float32")


def both(fn):
    """fn(M, F) evaluated with oneflow and with torch."""
    return fn(flow, F), fn(torch, TF)


@pytest.mark.parametrize("float_mask", [False, True])
def test_sdpa_row_without_keys_gives_zeros_and_zero_grads(float_mask):
    q, k, v, g = rand(2, 3, 4), rand(2, 5, 4), rand(2, 5, 4), rand(2, 3, 4)
    allowed = np.array([[True, False, True, True, False], [False] * 5, [True] * 5])
    res = []
    for M, FF in ((flow, F), (torch, TF)):
        Q, K, V = (M.tensor(a, requires_grad=True) for a in (q, k, v))
        mask = M.tensor(np.where(allowed, 0.0, -np.inf).astype("float32")) if float_mask else M.tensor(allowed)
        out = FF.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
        (out * M.tensor(g)).sum().backward()
        res.append([t.detach().numpy() for t in (out, Q.grad, K.grad, V.grad)])
    for a, b in zip(*res):
        assert np.isfinite(a).all()
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert (res[0][0][:, 1] == 0).all()


def test_multihead_attention_empty_rows_depend_on_need_weights():
    for M in (flow, torch):
        M.manual_seed(0)
    mods = both(lambda M, FF: M.nn.MultiheadAttention(4, 2))
    mods[0].load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in mods[1].state_dict().items()})
    x = rand(3, 2, 4)
    mask = np.array([[True, True, True], [False, True, False], [False, False, False]])  # True: masked
    outs = []
    for m, M in zip(mods, (flow, torch)):
        X = M.tensor(x)
        no_w = m(X, X, X, attn_mask=M.tensor(mask), need_weights=False)[0].detach().numpy()
        out_w, w = m(X, X, X, attn_mask=M.tensor(mask))
        outs.append((no_w, out_w.detach().numpy(), w.detach().numpy()))
    (a_no, a_out, a_w), (b_no, b_out, b_w) = outs
    np.testing.assert_allclose(a_no, b_no, rtol=1e-5, atol=1e-6)  # fused path in torch: row 0 -> zeros
    assert np.isfinite(a_no).all()
    # with weights returned, torch keeps softmax's NaN for the query that sees no key
    np.testing.assert_array_equal(np.isnan(a_w), np.isnan(b_w))
    np.testing.assert_array_equal(np.isnan(a_out), np.isnan(b_out))


def test_encoder_layer_with_fully_masked_row_stays_finite():
    torch.manual_seed(0)
    t_layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    f_layer = flow.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    f_layer.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in t_layer.state_dict().items()})
    x = rand(3, 2, 8)
    mask = np.array([[True, True, True], [False, True, False], [False, False, False]])
    fx, tx = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fo, to = f_layer(fx, src_mask=flow.tensor(mask)), t_layer(tx, src_mask=torch.tensor(mask))
    np.testing.assert_allclose(fo.detach().numpy(), to.detach().numpy(), rtol=1e-4, atol=1e-5)
    fo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_bce_target_gradient_unclamped_like_torch():
    grads = []
    for M, FF in ((flow, F), (torch, TF)):
        t = M.tensor([0.0, 1.0, 0.3], requires_grad=True)
        FF.binary_cross_entropy(M.tensor([0.0, 1.0, 0.25]), t).backward()
        grads.append(t.grad.numpy())
    np.testing.assert_array_equal(grads[0][:2], [np.inf, -np.inf])
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)


ERROR_CASES = {
    "cross_entropy int32 target": lambda M, FF: FF.cross_entropy(M.zeros(2, 3), M.tensor([0, 1], dtype=M.int32)),
    "nll_loss int32 target": lambda M, FF: FF.nll_loss(M.zeros(2, 3), M.tensor([0, 1], dtype=M.int32)),
    "cross_entropy label_smoothing": lambda M, FF: FF.cross_entropy(M.zeros(2, 3), M.tensor([0, 1]),
                                                                    label_smoothing=1.5),
    "cross_entropy int64 input": lambda M, FF: FF.cross_entropy(M.zeros(2, 3, dtype=M.int64), M.tensor([0, 1])),
    "cross_entropy integer probabilities": lambda M, FF: FF.cross_entropy(M.zeros(2, 3),
                                                                          M.zeros(2, 3, dtype=M.int64)),
    "cross_entropy 0-dim": lambda M, FF: FF.cross_entropy(M.tensor(1.0), M.tensor(0)),
    "softmax int64 last dim": lambda M, FF: FF.softmax(M.zeros(2, 3, dtype=M.int64), 1),
    "log_softmax int64 inner dim": lambda M, FF: FF.log_softmax(M.zeros(2, 3, 4, dtype=M.int64), 1),
    "softmax int dtype=": lambda M, FF: FF.softmax(M.zeros(2, 3), 1, dtype=M.int32),
    "bce int64 target": lambda M, FF: FF.binary_cross_entropy(M.full((2,), 0.5), M.ones(2, dtype=M.int64)),
    "bce float64 target": lambda M, FF: FF.binary_cross_entropy(M.full((2,), 0.5), M.ones(2, dtype=M.float64)),
    "mse int32": lambda M, FF: FF.mse_loss(M.ones(2, dtype=M.int32), M.ones(2, dtype=M.int32)),
    "smooth_l1 int64": lambda M, FF: FF.smooth_l1_loss(M.ones(2, dtype=M.int64), M.ones(2, dtype=M.int64)),
    "huber int64": lambda M, FF: FF.huber_loss(M.ones(2, dtype=M.int64), M.ones(2, dtype=M.int64)),
    "multi_margin target": lambda M, FF: FF.multi_margin_loss(M.zeros(2, 3), M.tensor([0, 7])),
    "multi_margin 2-D weight": lambda M, FF: FF.multi_margin_loss(M.zeros(2, 2), M.tensor([0, 1]),
                                                                  weight=M.ones(2, 2)),
    "multilabel_margin target": lambda M, FF: FF.multilabel_margin_loss(M.zeros(2, 3),
                                                                        M.tensor([[0, 7, -1], [1, -1, 0]])),
    "triplet_margin margin": lambda M, FF: FF.triplet_margin_loss(M.ones(2, 3), M.ones(2, 3), M.ones(2, 3),
                                                                  margin=-1.0),
    "cosine_embedding 2-D target": lambda M, FF: FF.cosine_embedding_loss(M.ones(2, 5, 4), M.ones(2, 5, 4),
                                                                          M.ones(2, 5)),
    "interpolate size + recompute": lambda M, FF: FF.interpolate(M.ones(1, 1, 2, 2), size=4,
                                                                 recompute_scale_factor=True),
}


@pytest.mark.parametrize("name", list(ERROR_CASES))
def test_error_type_and_message_match_torch(name):
    fn = ERROR_CASES[name]
    with pytest.raises(Exception) as ref:
        fn(torch, TF)
    with pytest.raises(type(ref.value)) as got:
        fn(flow, F)
    assert str(got.value) == str(ref.value)


def test_module_list_repr_collapses_repeats():
    def build(M):
        layer = M.nn.Linear(2, 2)
        return M.nn.ModuleList([M.nn.ReLU(), M.nn.ReLU(), layer, M.nn.ReLU(), M.nn.ReLU(), M.nn.ReLU()])
    f, t = both(lambda M, FF: build(M))
    assert repr(f) == repr(t)
    assert "(0-1): 2 x ReLU()" in repr(f) and "(3-5): 3 x ReLU()" in repr(f)
    enc = both(lambda M, FF: M.nn.TransformerEncoder(M.nn.TransformerEncoderLayer(4, 2, 8), 3,
                                                     enable_nested_tensor=False))
    assert repr(enc[0]) == repr(enc[1])
    assert repr(flow.nn.ModuleList()) == repr(torch.nn.ModuleList())


def test_triplet_margin_with_distance_default_child():
    f, t = both(lambda M, FF: M.nn.TripletMarginWithDistanceLoss())
    assert repr(f) == repr(t)
    assert [n for n, _ in f.named_children()] == ["distance_function"]
    a, p, n = rand(4, 3), rand(4, 3), rand(4, 3)
    got = f(flow.tensor(a), flow.tensor(p), flow.tensor(n)).numpy()
    ref = t(torch.tensor(a), torch.tensor(p), torch.tensor(n)).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5)


@pytest.mark.parametrize("kw,expected", [({"size_average": False}, "sum"), ({"reduce": False}, "none"),
                                         ({"size_average": True, "reduce": True}, "mean")])
def test_legacy_reduction_arguments_warn(kw, expected):
    for call in (lambda: flow.nn.MSELoss(**kw), lambda: F.mse_loss(flow.ones(2), flow.ones(2), **kw)):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            call()
        msgs = [str(x.message) for x in w]
        assert msgs == [f"size_average and reduce args will be deprecated, please use reduction='{expected}' "
                        "instead."]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert flow.nn.MSELoss(**kw).reduction == torch.nn.MSELoss(**kw).reduction


def _encoder_pair(norm, **layer_kw):
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, **layer_kw), 2,
                                        norm=torch.nn.LayerNorm(8) if norm else None)
        f = flow.nn.TransformerEncoder(flow.nn.TransformerEncoderLayer(8, 2, 16, **layer_kw), 2,
                                       norm=flow.nn.LayerNorm(8) if norm else None)
    sd = t.state_dict()
    if norm:
        sd["norm.bias"].data.fill_(0.5)  # padded positions then come out as the norm's bias
    f.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in sd.items()})
    return f.eval(), t.eval()


@pytest.mark.parametrize("norm", [False, True])
@pytest.mark.parametrize("pad", [[[False, False, True, True], [False, False, False, True]],  # at the end: nested
                                 [[True, False, True, False], [False] * 4]])  # not left-aligned: dense in torch
def test_encoder_inference_padding_like_torch_nested_path(norm, pad):
    f, t = _encoder_pair(norm, batch_first=True)
    assert f.use_nested_tensor and t.use_nested_tensor
    x = rand(2, 4, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's prototype-nested-tensor notice
        with torch.no_grad():
            ref = t(torch.tensor(x), src_key_padding_mask=torch.tensor(pad)).numpy()
        with flow.no_grad():
            got = f(flow.tensor(x), src_key_padding_mask=flow.tensor(pad)).numpy()
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)
        # with gradients wanted both run densely: padded positions are computed
        ref = t(torch.tensor(x), src_key_padding_mask=torch.tensor(pad)).detach().numpy()
        got = f(flow.tensor(x), src_key_padding_mask=flow.tensor(pad)).detach().numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layer_kw", [{}, {"batch_first": True, "norm_first": True},
                                      {"batch_first": True, "activation": lambda x: x}])
def test_encoder_nested_tensor_warning_like_torch(layer_kw):
    msgs = []
    for M in (flow, torch):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            enc = M.nn.TransformerEncoder(M.nn.TransformerEncoderLayer(8, 2, 16, **layer_kw), 1)
        msgs.append(([str(x.message) for x in w if "nested" in str(x.message)], enc.use_nested_tensor))
    assert msgs[0] == msgs[1] and msgs[0][0]


# ---- Module and containers --------------------------------------------------------------------------------
def test_sequential_insert_mul_like_torch():
    for idx in (-2, -1, 0, 1, 2):
        names = []
        for M in (flow, torch):
            s = M.nn.Sequential(M.nn.ReLU(), M.nn.Tanh())
            assert s.insert(idx, M.nn.ELU()) is s
            names.append([type(m).__name__ for m in s])
        assert names[0] == names[1], idx
    for bad in (3, -3):
        with pytest.raises(IndexError, match=f"Index out of range: {bad}"):
            flow.nn.Sequential(flow.nn.ReLU(), flow.nn.Tanh()).insert(bad, flow.nn.ELU())
    s = flow.nn.Sequential(flow.nn.ReLU(), flow.nn.Linear(2, 2))
    for c in (s * 2, 2 * s):
        assert len(c) == 4 and c[0] is c[2] and c[1] is c[3]
    s *= 3
    assert len(s) == 6 and s[1] is s[5]
    with pytest.raises(ValueError, match="Non-positive"):
        s * 0
    with pytest.raises(TypeError):
        s * 1.5


def test_parameter_containers_hold_any_object_like_torch():
    built = both(lambda M, FF: (M.nn.ParameterList([M.ones(2, 3), 1, "a", M.nn.Parameter(M.zeros(2))]),
                                M.nn.ParameterDict({"a": 1, "b": M.ones(2, 3)})))
    for (pl, pd), (tl, td) in [built]:
        assert [n for n, _ in pl.named_parameters()] == [n for n, _ in tl.named_parameters()] == ["0", "3"]
        assert pl[1] == 1 and list(pl)[2] == "a" and len(pl) == 4
        assert repr(pl) == repr(tl).replace("torch.", "oneflow.")
        assert repr(pd) == repr(td).replace("torch.", "oneflow.")
        assert [n for n, _ in pd.named_parameters()] == ["b"] and list(pd.keys()) == ["a", "b"]
    pd = built[0][1]
    assert isinstance(pd.setdefault("c", flow.zeros(1)), flow.nn.Parameter) and list(pd) == ["a", "b", "c"]
    assert pd.setdefault("a", 5) == 1
    assert pd.popitem()[0] == "c" and list(pd) == ["a", "b"]
    cp = pd.copy()
    assert type(cp) is flow.nn.ParameterDict and cp["b"] is pd["b"]
    assert list((pd | {"z": 3}).keys()) == ["a", "b", "z"] and list(({"y": 2} | pd).keys()) == ["y", "a", "b"]
    pd |= {"w": 5}
    assert list(pd) == ["a", "b", "w"]
    with pytest.raises(TypeError, match="not a string"):
        pd[1] = flow.ones(1)
    assert list(flow.nn.ParameterDict.fromkeys(["p", "q"], 0)) == ["p", "q"]
    assert str(flow.nn.Parameter(flow.zeros(1))).startswith("Parameter containing:")


def test_always_call_forward_hook_runs_when_forward_raises():
    logs = []
    for M in (flow, torch):
        class Bad(M.nn.Module):
            def forward(self, x):
                raise ValueError("boom")

        log = []
        m = Bad()
        m.register_forward_hook(lambda mod, a, out: log.append(out), always_call=True)
        m.register_forward_hook(lambda mod, a, out: log.append("not always"))
        with pytest.raises(ValueError):
            m(M.ones(1))
        lin = M.nn.Linear(1, 1)

        def failing(mod, a, out):
            raise KeyError("hook")

        lin.register_forward_hook(failing)
        lin.register_forward_hook(lambda mod, a, out: log.append(tuple(out.shape)), always_call=True)
        with pytest.raises(KeyError):
            lin(M.ones(1))
        logs.append(log)
    assert logs[0] == logs[1] == [None, (1,)]


@pytest.mark.parametrize("pre", [False, True])
def test_backward_hook_wrong_gradient_count_raises(pre):
    msgs = []
    for M in (flow, torch):
        lin = M.nn.Linear(2, 2)
        if pre:
            lin.register_full_backward_pre_hook(lambda m, go: (go[0], go[0]))
        else:
            lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
        with pytest.raises(RuntimeError) as e:
            lin(M.ones(1, 2, requires_grad=True)).sum().backward()
        msgs.append(str(e.value))
    assert msgs[0] == msgs[1]


def test_zero_dim_parameter_loads_one_element_checkpoint():
    m = flow.nn.Module()
    m.p = flow.nn.Parameter(flow.tensor(1.0))
    m.load_state_dict({"p": flow.tensor([3.0])})
    assert m.p.dim() == 0 and m.p.item() == 3.0


def test_autocast_addr_and_grid_sample_dtypes_like_torch():
    got = []
    for M, FF in ((flow, F), (torch, TF)):
        v = M.ones(3)
        with M.autocast("cpu", dtype=M.bfloat16):
            a = M.addr(M.zeros(3, 3), v, v).dtype
            g = FF.grid_sample(M.ones(1, 1, 4, 4).bfloat16(), M.zeros(1, 2, 2, 2), align_corners=False).dtype
        got.append((str(a).split(".")[-1], str(g).split(".")[-1]))
    assert got[0] == got[1] == ("float32", "float32")


def test_forward_pre_hook_with_kwargs_must_return_a_pair():
    msgs = []
    for M in (flow, torch):
        m = M.nn.Linear(2, 2)
        m.register_forward_pre_hook(lambda mod, a, kw: a, with_kwargs=True)
        with pytest.raises(RuntimeError) as e:
            m(M.ones(1, 2))
        msgs.append(str(e.value).split("but got")[0])
    assert msgs[0] == msgs[1]


def test_skip_init_and_cpu_amp_spellings():
    lin = flow.nn.utils.skip_init(flow.nn.Linear, 3, 4, bias=False)
    assert tuple(lin.weight.shape) == (4, 3) and lin.bias is None
    with pytest.raises(RuntimeError, match="Module must support a 'device' arg"):
        flow.nn.utils.skip_init(flow.nn.ReLU)
    with pytest.warns(FutureWarning, match=r"oneflow.cpu.amp.autocast\(args...\)` is deprecated"):
        ctx = flow.cpu.amp.autocast(dtype=flow.bfloat16)
    with ctx:
        assert flow.mm(flow.ones(2, 2), flow.ones(2, 2)).dtype == flow.bfloat16
    with pytest.warns(FutureWarning, match=r"oneflow.cpu.amp.GradScaler\(args...\)` is deprecated"):
        assert flow.cpu.amp.GradScaler().is_enabled()
    assert flow.cpu.is_available() and flow.cpu.device_count() == 1 and flow.cpu.current_device() == "cpu"


def test_state_dict_metadata_versions_like_torch(tmp_path):
    f, t = both(lambda M, FF: M.nn.Sequential(M.nn.Linear(2, 2), M.nn.Sequential(M.nn.BatchNorm1d(2))))
    fm, tm = f.state_dict()._metadata, t.state_dict()._metadata
    assert list(fm.items()) == list(tm.items())
    assert fm["1.0"] == {"version": 2}
    path = tmp_path / "sd.of"
    flow.save(f.state_dict(), path)
    assert dict(flow.load(path)._metadata) == dict(fm)  # kept through save/load, as torch's pickle keeps it


def _hook_log(M):
    log = []

    class Two(M.nn.Module):
        def forward(self, a, b):
            return a * b, a + b

    def vals(gs):
        return [None if g is None else g.tolist() for g in gs]

    m = Two()
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("hook", vals(go), vals(gi))))
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", vals(go))))
    a, b = M.tensor([1.0], requires_grad=True), M.tensor([2.0], requires_grad=True)
    m(a, b)[0].sum().backward()  # the second output reaches no loss

    class WithNumber(M.nn.Module):
        def forward(self, a):
            return a * 2, 5

    n = WithNumber()
    n.register_full_backward_hook(lambda mod, gi, go: log.append(("number", len(go), go[1])))
    n(M.tensor([1.0], requires_grad=True))[0].sum().backward()

    class AsDict(M.nn.Module):
        def forward(self, a):
            return {"x": a * 2}

    d = AsDict()
    d.register_full_backward_hook(lambda mod, gi, go: log.append("dict"))
    with pytest.warns(UserWarning, match="module output should be a Tensor or a tuple of Tensors"):
        out = d(M.tensor([1.0], requires_grad=True))
    out["x"].sum().backward()
    return log


def test_full_backward_hooks_see_outputs_like_torch():
    got, ref = _hook_log(flow), _hook_log(torch)
    assert got == ref
    assert got[0] == ("pre", [[1.0], None]) and got[2] == ("number", 2, None) and "dict" not in got


def test_full_backward_hook_warns_when_no_input_requires_grad():
    m = flow.nn.Linear(2, 2)
    seen = []
    m.register_full_backward_hook(lambda mod, gi, go: seen.append(gi))
    with pytest.warns(UserWarning, match="Full backward hook is firing when gradients are computed with respect to "
                                         "module outputs since no inputs require gradients"):
        m(flow.ones(1, 2)).sum().backward()
    assert seen == [(None,)]


# ---- activations ------------------------------------------------------------------------------------------
def test_prelu_special_values_and_argument_checks_like_torch():
    x = np.array([np.inf, np.nan, -0.0, -1.0, 0.0, 2.0, -np.inf], np.float32)
    res = []
    for M, FF in ((flow, F), (torch, TF)):
        xt, w = M.tensor(x, requires_grad=True), M.tensor([0.25], requires_grad=True)
        y = FF.prelu(xt, w)
        y.backward(M.ones(7))
        res.append((y.detach().numpy(), xt.grad.numpy(), w.grad.numpy()))
        nan_w = FF.prelu(M.tensor([-1.0, 2.0, 0.0]), M.tensor([float("nan")])).numpy()
        res.append((nan_w,))
    for a, b in zip(res[0] + res[1], res[2] + res[3]):
        np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(np.signbit(a), np.signbit(b))
    for fn in ACTIVATION_ERRORS.values():
        with pytest.raises(Exception) as ref:
            fn(torch, TF)
        with pytest.raises(type(ref.value), match=str(ref.value).replace("(", r"\(").replace(")", r"\)")):
            fn(flow, F)


ACTIVATION_ERRORS = {
    "prelu 2-D weight": lambda M, FF: FF.prelu(M.ones(2, 3, 4), M.ones(3, 1)),
    "prelu dtypes": lambda M, FF: FF.prelu(M.ones(2, 3, dtype=M.float64), M.ones(3)),
    "prelu integer input": lambda M, FF: FF.prelu(M.tensor([-2, 3]), M.tensor([0.25])),
    "rrelu bounds": lambda M, FF: FF.rrelu(M.tensor([-1.0, 2.0]), 0.5, 0.1),
    "glu integer input": lambda M, FF: FF.glu(M.tensor([1, 2, 3, 4])),
    "hardtanh uint8 negative limit": lambda M, FF: FF.hardtanh(M.tensor([0, 200], dtype=M.uint8)),
    "hardtanh int8 overflow": lambda M, FF: FF.hardtanh(M.tensor([-100, 100], dtype=M.int8), -300.0, 300.0),
    "Hardtanh bounds": lambda M, FF: M.nn.Hardtanh(2, 1),
    "threshold int32 overflow": lambda M, FF: FF.threshold(M.tensor([1, 2], dtype=M.int32), 3e10, 1),
}


def test_rrelu_training_branch_at_zero_and_nan():
    x = flow.tensor([0.0, float("nan"), -1.0, 2.0], requires_grad=True)
    F.rrelu(x, 0.1, 0.1, training=True).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.1, 1.0, 0.1, 1.0], rtol=1e-6)  # torch: x <= 0 takes the slope


def test_hardtanh_in_place_reversed_bounds_and_deprecated_keywords():
    got = F.hardtanh_(flow.tensor([0.0, 2.0, -3.0, float("nan")]), 2.0, 1.0).numpy()
    ref = TF.hardtanh_(torch.tensor([0.0, 2.0, -3.0, float("nan")]), 2.0, 1.0).numpy()
    np.testing.assert_array_equal(got, ref)  # lower bound first, then the upper: all 1 (NaN kept)
    assert F.hardtanh(flow.tensor([-100, 100], dtype=flow.int8), -3.0, 3.0).tolist() == [-3, 3]
    with pytest.warns(FutureWarning, match="`min_value` is deprecated and renamed to `min_val`"):
        m = flow.nn.Hardtanh(min_value=-2)
    assert repr(m) == "Hardtanh(min_val=-2, max_val=1.0)"


@pytest.mark.parametrize("name,kw", [("elu", {}), ("selu", {}), ("celu", {"alpha": 2.0}), ("elu", {"alpha": 0.5})])
def test_elu_family_keeps_relative_accuracy_near_zero(name, kw):
    # exp(x) - 1 cancels near 0 (elu(-1e-8) was 0); the results must match torch's expm1 to a few ulp
    x = np.concatenate([-np.logspace(-30, 2, 400), [-0.0, -0.5, -0.49999, -0.50001, -88.0, -1e30, 0.0, 1.0,
                                                     np.nan, -np.inf]]).astype(np.float32)
    got = getattr(F, name)(flow.tensor(x), **kw).numpy()
    ref = getattr(TF, name)(torch.tensor(x), **kw).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.signbit(got), np.signbit(ref))
    ok = ~np.isnan(ref)
    np.testing.assert_allclose(got[ok], ref[ok], rtol=3e-7, atol=0)


@pytest.mark.parametrize("bool_mask", [True, False])
def test_sdpa_attn_mask_combines_with_is_causal_like_torch(bool_mask):
    q, k, g = rand(1, 2, 4, 8), rand(1, 2, 5, 8), rand(1, 2, 4, 8)
    am = RNG.random((4, 5)) > 0.3 if bool_mask else rand(4, 5)
    res = []
    for M, FF in ((flow, F), (torch, TF)):
        Q, K = M.tensor(q, requires_grad=True), M.tensor(k, requires_grad=True)
        out = FF.scaled_dot_product_attention(Q, K, K, attn_mask=M.tensor(am), is_causal=True)
        (out * M.tensor(g)).sum().backward()
        res.append([out.detach().numpy(), Q.grad.numpy(), K.grad.numpy()])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kw,exc", [(dict(attn_mask=np.ones((4, 5), "int64")), RuntimeError),
                                    (dict(attn_mask=np.ones((4, 5), "float64")), RuntimeError),
                                    (dict(attn_mask=np.ones(5, "float32")), IndexError),
                                    (dict(dropout_p=1.5), RuntimeError), (dict(dropout_p=-0.1), RuntimeError)])
def test_sdpa_rejects_bad_masks_and_dropout_like_torch(kw, exc):
    q, k = rand(1, 2, 4, 8), rand(1, 2, 5, 8)
    for M, FF in ((flow, F), (torch, TF)):
        args = {n: M.tensor(v) if isinstance(v, np.ndarray) else v for n, v in kw.items()}
        with pytest.raises(exc):
            FF.scaled_dot_product_attention(M.tensor(q), M.tensor(k), M.tensor(k), **args)
    with pytest.raises(RuntimeError, match="at least 2 dimensional"):
        F.scaled_dot_product_attention(flow.ones(8), flow.ones(8), flow.ones(8))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        F.scaled_dot_product_attention(flow.ones(3, 4, 8), flow.ones(3, 4, 8), flow.ones(3, 4, 8),
                                       attn_mask=flow.zeros(2, 1, 4, 4))


def test_mha_is_causal_hint_replaces_mask_without_weights_like_torch():
    tm, fm = torch.nn.MultiheadAttention(8, 2), flow.nn.MultiheadAttention(8, 2)
    fm.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x, rm = rand(4, 3, 8), rand(4, 4)  # rm is not causal: the hint says it is, and torch believes the hint
    outs = []
    for M, m in ((flow, fm), (torch, tm)):
        X = M.tensor(x)
        outs.append([m(X, X, X, attn_mask=M.tensor(rm), is_causal=True, need_weights=nw)[0].detach().numpy()
                     for nw in (False, True)])
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-5, atol=1e-6)  # with weights: the mask is used
    assert np.abs(outs[0][0] - outs[0][1]).max() > 1e-3


def test_multi_head_attention_forward_static_k_v_like_torch():
    x, w, b, ow = rand(4, 3, 8), rand(24, 8), rand(24), rand(8, 8)
    sk, sv = rand(6, 5, 4), rand(6, 5, 4)
    outs = []
    for M, FF in ((flow, F), (torch, TF)):
        T = M.tensor
        o, wts = FF.multi_head_attention_forward(T(x), T(x), T(x), 8, 2, T(w), T(b), None, None, False, 0.0, T(ow),
                                                 T(np.zeros(8, "float32")), training=False, static_k=T(sk),
                                                 static_v=T(sv))
        outs.append((o.detach().numpy(), wts.detach().numpy()))
    for a, c in zip(*outs):
        np.testing.assert_allclose(a, c, rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError, match="expecting static_k.size"):
        F.multi_head_attention_forward(*(flow.tensor(x),) * 3, 8, 2, flow.tensor(w), flow.tensor(b), None, None,
                                       False, 0.0, flow.tensor(ow), None, static_k=flow.tensor(rand(5, 5, 4)),
                                       static_v=flow.tensor(sv))


def test_nn_attention_sdpa_kernel_names():
    from oneflow.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention import SDPBackend as TB

    assert {k: int(v) for k, v in SDPBackend.__members__.items()} == {k: int(v) for k, v in TB.__members__.items()}
    q = flow.tensor(rand(1, 4, 8))
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
        inside = F.scaled_dot_product_attention(q, q, q)
    np.testing.assert_array_equal(inside.numpy(), F.scaled_dot_product_attention(q, q, q).numpy())
    with pytest.raises(AssertionError, match="instance of SDPBackend"):
        with sdpa_kernel("math"):
            pass


@pytest.mark.parametrize("name,shape", [("BatchNorm1d", (0, 3)), ("BatchNorm2d", (0, 3, 4, 4)),
                                        ("BatchNorm3d", (0, 3, 2, 2, 2))])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_empty_batch_keeps_running_stats_like_torch(name, shape, momentum):
    res = []
    for M in (flow, torch):
        bn = getattr(M.nn, name)(3, momentum=momentum)
        x = M.zeros(*shape, requires_grad=True)
        y = bn(x)
        y.sum().backward()
        res.append([tuple(y.shape), bn.running_mean.numpy(), bn.running_var.numpy(), bn.weight.grad.numpy(),
                    bn.bias.grad.numpy(), int(bn.num_batches_tracked)])
    assert res[0][0] == res[1][0] and res[0][5] == res[1][5] == 1
    for a, b in zip(res[0][1:5], res[1][1:5]):
        np.testing.assert_array_equal(a, b)  # running stats untouched (not NaN), zero affine gradients


def test_instance_norm_empty_inputs_do_not_raise():
    m = flow.nn.InstanceNorm2d(3, track_running_stats=True)
    assert m(flow.zeros(0, 3, 4, 4)).shape == (0, 3, 4, 4)
    np.testing.assert_array_equal(m.running_mean.numpy(), np.zeros(3))
    assert F.instance_norm(flow.zeros(2, 0, 4, 4)).shape == (2, 0, 4, 4)


@pytest.mark.parametrize("kw", [dict(input=[0, 1, 1, 2], offsets=[0, 3], mode="sum"),
                                dict(input=[0, 1, 1, 2, 4], offsets=[0, 1, 1], mode="mean"),
                                dict(input=[[0, 1, 3], [3, 3, 1]], mode="mean", padding_idx=3),
                                dict(input=[[0, 2, 2], [2, 4, 0]], mode="sum", padding_idx=0)])
def test_embedding_bag_scale_grad_by_freq_counts_only_real_entries(kw):
    # each row's gradient is (its uses, weighted by the upstream gradient) / (its count in the input): the
    # filler slots of short bags and padding entries must not count as uses of row 0
    kw = dict(kw)
    inp, offs = kw.pop("input"), kw.pop("offsets", None)
    g = rand(2 if offs is None else len(offs), 3)
    w = flow.tensor(rand(5, 3), requires_grad=True)
    out = F.embedding_bag(flow.tensor(inp), w, None if offs is None else flow.tensor(offs), scale_grad_by_freq=True,
                          **kw)
    (out * flow.tensor(g)).sum().backward()
    ids = np.array(inp)
    bags = [ids[i] for i in range(len(ids))] if offs is None else np.split(ids, offs[1:])
    pad = kw.get("padding_idx")
    real = [[int(i) for i in b if i != pad] for b in bags]
    counts = np.bincount([i for b in real for i in b], minlength=5)
    want = np.zeros((5, 3), "float32")
    for b, gb in zip(real, g):
        for i in b:
            want[i] += gb / (len(b) if kw["mode"] == "mean" else 1) / counts[i]
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular", "constant"])
@pytest.mark.parametrize("shape", [(1, 1, 5), (1, 2, 4, 5), (1, 1, 3, 4, 5)])
def test_pad_with_negative_pads_crops_like_torch(mode, shape):
    rng = np.random.default_rng(len(shape) * 10 + len(mode))
    x = rng.standard_normal(shape)
    k = len(shape) - 2
    checked = 0
    for _ in range(30):
        p = [int(v) for v in rng.integers(-3, 4, 2 * k)]
        sizes = shape[::-1][:k]
        if mode == "circular" and any(max(p[2 * j], p[2 * j + 1]) > n - max(-p[2 * j], 0) - max(-p[2 * j + 1], 0)
                                      for j, n in enumerate(sizes)):
            continue  # wraps past what the crop leaves: torch reads uninitialised memory there, we raise
        res = []
        for M, FF in ((flow, F), (torch, TF)):
            X = M.tensor(x, requires_grad=True)
            try:
                y = FF.pad(X, p, mode=mode)
            except RuntimeError:
                res.append("error")
                continue
            y.backward(M.tensor(np.arange(y.numel(), dtype="float64").reshape(tuple(y.shape))))
            res.append((y.detach().numpy(), X.grad.numpy()))
        if isinstance(res[1], str) or isinstance(res[0], str):
            assert res[0] == res[1], (p, mode)
            continue
        checked += 1
        np.testing.assert_array_equal(res[0][0], res[1][0])
        if res[0][0].size == 0:  # nothing reached the input; torch's gradient is uninitialised memory here
            np.testing.assert_array_equal(res[0][1], np.zeros(shape))
        else:
            np.testing.assert_array_equal(res[0][1], res[1][1])
    assert checked > 5


def test_pad_bool_tensors_like_torch():
    b = np.array([[[True, False, True]]])
    for mode in ("constant", "circular"):
        assert F.pad(flow.tensor(b), (1, 2), mode=mode).tolist() == TF.pad(torch.tensor(b), (1, 2), mode=mode).tolist()
    for mode, kernel in (("reflect", "reflection_pad1d"), ("replicate", "replication_pad1d")):
        with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented for \'Bool\''):
            F.pad(flow.tensor(b), (1, 1), mode=mode)


def test_torch_module_paths_and_classes_exist():
    from oneflow.nn.modules.batchnorm import SyncBatchNorm, _BatchNorm, _NormBase
    from oneflow.nn.modules.instancenorm import _InstanceNorm
    from oneflow.nn.modules.linear import NonDynamicallyQuantizableLinear
    from oneflow.nn.modules.utils import _ntuple, _pair, _quadruple, _single, _triple

    assert issubclass(flow.nn.BatchNorm2d, _BatchNorm) and issubclass(_BatchNorm, _NormBase)
    assert issubclass(flow.nn.InstanceNorm2d, _InstanceNorm) and SyncBatchNorm is flow.nn.SyncBatchNorm
    assert (_single(2), _pair(3), _triple(1), _quadruple(0), _ntuple(2)((1, 2))) == ((2,), (3, 3), (1, 1, 1),
                                                                                    (0, 0, 0, 0), (1, 2))
    assert type(flow.nn.MultiheadAttention(4, 2).out_proj) is NonDynamicallyQuantizableLinear
    assert not isinstance(flow.nn.AvgPool3d(2), flow.nn.AvgPool2d)  # as in torch


def test_convert_sync_batchnorm_shares_parameters_and_normalises_like_batchnorm():
    net = flow.nn.Sequential(flow.nn.Conv2d(2, 3, 3), flow.nn.BatchNorm2d(3),
                             flow.nn.Sequential(flow.nn.BatchNorm1d(4)))
    net[1].running_mean.fill_(0.5)
    s = flow.nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert type(s[1]) is flow.nn.SyncBatchNorm and type(s[2][0]) is flow.nn.SyncBatchNorm
    assert s[1].weight is net[1].weight and s[1].running_mean is net[1].running_mean
    assert repr(s[1]) == repr(torch.nn.SyncBatchNorm(3)).replace("torch", "oneflow")
    x = rand(4, 3, 5, 5)
    ref = torch.nn.BatchNorm2d(3)
    ref.running_mean.fill_(0.5)
    np.testing.assert_allclose(s[1](flow.tensor(x)).detach().numpy(), ref(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s[1].running_mean.numpy(), ref.running_mean.numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="expected at least 2D input"):
        flow.nn.SyncBatchNorm(3)(flow.ones(3))


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_bicubic_matches_torch_with_gradients(padding_mode, align_corners):
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((2, 3, 5, 6)), rng.uniform(-1.3, 1.3, (2, 4, 7, 2))  # some taps fall outside
    gy = rng.standard_normal((2, 3, 4, 7))
    res = []
    for M, FF in ((flow, F), (torch, TF)):
        X, G = M.tensor(x, requires_grad=True), M.tensor(g, requires_grad=True)
        y = FF.grid_sample(X, G, mode="bicubic", padding_mode=padding_mode, align_corners=align_corners)
        y.backward(M.tensor(gy))
        res.append((y.detach().numpy(), X.grad.numpy(), G.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(flow.ones(1, 1, 2, 2, 2), flow.zeros(1, 1, 1, 1, 3), mode="bicubic", align_corners=False)


@pytest.mark.parametrize("call,exc", [(lambda M, FF: FF.pixel_shuffle(M.ones(1, 4, 2, 2), 2.0), TypeError),
                                      (lambda M, FF: FF.pixel_unshuffle(M.ones(1, 4, 2, 2), 2.0), TypeError),
                                      (lambda M, FF: FF.pad(M.ones(1, 4, 2, 2), (1.0, 2.0)), TypeError),
                                      (lambda M, FF: FF.interpolate(M.ones(1, 4, 2, 2), size=3.0), TypeError),
                                      (lambda M, FF: M.nn.utils.rnn.pack_padded_sequence(
                                          M.zeros(3, 0, 2), M.tensor([], dtype=M.int64)), RuntimeError)])
def test_float_size_arguments_and_empty_packing_raise_like_torch(call, exc):
    for M, FF in ((flow, F), (torch, TF)):
        with pytest.raises(exc):
            call(M, FF)
