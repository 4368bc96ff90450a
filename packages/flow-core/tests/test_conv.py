"""Convolution, transposed convolution and pooling against PyTorch: forward, gradients, float64 gradchecks,
1-D/2-D/3-D, groups/stride/padding/dilation, non-contiguous and zero-size inputs, errors."""
import numpy as np
import pytest
import torch.nn.functional as TF

import oneflow as flow
import oneflow.nn.functional as F
from helpers import assert_close, check_vs_torch, gradcheck, torch

rng = np.random.default_rng(0)


def r(*s, dtype=np.float32):
    return rng.standard_normal(s).astype(dtype)


CONV = [  # (nd, N, Cin, Cout, spatial, k, kwargs)
    (1, 2, 4, 6, (11,), 3, dict(stride=2, padding=1)),
    (1, 1, 3, 3, (9,), 2, dict(dilation=2, groups=3)),
    (2, 2, 4, 6, (9, 8), 3, dict(stride=(2, 1), padding=(1, 2), groups=2)),
    (2, 1, 3, 5, (7, 7), 3, dict(dilation=2, padding=2)),
    (2, 2, 3, 4, (6, 6), 1, dict()),
    (2, 1, 2, 2, (5, 5), 3, dict(padding="same")),
    (2, 1, 2, 2, (6, 5), 4, dict(padding="same", dilation=1)),
    (2, 1, 2, 3, (6, 5), 3, dict(padding="valid")),
    (3, 1, 2, 4, (5, 6, 4), 3, dict(stride=2, padding=1)),
    (3, 2, 4, 4, (4, 4, 4), 2, dict(groups=4, dilation=(1, 2, 1))),
]
FN = {1: (F.conv1d, TF.conv1d), 2: (F.conv2d, TF.conv2d), 3: (F.conv3d, TF.conv3d)}


@pytest.mark.parametrize("case", CONV)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_vs_torch(case, bias):
    nd, n, cin, cout, sp, k, kw = case
    g = kw.get("groups", 1)
    arrs = [r(n, cin, *sp), r(cout, cin // g, *([k] * nd))] + ([r(cout)] if bias else [])
    f, t = FN[nd]
    check_vs_torch(lambda *a: f(*a, **kw), lambda *a: t(*a, **kw), arrs, rtol=1e-4, atol=1e-4)


# Channel-rich float32 shapes that reach each of the kernel's per-geometry paths (csrc/kernels/cpu/conv.cpp,
# onednn_conv.cpp): im2col + sgemm forward (batch x output positions < 128) and backward-weight (< 256
# output positions per image, several images per GEMM: one partial group, a full group plus a remainder,
# one image per GEMM, a 512-position group whose rows are padded off a 2 KiB multiple; first layers by whole
# images per thread), oneDNN nhwc forward/backward-data, plain layouts for 1x1 kernels, the blocked
# backward-data/-weight of large images, and grouped convolutions.
CONV_PATHS = [  # (nd, N, Cin, Cout, spatial, k, kwargs)
    (2, 3, 16, 24, (8, 8), 3, dict(padding=1)),
    (2, 40, 8, 8, (4, 4), 3, dict(padding=1)),
    (2, 9, 16, 24, (8, 8), 3, dict(padding=1)),
    (2, 3, 8, 8, (15, 15), 3, dict(padding=1)),
    (2, 8, 16, 32, (16, 16), 3, dict(stride=2, padding=1)),
    (2, 1, 16, 32, (9, 9), 3, dict(stride=2, padding=1, dilation=2)),
    (2, 2, 8, 8, (25, 24), 3, dict(padding=(0, 2), stride=(1, 1))),
    (2, 2, 16, 8, (33, 32), 3, dict(padding=1)),
    (2, 1, 8, 16, (48, 50), 3, dict(padding=1)),  # 2400 output positions: blocked forward
    (2, 4, 12, 16, (7, 9), 1, dict(stride=2)),
    (2, 5, 12, 16, (7, 9), 1, dict()),
    (2, 2, 16, 16, (10, 10), 3, dict(groups=2, padding=1)),
    (2, 2, 9, 10, (6, 7), (2, 3), dict(padding=(1, 0), stride=(2, 1))),
    (1, 3, 16, 8, (20,), 3, dict(padding=2, dilation=2)),
    (1, 6, 16, 8, (90,), 5, dict(stride=3)),
    (3, 1, 8, 8, (4, 5, 6), 3, dict(padding=1, stride=(1, 2, 1))),
    (3, 2, 8, 8, (4, 5, 6), 3, dict(padding=1, stride=(2, 2, 1))),
    # first layers (<= 27 weight columns per output channel, >= 512 output positions): backward-weight by
    # whole images per thread, an odd batch, stride and no padding, 1-D
    (2, 5, 1, 6, (28, 28), 3, dict(padding=1)),
    (2, 3, 3, 7, (24, 30), 3, dict()),
    (2, 4, 2, 5, (50, 46), 3, dict(stride=2, padding=1)),
    (1, 3, 2, 4, (700,), 5, dict()),
]


def test_conv_first_layer_weight_grad_float64_vs_torch():
    # float64 takes the by-image backward-weight path too (groups included)
    x, w, gy = r(3, 4, 30, 26, dtype=np.float64), r(6, 2, 3, 3, dtype=np.float64), r(3, 6, 28, 24, dtype=np.float64)
    fw = flow.tensor(w, requires_grad=True)
    F.conv2d(flow.tensor(x), fw, groups=2).backward(flow.tensor(gy))
    tw = torch.tensor(w, requires_grad=True)
    TF.conv2d(torch.tensor(x), tw, groups=2).backward(torch.tensor(gy))
    np.testing.assert_allclose(fw.grad.numpy(), tw.grad.numpy(), rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("case", CONV_PATHS)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_kernel_paths_vs_torch(case, bias):
    nd, n, cin, cout, sp, k, kw = case
    g = kw.get("groups", 1)
    ks = list(k) if isinstance(k, tuple) else [k] * nd
    arrs = [r(n, cin, *sp), r(cout, cin // g, *ks)] + ([r(cout)] if bias else [])
    f, t = FN[nd]
    check_vs_torch(lambda *a: f(*a, **kw), lambda *a: t(*a, **kw), arrs, rtol=1e-4, atol=1e-3, grad_rtol=1e-4,
                   grad_atol=2e-3)


def test_conv_kernel_paths_noncontiguous_and_transposed():
    # a channels-last view of the input and a transposed weight reach the same kernels through copies; a
    # transposed convolution runs the backward-data kernel forward and the forward kernel backward
    x = r(2, 12, 12, 16).transpose(0, 3, 1, 2)
    w = r(3, 3, 24, 16).transpose(2, 3, 0, 1)
    check_vs_torch(lambda a, b: F.conv2d(a, b, padding=1), lambda a, b: TF.conv2d(a, b, padding=1), [x, w],
                   rtol=1e-4, atol=1e-3, grad_atol=2e-3)
    xt, wt = r(3, 16, 5, 5), r(16, 8, 3, 3)
    check_vs_torch(lambda a, b: F.conv_transpose2d(a, b, stride=2, padding=1),
                   lambda a, b: TF.conv_transpose2d(a, b, stride=2, padding=1), [xt, wt], rtol=1e-4, atol=1e-3,
                   grad_atol=2e-3)


# Shapes the Winograd F(2x2, 3x3) path serves (csrc/kernels/cpu/winograd.cpp: 3x3, stride 1, padding 0..2,
# >= 16 channels each side, >= 64 tiles of 2x2 outputs; its forward and backward-data >= 256 tiles on AVX-512
# builds, so the batch is raised to that), forward, backward-data and backward-weight: tile rows of 8 that load
# and store unit-stride (widths of 16 and 32), narrower rows through gathers, odd output sizes whose last
# tile row/column is partial, padding 0/2/asymmetric, channel counts off the 6-channel panels, several tile
# blocks with a partial last one, and input channels above the register block's depth.
WINOGRAD = [  # (N, Cin, Cout, (H, W), padding)
    (4, 16, 16, (8, 8), 1),
    (2, 17, 20, (16, 16), 1),
    (3, 17, 20, (15, 13), 1),
    (2, 16, 16, (18, 19), 0),
    (2, 16, 22, (12, 12), 2),
    (2, 16, 18, (16, 15), (1, 2)),
    (2, 19, 16, (13, 14), (2, 0)),
    (4, 16, 16, (32, 34), 1),
    (2, 70, 64, (16, 16), 1),
    (1, 300, 31, (16, 18), 1),
    (4, 256, 256, (8, 8), 1),  # backward-weight splits output channels across threads
    (4, 250, 262, (8, 8), 1),
]


def winograd_batch(n, sp, pad):
    """At least n images, and enough for 256 tiles: every pass then takes Winograd on any build."""
    ph, pw = (pad, pad) if isinstance(pad, int) else pad
    per_image = ((sp[0] + 2 * ph - 1) // 2) * ((sp[1] + 2 * pw - 1) // 2)
    return max(n, -(-256 // per_image))


@pytest.mark.parametrize("case", WINOGRAD)
@pytest.mark.parametrize("bias", [True, False])
def test_conv_winograd_vs_torch(case, bias):
    n, cin, cout, sp, pad = case
    n = winograd_batch(n, sp, pad)
    arrs = [r(n, cin, *sp), r(cout, cin, 3, 3)] + ([r(cout)] if bias else [])
    check_vs_torch(lambda *a: F.conv2d(*a, padding=pad), lambda *a: TF.conv2d(*a, padding=pad), arrs, rtol=1e-4,
                   atol=2e-3, grad_rtol=1e-4, grad_atol=2e-3)


def test_conv_winograd_one_thread():
    # one thread: the forward's tile blocks and backward-weight's single accumulator run serial
    nt = flow.get_num_threads()
    try:
        flow.set_num_threads(1)
        for n, cin, cout, sp in [(4, 16, 20, (16, 16)), (4, 256, 256, (8, 8))]:
            n = winograd_batch(n, sp, 1)
            check_vs_torch(lambda a, b: F.conv2d(a, b, padding=1), lambda a, b: TF.conv2d(a, b, padding=1),
                           [r(n, cin, *sp), r(cout, cin, 3, 3)], rtol=1e-4, atol=2e-3, grad_rtol=1e-4, grad_atol=2e-3)
    finally:
        flow.set_num_threads(nt)


def test_conv_winograd_transposed_and_extreme_values():
    # a stride-1 transposed 3x3 convolution runs the Winograd kernel forward (as backward-data) and backward
    x, w = r(4, 16, 8, 9), r(16, 20, 3, 3)
    check_vs_torch(lambda a, b: F.conv_transpose2d(a, b, padding=1),
                   lambda a, b: TF.conv_transpose2d(a, b, padding=1), [x, w], rtol=1e-4, atol=2e-3, grad_atol=2e-3)
    # large and tiny magnitudes in one batch keep their relative accuracy; inf and NaN reach every output
    # whose window holds them, and (as in cuDNN's Winograd) may also spread to the rest of their 2x2 block,
    # through the input transform's differences
    x = r(2, 16, 12, 12)
    x[0, :, :6] *= 1e4
    x[1, :, 6:] *= 1e-4
    w = r(16, 16, 3, 3)
    y = F.conv2d(flow.tensor(x), flow.tensor(w), padding=1).numpy()
    ref = TF.conv2d(torch.tensor(x), torch.tensor(w), padding=1).numpy()
    scale = np.abs(ref).max(axis=(1, 2, 3), keepdims=True)
    assert np.abs(y - ref).max() / scale.max() < 1e-5
    x = r(4, 16, 8, 8)
    x[0, 3, 2, 5] = np.inf
    x[2, 7, 6, 1] = np.nan
    y = F.conv2d(flow.tensor(x), flow.tensor(w), padding=1).numpy()
    ref = TF.conv2d(torch.tensor(x), torch.tensor(w), padding=1).numpy()
    assert not np.isfinite(y[~np.isfinite(ref)]).any()
    bad = ~np.isfinite(ref).reshape(4, 16, 4, 2, 4, 2)  # (n, k, block row, row in block, block col, col)
    touched = np.broadcast_to(bad.any(axis=(3, 5), keepdims=True), bad.shape)
    assert np.isfinite(y.reshape(bad.shape)[~touched]).all()
    finite = np.isfinite(y)
    assert finite.mean() > 0.5
    assert np.allclose(y[finite], ref[finite], rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("case", CONV[::2])
def test_conv_float64_gradcheck(case):
    nd, n, cin, cout, sp, k, kw = case
    g = kw.get("groups", 1)
    x = flow.tensor(r(1, cin, *[min(s, 5) for s in sp], dtype=np.float64), requires_grad=True)
    w = flow.tensor(r(cout, cin // g, *([k] * nd), dtype=np.float64), requires_grad=True)
    b = flow.tensor(r(cout, dtype=np.float64), requires_grad=True)
    gradcheck(lambda *a: FN[nd][0](*a, **kw), [x, w, b])


def test_conv_double_backward_float64():
    x = flow.tensor(r(1, 2, 5, 5, dtype=np.float64), requires_grad=True)
    w = flow.tensor(r(3, 2, 3, 3, dtype=np.float64), requires_grad=True)

    def f(x, w):
        if not x.requires_grad:  # finite-difference evaluations pass fresh leaves
            x.requires_grad_(True)
        y = F.conv2d(x, w, stride=2, padding=1)
        (gx,) = flow.autograd.grad((y * y).sum(), [x], create_graph=True)
        return gx
    gradcheck(f, [x, w])


TCONV = [  # (nd, N, Cin, Cout, spatial, k, kwargs)
    (1, 2, 4, 6, (7,), 3, dict(stride=2, padding=1, output_padding=1)),
    (2, 2, 4, 6, (5, 4), 3, dict(stride=2, padding=1, output_padding=(1, 0), groups=2)),
    (2, 1, 3, 2, (4, 4), 2, dict(dilation=2)),
    (3, 1, 2, 2, (3, 3, 3), 2, dict(stride=2)),
]
TFN = {1: (F.conv_transpose1d, TF.conv_transpose1d), 2: (F.conv_transpose2d, TF.conv_transpose2d),
       3: (F.conv_transpose3d, TF.conv_transpose3d)}


@pytest.mark.parametrize("case", TCONV)
def test_conv_transpose_vs_torch(case):
    nd, n, cin, cout, sp, k, kw = case
    g = kw.get("groups", 1)
    arrs = [r(n, cin, *sp), r(cin, cout // g, *([k] * nd)), r(cout)]
    f, t = TFN[nd]
    check_vs_torch(lambda *a: f(*a, **kw), lambda *a: t(*a, **kw), arrs, rtol=1e-4, atol=1e-4)
    x = flow.tensor(r(1, cin, *sp, dtype=np.float64), requires_grad=True)
    w = flow.tensor(r(cin, cout // g, *([k] * nd), dtype=np.float64), requires_grad=True)
    b = flow.tensor(r(cout, dtype=np.float64), requires_grad=True)
    gradcheck(lambda *a: f(*a, **kw), [x, w, b])


def test_conv_noncontiguous_unbatched_and_zero_batch():
    x, w = r(2, 6, 6, 3), r(4, 3, 3, 3)
    check_vs_torch(lambda a, b: F.conv2d(a.permute(0, 3, 1, 2), b.transpose(2, 3), padding=1),
                   lambda a, b: TF.conv2d(a.permute(0, 3, 1, 2), b.transpose(2, 3), padding=1), [x, w],
                   rtol=1e-4, atol=1e-4)
    check_vs_torch(lambda a, b: F.conv2d(a, b), lambda a, b: TF.conv2d(a, b), [r(3, 5, 5), w], rtol=1e-4, atol=1e-4)
    out = F.conv2d(flow.zeros(0, 3, 5, 5), flow.tensor(w))
    assert tuple(out.shape) == (0, 4, 3, 3)
    out = F.conv2d(flow.zeros(1, 0, 5, 5), flow.zeros(4, 0, 3, 3), flow.ones(4))
    assert_close(out, np.ones((1, 4, 3, 3), np.float32))


def test_conv_float16_bfloat16_through_float32():
    x, w = r(1, 2, 5, 5), r(3, 2, 3, 3)
    for dt in ("float16", "bfloat16"):
        fo = F.conv2d(flow.tensor(x, dtype=getattr(flow, dt)), flow.tensor(w, dtype=getattr(flow, dt)))
        to = TF.conv2d(torch.tensor(x, dtype=getattr(torch, dt)).float(), torch.tensor(w, dtype=getattr(torch, dt)).float())
        assert fo.dtype == getattr(flow, dt)
        assert_close(fo.float(), to, rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("fn,msg", [
    (lambda: F.conv2d(flow.ones(1, 4, 8, 8), flow.ones(8, 3, 3, 3)), "expected input.*to have 3 channels, but got 4"),
    (lambda: F.conv2d(flow.ones(4, 8), flow.ones(8, 3, 3, 3)), "Expected 3D \\(unbatched\\) or 4D \\(batched\\)"),
    (lambda: F.conv2d(flow.ones(1, 3, 8, 8), flow.ones(8, 3, 3, 3), stride=2, padding="same"), "strided"),
    (lambda: F.conv2d(flow.ones(1, 3, 2, 2), flow.ones(8, 3, 3, 3)), "Kernel size can't be greater"),
    (lambda: F.conv2d(flow.ones(1, 4, 8, 8), flow.ones(3, 2, 3, 3), groups=2), "divisible by 2"),
    (lambda: F.conv2d(flow.ones(1, 3, 8, 8), flow.ones(8, 3, 3, 3), flow.ones(7)), "expected bias"),
    (lambda: F.conv2d(flow.ones(1, 3, 8, 8), flow.ones(8, 3, 3, 3), stride=0), "non-positive stride"),
    (lambda: F.conv2d(flow.ones(1, 3, 8, 8), flow.ones(8, 3, 3, 3, dtype=flow.float64)), "should be the same"),
    (lambda: F.conv_transpose2d(flow.ones(1, 3, 4, 4), flow.ones(4, 2, 3, 3)), "transposed=1"),
    (lambda: F.conv_transpose2d(flow.ones(1, 4, 4, 4), flow.ones(4, 2, 3, 3), output_padding=2), "output padding"),
    (lambda: F.max_pool2d(flow.ones(1, 1, 4, 4), 2, padding=2), "pad should be at most half"),
    (lambda: F.max_pool2d(flow.ones(1, 1, 1, 1), 3), "Output size is too small"),
    (lambda: F.avg_pool2d(flow.ones(1, 1, 4, 4), 2, stride=0), "stride should not be zero"),
    (lambda: F.max_pool2d(flow.ones(4), 2), "Expected 3D or 4D"),
])
def test_errors(fn, msg):
    with pytest.raises(RuntimeError, match=msg):
        fn()


def test_conv_int_not_implemented():
    with pytest.raises(NotImplementedError):
        F.conv1d(flow.ones(1, 1, 4, dtype=flow.int64), flow.ones(1, 1, 2, dtype=flow.int64))


POOL = [  # (nd, shape, kwargs)
    (1, (2, 3, 11), dict(kernel_size=3, stride=2, padding=1)),
    (1, (3, 10), dict(kernel_size=4, ceil_mode=True)),
    (2, (2, 3, 9, 8), dict(kernel_size=3, stride=2, padding=1)),
    (2, (1, 2, 7, 7), dict(kernel_size=(2, 3), stride=(2, 1), ceil_mode=True)),
    (3, (1, 2, 5, 6, 7), dict(kernel_size=2, stride=2, padding=1)),
]
MAXP = {1: (F.max_pool1d, TF.max_pool1d), 2: (F.max_pool2d, TF.max_pool2d), 3: (F.max_pool3d, TF.max_pool3d)}
AVGP = {1: (F.avg_pool1d, TF.avg_pool1d), 2: (F.avg_pool2d, TF.avg_pool2d), 3: (F.avg_pool3d, TF.avg_pool3d)}


@pytest.mark.parametrize("case", POOL)
def test_max_pool_vs_torch(case):
    nd, shape, kw = case
    f, t = MAXP[nd]
    check_vs_torch(lambda a: f(a, **kw), lambda a: t(a, **kw), [r(*shape)])
    x = r(*shape)
    fo, fi = f(flow.tensor(x), **kw, return_indices=True)
    to, ti = t(torch.tensor(x), **kw, return_indices=True)
    assert_close(fo, to)
    np.testing.assert_array_equal(fi.numpy(), ti.numpy())
    x64 = flow.tensor(r(*shape, dtype=np.float64), requires_grad=True)
    gradcheck(lambda a: f(a, **kw), [x64])


def test_max_pool_dilation_and_nan():
    x = r(1, 2, 9, 9)
    check_vs_torch(lambda a: F.max_pool2d(a, 3, 1, 1, dilation=2), lambda a: TF.max_pool2d(a, 3, 1, 1, dilation=2), [x])
    x[0, 0, 1, 1] = np.nan
    assert_close(F.max_pool2d(flow.tensor(x), 2), TF.max_pool2d(torch.tensor(x), 2))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_max_pool_2d_fast_path_ties_infinities_nan_indices(dtype):
    # the non-dilated 1-D/2-D path: values and indices equal torch's with ties (first wins), all -inf
    # windows, NaNs (first NaN wins) and padding-clipped windows
    x = np.round(r(2, 3, 9, 10).astype(dtype) * 2) / 2
    x[0, 0, :3, :3] = -np.inf
    x[0, 1, 2, 2] = x[0, 1, 4, 5] = np.nan
    x[1, 2, 0, 1] = np.inf
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=(3, 2), stride=1)):
        fo, fi = F.max_pool2d(flow.tensor(x), **kw, return_indices=True)
        to, ti = TF.max_pool2d(torch.tensor(x), **kw, return_indices=True)
        np.testing.assert_array_equal(fo.numpy(), to.numpy())
        np.testing.assert_array_equal(fi.numpy(), ti.numpy())
    fo, fi = F.max_pool1d(flow.tensor(x[0, 1]), 3, return_indices=True)
    to, ti = TF.max_pool1d(torch.tensor(x[0, 1]), 3, return_indices=True)
    np.testing.assert_array_equal(fo.numpy(), to.numpy())
    np.testing.assert_array_equal(fi.numpy(), ti.numpy())


@pytest.mark.parametrize("width", [16, 35, 40, 64])
def test_max_pool_2x2_vector_rows_match_torch(width):
    # the float 2x2 path takes eight outputs at a time (the rest one by one): dense ties, NaNs, infinities
    # and odd trailing columns must give torch's values and first-winner indices at every position
    x = rng.integers(-2, 3, (3, 4, 7, width)).astype(np.float32)
    x[rng.random(x.shape) < 0.05] = np.nan
    x[rng.random(x.shape) < 0.05] = -np.inf
    x[rng.random(x.shape) < 0.02] = np.inf
    fo, fi = F.max_pool2d(flow.tensor(x), 2, return_indices=True)
    to, ti = TF.max_pool2d(torch.tensor(x), 2, return_indices=True)
    np.testing.assert_array_equal(fo.numpy(), to.numpy())
    np.testing.assert_array_equal(fi.numpy(), ti.numpy())


@pytest.mark.parametrize("case", POOL)
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool_vs_torch(case, count_include_pad):
    nd, shape, kw = case
    f, t = AVGP[nd]
    kw = dict(kw, count_include_pad=count_include_pad)
    check_vs_torch(lambda a: f(a, **kw), lambda a: t(a, **kw), [r(*shape)], rtol=1e-5, atol=1e-6)
    gradcheck(lambda a: f(a, **kw), [flow.tensor(r(*shape, dtype=np.float64), requires_grad=True)])


def test_avg_pool_divisor_override_and_double_backward():
    x = r(1, 2, 6, 6)
    check_vs_torch(lambda a: F.avg_pool2d(a, 3, 2, 1, divisor_override=5),
                   lambda a: TF.avg_pool2d(a, 3, 2, 1, divisor_override=5), [x])
    xf = flow.tensor(r(1, 1, 4, 4, dtype=np.float64), requires_grad=True)

    def f(a):
        if not a.requires_grad:
            a.requires_grad_(True)
        (g,) = flow.autograd.grad((F.avg_pool2d(a, 2) * F.avg_pool2d(a, 2)).sum(), [a], create_graph=True)
        return g
    gradcheck(f, [xf])


@pytest.mark.parametrize("nd,shape,out", [(1, (2, 3, 10), 4), (2, (2, 3, 7, 9), (3, 4)), (2, (3, 7, 9), (None, 2)),
                                          (3, (1, 2, 5, 6, 7), (2, 3, 2)), (2, (1, 1, 5, 5), 7)])
def test_adaptive_pools_vs_torch(nd, shape, out):
    fa = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}[nd]
    ta = {1: TF.adaptive_avg_pool1d, 2: TF.adaptive_avg_pool2d, 3: TF.adaptive_avg_pool3d}[nd]
    check_vs_torch(lambda a: fa(a, out), lambda a: ta(a, out), [r(*shape)], rtol=1e-5, atol=1e-6)
    gradcheck(lambda a: fa(a, out), [flow.tensor(r(*shape, dtype=np.float64), requires_grad=True)])
    if nd <= 2:
        fm = {1: F.adaptive_max_pool1d, 2: F.adaptive_max_pool2d}[nd]
        tm = {1: TF.adaptive_max_pool1d, 2: TF.adaptive_max_pool2d}[nd]
        x = r(*shape)
        fo, fi = fm(flow.tensor(x), out, return_indices=True)
        to, ti = tm(torch.tensor(x), out, return_indices=True)
        assert_close(fo, to)
        np.testing.assert_array_equal(fi.numpy(), ti.numpy())
        check_vs_torch(lambda a: fm(a, out), lambda a: tm(a, out), [x])


def test_pool_noncontiguous_and_zero_batch():
    x = r(2, 8, 8, 3)
    check_vs_torch(lambda a: F.max_pool2d(a.permute(0, 3, 1, 2), 2), lambda a: TF.max_pool2d(a.permute(0, 3, 1, 2), 2), [x])
    check_vs_torch(lambda a: F.avg_pool2d(a.permute(0, 3, 1, 2), 3, 2), lambda a: TF.avg_pool2d(a.permute(0, 3, 1, 2), 3, 2), [x])
    assert tuple(F.max_pool2d(flow.zeros(0, 3, 4, 4), 2).shape) == (0, 3, 2, 2)
    assert tuple(F.adaptive_avg_pool2d(flow.zeros(0, 3, 4, 4), 2).shape) == (0, 3, 2, 2)


def test_linear_and_bilinear():
    check_vs_torch(lambda x, w, b: F.linear(x, w, b), lambda x, w, b: TF.linear(x, w, b), [r(4, 3), r(5, 3), r(5)],
                   rtol=1e-5, atol=1e-5)
    check_vs_torch(lambda x, w: F.linear(x, w), lambda x, w: TF.linear(x, w), [r(2, 4, 3), r(5, 3)], rtol=1e-5,
                   atol=1e-5)
    check_vs_torch(lambda x, w, b: F.linear(x, w, b), lambda x, w, b: TF.linear(x, w, b), [r(2, 4, 3), r(5, 3), r(5)],
                   rtol=1e-5, atol=1e-5)
    check_vs_torch(lambda a, b, w, c: F.bilinear(a, b, w, c), lambda a, b, w, c: TF.bilinear(a, b, w, c),
                   [r(4, 3), r(4, 2), r(5, 3, 2), r(5)], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("nd,kw", [(2, dict(stride=1, dilation=2, output_padding=1)),
                                   (2, dict(stride=1, dilation=3, output_padding=2, padding=1)),
                                   (1, dict(stride=2, dilation=3, output_padding=2)),
                                   (2, dict(stride=(1, 2), dilation=(2, 3), output_padding=(1, 2), padding=(2, 1))),
                                   (3, dict(stride=1, dilation=2, output_padding=1, padding=1, groups=2))])
def test_conv_transpose_output_padding_at_or_above_stride_matches_torch(nd, kw):
    # allowed by torch while output_padding < dilation; oneDNN has no primitive for it directly
    c = 4 if "groups" in kw else 2
    x = np.random.default_rng(0).standard_normal((2, c) + (5,) * nd).astype("float32")
    tm = getattr(torch.nn, f"ConvTranspose{nd}d")(c, 6, 3, **kw)
    fm = getattr(flow.nn, f"ConvTranspose{nd}d")(c, 6, 3, **kw)
    fm.load_state_dict({k: flow.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    X, Y = torch.tensor(x, requires_grad=True), flow.tensor(x, requires_grad=True)
    a, b = tm(X), fm(Y)
    g = np.random.default_rng(1).standard_normal(tuple(a.shape)).astype("float32")
    a.backward(torch.tensor(g))
    b.backward(flow.tensor(g))
    assert tuple(b.shape) == tuple(a.shape)
    for want, got in ((a.detach(), b.detach()), (X.grad, Y.grad), (tm.weight.grad, fm.weight.grad),
                      (tm.bias.grad, fm.bias.grad)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=2e-5)


def test_conv_transpose_negative_output_padding_raises_like_torch():
    for M in (flow, torch):
        with pytest.raises(RuntimeError, match="negative output_padding is not supported"):
            M.nn.ConvTranspose2d(2, 3, 3, output_padding=-1)(M.ones(1, 2, 5, 5))


@pytest.mark.parametrize("fn,shape,kw", [
    ("max_pool1d", (3, 7), dict(kernel_size=3, stride=2)),
    ("max_pool2d", (2, 3, 6, 7), dict(kernel_size=2)),
    ("max_pool2d", (2, 3, 6, 7), dict(kernel_size=3, stride=1, padding=1)),
    ("max_pool2d", (2, 3, 6, 7), dict(kernel_size=2, dilation=2)),
    ("max_pool3d", (2, 3, 6, 7, 5), dict(kernel_size=2)),
    ("adaptive_max_pool1d", (3, 7), dict(output_size=3)),
    ("adaptive_max_pool2d", (2, 3, 6, 7), dict(output_size=(4, 3))),
    ("adaptive_max_pool3d", (2, 3, 6, 7, 5), dict(output_size=(2, 3, 2)))])
def test_max_pool_reports_a_windows_last_nan_like_torch(fn, shape, kw):
    # the pooled value is NaN either way, but the index decides which element gets the gradient
    x = np.random.default_rng(0).standard_normal(shape).astype("float32")
    x[np.random.default_rng(1).random(shape) < 0.3] = np.nan
    got = getattr(F, fn)(flow.tensor(x), return_indices=True, **kw)
    want = getattr(TF, fn)(torch.tensor(x), return_indices=True, **kw)
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())


@pytest.mark.parametrize("fn,shape,size,msg", [
    ("adaptive_avg_pool1d", (2, 3, 11), (2, 2), "should contain one int"),
    ("adaptive_max_pool1d", (2, 3, 11), (2, 2), "should contain one int"),
    ("adaptive_avg_pool2d", (2, 3, 11, 10), (2, 3, 4), "output_size must be 2"),
    ("adaptive_max_pool2d", (2, 3, 11, 10), (2,), "output_size.size\\(\\) must be 2"),
    ("adaptive_avg_pool3d", (2, 3, 4, 5, 6), (2, 3), "output_size must be 3")])
def test_adaptive_pool_output_size_of_the_wrong_length_raises_like_torch(fn, shape, size, msg):
    for FF, M in ((F, flow), (TF, torch)):
        with pytest.raises(RuntimeError, match=msg):
            getattr(FF, fn)(M.zeros(*shape), size)


def test_convolution_scratch_is_one_reused_stack_not_cached_blocks_per_layer_size():
    # im2col (few output positions), Winograd (3x3 stride 1) forward and backward on layers of different sizes:
    # their scratch comes from the thread's scratch stack, which ends at the largest call's need, while the caching
    # allocator keeps only the tensors' blocks (before, one cached block per layer's scratch size stayed behind)
    layers = [(8, 64, 32, 3), (8, 128, 16, 3), (1, 256, 8, 3), (1, 512, 4, 3), (8, 64, 32, 1)]

    def run(n, c, hw, k):
        x = flow.randn(n, c, hw, hw, requires_grad=True)
        w = flow.randn(c, c, k, k, requires_grad=True)
        F.conv2d(x, w, padding=k // 2).sum().backward()
        return x.grad, w.grad

    for layer in layers:  # warm: every size has been seen
        run(*layer)
    flow._C._empty_cache()
    before = flow._C._allocator_stats()
    for layer in layers:
        run(*layer)
    after = flow._C._allocator_stats()
    tensors = sum(4 * (n * c * hw * hw * 2 + c * c * k * k * 2) for n, c, hw, k in layers)  # inputs, outputs, grads
    assert after["cached_bytes"] - before["cached_bytes"] <= tensors  # + 5 MiB of scratch blocks before
    assert 0 < after["scratch_bytes"] == before["scratch_bytes"]  # settled: the second pass grew nothing
    # the results are still right
    x, w = flow.randn(1, 256, 8, 8, requires_grad=True), flow.randn(256, 256, 3, 3, requires_grad=True)
    tx, tw = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (x, w))
    F.conv2d(x, w, padding=1).square().sum().backward()
    torch.nn.functional.conv2d(tx, tw, padding=1).square().sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-2)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-3, atol=1e-2)
