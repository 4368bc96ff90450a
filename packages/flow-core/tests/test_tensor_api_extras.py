"""Tensor APIs added after a differential review, against torch: logcumsumexp (values at the extremes, first
and second derivatives), the in-place view ops, isin, mode, cumsum_/cumprod_, scatter_reduce_ and the
select/slice/diagonal_scatter family."""
import numpy as np
import pytest

import oneflow as flow

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("vals", [[-1000.0, 0.0, float("inf"), 1.0], [float("-inf"), float("-inf"), 1.0],
                                  [1.0, float("nan"), 2.0], [3.0, 3.0, 3.0], [88.0, 89.0, 90.0]])
def test_logcumsumexp_special_values(vals):
    for dt in ("float32", "float64"):
        got = flow.logcumsumexp(flow.tensor(np.array(vals, dt)), 0).numpy()
        want = torch.logcumsumexp(torch.tensor(np.array(vals, dt)), 0).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_logcumsumexp_gradients_and_double_backward(dim):
    x = np.random.default_rng(0).standard_normal((3, 5, 4)) * 5
    g = np.random.default_rng(1).standard_normal((3, 5, 4))
    res = []
    for M in (flow, torch):
        a = M.tensor(x, requires_grad=True)
        y = M.logcumsumexp(a, dim)
        ga, = M.autograd.grad(y, a, M.tensor(g), create_graph=True)
        (ga ** 2).sum().backward()
        res.append((y.detach().numpy(), ga.detach().numpy(), a.grad.numpy()))
    for got, want in zip(*res):
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    with pytest.raises(NotImplementedError, match='"logcumsumexp_out_cpu" not implemented for \'Long\''):
        flow.logcumsumexp(flow.tensor([1, 2]), 0)


def _views(M, x):
    b = x * 2
    assert b.squeeze_(2) is b
    b.t_()
    b.unsqueeze_(0)
    b.transpose_(0, 2)
    b.swapdims_(0, 1)
    return b


def test_in_place_view_ops_change_shape_and_keep_gradients():
    res = []
    for M in (flow, torch):
        x = M.tensor(np.arange(6.0).reshape(2, 3, 1), requires_grad=True)
        b = _views(M, x)
        (b * M.tensor(np.arange(6.0).reshape(tuple(b.shape)))).sum().backward()
        res.append((tuple(b.shape), b.stride(), b.detach().numpy(), x.grad.numpy()))
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            M.ones(2, 1, requires_grad=True).squeeze_()
        d = M.arange(6.0)
        d.as_strided_((2, 2), (1, 2), 1)
        res[-1] += (d.numpy(),)
    for got, want in zip(*res):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("elements,test,kw", [([1, 2, 3, 4], [2, 4.5], {}),
                                               ([1.0, float("nan")], [float("nan"), 1], {}),
                                               ([[1, 5], [2, 3]], [3, 1], {"invert": True}), ([1, 2], [], {}),
                                               (3, [3], {}), ([1, 3], 3, {})])
def test_isin_like_torch(elements, test, kw):
    def arg(M, v):
        return M.tensor(v, dtype=M.int64) if v == [] else (M.tensor(v) if isinstance(v, list) else v)
    got = flow.isin(arg(flow, elements), arg(flow, test), **kw)
    want = torch.isin(arg(torch, elements), arg(torch, test), **kw)
    assert got.dtype == flow.bool
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dim,keepdim", [(1, False), (0, True), (-1, False)])
def test_mode_picks_smallest_most_frequent_and_its_last_index(dim, keepdim):
    x = np.array([[1, 2, 2, 3, 3], [4, 4, 1, 1, 5], [7, 7, 7, 0, 0]])
    got = flow.mode(flow.tensor(x), dim, keepdim)
    want = torch.mode(torch.tensor(x), dim, keepdim)
    np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    v = flow.tensor([2.0, 1.0, 1.0, 2.0], requires_grad=True)
    m = v.mode()
    m.values.backward()
    assert m.indices.item() == 2 and v.grad.tolist() == [0.0, 0.0, 1.0, 0.0]


def test_in_place_scans_and_scatter_family():
    x, s1 = np.arange(12.0).reshape(3, 4), np.array([10.0, 11, 12])
    s2, s3 = np.full((3, 2), -1.0), np.array([7.0, 8, 9])
    res = []
    for M in (flow, torch):
        X, S1, S2, S3 = (M.tensor(a, requires_grad=True) for a in (x, s1, s2, s3))
        a, b, c = M.select_scatter(X, S1, 1, 2), X.slice_scatter(S2, 1, 1, 4, 2), M.diagonal_scatter(X, S3, 1)
        (a * 2 + b * 3 + c * 5).sum().backward()
        y = M.tensor([[1.0, 2.0]])
        y.scatter_reduce_(1, M.tensor([[0, 0]]), M.tensor([[3.0, 4.0]]), "amax")
        z = M.tensor([1.0, 2.0, 3.0])
        z.cumsum_(0)
        w = M.tensor([1.0, 2.0, 3.0])
        w.cumprod_(0)
        res.append([t.detach().numpy() for t in (a, b, c, X.grad, S1.grad, S2.grad, S3.grad, y, z, w)])
    for got, want in zip(*res):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(RuntimeError, match="expected src to have a size equal to the slice of self"):
        flow.select_scatter(flow.zeros(3, 4), flow.zeros(4), 1, 0)


X6 = np.arange(6.0).reshape(2, 3)
EXCEPTION_CASES = {
    "movedim_repeated": (lambda M: M.movedim(M.tensor(X6), (0, 1), (0, 0)), RuntimeError),
    "movedim_length": (lambda M: M.movedim(M.tensor(X6), (0, 1), (1,)), RuntimeError),
    "mT_1d": (lambda M: M.ones(3).mT, RuntimeError),
    "mH_1d": (lambda M: M.ones(3).mH, RuntimeError),
    "narrow_past_end": (lambda M: M.tensor(X6).narrow(1, 2, 5), RuntimeError),
    "narrow_negative_length": (lambda M: M.tensor(X6).narrow(1, 1, -1), RuntimeError),
    "narrow_start_range": (lambda M: M.tensor(X6).narrow(1, -5, 1), IndexError),
    "narrow_0d": (lambda M: M.tensor(1.0).narrow(0, 0, 1), RuntimeError),
    "diagonal_1d": (lambda M: M.ones(3).diagonal(), IndexError),
    "index_add_negative": (lambda M: M.zeros(3).index_add_(0, M.tensor([0, -1]), M.ones(2)), IndexError),
    "div_bool_floor": (lambda M: M.div(M.tensor([True]), M.tensor([True]), rounding_mode="floor"), NotImplementedError),
    "clamp_bool": (lambda M: M.tensor([True]).clamp(max=True), NotImplementedError),
    "vector_norm_empty_inf": (lambda M: M.linalg.vector_norm(M.zeros(0), float("inf")), RuntimeError),
    "floor_divide_backward": (lambda M: (M.ones(2, requires_grad=True) // 2).sum().backward(), RuntimeError),
}


@pytest.mark.parametrize("case", list(EXCEPTION_CASES))
def test_exception_types_match_torch(case):
    call, exc = EXCEPTION_CASES[case]
    for M in (flow, torch):
        with pytest.raises(exc):
            call(M)


def test_zero_dim_and_deprecated_forms_like_torch():
    for M in (flow, torch):
        s = M.tensor(3.0)
        assert M.movedim(s, 0, 0).shape == () and M.movedim(s, -1, 0).shape == ()
        with pytest.warns(UserWarning, match="Tensor.T is deprecated on 0-D tensors"):
            assert s.T.item() == 3.0
        with pytest.warns(UserWarning, match="Tensor.mT is deprecated on 0-D tensors"):
            assert s.mT.item() == 3.0
        r = M.tensor([[1.0, 2.0, 3.0]]).repeat_interleave(M.tensor(2), dim=0)
        assert tuple(r.shape) == (2, 3)
        with pytest.warns(UserWarning, match="where received a uint8 condition tensor"):
            w = M.where(M.tensor([1, 0], dtype=M.uint8), M.ones(2), M.zeros(2))
        assert w.tolist() == [1.0, 0.0]
        with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
            M.nn.functional.dropout2d(M.ones(2, 3, 4), 0.5)


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_prod_gradients_with_zeros_like_torch(include_self):
    rng = np.random.default_rng(0)
    self_, src, ix = rng.standard_normal((3, 5)), rng.standard_normal((3, 4)), rng.integers(0, 5, (3, 4))
    self_[0, 1] = 0.0  # a zero in self, one lone zero in src, and two zeros in src meeting at one target
    src[1, 2] = src[2, 0] = src[2, 1] = 0.0
    ix[2, 0] = ix[2, 1] = 3
    g = rng.standard_normal((3, 5))
    res = []
    for M in (flow, torch):
        S, R = M.tensor(self_, requires_grad=True), M.tensor(src, requires_grad=True)
        out = M.scatter_reduce(S, 1, M.tensor(ix), R, "prod", include_self=include_self)
        out.backward(M.tensor(g))
        res.append((out.detach().numpy(), S.grad.numpy(), R.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_median_of_an_empty_integer_tensor_gives_torchs_value():
    for name in ("median", "nanmedian"):
        for dt in ("int64", "int32", "int16", "int8", "uint8"):
            got = getattr(flow.zeros(0, dtype=getattr(flow, dt)), name)()
            want = getattr(torch.zeros(0, dtype=getattr(torch, dt)), name)()
            assert got.item() == want.item() and str(got.dtype).endswith(dt)
