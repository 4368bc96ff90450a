"""Fractional max pooling (2-D and 3-D), the legacy CrossMapLRN2d and conv_tbc against PyTorch: values, indices,
gradients, errors and module reprs."""
import numpy as np
import pytest

import oneflow as flow

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def pair(a, requires_grad=True):
    return flow.tensor(a, requires_grad=requires_grad), torch.tensor(a, requires_grad=requires_grad)


def run_frac(nd, shape, kernel, dtype, **kw):
    """Pools the same data with the same random samples in both libraries; compares output, indices, grad."""
    a = RNG.standard_normal(shape).astype(dtype)
    n = shape[0] if len(shape) == nd + 2 else 1
    s = RNG.random((n, shape[-nd - 1], nd)).astype(dtype)
    fx, tx = pair(a)
    fo, fi = getattr(flow.nn.functional, f"fractional_max_pool{nd}d")(
        fx, kernel, return_indices=True, _random_samples=flow.tensor(s), **kw)
    to, ti = getattr(torch.nn.functional, f"fractional_max_pool{nd}d")(
        tx, kernel, return_indices=True, _random_samples=torch.tensor(s), **kw)
    assert tuple(fo.shape) == tuple(to.shape) and fi.dtype == flow.int64
    np.testing.assert_array_equal(fo.detach().numpy(), to.detach().numpy())
    np.testing.assert_array_equal(fi.numpy(), ti.numpy())
    g = RNG.standard_normal(tuple(to.shape)).astype(dtype)
    fo.backward(flow.tensor(g))
    to.backward(torch.tensor(g))
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,kernel,kw", [
    ((2, 3, 11, 9), (3, 2), dict(output_size=(5, 4))),
    ((2, 3, 10, 10), 2, dict(output_size=5)),
    ((3, 10, 13), 2, dict(output_ratio=(0.5, 0.7))),
    ((1, 2, 40, 37), (2, 3), dict(output_size=(17, 11))),
    ((2, 2, 6, 6), 3, dict(output_size=1)),
])
def test_fractional_max_pool2d_matches_torch(dtype, shape, kernel, kw):
    run_frac(2, shape, kernel, dtype, **kw)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,kernel,kw", [
    ((2, 2, 7, 8, 9), (2, 3, 2), dict(output_size=(3, 4, 5))),
    ((2, 6, 7, 8), 2, dict(output_ratio=(0.5, 0.6, 0.7))),
    ((1, 3, 9, 9, 9), 2, dict(output_ratio=0.5)),
])
def test_fractional_max_pool3d_matches_torch(dtype, shape, kernel, kw):
    run_frac(3, shape, kernel, dtype, **kw)


@pytest.mark.parametrize("tdt,fdt", [(torch.float16, flow.float16), (torch.bfloat16, flow.bfloat16)])
def test_fractional_starts_in_reduced_precision(tdt, fdt):
    # an increasing input puts every window's maximum on its last element, so the indices spell out the starts
    h, w = 101, 37
    x = np.arange(h * w, dtype=np.float32).reshape(1, 1, h, w) / (h * w)
    s = torch.tensor(RNG.random((1, 1, 2))).to(tdt)
    _, ti = torch.nn.functional.fractional_max_pool2d(torch.tensor(x).to(tdt), 2, output_size=(43, 15),
                                                      return_indices=True, _random_samples=s)
    _, fi = flow.nn.functional.fractional_max_pool2d(flow.tensor(x).to(fdt), 2, output_size=(43, 15),
                                                     return_indices=True, _random_samples=flow.tensor(
                                                         s.float().numpy()).to(fdt))
    np.testing.assert_array_equal(fi.numpy(), ti.numpy())


def test_fractional_ties_and_nan_follow_torch_scan():
    inf, nan = float("inf"), float("nan")
    a = np.full((1, 1, 4, 4), -inf, dtype=np.float32)
    b = np.array([[[[1, 5, 5, 2], [5, 0, 5, 1], [0, 0, 0, 0], [5, 5, 5, 5]]]], dtype=np.float32)
    c = a.copy()
    c[0, 0, 0, 0] = c[0, 0, 2, 3] = c[0, 0, 3, 3] = nan
    s = np.array([[[0.3, 0.6]]], dtype=np.float32)
    for x, k, o in ((a, 3, 2), (b, 2, 2), (c, 3, 1), (c, 2, 3)):
        fo, fi = flow.nn.functional.fractional_max_pool2d(flow.tensor(x), k, o, return_indices=True,
                                                          _random_samples=flow.tensor(s))
        to, ti = torch.nn.functional.fractional_max_pool2d(torch.tensor(x), k, o, return_indices=True,
                                                           _random_samples=torch.tensor(s))
        np.testing.assert_array_equal(fo.numpy(), to.numpy())
        np.testing.assert_array_equal(fi.numpy(), ti.numpy())


def test_fractional_internal_samples_and_variants():
    x = flow.randn(2, 3, 9, 8, requires_grad=True)
    out = flow.nn.functional.fractional_max_pool2d(x, 2, output_size=(4, 3))
    assert tuple(out.shape) == (2, 3, 4, 3)
    out.sum().backward()
    assert float(x.grad.sum()) == 2 * 3 * 4 * 3
    o, i = flow.nn.functional.fractional_max_pool2d_with_indices(x, 2, output_size=4)
    assert tuple(o.shape) == tuple(i.shape) == (2, 3, 4, 4)
    np.testing.assert_array_equal(o.detach().numpy(), np.take_along_axis(
        x.detach().numpy().reshape(2, 3, -1), i.numpy().reshape(2, 3, -1), 2).reshape(2, 3, 4, 4))
    y = flow.randn(3, 7, 8, 9, dtype=flow.float64)
    o, i = flow.nn.functional.fractional_max_pool3d(y, (2, 2, 3), output_ratio=0.5, return_indices=True)
    assert tuple(o.shape) == (3, 3, 4, 4) and o.dtype == flow.float64
    o, i = flow.nn.functional.fractional_max_pool3d_with_indices(y.unsqueeze(0), 2, output_size=(2, 3, 3))
    assert tuple(o.shape) == (1, 3, 2, 3, 3)
    assert tuple(flow.nn.functional.fractional_max_pool2d(flow.randn(0, 3, 8, 9), 3, 4).shape) == (0, 3, 4, 4)


def test_fractional_modules():
    m = flow.nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True)
    t = torch.nn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True)
    assert repr(m) == repr(t) == "FractionalMaxPool2d()"
    assert (m.kernel_size, m.output_size, m.output_ratio) == (t.kernel_size, t.output_size, t.output_ratio)
    o, i = m(flow.randn(2, 3, 10, 12))
    assert tuple(o.shape) == tuple(i.shape) == (2, 3, 5, 6)
    m3 = flow.nn.FractionalMaxPool3d((1, 2, 3), output_size=2)
    assert repr(m3) == "FractionalMaxPool3d()" and m3.kernel_size == (1, 2, 3) and m3.output_size == (2, 2, 2)
    assert tuple(m3(flow.randn(3, 5, 6, 7)).shape) == (3, 2, 2, 2)
    s = np.full((1, 2, 2), 0.5, dtype=np.float32)
    fm = flow.nn.FractionalMaxPool2d(2, output_size=3, _random_samples=flow.tensor(s))
    tm = torch.nn.FractionalMaxPool2d(2, output_size=3, _random_samples=torch.tensor(s))
    assert list(fm.state_dict()) == list(tm.state_dict()) == ["_random_samples"]
    x = np.arange(50, dtype=np.float32).reshape(1, 2, 5, 5)
    np.testing.assert_array_equal(fm(flow.tensor(x)).numpy(), tm(torch.tensor(x)).numpy())


@pytest.mark.parametrize("make", [
    lambda L: L.nn.FractionalMaxPool2d(2),
    lambda L: L.nn.FractionalMaxPool3d(2),
    lambda L: L.nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5),
    lambda L: L.nn.FractionalMaxPool2d(2, output_ratio=1.0),
    lambda L: L.nn.FractionalMaxPool3d(2, output_ratio=(0.5, 0.5, 0.0)),
    lambda L: L.nn.FractionalMaxPool3d(0, output_size=2),
])
def test_fractional_module_errors(make):
    with pytest.raises(ValueError) as want:
        make(torch)
    with pytest.raises(ValueError) as got:
        make(flow)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("call", [
    lambda L, F: F.fractional_max_pool2d(L.randn(2, 3, 8, 9), 3, output_size=(7, 4)),
    lambda L, F: F.fractional_max_pool2d(L.randn(2, 3, 8, 9), 3, output_size=(4, 8)),
    lambda L, F: F.fractional_max_pool2d(L.randn(2, 3, 8, 9), 3),
    lambda L, F: F.fractional_max_pool2d(L.randn(8, 9), 3, output_size=4),
    lambda L, F: F.fractional_max_pool2d(L.randn(1, 1, 1, 8, 9), 3, output_size=2, _random_samples=L.rand(1, 1, 2)),
    lambda L, F: F.fractional_max_pool2d(L.randn(2, 0, 8, 9), 2, output_size=2),
    lambda L, F: F.fractional_max_pool2d(L.randn(2, 3, 8, 9), 3, 4, _random_samples=L.rand(2, 3, 3)),
    lambda L, F: F.fractional_max_pool2d(L.randn(2, 3, 8, 9), 3, 4, _random_samples=L.rand(1, 3, 2)),
    lambda L, F: F.fractional_max_pool2d(L.randn(2, 3, 8, 9), 3, 4, _random_samples=L.rand(2, 3, 2).double()),
    lambda L, F: F.fractional_max_pool2d(L.randn(2, 3, 8, 9), (2, 3, 4), output_size=2),
    lambda L, F: F.fractional_max_pool2d(L.randn(2, 3, 8, 9), 3, output_ratio=(0.5, 0.5, 0.5)),
    lambda L, F: F.fractional_max_pool2d(L.randn(2, 3, 8, 9), 3, output_ratio=0.5),
    lambda L, F: F.fractional_max_pool2d(L.randn(2, 3, 8, 9).long(), 3, output_size=4),
    lambda L, F: F.fractional_max_pool3d(L.randn(2, 3, 5, 8, 9), (2, 3, 3), output_size=(4, 7, 4)),
    lambda L, F: F.fractional_max_pool3d(L.randn(2, 3, 5, 8, 9), (2, 3, 3), output_size=(3, 6, 7)),
    lambda L, F: F.fractional_max_pool3d(L.randn(2, 3, 5, 8, 9), (2, 3, 3), output_size=(3, 6, 6)),
    lambda L, F: F.fractional_max_pool3d(L.randn(3, 5, 6, 0), 2, output_size=2),
    lambda L, F: F.fractional_max_pool3d(L.randn(2, 3, 5, 8, 9), 2, 2, _random_samples=L.rand(2, 3, 2)),
])
def test_fractional_errors_match_torch(call):
    with pytest.raises(Exception) as want:
        call(torch, torch.nn.functional)
    with pytest.raises(type(want.value)) as got:
        call(flow, flow.nn.functional)
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("size", [2, 3, 5, 6, 10])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_map_lrn2d_matches_torch(size, dtype):
    a = RNG.standard_normal((2, 7, 3, 4)).astype(dtype)
    fx, tx = pair(a)
    fo = flow.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=2.0)(fx)
    to = torch.nn.CrossMapLRN2d(size, alpha=0.5, beta=0.75, k=2.0)(tx)
    tol = 1e-6 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(fo.detach().numpy(), to.detach().numpy(), rtol=tol, atol=tol)
    g = RNG.standard_normal(a.shape).astype(dtype)
    fo.backward(flow.tensor(g))
    to.backward(torch.tensor(g))
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)


def test_cross_map_lrn2d_repr_and_errors():
    assert repr(flow.nn.CrossMapLRN2d(3)) == repr(torch.nn.CrossMapLRN2d(3)) == \
        "CrossMapLRN2d(3, alpha=0.0001, beta=0.75, k=1)"
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D instead."):
        flow.nn.CrossMapLRN2d(3)(flow.randn(2, 3, 4))
    # default constants on a plain forward
    a = RNG.standard_normal((1, 4, 2, 2)).astype(np.float32)
    np.testing.assert_allclose(flow.nn.CrossMapLRN2d(3)(flow.tensor(a)).numpy(),
                               torch.nn.CrossMapLRN2d(3)(torch.tensor(a)).numpy(), rtol=1e-6)


@pytest.mark.parametrize("pad", [0, 1, 2])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv_tbc_matches_torch(pad, dtype):
    arrays = [RNG.standard_normal(s).astype(dtype) for s in ((7, 2, 4), (3, 4, 5), (5,))]
    fs = [flow.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    fo, to = flow.conv_tbc(*fs, pad), torch.conv_tbc(*ts, pad)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(fo.detach().numpy(), to.detach().numpy(), rtol=tol, atol=tol)
    g = RNG.standard_normal(tuple(to.shape)).astype(dtype)
    fo.backward(flow.tensor(g))
    to.backward(torch.tensor(g))
    for f, t in zip(fs, ts):
        np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("shapes", [((3, 4), (2, 4, 5), (5,)), ((3, 2, 4), (2, 3, 5), (5,)),
                                    ((3, 2, 4), (2, 4, 5), (6,)), ((3, 2, 4), (2, 4, 5), (5, 1))])
def test_conv_tbc_errors(shapes):
    with pytest.raises(RuntimeError) as want:
        torch.conv_tbc(*(torch.randn(*s) for s in shapes))
    with pytest.raises(RuntimeError) as got:
        flow.conv_tbc(*(flow.randn(*s) for s in shapes))
    assert str(got.value) == str(want.value)
