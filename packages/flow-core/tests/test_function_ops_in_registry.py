"""Ops once written as Python autograd Functions, now registry ops: normal with tensor mean/std
(_normal_tensor), cholesky_solve, angle, the chunked linear cross entropy (_linear_cross_entropy_chunked) and
CrossMapLRN2d (_cross_map_lrn2d). Values and gradients against torch (broadcasting, non-contiguous, zero-size and
0-dim inputs), errors, meta tensors, and dispatch modes seeing each as one op by its name."""
import numpy as np
import pytest

import oneflow as flow
from helpers import LoggingMode, assert_close, check_vs_torch, gradcheck

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)


def spd_factor(shape, upper):
    """A well-conditioned Cholesky factor of the given batch shape + (n, n)."""
    a = RNG.standard_normal(shape)
    spd = a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])
    f = np.linalg.cholesky(spd)
    return np.ascontiguousarray(np.swapaxes(f, -1, -2)) if upper else f


def lce_inputs(n=10, d=4, c=6, ignore=None):
    x = RNG.standard_normal((n, d))
    w = RNG.standard_normal((c, d))
    b = RNG.standard_normal(c)
    t = RNG.integers(0, c, n)
    if ignore is not None and n:
        t[::3] = ignore
    return x, w, b, t


def chunked_ce(x, w, t, b=None, weight=None, rows=3, reduction="mean", ignore_index=None):
    opts = flow.nn.LinearCrossEntropyOptions(batch_chunk_size=rows)
    return flow.nn.functional.linear_cross_entropy(x, w, t, linear_bias=b, weight=weight, reduction=reduction,
                                                   ignore_index=ignore_index, options=opts)


def torch_ce(x, w, t, b=None, weight=None, reduction="mean", ignore_index=None):
    return torch.nn.functional.cross_entropy(torch.nn.functional.linear(x, w, b), t, weight=weight,
                                             reduction=reduction,
                                             ignore_index=-100 if ignore_index is None else ignore_index)


# ---- normal(mean_tensor, std_tensor) -------------------------------------------------------------------------

@pytest.mark.parametrize("ms,ss", [((2, 3), (2, 3)), ((2, 1), (3,)), ((), (4,)), ((0, 2), (2,)), ((), ())])
def test_normal_tensor_is_mean_plus_std_times_standard_normals(ms, ss):
    mean, std = flow.tensor(RNG.standard_normal(ms)), flow.tensor(RNG.random(ss) + 0.5)
    g = flow.Generator().manual_seed(7)
    y = flow.normal(mean, std, generator=g)
    shape = tuple(torch.broadcast_shapes(ms, ss))
    assert tuple(y.shape) == shape and y.dtype == flow.float64
    z = flow.randn(shape, dtype=flow.float64, generator=flow.Generator().manual_seed(7))
    assert_close(y, (mean + std * z).numpy(), rtol=1e-12, atol=1e-12)


def test_normal_tensor_with_one_number_and_non_contiguous_inputs():
    m = flow.tensor(RNG.standard_normal((3, 4)), dtype=flow.float32).t()
    for y, ref in ((flow.normal(m, 2.0, generator=flow.Generator().manual_seed(1)), lambda z: m + 2.0 * z),
                   (flow.normal(1.5, m.abs(), generator=flow.Generator().manual_seed(1)), lambda z: 1.5 + m.abs() * z)):
        assert tuple(y.shape) == (4, 3) and y.dtype == flow.float32
        z = flow.randn(4, 3, generator=flow.Generator().manual_seed(1))
        assert_close(y, ref(z).numpy(), rtol=1e-6, atol=1e-6)


def test_normal_tensor_gradients_are_zero_and_errors():
    m = flow.zeros(2, 1, requires_grad=True)
    s = flow.ones(3, dtype=flow.float64, requires_grad=True)
    flow.normal(m, s).sum().backward()
    assert m.grad.tolist() == [[0.0], [0.0]] and s.grad.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="must match the size"):
        flow.normal(flow.zeros(2), flow.ones(3))
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        flow.normal(flow.zeros(3), flow.tensor([1.0, -1.0, 1.0]))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -2"):
        flow.normal(flow.zeros(3), -2.0)
    with pytest.raises(NotImplementedError, match="normal_kernel_cpu"):
        flow.normal(0.0, flow.ones(3, dtype=flow.int32))
    assert flow.normal(flow.zeros(2), flow.tensor([1.0, float("nan")])).shape == (2,)  # NaN std passes, as torch


# ---- cholesky_solve ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("bs,fs", [((2, 3, 4, 2), (3, 4, 4)), ((4, 3), (2, 4, 4)), ((1, 3, 0), (3, 3)),
                                   ((0, 2, 2), (2, 2))])
def test_cholesky_solve_broadcasts_batches(upper, bs, fs):
    b, f = RNG.standard_normal(bs), spd_factor(fs, upper)
    check_vs_torch(lambda x, y: flow.cholesky_solve(x, y, upper), lambda x, y: torch.cholesky_solve(x, y, upper),
                   [b, f], rtol=1e-9, atol=1e-10)


def test_cholesky_solve_non_contiguous_and_second_order():
    f = spd_factor((3, 3), False)
    b = RNG.standard_normal((2, 3))
    check_vs_torch(lambda x, y: flow.cholesky_solve(x.t(), y), lambda x, y: torch.cholesky_solve(x.t(), y),
                   [b, f], rtol=1e-9, atol=1e-10)
    # only the lower triangle is read: differentiate through tril so finite differences see the same function
    gradcheck(lambda x, y: flow.cholesky_solve(x, flow.tril(y)), [flow.tensor(b.T, requires_grad=True),
                                                                  flow.tensor(f, requires_grad=True)])
    x, y = flow.tensor(b.T, requires_grad=True), flow.tensor(f, requires_grad=True)
    tx, ty = torch.tensor(b.T, requires_grad=True), torch.tensor(f, requires_grad=True)
    (gx,) = flow.autograd.grad(flow.cholesky_solve(x, y).pow(2).sum(), [y], create_graph=True)
    (tgx,) = torch.autograd.grad(torch.cholesky_solve(tx, ty).pow(2).sum(), [ty], create_graph=True)
    gx.sum().backward()
    tgx.sum().backward()
    assert_close(x.grad, tx.grad, rtol=1e-8, atol=1e-9)


def test_cholesky_solve_errors_and_out():
    with pytest.raises(RuntimeError, match="b should have at least 2 dimensions, but has 1 dimensions instead"):
        flow.cholesky_solve(flow.ones(3), flow.eye(3))
    with pytest.raises(RuntimeError, match="Incompatible matrix sizes for cholesky_solve"):
        flow.cholesky_solve(flow.ones(3, 2), flow.eye(4))
    with pytest.raises(RuntimeError, match="Expected b and A to have the same dtype, but found b of type Float and A "
                                           "of type Double instead."):
        flow.cholesky_solve(flow.ones(3, 2), flow.eye(3, dtype=flow.float64))
    with pytest.raises(NotImplementedError, match="\"cholesky_solve_cpu\" not implemented for 'Long'"):
        flow.cholesky_solve(flow.ones(3, 2, dtype=flow.int64), flow.eye(3, dtype=flow.int64))
    out = flow.empty(0)
    r = flow.cholesky_solve(flow.ones(3, 2), flow.eye(3) * 2, out=out)
    assert r is out and np.allclose(out.numpy(), 0.25)


# ---- angle ---------------------------------------------------------------------------------------------------

def test_angle_layouts_and_dtypes():
    a = np.array([[1.0, -2.0, 0.0], [-0.0, np.nan, -np.inf]])
    check_vs_torch(lambda x: flow.angle(x.t()), lambda x: torch.angle(x.t()), [a])
    check_vs_torch(lambda x: x.angle(), lambda x: x.angle(), [np.array(-3.0)])
    check_vs_torch(lambda x: flow.angle(x), lambda x: torch.angle(x), [np.zeros((0, 3))])
    for dt in ("int32", "bool", "float16"):
        f = flow.tensor([1, 0, 1], dtype=getattr(flow, dt)) if dt == "bool" else flow.tensor([3, -1, 0],
                                                                                          dtype=getattr(flow, dt))
        t = torch.tensor(f.numpy())
        assert_close(flow.angle(f), torch.angle(t))


# ---- chunked linear cross entropy ----------------------------------------------------------------------------

@pytest.mark.parametrize("rows", [1, 4, 100])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_chunked_linear_ce_matches_torch(rows, reduction):
    x, w, b, t = lce_inputs(ignore=2)
    cw = RNG.random(6) + 0.5  # class weights take no gradient in torch
    check_vs_torch(
        lambda x, w, b: chunked_ce(x, w, flow.tensor(t), b, flow.tensor(cw), rows, reduction, ignore_index=2),
        lambda x, w, b: torch_ce(x, w, torch.tensor(t), b, torch.tensor(cw), reduction, ignore_index=2),
        [x, w, b], rtol=1e-9, atol=1e-10)


def test_chunked_linear_ce_non_contiguous_no_bias_zero_rows_and_double_backward():
    x, w, _, t = lce_inputs(n=7)
    check_vs_torch(lambda x, w: chunked_ce(x.t().t()[::1], w.t().contiguous().t(), flow.tensor(t)),
                   lambda x, w: torch_ce(x, w, torch.tensor(t)), [x, w], rtol=1e-9, atol=1e-10)
    xt = np.ascontiguousarray(x.T)
    check_vs_torch(lambda x, w: chunked_ce(x.t(), w, flow.tensor(t), rows=2, reduction="sum"),
                   lambda x, w: torch_ce(x.t(), w, torch.tensor(t), reduction="sum"), [xt, w], rtol=1e-9,
                   atol=1e-10)
    z = chunked_ce(flow.zeros(0, 4), flow.ones(6, 4), flow.zeros(0, dtype=flow.int64), reduction="none")
    assert tuple(z.shape) == (0,)
    fx, fw = flow.tensor(x, requires_grad=True), flow.tensor(w, requires_grad=True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    (g,) = flow.autograd.grad(chunked_ce(fx, fw, flow.tensor(t), rows=3), [fx], create_graph=True)
    (tg,) = torch.autograd.grad(torch_ce(tx, tw, torch.tensor(t)), [tx], create_graph=True)
    assert_close(g, tg, rtol=1e-9, atol=1e-10)
    g.pow(2).sum().backward()
    tg.pow(2).sum().backward()
    assert_close(fw.grad, tw.grad, rtol=1e-8, atol=1e-10)


def test_chunked_linear_ce_checks_targets():
    x, w, _, t = lce_inputs()
    t[4] = 6
    with pytest.raises(IndexError, match="Target 6 is out of bounds."):
        chunked_ce(flow.tensor(x), flow.tensor(w), flow.tensor(t))
    t[4] = -100  # the default ignore_index may be anything
    chunked_ce(flow.tensor(x), flow.tensor(w), flow.tensor(t))


# ---- CrossMapLRN2d -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("size", [2, 3, 5])  # torch's legacy backward fails for size 1
def test_cross_map_lrn2d_layouts_and_gradients(size):
    a = RNG.standard_normal((2, 4, 3, 8))
    check_vs_torch(lambda x: flow.nn.CrossMapLRN2d(size, 0.3, 0.6, 1.5)(x.transpose(1, 3)),
                   lambda x: torch.nn.CrossMapLRN2d(size, 0.3, 0.6, 1.5)(x.transpose(1, 3)), [a], rtol=1e-10,
                   atol=1e-12)
    check_vs_torch(lambda x: flow.nn.CrossMapLRN2d(size)(x), lambda x: torch.nn.CrossMapLRN2d(size)(x),
                   [np.zeros((0, 3, 2, 2))])
    with pytest.raises(RuntimeError, match="expected a floating point input, got Long"):
        flow.nn.CrossMapLRN2d(size)(flow.ones(1, 3, 2, 2, dtype=flow.int64))
    # torch's hand-written backward, not the exact derivative (so no finite-difference check): its first
    # channels' windows differ from the forward's


# ---- meta tensors and dispatch modes -------------------------------------------------------------------------

def _calls():
    m = lambda *s, dt=flow.float32: flow.zeros(*s, dtype=dt, device="meta")  # noqa: E731
    return [
        ("_normal_tensor", lambda: flow.normal(m(2, 1), m(3)), (2, 3)),
        ("cholesky_solve", lambda: flow.cholesky_solve(m(2, 3, 4), m(5, 1, 3, 3), True), (5, 2, 3, 4)),
        ("angle", lambda: flow.angle(m(3, 2, dt=flow.int64)), (3, 2)),
        ("_linear_cross_entropy_chunked",
         lambda: chunked_ce(m(6, 4), m(5, 4), m(6, dt=flow.int64), m(5), reduction="none"), (6,)),
        ("_cross_map_lrn2d", lambda: flow.nn.CrossMapLRN2d(3)(m(2, 4, 3, 3)), (2, 4, 3, 3)),
    ]


@pytest.mark.parametrize("name,fn,shape", _calls(), ids=[c[0] for c in _calls()])
def test_meta_inputs_give_meta_outputs(name, fn, shape):
    y = fn()
    assert y.device.type == "meta" and tuple(y.shape) == shape
    assert y.dtype == flow.float32


def test_dispatch_modes_see_each_op_by_name():
    x = flow.tensor(RNG.standard_normal((2, 4, 3, 3)), requires_grad=True)
    f = flow.tensor(spd_factor((3, 3), False), requires_grad=True)
    lx, lw, _, lt = lce_inputs()
    fx, fw = flow.tensor(lx, requires_grad=True), flow.tensor(lw, requires_grad=True)
    # (op, call, parts of its forward that must not be seen on their own, ops its backward is written with)
    cases = [
        ("_normal_tensor", lambda: flow.normal(flow.zeros(3, requires_grad=True), 1.0), ["normal_", "mul"], []),
        ("cholesky_solve", lambda: flow.cholesky_solve(flow.ones(3, 2, dtype=flow.float64, requires_grad=True), f),
         ["linalg_solve_triangular"], ["cholesky_solve", "neg"]),
        ("angle", lambda: flow.angle(x), ["where"], []),
        ("_linear_cross_entropy_chunked", lambda: chunked_ce(fx, fw, flow.tensor(lt), reduction="sum"),
         ["logsumexp", "gather"], ["softmax"]),
        ("_cross_map_lrn2d", lambda: flow.nn.CrossMapLRN2d(3)(x), ["pow", "mul"], ["pow", "div"]),
    ]
    for name, fn, hidden, in_backward in cases:
        with LoggingMode() as mode:
            y = fn()
        assert mode.log.count(name) == 1 and not set(hidden) & set(mode.log), (name, mode.log)
        with LoggingMode() as mode:
            y.sum().backward()
        for part in in_backward:  # the backward is written with registry ops, which the mode sees
            assert part in mode.log, (name, mode.log)
