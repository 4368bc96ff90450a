"""nn layer modules against torch.nn: a torch layer's state_dict is copied into ours (via NumPy), then the
forward, the input and parameter gradients, repr and state_dict keys must match."""
import math

import numpy as np
import pytest
import torch

import oneflow as flow
from helpers import assert_close, to_np

RNG = np.random.default_rng(0)


def _copy_state(tmod, fmod):
    sd = {k: flow.tensor(v.detach().numpy().copy()) for k, v in tmod.state_dict().items()}
    fmod.load_state_dict(sd)


def _torch_repr(m):
    return repr(m).replace("torch", "oneflow")


def compare_module(tmod, fmod, arrays, rtol=1e-7, atol=1e-9, grad=True, train=True):
    """Same weights, same inputs: outputs, input gradients and parameter gradients must agree."""
    assert list(fmod.state_dict().keys()) == list(tmod.state_dict().keys())
    assert [n for n, _ in fmod.named_parameters()] == [n for n, _ in tmod.named_parameters()]
    for (n, fp), (_, tp) in zip(fmod.named_parameters(), tmod.named_parameters()):
        assert tuple(fp.shape) == tuple(tp.shape), n
    assert repr(fmod) == _torch_repr(tmod)
    _copy_state(tmod, fmod)
    tmod.train(train)
    fmod.train(train)
    t_in, f_in = [], []
    for a in arrays:
        a = np.asarray(a)
        rg = grad and a.dtype.kind == "f"
        t_in.append(torch.tensor(a, requires_grad=rg))
        f_in.append(flow.tensor(a, requires_grad=rg))
    to = tmod(*t_in)
    fo = fmod(*f_in)
    to_list = list(to) if isinstance(to, tuple) else [to]
    fo_list = list(fo) if isinstance(fo, tuple) else [fo]
    for a, b in zip(fo_list, to_list):
        assert_close(a, b, rtol=rtol, atol=atol)
    if not grad:
        return fo, to
    w = RNG.standard_normal(tuple(to_list[0].shape))
    (to_list[0] * torch.tensor(w, dtype=to_list[0].dtype)).sum().backward()
    (fo_list[0] * flow.tensor(w, dtype=fo_list[0].dtype)).sum().backward()
    for f, t in zip(f_in, t_in):
        if t.requires_grad:
            assert_close(f.grad, t.grad, rtol=rtol * 10, atol=atol * 10)
    for (n, fp), (_, tp) in zip(fmod.named_parameters(), tmod.named_parameters()):
        if tp.grad is None:
            assert fp.grad is None or np.allclose(to_np(fp.grad), 0), n
        else:
            assert fp.grad is not None, n
            assert_close(fp.grad, tp.grad, rtol=rtol * 10, atol=atol * 10)
    return fo, to


def _pair(name, *args, **kw):
    t = getattr(torch.nn, name)(*args, **kw).double()
    f = getattr(flow.nn, name)(*args, **kw).double()
    return t, f


def _x(*shape):
    return RNG.standard_normal(shape)


CASES = [
    ("Identity", (), {}, [(3, 4)]),
    ("Linear", (5, 3), {}, [(4, 5)]),
    ("Linear", (5, 3), {"bias": False}, [(4, 5)]),
    ("Linear", (5, 3), {}, [(2, 4, 5)]),
    ("Linear", (5, 3), {}, [(5,)]),
    ("Bilinear", (4, 3, 2), {}, [(5, 4), (5, 3)]),
    ("Bilinear", (4, 3, 2), {"bias": False}, [(5, 4), (5, 3)]),
    ("Conv1d", (3, 4, 3), {}, [(2, 3, 10)]),
    ("Conv1d", (4, 4, 3), {"stride": 2, "padding": 1, "groups": 2, "dilation": 2}, [(2, 4, 11)]),
    ("Conv1d", (3, 4, 4), {"padding": "same", "dilation": 2}, [(2, 3, 10)]),
    ("Conv1d", (3, 4, 3), {"padding": 2, "padding_mode": "circular"}, [(2, 3, 10)]),
    ("Conv2d", (1, 8, 3), {"stride": 1, "padding": 1}, [(2, 1, 9, 9)]),
    ("Conv2d", (3, 6, (3, 2)), {"stride": (2, 1), "padding": (1, 0), "bias": False}, [(2, 3, 8, 7)]),
    ("Conv2d", (4, 6, 3), {"groups": 2, "dilation": (2, 1)}, [(2, 4, 9, 8)]),
    ("Conv2d", (3, 4, 3), {"padding": "same"}, [(2, 3, 7, 6)]),
    ("Conv2d", (3, 4, 4), {"padding": "same"}, [(2, 3, 7, 6)]),
    ("Conv2d", (3, 4, 3), {"padding": "valid"}, [(2, 3, 7, 6)]),
    ("Conv2d", (3, 4, 3), {"padding": 1, "padding_mode": "reflect"}, [(2, 3, 7, 6)]),
    ("Conv2d", (3, 4, 3), {"padding": (1, 2), "padding_mode": "replicate"}, [(2, 3, 7, 6)]),
    ("Conv2d", (3, 4, 3), {"padding": 1, "padding_mode": "circular"}, [(2, 3, 7, 6)]),
    ("Conv2d", (3, 4, 3), {"padding": 1}, [(3, 7, 6)]),
    ("Conv3d", (2, 4, 3), {"padding": 1, "stride": 2}, [(2, 2, 5, 6, 5)]),
    ("Conv3d", (2, 4, (1, 2, 3)), {"padding": "same"}, [(1, 2, 4, 5, 6)]),
    ("ConvTranspose1d", (3, 4, 3), {"stride": 2, "padding": 1, "output_padding": 1}, [(2, 3, 6)]),
    ("ConvTranspose2d", (4, 6, 3), {"stride": 2, "groups": 2, "bias": False}, [(2, 4, 5, 4)]),
    ("ConvTranspose2d", (3, 2, (3, 2)), {"stride": (2, 3), "padding": (1, 0), "dilation": 2,
                                         "output_padding": (1, 2)}, [(2, 3, 4, 5)]),
    ("ConvTranspose2d", (3, 2, 3), {}, [(3, 4, 5)]),
    ("ConvTranspose3d", (2, 3, 2), {"stride": 2}, [(1, 2, 3, 4, 3)]),
    ("MaxPool1d", (3,), {"stride": 2, "padding": 1}, [(2, 3, 11)]),
    ("MaxPool2d", (2,), {"stride": 2}, [(2, 3, 8, 8)]),
    ("MaxPool2d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True, "dilation": 1}, [(2, 3, 8, 9)]),
    ("MaxPool2d", ((3, 2),), {"dilation": (1, 2)}, [(2, 3, 8, 9)]),
    ("MaxPool3d", (2,), {}, [(1, 2, 4, 6, 4)]),
    ("AvgPool1d", (3,), {"stride": 2, "padding": 1}, [(2, 3, 11)]),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False}, [(2, 3, 8, 9)]),
    ("AvgPool2d", (2,), {"ceil_mode": True, "divisor_override": 3}, [(2, 3, 7, 9)]),
    ("AvgPool3d", (2,), {"stride": 1}, [(1, 2, 4, 5, 4)]),
    ("AdaptiveAvgPool1d", (4,), {}, [(2, 3, 10)]),
    ("AdaptiveAvgPool2d", ((3, None),), {}, [(2, 3, 7, 5)]),
    ("AdaptiveAvgPool2d", (1,), {}, [(2, 3, 7, 5)]),
    ("AdaptiveAvgPool3d", (2,), {}, [(1, 2, 5, 4, 3)]),
    ("AdaptiveMaxPool1d", (4,), {}, [(2, 3, 10)]),
    ("AdaptiveMaxPool2d", ((3, 2),), {}, [(2, 3, 7, 5)]),
    ("AdaptiveMaxPool3d", (2,), {}, [(1, 2, 5, 4, 3)]),
    ("LayerNorm", (6,), {}, [(3, 4, 6)]),
    ("LayerNorm", ((4, 6),), {"elementwise_affine": False}, [(3, 4, 6)]),
    ("LayerNorm", ((4, 6),), {"bias": False, "eps": 1e-3}, [(3, 4, 6)]),
    ("GroupNorm", (2, 6), {}, [(3, 6, 5)]),
    ("GroupNorm", (3, 6), {"affine": False}, [(3, 6, 2, 2)]),
    ("GroupNorm", (3, 6), {"bias": False}, [(3, 6, 2, 2)]),
    ("InstanceNorm1d", (4,), {}, [(3, 4, 6)]),
    ("InstanceNorm1d", (4,), {"affine": True}, [(4, 6)]),
    ("InstanceNorm2d", (4,), {"affine": True, "track_running_stats": True}, [(3, 4, 5, 6)]),
    ("InstanceNorm3d", (2,), {}, [(2, 2, 3, 4, 3)]),
    ("LocalResponseNorm", (3,), {}, [(2, 5, 4)]),
    ("LocalResponseNorm", (2,), {"alpha": 0.1, "k": 2.0}, [(2, 5, 3, 4)]),
    ("Flatten", (), {}, [(2, 3, 4, 5)]),
    ("Flatten", (0, 2), {}, [(2, 3, 4, 5)]),
    ("Unflatten", (1, (3, 4)), {}, [(2, 12, 5)]),
    ("Unflatten", (-1, [2, -1]), {}, [(2, 12)]),
    ("PixelShuffle", (2,), {}, [(2, 8, 3, 4)]),
    ("PixelShuffle", (3,), {}, [(9, 2, 2)]),
    ("PixelUnshuffle", (2,), {}, [(2, 3, 4, 6)]),
    ("Upsample", (), {"scale_factor": 2}, [(2, 3, 4, 5)]),
    ("Upsample", (), {"size": (7, 9), "mode": "bilinear"}, [(2, 3, 4, 5)]),
    ("Upsample", (), {"scale_factor": 1.5, "mode": "bilinear", "align_corners": True}, [(2, 3, 4, 5)]),
    ("Upsample", (), {"scale_factor": 2, "mode": "linear"}, [(2, 3, 4)]),
    ("UpsamplingNearest2d", (), {"scale_factor": 3}, [(1, 2, 3, 4)]),
    ("UpsamplingBilinear2d", (), {"size": (6, 5)}, [(1, 2, 3, 4)]),
    ("Dropout", (0.0,), {}, [(3, 4)]),
    ("ConstantPad1d", ((1, 2), 3.5), {}, [(2, 3, 4)]),
    ("ConstantPad2d", (1, -1.0), {}, [(2, 3, 4, 5)]),
    ("ConstantPad3d", ((1, 0, 2, 1, 0, 1), 0.5), {}, [(1, 2, 3, 4, 5)]),
    ("ZeroPad1d", (2,), {}, [(3, 4)]),
    ("ZeroPad2d", ((1, 2, 0, 3),), {}, [(2, 3, 4, 5)]),
    ("ZeroPad3d", (1,), {}, [(1, 2, 3, 4, 5)]),
    ("ReflectionPad1d", (2,), {}, [(2, 3, 5)]),
    ("ReflectionPad2d", ((1, 2, 2, 1),), {}, [(2, 3, 4, 5)]),
    ("ReflectionPad3d", (1,), {}, [(1, 2, 3, 4, 5)]),
    ("ReplicationPad1d", ((3, 1),), {}, [(2, 3, 5)]),
    ("ReplicationPad2d", (2,), {}, [(2, 3, 4, 5)]),
    ("ReplicationPad3d", ((1, 2, 0, 1, 2, 0),), {}, [(1, 2, 3, 4, 5)]),
    ("CircularPad1d", (2,), {}, [(2, 3, 5)]),
    ("CircularPad2d", ((1, 2, 2, 1),), {}, [(2, 3, 4, 5)]),
    ("CircularPad3d", (1,), {}, [(1, 2, 3, 4, 5)]),
    ("RMSNorm", (6,), {}, [(3, 4, 6)]),
    ("RMSNorm", ((4, 6),), {"eps": 1e-3, "elementwise_affine": False}, [(3, 4, 6)]),
    ("LPPool1d", (2, 3), {"stride": 2}, [(2, 3, 10)]),
    ("LPPool2d", (1.5, 2), {}, [(2, 3, 6, 4)]),
    ("LPPool2d", (float("inf"), (2, 3), 1), {}, [(2, 3, 6, 4)]),
    ("LPPool3d", (3, 2), {}, [(1, 2, 4, 4, 4)]),
]


@pytest.mark.parametrize("name,args,kw,shapes", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_layer_matches_torch(name, args, kw, shapes):
    t, f = _pair(name, *args, **kw)
    compare_module(t, f, [_x(*s) for s in shapes])


@pytest.mark.parametrize("name", ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AdaptiveMaxPool2d"])
def test_max_pool_return_indices(name):
    nd = {"MaxPool1d": 1, "MaxPool2d": 2, "MaxPool3d": 3, "AdaptiveMaxPool2d": 2}[name]
    t, f = _pair(name, 2, return_indices=True)
    fo, to = compare_module(t, f, [_x(2, 3, *([6] * nd))])
    assert fo[1].dtype == flow.int64


def test_float32_conv_linear_close():
    for name, args, shape in [("Conv2d", (3, 8, 3), (2, 3, 10, 10)), ("Linear", (20, 7), (6, 20))]:
        t = getattr(torch.nn, name)(*args)
        f = getattr(flow.nn, name)(*args)
        compare_module(t, f, [_x(*shape).astype(np.float32)], rtol=1e-4, atol=1e-5)


def test_non_contiguous_input():
    t, f = _pair("Conv2d", 3, 4, 3, padding=1)
    _copy_state(t, f)
    a = _x(2, 5, 3, 6)
    to = t(torch.tensor(a).permute(0, 2, 1, 3))
    fo = f(flow.tensor(a).permute(0, 2, 1, 3))
    assert_close(fo, to, rtol=1e-7, atol=1e-9)
    t, f = _pair("Linear", 5, 3)
    _copy_state(t, f)
    assert_close(f(flow.tensor(a[:, :, 0, :5].copy()).transpose(0, 1)), t(torch.tensor(a[:, :, 0, :5]).transpose(0, 1)))


def test_zero_batch():
    for name, args, shape in [("Linear", (5, 3), (0, 5)), ("Conv2d", (3, 4, 3), (0, 3, 5, 5))]:
        t, f = _pair(name, *args)
        _copy_state(t, f)
        assert tuple(f(flow.tensor(_x(*shape))).shape) == tuple(t(torch.tensor(_x(*shape))).shape)


# ---- construction: shapes, reprs, init bounds --------------------------------------------------------
REPRS = [
    ("Conv2d", (1, 32), {"kernel_size": 3, "stride": 1, "padding": 1}),
    ("Conv2d", (4, 8, 3), {"padding": "same", "groups": 2, "bias": False, "padding_mode": "reflect"}),
    ("Conv1d", (4, 8, 3), {"dilation": 2}),
    ("ConvTranspose2d", (4, 8, 3), {"stride": 2, "output_padding": 1}),
    ("MaxPool2d", (2, 2), {}),
    ("MaxPool2d", (3,), {"padding": 1, "ceil_mode": True}),
    ("AvgPool1d", (3,), {}),
    ("AvgPool2d", (3,), {}),
    ("AdaptiveAvgPool2d", ((1, 1),), {}),
    ("AdaptiveMaxPool1d", (3,), {"return_indices": True}),
    ("BatchNorm2d", (8,), {}),
    ("BatchNorm1d", (8,), {"momentum": None, "affine": False, "track_running_stats": False}),
    ("InstanceNorm2d", (3,), {}),
    ("LayerNorm", ((3, 4),), {"eps": 1e-6}),
    ("GroupNorm", (2, 4), {}),
    ("LocalResponseNorm", (2,), {}),
    ("Dropout", (), {}),
    ("Dropout2d", (0.3,), {"inplace": True}),
    ("AlphaDropout", (0.2,), {}),
    ("Embedding", (10, 3), {"padding_idx": -1, "max_norm": 1.0, "norm_type": 1.0, "scale_grad_by_freq": True}),
    ("EmbeddingBag", (10, 3), {"mode": "sum", "padding_idx": 2}),
    ("Flatten", (), {}),
    ("Unflatten", (1, (2, 3)), {}),
    ("Upsample", (), {"scale_factor": 2, "mode": "bilinear"}),
    ("Upsample", (), {"size": 4}),
    ("UpsamplingBilinear2d", (), {"scale_factor": 2}),
    ("PixelShuffle", (2,), {}),
    ("PixelUnshuffle", (2,), {}),
    ("Identity", (), {}),
    ("RMSNorm", ((2, 3),), {}),
    ("LPPool2d", (2, 3), {}),
    ("MaxUnpool2d", (2,), {}),
    ("ConstantPad2d", (2, 1.5), {}),
    ("ZeroPad2d", ((1, 2, 3, 4),), {}),
    ("ReflectionPad1d", (2,), {}),
    ("Linear", (3, 4), {"bias": False}),
    ("Bilinear", (3, 4, 5), {}),
]


@pytest.mark.parametrize("name,args,kw", REPRS, ids=[f"{c[0]}-{i}" for i, c in enumerate(REPRS)])
def test_repr_and_state_dict_keys(name, args, kw):
    t = getattr(torch.nn, name)(*args, **kw)
    f = getattr(flow.nn, name)(*args, **kw)
    assert repr(f) == _torch_repr(t)
    assert list(f.state_dict().keys()) == list(t.state_dict().keys())
    for (k, fv), (_, tv) in zip(f.state_dict().items(), t.state_dict().items()):
        assert tuple(fv.shape) == tuple(tv.shape), k
        assert str(fv.dtype).split(".")[-1] == str(tv.dtype).split(".")[-1], k


def test_mnist_model_repr():
    assert repr(flow.nn.Conv2d(1, 32, kernel_size=3, stride=1, padding=1)) == \
        "Conv2d(1, 32, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"
    assert repr(flow.nn.Linear(3136, 128)) == "Linear(in_features=3136, out_features=128, bias=True)"
    assert repr(flow.nn.MaxPool2d(kernel_size=2, stride=2)) == \
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"


@pytest.mark.parametrize("name,args", [("Linear", (50, 40)), ("Conv2d", (16, 8, 3)), ("Conv1d", (6, 4, 5)),
                                       ("ConvTranspose2d", (16, 8, 3)), ("Bilinear", (30, 20, 10))])
def test_default_init_bounds(name, args):
    f = getattr(flow.nn, name)(*args)
    t = getattr(torch.nn, name)(*args)
    w = to_np(f.weight)
    if name == "Bilinear":
        bound = 1 / math.sqrt(args[0])
    else:
        fan_in, _ = torch.nn.init._calculate_fan_in_and_fan_out(t.weight)
        bound = 1 / math.sqrt(fan_in)
    assert w.min() >= -bound and w.max() <= bound
    assert w.max() > 0.8 * bound and w.min() < -0.8 * bound  # actually spans the range
    assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound
    b = to_np(f.bias)
    assert b.min() >= -bound and b.max() <= bound and b.std() > 0
    assert f.weight.dtype == flow.float32 and f.weight.requires_grad


def test_factory_kwargs_and_dtype():
    m = flow.nn.Linear(3, 2, dtype=flow.float64)
    assert m.weight.dtype == flow.float64 and m.bias.dtype == flow.float64
    c = flow.nn.Conv2d(2, 3, 3, device="cpu", dtype=flow.float64)
    assert c.weight.dtype == flow.float64
    bn = flow.nn.BatchNorm1d(4, dtype=flow.float64)
    assert bn.running_mean.dtype == flow.float64 and bn.num_batches_tracked.dtype == flow.int64


def test_lazy_linear():
    m = flow.nn.LazyLinear(3)
    y = m(flow.randn(4, 7))
    assert tuple(y.shape) == (4, 3)
    assert type(m) is flow.nn.Linear and m.in_features == 7
    assert tuple(m.weight.shape) == (3, 7)


# ---- argument errors ---------------------------------------------------------------------------------
def test_conv_errors():
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        flow.nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        flow.nn.Conv2d(4, 3, 3, groups=2)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        flow.nn.Conv2d(4, 4, 3, groups=0)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        flow.nn.Conv2d(4, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        flow.nn.Conv2d(4, 4, 3, padding="full")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        flow.nn.Conv2d(4, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        flow.nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect")
    with pytest.raises(RuntimeError):
        flow.nn.Conv2d(4, 4, 3)(flow.randn(2, 4, 5))  # 3-D input is unbatched (C, H, W): C mismatch
    with pytest.raises(RuntimeError):
        flow.nn.Conv2d(4, 4, 3)(flow.randn(5))


def test_conv_transpose_output_size():
    t, f = _pair("ConvTranspose2d", 3, 2, 3, stride=2, padding=1)
    _copy_state(t, f)
    a = _x(2, 3, 4, 5)
    for size in [(7, 9), (8, 10), [2, 2, 8, 9]]:
        assert_close(f(flow.tensor(a), output_size=size), t(torch.tensor(a), output_size=size), rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError, match="requested an output size of"):
        f(flow.tensor(a), output_size=(12, 9))
    with pytest.raises(ValueError, match="output_size must have 2 or 4 elements"):
        f(flow.tensor(a), output_size=(7,))


def test_dropout_errors_and_modes():
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        flow.nn.Dropout(1.5)
    d = flow.nn.Dropout(0.5)
    x = flow.ones(1000)
    y = d(x)
    vals = set(np.unique(to_np(y)).tolist())
    assert vals <= {0.0, 2.0} and 0.35 < (to_np(y) == 0).mean() < 0.65
    d.eval()
    assert_close(d(x), x)
    d2 = flow.nn.Dropout2d(0.5)
    y = to_np(d2(flow.ones(4, 50, 3, 3)))
    per_channel = y.reshape(4, 50, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    y1 = to_np(flow.nn.Dropout1d(0.5)(flow.ones(4, 50, 7))).reshape(4, 50, 7)
    assert np.all((y1 == 0).all(-1) | (y1 == 2).all(-1))
    y3 = to_np(flow.nn.Dropout3d(0.5)(flow.ones(2, 30, 2, 2, 2))).reshape(2, 30, 8)
    assert np.all((y3 == 0).all(-1) | (y3 == 2).all(-1))
    x = flow.ones(10)
    r = flow.nn.Dropout(0.5, inplace=True)(x)
    assert r is x


def test_alpha_dropout_statistics():
    flow.manual_seed(0)
    x = flow.randn(200000)
    y = to_np(flow.nn.AlphaDropout(0.3)(x))
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    m = flow.nn.AlphaDropout(0.3).eval()
    assert_close(m(x), x)


# ---- BatchNorm -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,shape,kw", [
    ("BatchNorm1d", (8, 4), {}),
    ("BatchNorm1d", (8, 4, 5), {"momentum": None}),
    ("BatchNorm2d", (4, 3, 5, 6), {"momentum": 0.3}),
    ("BatchNorm2d", (4, 3, 5, 6), {"affine": False}),
    ("BatchNorm2d", (4, 3, 5, 6), {"bias": False}),
    ("BatchNorm3d", (2, 3, 4, 3, 2), {"eps": 1e-3}),
    ("BatchNorm2d", (4, 3, 5, 6), {"track_running_stats": False}),
])
def test_batchnorm_training_and_eval(name, shape, kw):
    t, f = _pair(name, shape[1], **kw)
    with torch.no_grad():
        if t.affine:
            t.weight.uniform_(0.5, 1.5)
            if t.bias is not None:
                t.bias.uniform_(-0.5, 0.5)
    _copy_state(t, f)
    for step in range(4):
        a = _x(*shape) * (step + 1) + step
        compare_module(t, f, [a], rtol=1e-6, atol=1e-8)
        for (k, fv), (_, tv) in zip(f.state_dict().items(), t.state_dict().items()):
            assert_close(fv, tv, rtol=1e-7, atol=1e-9)
        for p in list(f.parameters()):
            p.grad = None
        t.zero_grad()
    if t.track_running_stats:
        assert f.num_batches_tracked.item() == 4 and f.num_batches_tracked.dtype == flow.int64
    a = _x(*shape)
    t.eval()
    f.eval()
    assert_close(f(flow.tensor(a)), t(torch.tensor(a)), rtol=1e-7, atol=1e-9)
    for (k, fv), (_, tv) in zip(f.state_dict().items(), t.state_dict().items()):
        assert_close(fv, tv, rtol=1e-7, atol=1e-9)


def test_batchnorm_errors_and_state():
    with pytest.raises(ValueError, match=r"expected 4D input \(got 3D input\)"):
        flow.nn.BatchNorm2d(3)(flow.randn(2, 3, 4))
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        flow.nn.BatchNorm1d(3)(flow.randn(2, 3, 4, 4))
    with pytest.raises(ValueError, match=r"expected 5D input \(got 4D input\)"):
        flow.nn.BatchNorm3d(3)(flow.randn(2, 3, 4, 4))
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        flow.nn.BatchNorm1d(3)(flow.randn(1, 3))
    bn = flow.nn.BatchNorm2d(3)
    assert [k for k, _ in bn.named_buffers()] == ["running_mean", "running_var", "num_batches_tracked"]
    # checkpoints without num_batches_tracked still load when they carry no version, or version 1 (torch's
    # rule); a current state dict (version 2) missing it is incomplete
    sd = bn.state_dict()
    del sd["num_batches_tracked"]
    with pytest.raises(RuntimeError, match='Missing key\\(s\\) in state_dict: "num_batches_tracked"'):
        flow.nn.BatchNorm2d(3).load_state_dict(sd)
    flow.nn.BatchNorm2d(3).load_state_dict(dict(sd))
    sd._metadata[""]["version"] = 1
    flow.nn.BatchNorm2d(3).load_state_dict(sd)
    assert "num_batches_tracked" not in sd  # the caller's dict is not filled in
    bn(flow.randn(2, 3, 2, 2))
    bn.reset_running_stats()
    assert bn.num_batches_tracked.item() == 0 and to_np(bn.running_var).tolist() == [1, 1, 1]


def test_instancenorm_running_stats_and_errors():
    t, f = _pair("InstanceNorm1d", 3, track_running_stats=True, affine=True)
    _copy_state(t, f)
    for _ in range(3):
        a = _x(4, 3, 6)
        assert_close(f(flow.tensor(a)), t(torch.tensor(a)), rtol=1e-7, atol=1e-9)
    assert_close(f.running_mean, t.running_mean, rtol=1e-7, atol=1e-9)
    assert_close(f.running_var, t.running_var, rtol=1e-7, atol=1e-9)
    f.eval()
    t.eval()
    a = _x(4, 3, 6)
    assert_close(f(flow.tensor(a)), t(torch.tensor(a)), rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        flow.nn.InstanceNorm2d(3)(flow.randn(3, 4))
    with pytest.raises(ValueError, match=r"expected input's size at dim=1 to match num_features \(4\)"):
        flow.nn.InstanceNorm1d(4, affine=True)(flow.randn(2, 3, 5))
    with pytest.warns(UserWarning, match="does not match num_features"):
        flow.nn.InstanceNorm1d(4)(flow.randn(2, 3, 5))


def test_layernorm_groupnorm_errors():
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups \(4\)"):
        flow.nn.GroupNorm(4, 6)
    with pytest.raises(RuntimeError):
        flow.nn.LayerNorm(5)(flow.randn(3, 4))


# ---- Embedding / EmbeddingBag ----------------------------------------------------------------------
def test_embedding_matches_torch():
    t, f = _pair("Embedding", 10, 4, padding_idx=2)
    assert np.all(to_np(f.weight)[2] == 0)
    idx = RNG.integers(0, 10, (3, 5))
    idx[0, 0] = 2
    compare_module(t, f, [idx])
    t, f = _pair("Embedding", 10, 4, max_norm=1.0)
    compare_module(t, f, [idx])
    assert_close(f.weight, t.weight.detach(), rtol=1e-7, atol=1e-9)
    assert (np.linalg.norm(to_np(f.weight)[np.unique(idx)], axis=1) <= 1 + 1e-6).all()


def test_embedding_init_and_from_pretrained():
    e = flow.nn.Embedding(2000, 50)
    w = to_np(e.weight)
    assert abs(w.mean()) < 0.01 and abs(w.std() - 1) < 0.01
    pre = flow.tensor(_x(5, 3))
    e = flow.nn.Embedding.from_pretrained(pre)
    assert not e.weight.requires_grad
    assert_close(e(flow.tensor([1, 4])), to_np(pre)[[1, 4]])
    e = flow.nn.Embedding.from_pretrained(pre, freeze=False, padding_idx=0)
    assert e.weight.requires_grad and e.padding_idx == 0
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        flow.nn.Embedding(5, 3, padding_idx=5)
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        flow.nn.Embedding.from_pretrained(flow.randn(3))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 3])
def test_embedding_bag_offsets(mode, padding_idx):
    t, f = _pair("EmbeddingBag", 10, 4, mode=mode, padding_idx=padding_idx)
    _copy_state(t, f)
    idx = np.array([1, 3, 4, 3, 3, 9, 0, 1, 3], dtype=np.int64)
    offs = np.array([0, 2, 2, 5, 8], dtype=np.int64)  # includes an empty bag and a padding-only bag
    to = t(torch.tensor(idx), torch.tensor(offs))
    fo = f(flow.tensor(idx), flow.tensor(offs))
    assert_close(fo, to, rtol=1e-7, atol=1e-9)
    w = _x(*to.shape)
    (to * torch.tensor(w)).sum().backward()
    (fo * flow.tensor(w)).sum().backward()
    assert_close(f.weight.grad, t.weight.grad, rtol=1e-7, atol=1e-9)
    # 2-D input: fixed-length bags
    idx2 = RNG.integers(0, 10, (3, 4))
    assert_close(f(flow.tensor(idx2)), t(torch.tensor(idx2)), rtol=1e-7, atol=1e-9)
    # include_last_offset
    t.include_last_offset = f.include_last_offset = True
    offs2 = np.array([0, 2, 5, 9], dtype=np.int64)
    assert_close(f(flow.tensor(idx), flow.tensor(offs2)), t(torch.tensor(idx), torch.tensor(offs2)),
                 rtol=1e-7, atol=1e-9)


def test_embedding_bag_per_sample_weights_and_errors():
    t, f = _pair("EmbeddingBag", 10, 4, mode="sum")
    _copy_state(t, f)
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 9])
    offs = np.array([0, 4])
    psw = _x(8)
    tp, fp = torch.tensor(psw, requires_grad=True), flow.tensor(psw, requires_grad=True)
    to = t(torch.tensor(idx), torch.tensor(offs), per_sample_weights=tp)
    fo = f(flow.tensor(idx), flow.tensor(offs), per_sample_weights=fp)
    assert_close(fo, to, rtol=1e-7, atol=1e-9)
    to.sum().backward()
    fo.sum().backward()
    assert_close(fp.grad, tp.grad, rtol=1e-7, atol=1e-9)
    assert_close(f.weight.grad, t.weight.grad, rtol=1e-7, atol=1e-9)
    m = flow.nn.EmbeddingBag(10, 4)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        m(flow.tensor([1, 2]))
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        m(flow.tensor([[1, 2]]), flow.tensor([0]))
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        m(flow.tensor([1, 2]), flow.tensor([0]), per_sample_weights=flow.ones(2))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        m(flow.tensor([1, 2]), flow.tensor([1]))
    with pytest.raises(RuntimeError,
                       match=r"offsets\[-1\] can not be greater than input's length 2 but got offsets\[-1\] of 3"):
        m(flow.tensor([1, 2]), flow.tensor([0, 3]))
    with pytest.raises(RuntimeError,  # torch's type and words
                       match=r"Index 1 of input takes value 12 which is not in the valid range \[0, 10\)"):
        m(flow.tensor([1, 12]), flow.tensor([0]))
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar types: Long, Int"):
        m(flow.tensor([1.0, 1.7]), flow.tensor([0]))
    with pytest.raises(ValueError, match="max mode does not support scaling the gradient by the frequency"):
        flow.nn.EmbeddingBag(10, 4, mode="max", scale_grad_by_freq=True)(flow.tensor([[1]]))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        flow.nn.EmbeddingBag(10, 4, mode="min")(flow.tensor([[1]]))


# ---- misc ---------------------------------------------------------------------------------------------
def test_pixel_shuffle_roundtrip_and_errors():
    x = flow.tensor(_x(2, 12, 3, 5))
    assert_close(flow.nn.PixelUnshuffle(2)(flow.nn.PixelShuffle(2)(x)), x)
    with pytest.raises(RuntimeError, match="divisible by the square of upscale_factor"):
        flow.nn.PixelShuffle(3)(x)
    with pytest.raises(RuntimeError, match=r"pixel_unshuffle expects width to be divisible by downscale_factor, "
                                           r"but input.size\(-1\)=5 is not divisible by 3"):
        flow.nn.PixelUnshuffle(3)(x)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool(nd):
    tp, fp = _pair(f"MaxPool{nd}d", 2, stride=2, return_indices=True)
    tu, fu = _pair(f"MaxUnpool{nd}d", 2, stride=2)
    assert repr(fu) == repr(tu)
    a = _x(2, 3, *([5] * nd))
    ti, fi = torch.tensor(a, requires_grad=True), flow.tensor(a, requires_grad=True)
    to, tidx = tp(ti)
    fo, fidx = fp(fi)
    tr = tu(to, tidx, output_size=[5] * nd)
    fr = fu(fo, fidx, output_size=[5] * nd)
    assert_close(fr, tr, rtol=1e-7, atol=1e-9)
    b = _x(2, 3, *([4] * nd))
    to2, tidx2 = tp(torch.tensor(b))
    fo2, fidx2 = fp(flow.tensor(b))
    assert_close(fu(fo2, fidx2), tu(to2, tidx2), rtol=1e-7, atol=1e-9)
    w = _x(*tr.shape)
    (tr * torch.tensor(w)).sum().backward()
    (fr * flow.tensor(w)).sum().backward()
    assert_close(fi.grad, ti.grad, rtol=1e-7, atol=1e-9)
    with pytest.raises(ValueError, match="invalid output_size"):
        fu(fo, fidx, output_size=[9] * nd)


def test_rms_norm_errors():
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"):
        flow.nn.RMSNorm(4)(flow.randn(3, 5))


def test_circular_pad_input_check():
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 2D input\)"):
        flow.nn.CircularPad2d(1)(flow.randn(3, 4))


def test_flatten_unflatten_errors():
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints"):
        flow.nn.Unflatten(1, (2, 2.0))
    with pytest.raises(TypeError, match="unflattened_size must be a tuple of ints"):
        flow.nn.Unflatten(1, 4)


def test_mnist_cnn_matches_torch():
    """The issue's SimpleCNN, built from the same layers in both frameworks, matches torch for a step."""

    class FlowReLU(flow.nn.Module):
        def forward(self, x):
            return flow.relu(x)

    def build(nn, relu):
        return nn.Sequential(nn.Conv2d(1, 32, kernel_size=3, stride=1, padding=1), relu(), nn.MaxPool2d(2, 2),
                             nn.Conv2d(32, 64, kernel_size=3, stride=1, padding=1), relu(), nn.MaxPool2d(2, 2),
                             nn.Flatten(), nn.Linear(64 * 7 * 7, 128), relu(), nn.Linear(128, 10))

    t = build(torch.nn, torch.nn.ReLU).double()
    f = build(flow.nn, FlowReLU).double()
    _copy_state(t, f)
    a = _x(4, 1, 28, 28)
    ti, fi = torch.tensor(a, requires_grad=True), flow.tensor(a, requires_grad=True)
    to, fo = t(ti), f(fi)
    assert_close(fo, to, rtol=1e-7, atol=1e-9)
    to.square().sum().backward()
    fo.square().sum().backward()
    assert_close(fi.grad, ti.grad, rtol=1e-6, atol=1e-9)
    for (n, fp), (_, tp) in zip(f.named_parameters(), t.named_parameters()):
        assert_close(fp.grad, tp.grad, rtol=1e-6, atol=1e-9)


# ---- finite-difference gradients of the composite functions written for these layers -------------------
def test_gradcheck_composites():
    from helpers import gradcheck

    F = flow.nn.functional
    x = flow.tensor(_x(1, 8, 2, 3), requires_grad=True)
    gradcheck(lambda t: F.pixel_shuffle(t, 2), [x])
    y = flow.tensor(_x(1, 2, 4, 2), requires_grad=True)
    gradcheck(lambda t: F.pixel_unshuffle(t, 2), [y])
    z = flow.tensor(_x(2, 5, 3), requires_grad=True)
    gradcheck(lambda t: F.local_response_norm(t, 3, alpha=0.5, k=2.0), [z])
    w = flow.tensor(_x(6, 3), requires_grad=True)
    psw = flow.tensor(_x(7), requires_grad=True)
    idx, offs = flow.tensor([0, 2, 2, 5, 1, 3, 4]), flow.tensor([0, 3, 3])
    gradcheck(lambda a, b: F.embedding_bag(idx, a, offs, mode="sum", per_sample_weights=b), [w, psw])
    gradcheck(lambda a: F.embedding_bag(idx, a, offs, mode="mean", padding_idx=2), [w])
    gradcheck(lambda a: F.embedding_bag(idx, a, offs, mode="max"), [w])
    r = flow.tensor(_x(2, 3, 4), requires_grad=True)
    rw = flow.tensor(_x(3, 4), requires_grad=True)
    gradcheck(lambda a, b: F.rms_norm(a, (3, 4), b, eps=1e-5), [r, rw])
    q = flow.tensor(np.abs(_x(1, 2, 4, 4)) + 0.5, requires_grad=True)
    gradcheck(lambda a: F.lp_pool2d(a, 3.0, 2), [q])
    u = flow.tensor(_x(1, 2, 2, 2), requires_grad=True)
    ui = flow.tensor(np.array([0, 3, 9, 14, 1, 6, 8, 15]).reshape(1, 2, 2, 2))
    gradcheck(lambda a: F.max_unpool2d(a, ui, 2), [u])


def test_functional_names_exported():
    F = flow.nn.functional
    for n in ("embedding_bag", "pixel_shuffle", "pixel_unshuffle", "alpha_dropout", "local_response_norm"):
        assert callable(getattr(F, n)), n
    x = _x(2, 8, 3, 3)
    assert_close(F.pixel_shuffle(flow.tensor(x), 2), torch.nn.functional.pixel_shuffle(torch.tensor(x), 2))


def test_deepcopy_pickle_and_dtype_conversion():
    import copy
    import pickle

    m = flow.nn.Sequential(flow.nn.Conv2d(3, 4, 3), flow.nn.BatchNorm2d(4), flow.nn.Linear(2, 2))
    m[1](flow.randn(2, 4, 3, 3))
    for m2 in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert repr(m2) == repr(m)
        for (k, a), (_, b) in zip(m2.state_dict().items(), m.state_dict().items()):
            assert_close(a, b)
        assert m2[0].weight.requires_grad and isinstance(m2[0].weight, flow.nn.Parameter)
    m.double()
    assert m[0].weight.dtype == flow.float64 and m[1].running_mean.dtype == flow.float64
    assert m[1].num_batches_tracked.dtype == flow.int64 and m[1].num_batches_tracked.item() == 1
