"""PyTorch parity of the nn additions built in Python: lazy modules and Uninitialized* placeholders,
affine_grid / grid_sample, channel shuffle, feature alpha dropout, gumbel_softmax, pdist, the *_with_indices
pools and the deprecated upsample aliases. Values and gradients against torch, reprs, state_dict keys, edge
cases and error types."""
import copy
import itertools
import warnings

import numpy as np
import pytest

import oneflow as flow
import oneflow.nn.functional as F
from helpers import assert_close, check_vs_torch, to_np

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(0)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype("float32")


def raises(exc, fragment, fn):
    with pytest.raises(exc, match=fragment):
        fn()


# ---- lazy modules -------------------------------------------------------------------------------------
LAZY_CASES = [
    ("LazyLinear", dict(out_features=3), (2, 5)),
    ("LazyLinear", dict(out_features=3, bias=False), (4, 2, 5)),
    ("LazyConv1d", dict(out_channels=4, kernel_size=3, padding=1), (2, 3, 7)),
    ("LazyConv1d", dict(out_channels=4, kernel_size=3), (3, 7)),  # unbatched
    ("LazyConv2d", dict(out_channels=6, kernel_size=3, groups=2, stride=2, bias=False), (1, 4, 7, 6)),
    ("LazyConv2d", dict(out_channels=4, kernel_size=(2, 3), padding="same", padding_mode="reflect"), (2, 3, 5, 6)),
    ("LazyConv3d", dict(out_channels=2, kernel_size=2, dilation=2), (1, 3, 5, 5, 5)),
    ("LazyConvTranspose1d", dict(out_channels=4, kernel_size=3, stride=2, output_padding=1), (2, 3, 5)),
    ("LazyConvTranspose2d", dict(out_channels=4, kernel_size=3, groups=2, padding=1), (2, 4, 4, 5)),
    ("LazyConvTranspose3d", dict(out_channels=2, kernel_size=2, bias=False), (1, 3, 3, 2, 3)),
    ("LazyBatchNorm1d", dict(), (4, 3)),
    ("LazyBatchNorm1d", dict(momentum=None, affine=False), (4, 3, 5)),
    ("LazyBatchNorm2d", dict(eps=1e-3, bias=False), (2, 3, 4, 5)),
    ("LazyBatchNorm3d", dict(track_running_stats=False), (2, 3, 2, 3, 2)),
    ("LazyInstanceNorm1d", dict(affine=True, track_running_stats=True), (2, 3, 6)),
    ("LazyInstanceNorm2d", dict(), (2, 3, 4, 5)),
    ("LazyInstanceNorm3d", dict(affine=True), (1, 2, 3, 4, 3)),
]


def _tensor_items(sd):
    return [(k, tuple(v.shape)) for k, v in sd.items()]


@pytest.mark.parametrize("name,kw,shape", LAZY_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(LAZY_CASES)])
def test_lazy_module_matches_torch(name, kw, shape):
    fm, tm = getattr(flow.nn, name)(**kw), getattr(torch.nn, name)(**kw)
    assert repr(fm) == repr(tm)
    fsd, tsd = fm.state_dict(), tm.state_dict()
    assert list(fsd) == list(tsd)
    for k in tsd:
        lazy = isinstance(tsd[k], torch.nn.parameter.UninitializedTensorMixin)
        assert isinstance(fsd[k], flow.nn.parameter.UninitializedTensorMixin) == lazy, k
        assert (repr(fsd[k]) == repr(tsd[k])) if lazy else True
    assert fm.has_uninitialized_params()
    x = rand(*shape)
    fm(flow.tensor(x))
    tm(torch.tensor(x))
    # after the first call both became the plain class, with the same repr and state_dict layout
    assert type(fm).__name__ == type(tm).__name__ == name[len("Lazy"):]
    assert not isinstance(fm, flow.nn.modules.lazy.LazyModuleMixin)
    assert repr(fm) == repr(tm)
    assert _tensor_items(fm.state_dict()) == _tensor_items(tm.state_dict())
    for v in fm.parameters():
        assert type(v) is flow.nn.Parameter
    # the same weights give the same outputs and gradients
    fm.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    fm.train(), tm.train()
    check_vs_torch(fm, tm, [x], rtol=1e-4, atol=1e-5)
    for (n, fp), (_, tp) in zip(fm.named_parameters(), tm.named_parameters()):
        assert_close(fp.grad, tp.grad, rtol=1e-4, atol=1e-4)
    for (n, fb), (_, tb) in zip(fm.named_buffers(), tm.named_buffers()):
        assert_close(fb, tb, rtol=1e-4, atol=1e-5)


def test_lazy_reset_parameters_initialises_like_eager():
    flow.manual_seed(0)
    m = flow.nn.LazyConv2d(8, 3)
    m(flow.randn(1, 16, 5, 5))
    bound = 1 / np.sqrt(16 * 9)
    w, b = to_np(m.weight), to_np(m.bias)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert np.abs(b).max() <= bound and np.abs(b).std() > 0
    bn = flow.nn.LazyBatchNorm1d()
    bn(flow.randn(4, 3))
    assert_close(bn.weight, np.ones(3, "float32"))
    assert_close(bn.bias, np.zeros(3, "float32"))
    assert int(bn.num_batches_tracked) == 1


def test_lazy_load_state_dict_materialises_without_forward():
    src = torch.nn.Conv2d(3, 4, 3)
    m = flow.nn.LazyConv2d(4, 3)
    m.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in src.state_dict().items()})
    assert type(m) is flow.nn.LazyConv2d  # like torch: stays lazy until the first forward
    assert tuple(m.weight.shape) == (4, 3, 3, 3) and type(m.weight) is flow.nn.Parameter
    assert_close(m.weight, src.weight)
    x = rand(2, 3, 5, 5)
    assert_close(m(flow.tensor(x)), src(torch.tensor(x)), atol=1e-5)
    tm = torch.nn.LazyConv2d(4, 3)
    tm.load_state_dict(src.state_dict())
    tm(torch.tensor(x))
    # torch keeps in_channels == 0 when the shapes came from a state_dict; so do we
    assert type(m) is flow.nn.Conv2d and repr(m) == repr(tm)
    bn = flow.nn.LazyBatchNorm2d()
    bn.load_state_dict({k: flow.tensor(v.numpy()) for k, v in torch.nn.BatchNorm2d(5).state_dict().items()})
    assert tuple(bn.running_mean.shape) == (5,) and type(bn.running_mean) is flow.Tensor


def test_lazy_dtype_conversion_before_init():
    m = flow.nn.LazyBatchNorm1d().double()
    assert isinstance(m.running_mean, flow.nn.UninitializedBuffer)
    assert isinstance(m.weight, flow.nn.UninitializedParameter)
    m(flow.randn(3, 2, dtype=flow.float64))
    assert m.weight.dtype == flow.float64 and m.running_var.dtype == flow.float64
    lin = flow.nn.LazyLinear(2, dtype=flow.float64)
    lin(flow.randn(3, 4, dtype=flow.float64))
    assert lin.weight.dtype == flow.float64


def test_lazy_deepcopy_and_sequential():
    net = flow.nn.Sequential(flow.nn.LazyConv2d(4, 3), flow.nn.LazyBatchNorm2d(), flow.nn.ReLU(),
                             flow.nn.Flatten(), flow.nn.LazyLinear(2))
    twin = copy.deepcopy(net)
    assert isinstance(twin[0].weight, flow.nn.UninitializedParameter)
    out = net(flow.randn(2, 3, 6, 6))
    assert tuple(out.shape) == (2, 2)
    assert [type(m).__name__ for m in net] == ["Conv2d", "BatchNorm2d", "ReLU", "Flatten", "Linear"]
    assert net[4].in_features == 4 * 4 * 4
    assert isinstance(twin[0].weight, flow.nn.UninitializedParameter)  # the copy is untouched
    assert len(list(net.parameters())) == 6


def test_uninitialized_parameter_and_buffer():
    p = flow.nn.UninitializedParameter()
    assert repr(p) == "<UninitializedParameter>" and p.requires_grad
    assert isinstance(p, flow.nn.Parameter)
    raises(RuntimeError, "Can't access the shape of an uninitialized parameter", lambda: p.shape)
    p.materialize((2, 3))
    assert type(p) is flow.nn.Parameter and tuple(p.shape) == (2, 3) and p.requires_grad
    b = flow.nn.UninitializedBuffer(dtype=flow.float64)
    assert repr(b) == "<UninitializedBuffer>" and not b.requires_grad
    b.materialize((4,))
    assert type(b) is flow.Tensor and b.dtype == flow.float64 and tuple(b.shape) == (4,)


def test_lazy_errors():
    m = flow.nn.LazyConv2d(4, 3, groups=2)
    raises(ValueError, "in_channels must be divisible by groups", lambda: m(flow.randn(1, 3, 5, 5)))
    raises(RuntimeError, "Expected 3D \\(unbatched\\) or 4D \\(batched\\) input to LazyConv2d",
           lambda: flow.nn.LazyConv2d(4, 3)(flow.randn(5, 5)))
    raises(ValueError, "expected 4D input", lambda: flow.nn.LazyBatchNorm2d()(flow.randn(2, 3)))


# ---- affine_grid / grid_sample ------------------------------------------------------------------------
@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("size", [(2, 3, 5, 4), (1, 1, 1, 6), (2, 3, 3, 5, 4), (1, 2, 2, 1, 3)])
def test_affine_grid(size, align_corners):
    d = len(size) - 2
    theta = rand(size[0], d, d + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # unit-size grids warn in both
        check_vs_torch(lambda t: F.affine_grid(t, size, align_corners),
                       lambda t: TF.affine_grid(t, size, align_corners), [theta], atol=1e-5)


def test_affine_grid_errors_and_default_warning():
    raises(ValueError, "Nx2x3", lambda: F.affine_grid(flow.randn(1, 3, 4), (1, 1, 4, 4), False))
    raises(ValueError, "floating point", lambda: F.affine_grid(flow.ones(1, 2, 3, dtype=flow.int64), (1, 1, 2, 2),
                                                              False))
    raises(NotImplementedError, "4D and 5D", lambda: F.affine_grid(flow.randn(1, 2, 3), (1, 1, 4), False))
    raises(ValueError, "positive output size", lambda: F.affine_grid(flow.randn(1, 2, 3), (1, 0, 4, 4), False))
    theta = flow.randn(1, 2, 3)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        g = F.affine_grid(theta, (1, 1, 3, 3))
    assert_close(g, F.affine_grid(theta, (1, 1, 3, 3), False))  # the default is align_corners=False


GS_CASES = list(itertools.product(["bilinear", "nearest"], ["zeros", "border", "reflection"], [True, False]))


@pytest.mark.parametrize("mode,padding_mode,align_corners", GS_CASES)
def test_grid_sample_4d(mode, padding_mode, align_corners):
    x = rand(2, 3, 5, 7)
    grid = rand(2, 4, 6, 2, scale=1.3)  # many points outside [-1, 1]: exercises the padding mode
    check_vs_torch(lambda a, g: F.grid_sample(a, g, mode, padding_mode, align_corners),
                   lambda a, g: TF.grid_sample(a, g, mode, padding_mode, align_corners), [x, grid], atol=1e-5,
                   grad_atol=1e-4)


@pytest.mark.parametrize("mode,padding_mode,align_corners", GS_CASES)
def test_grid_sample_5d(mode, padding_mode, align_corners):
    x = rand(2, 2, 4, 3, 5)
    grid = rand(2, 3, 2, 4, 3, scale=1.3)
    check_vs_torch(lambda a, g: F.grid_sample(a, g, mode, padding_mode, align_corners),
                   lambda a, g: TF.grid_sample(a, g, mode, padding_mode, align_corners), [x, grid], atol=1e-5,
                   grad_atol=1e-4)


@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_non_contiguous_batch_of_one(padding_mode):
    x = rand(1, 6, 5, 3)  # permuted to (1, 3, 6, 5) inside: a non-contiguous input
    grid = rand(1, 2, 7, 4, scale=1.5)  # permuted to (1, 7, 4, 2): a non-contiguous grid
    check_vs_torch(lambda a, g: F.grid_sample(a.permute(0, 3, 1, 2), g.permute(0, 2, 3, 1), "bilinear",
                                              padding_mode, False),
                   lambda a, g: TF.grid_sample(a.permute(0, 3, 1, 2), g.permute(0, 2, 3, 1), "bilinear",
                                               padding_mode, False), [x, grid], atol=1e-5, grad_atol=1e-4)


def test_grid_sample_identity_and_pipeline():
    # the identity affine grid reproduces the input exactly (pixel centres, align_corners=False)
    x = rand(2, 3, 4, 5)
    theta = np.tile(np.array([[1, 0, 0], [0, 1, 0]], "float32"), (2, 1, 1))
    grid = F.affine_grid(flow.tensor(theta), (2, 3, 4, 5), align_corners=False)
    assert_close(F.grid_sample(flow.tensor(x), grid, align_corners=False), x, atol=1e-5)
    # a spatial transformer: gradients reach theta through affine_grid and grid_sample
    theta = rand(2, 2, 3, scale=0.5)
    check_vs_torch(lambda a, t: F.grid_sample(a, F.affine_grid(t, (2, 3, 6, 6), True), align_corners=True),
                   lambda a, t: TF.grid_sample(a, TF.affine_grid(t, (2, 3, 6, 6), True), align_corners=True),
                   [x, theta], atol=1e-5, grad_atol=1e-4)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_grid_sample_non_finite_grid(mode, padding_mode):
    # NaN/inf positions used to become int64 min and fail the gather; torch samples 0 (nearest/zeros), NaN
    # (bilinear/zeros) or index 0 / the clamped border (border, reflection)
    x = np.arange(1.0, 5.0, dtype="float32").reshape(1, 1, 2, 2)
    for v in (float("nan"), float("inf"), -float("inf")):
        g = np.array([[[[v, 0.0], [0.0, v], [0.5, -0.5]]]], dtype="float32")
        for ac in (True, False):
            assert_close(F.grid_sample(flow.tensor(x), flow.tensor(g), mode, padding_mode, ac),
                         torch.nn.functional.grid_sample(torch.tensor(x), torch.tensor(g), mode, padding_mode, ac),
                         )


def test_grid_sample_errors():
    x, g = flow.randn(1, 1, 3, 3), flow.randn(1, 2, 2, 2)
    raises(ValueError, "expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'linear'",
           lambda: F.grid_sample(x, g, mode="linear", align_corners=False))
    raises(ValueError, "expected padding_mode to be 'zeros', 'border', or 'reflection', but got: 'wrap'",
           lambda: F.grid_sample(x, g, padding_mode="wrap", align_corners=False))
    raises(RuntimeError, "expected grid to have size 2 in last dimension",
           lambda: F.grid_sample(x, flow.randn(1, 2, 2, 3), align_corners=False))
    raises(RuntimeError, "same batch size", lambda: F.grid_sample(x, flow.randn(2, 2, 2, 2), align_corners=False))
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        F.grid_sample(x, g)


# ---- channel shuffle ----------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,groups", [((2, 6, 3, 4), 3), ((1, 8, 5), 2), ((2, 4, 2, 2, 3), 4), ((1, 3, 2), 1)])
def test_channel_shuffle(shape, groups):
    x = rand(*shape)
    check_vs_torch(lambda a: F.channel_shuffle(a, groups), lambda a: TF.channel_shuffle(a, groups), [x])
    # torch's native_channel_shuffle has no derivative; ours is differentiable (checked through channel_shuffle)
    check_vs_torch(lambda a: F.native_channel_shuffle(a, groups), lambda a: TF.native_channel_shuffle(a, groups),
                   [x], grad=False)
    check_vs_torch(flow.nn.ChannelShuffle(groups), torch.nn.ChannelShuffle(groups), [x])


def test_channel_shuffle_non_contiguous_module_and_errors():
    x = rand(2, 5, 6, 4)  # transposed to (2, 6, 5, 4): channels are strided
    check_vs_torch(lambda a: F.channel_shuffle(a.transpose(1, 2), 2),
                   lambda a: TF.channel_shuffle(a.transpose(1, 2), 2), [x])
    assert repr(flow.nn.ChannelShuffle(3)) == repr(torch.nn.ChannelShuffle(3))
    raises(RuntimeError, "Number of channels must be divisible by groups",
           lambda: F.channel_shuffle(flow.randn(1, 5, 2, 2), 2))
    raises(RuntimeError, "at least 3 dimensions", lambda: F.channel_shuffle(flow.randn(2, 4), 2))


# ---- feature alpha dropout ----------------------------------------------------------------------------
def test_feature_alpha_dropout_identity_cases():
    x = rand(2, 3, 4, 5)
    for fn in (lambda a: F.feature_alpha_dropout(a, 0.5, training=False), lambda a: F.feature_alpha_dropout(a),
               lambda a: F.feature_alpha_dropout(a, 0.0, training=True)):
        assert_close(fn(flow.tensor(x)), x)
    m, tm = flow.nn.FeatureAlphaDropout(0.3), torch.nn.FeatureAlphaDropout(0.3)
    assert repr(m) == repr(tm)
    m.eval()
    assert_close(m(flow.tensor(x)), x)
    assert_close(F.feature_alpha_dropout(flow.tensor(x), 1.0, True), np.zeros_like(x))


def test_feature_alpha_dropout_structure_and_statistics():
    flow.manual_seed(3)
    p = 0.4
    alpha = 1.6732632423543772848170429916717 * 1.0507009873554804934193349852946
    a = ((1 - p) * (1 + p * alpha * alpha)) ** -0.5
    b = alpha * a * p
    x = rand(400, 50, 6, 4)
    out = to_np(flow.nn.FeatureAlphaDropout(p)(flow.tensor(x)))
    kept = np.isclose(out, x * a + b, atol=1e-5).all(axis=(2, 3))
    dropped = np.isclose(out, -alpha * a + b, atol=1e-5).all(axis=(2, 3))
    assert (kept ^ dropped).all()  # each (sample, channel) is kept or dropped as a whole
    assert abs(dropped.mean() - p) < 0.02
    assert abs(out.mean()) < 0.02 and abs(out.var() - 1) < 0.03  # self-normalising


def test_feature_alpha_dropout_gradient_and_errors():
    flow.manual_seed(0)
    x = flow.tensor(rand(3, 4, 5), requires_grad=True)
    out = F.feature_alpha_dropout(x, 0.5, True)
    out.sum().backward()
    g = to_np(x.grad)
    # the gradient is the per-channel scale: a or 0 over a whole channel
    assert (g.std(axis=2) < 1e-6).all() and len(np.unique(np.round(g, 5))) <= 2
    raises(ValueError, "dropout probability has to be between 0 and 1, but got 1.5",
           lambda: F.feature_alpha_dropout(x, 1.5, True))
    raises(ValueError, "dropout probability has to be between 0 and 1", lambda: flow.nn.FeatureAlphaDropout(-0.1))


# ---- gumbel_softmax -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_gumbel_softmax_soft_and_hard(dim):
    logits = flow.tensor(rand(4, 5, 3))
    soft = F.gumbel_softmax(logits, tau=0.7, dim=dim)
    assert tuple(soft.shape) == (4, 5, 3)
    assert_close(soft.sum(dim), np.ones([s for i, s in enumerate((4, 5, 3)) if i != dim % 3], "float32"),
                 atol=1e-5)
    assert (to_np(soft) > 0).all()
    hard = to_np(F.gumbel_softmax(logits, hard=True, dim=dim))
    assert set(np.unique(hard)) <= {0.0, 1.0}
    assert (hard.sum(dim) == 1).all()


def test_gumbel_softmax_straight_through_gradient():
    x = rand(6, 5)
    grads, outs = [], []
    w = flow.tensor(rand(6, 5))
    for hard in (False, True):
        flow.manual_seed(7)  # same Gumbel noise for both
        lg = flow.tensor(x, requires_grad=True)
        y = F.gumbel_softmax(lg, tau=0.5, hard=hard)
        (y * w).sum().backward()
        grads.append(to_np(lg.grad))
        outs.append(to_np(y))
    soft, hard = outs
    np.testing.assert_array_equal(hard, np.eye(5, dtype="float32")[soft.argmax(-1)])
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)
    assert np.abs(grads[0]).max() > 0


def test_gumbel_softmax_sampling_distribution_and_warning():
    flow.manual_seed(1)
    logits = np.log(np.array([0.1, 0.2, 0.3, 0.4], "float32"))
    y = to_np(F.gumbel_softmax(flow.tensor(np.tile(logits, (20000, 1))), tau=2.0, hard=True))
    np.testing.assert_allclose(y.mean(0), [0.1, 0.2, 0.3, 0.4], atol=0.015)  # argmax ~ Categorical(softmax)
    with pytest.warns(UserWarning, match="`eps` parameter is deprecated"):
        F.gumbel_softmax(flow.randn(2, 3), eps=1e-5)


# ---- pdist --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("p", [2, 1, 3, 0.5, float("inf")])
def test_pdist(p):
    x = rand(6, 4)
    check_vs_torch(lambda a: F.pdist(a, p), lambda a: TF.pdist(a, p), [x], rtol=1e-5, atol=1e-5)


def test_pdist_edge_cases_and_errors():
    x = rand(5, 3)
    x[3] = x[1]  # a zero distance: zero gradient there, as in torch
    check_vs_torch(lambda a: F.pdist(a), lambda a: TF.pdist(a), [x], atol=1e-5)
    check_vs_torch(lambda a: F.pdist(a.t()), lambda a: TF.pdist(a.t()), [rand(3, 5)], atol=1e-5)  # non-contiguous
    assert tuple(F.pdist(flow.randn(1, 3)).shape) == (0,)
    raises(RuntimeError, "pdist only supports 2D tensors, got: 3D", lambda: F.pdist(flow.randn(2, 2, 2)))
    raises(RuntimeError, "non-negative p", lambda: F.pdist(flow.randn(3, 2), -1))


# ---- *_with_indices pools -----------------------------------------------------------------------------
def _distinct(*shape):
    n = int(np.prod(shape))
    return (RNG.permutation(n).astype("float32") / n).reshape(shape)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_pool_with_indices(nd):
    shape = (2, 3) + (6, 5, 4)[:nd]
    x = _distinct(*shape)
    fname = f"max_pool{nd}d_with_indices"
    check_vs_torch(lambda a: getattr(F, fname)(a, 2, 2, 1), lambda a: getattr(TF, fname)(a, 2, 2, 1), [x])
    check_vs_torch(lambda a: getattr(F, fname)(a, 3, ceil_mode=True), lambda a: getattr(TF, fname)(a, 3,
                                                                                                     ceil_mode=True),
                   [x])
    out = getattr(F, fname)(flow.tensor(x), 2)
    assert isinstance(out, tuple) and len(out) == 2 and out[1].dtype == flow.int64
    afname = f"adaptive_max_pool{nd}d_with_indices"
    check_vs_torch(lambda a: getattr(F, afname)(a, 3), lambda a: getattr(TF, afname)(a, 3), [x])


def test_with_indices_errors():
    raises(RuntimeError, "Output size is too small", lambda: F.max_pool2d_with_indices(flow.randn(1, 1, 2, 2), 3))
    raises(RuntimeError, "Expected 3D or 4D", lambda: F.adaptive_max_pool2d_with_indices(flow.randn(2, 2), 3))


# ---- deprecated upsample aliases; in-place activations ------------------------------------------------
def test_upsample_aliases_warn_and_match_torch():
    x = rand(1, 2, 3, 4)
    for name, kw in (("upsample_nearest", dict(scale_factor=2)), ("upsample_bilinear", dict(size=(5, 7))),
                     ("upsample_bilinear", dict(scale_factor=2))):
        with pytest.warns(UserWarning, match=f"`nn.functional.{name}` is deprecated"):
            out = getattr(F, name)(flow.tensor(x), **kw)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_vs_torch(lambda a: getattr(F, name)(a, **kw), lambda a: getattr(TF, name)(a, **kw), [x],
                           atol=1e-5)
            assert tuple(out.shape) == tuple(getattr(TF, name)(torch.tensor(x), **kw).shape)


def test_inplace_activations_exist_and_match():
    x = rand(3, 4)
    for name, kw in (("celu_", dict(alpha=0.7)), ("selu_", {}), ("elu_", dict(alpha=1.3))):
        fx, tx = flow.tensor(x), torch.tensor(x)
        r = getattr(F, name)(fx, **kw)
        getattr(TF, name)(tx, **kw)
        assert r is fx
        assert_close(fx, tx, atol=1e-6)


# ---- AdaptiveLogSoftmaxWithLoss -----------------------------------------------------------------------
def _asm_pair(*args, **kw):
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(*args, **kw)
    fm = flow.nn.AdaptiveLogSoftmaxWithLoss(*args, **kw)
    assert repr(fm) == repr(tm)
    assert _tensor_items(fm.state_dict()) == _tensor_items(tm.state_dict())
    fm.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return fm, tm


@pytest.mark.parametrize("cutoffs,head_bias", [([4, 10, 15], True), ([7], False)])
def test_adaptive_log_softmax_matches_torch(cutoffs, head_bias):
    fm, tm = _asm_pair(16, 20, cutoffs, div_value=2.0, head_bias=head_bias)
    x = rand(9, 16)
    t = np.array([0, 3, 5, 19, 12, 4, 9, 15, 1])
    fx, tx = flow.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fo, to = fm(fx, flow.tensor(t)), tm(tx, torch.tensor(t))
    assert fo._fields == ("output", "loss")
    assert_close(fo.output, to.output, atol=1e-5)
    assert_close(fo.loss, to.loss, atol=1e-5)
    fo.loss.backward()
    to.loss.backward()
    assert_close(fx.grad, tx.grad, atol=1e-5)
    for (_, a), (_, b) in zip(fm.named_parameters(), tm.named_parameters()):
        assert_close(a.grad, b.grad, atol=1e-5)
    assert_close(fm.log_prob(fx), tm.log_prob(tx), atol=1e-5)
    assert_close(fm.predict(fx), tm.predict(tx))
    # unbatched: a 1-D input with a 0-D target
    assert_close(fm(fx[2], flow.tensor(t[2])).output, tm(tx[2], torch.tensor(t[2])).output, atol=1e-5)


def test_adaptive_log_softmax_predict_shortlist_only_and_errors():
    fm, tm = _asm_pair(16, 10, [3, 6])
    with flow.no_grad(), torch.no_grad():
        fm.head.weight.zero_(), tm.head.weight.zero_()
        fm.head.weight[1].fill_(5.0), tm.head.weight[1].fill_(5.0)
    x = np.abs(rand(4, 16))  # class 1 (in the shortlist) wins in the head for every row
    assert_close(fm.predict(flow.tensor(x)), tm.predict(torch.tensor(x)))
    raises(ValueError, "cutoffs should be a sequence of unique, positive integers",
           lambda: flow.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [6, 3]))
    raises(ValueError, "length larger than 0", lambda: flow.nn.AdaptiveLogSoftmaxWithLoss(8, 10, []))
    raises(RuntimeError, "Target values should be in \\[0, 9\\]",
           lambda: fm(flow.randn(2, 16), flow.tensor([1, 10])))
    raises(RuntimeError, "same size in the batch dimension", lambda: fm(flow.randn(3, 16), flow.tensor([1, 2])))
