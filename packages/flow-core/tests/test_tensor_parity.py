"""PyTorch parity of tensor functions built in Python from existing ops: values and gradients against torch,
edge cases (negative dims, 0-dim and empty inputs, non-contiguous inputs) and PyTorch's error types."""
import math

import numpy as np
import pytest

import oneflow as flow
import oneflow.nn.functional as F
from helpers import assert_close, check_vs_torch

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
NAN, INF = float("nan"), float("inf")


def rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def distinct(*shape):
    """Random values without ties (sort-based ops have implementation-defined tie-breaking)."""
    n = int(np.prod(shape))
    return (RNG.permutation(n).astype("float32") / n + RNG.standard_normal(1).astype("float32")).reshape(shape)


def raises(exc, fragment, fn):
    with pytest.raises(exc, match=fragment):
        fn()


def both(name):
    return lambda *a, **k: getattr(flow, name)(*a, **k), lambda *a, **k: getattr(torch, name)(*a, **k)


# ---------------------------------------------------------------- views
@pytest.mark.parametrize("shape", [(2, 3, 4), (), (0, 3)])
def test_ravel(shape):
    check_vs_torch(lambda x: x.ravel(), lambda x: x.ravel(), [rand(*shape)])
    check_vs_torch(lambda x: flow.ravel(x.transpose(0, -1)) if x.dim() else flow.ravel(x),
                   lambda x: torch.ravel(x.transpose(0, -1)) if x.dim() else torch.ravel(x), [rand(*shape)])


@pytest.mark.parametrize("arg", [3, 4, 1, 7, [1, 3], [-1, 2, 9], [], [4, 2], (0, 0)])
@pytest.mark.parametrize("dim", [0, -1])
def test_tensor_split(arg, dim):
    f = lambda x: flow.tensor_split(x.transpose(0, 1), arg, dim)  # noqa: E731 (non-contiguous)
    t = lambda x: torch.tensor_split(x.transpose(0, 1), arg, dim)  # noqa: E731
    check_vs_torch(f, t, [rand(5, 5)])
    check_vs_torch(lambda x: x.tensor_split(arg, dim), lambda x: x.tensor_split(arg, dim), [rand(5, 5)])
    assert len(flow.tensor_split(flow.ones(5, 5), arg, dim)) == len(torch.tensor_split(torch.ones(5, 5), arg, dim))


def test_tensor_split_tensor_arg_and_views():
    x = flow.arange(6.0)
    parts = flow.tensor_split(x, flow.tensor([1, 4]))
    assert [p.tolist() for p in parts] == [[0.0], [1.0, 2.0, 3.0], [4.0, 5.0]]
    assert [p.tolist() for p in flow.tensor_split(x, flow.tensor(4))] == \
        [p.tolist() for p in torch.tensor_split(torch.arange(6.0), torch.tensor(4))]
    parts[1][0] = 10.0  # views share storage
    assert x[1].item() == 10.0
    raises(RuntimeError, "number of sections must be larger than 0", lambda: flow.tensor_split(x, 0))
    raises(RuntimeError, "at least a 1-dimensional", lambda: flow.tensor_split(flow.tensor(1.0), 2))
    raises(IndexError, "Dimension out of range", lambda: flow.tensor_split(x, 2, 1))


def test_moveaxis_ndimension_is_signed():
    check_vs_torch(lambda x: flow.moveaxis(x, [0, -1], [-1, 1]), lambda x: torch.moveaxis(x, [0, -1], [-1, 1]),
                   [rand(2, 3, 4)])
    check_vs_torch(lambda x: x.moveaxis(0, -1), lambda x: x.moveaxis(0, -1), [rand(2, 3, 4)])
    assert flow.ones(2, 3, 4).ndimension() == 3 and flow.tensor(1.0).ndimension() == 0
    for fdt, tdt in [(flow.float32, torch.float32), (flow.int64, torch.int64), (flow.uint8, torch.uint8),
                     (flow.bool, torch.bool), (flow.int8, torch.int8), (flow.float16, torch.float16)]:
        assert flow.zeros(2, dtype=fdt).is_signed() == torch.zeros(2, dtype=tdt).is_signed(), fdt
        assert flow.is_signed(flow.zeros(2, dtype=fdt)) == torch.is_signed(torch.zeros(2, dtype=tdt))


@pytest.mark.parametrize("dim,start,length", [(0, 1, 2), (-1, 0, 3), (1, 1, 2), (0, 3, 0)])
def test_narrow_copy(dim, start, length):
    f = lambda x: flow.narrow_copy(x.t(), dim, start, length)  # noqa: E731
    t = lambda x: torch.narrow_copy(x.t(), dim, start, length)  # noqa: E731
    check_vs_torch(f, t, [rand(4, 3)])
    out = flow.ones(4, 3).narrow_copy(dim, start, length)
    assert out.is_contiguous()
    raises(RuntimeError, "exceeds dimension size", lambda: flow.narrow_copy(flow.ones(3), 0, 2, 2))


@pytest.mark.parametrize("dim,size,step", [(0, 2, 1), (1, 3, 2), (-1, 1, 1), (-2, 5, 3), (1, 5, 5), (0, 0, 1)])
def test_unfold_view(dim, size, step):
    check_vs_torch(lambda x: x.unfold(dim, size, step), lambda x: x.unfold(dim, size, step), [rand(5, 5)])
    # non-contiguous input
    check_vs_torch(lambda x: x.t().unfold(dim, size, step), lambda x: x.t().unfold(dim, size, step), [rand(5, 5)])


def test_unfold_strided_input():
    # a layout that is no permutation of a dense one (every other column): windows are built from slices
    check_vs_torch(lambda x: x[:, ::2].unfold(1, 2, 1), lambda x: x[:, ::2].unfold(1, 2, 1), [rand(4, 5)])
    check_vs_torch(lambda x: x[1:, ::2].unfold(0, 2, 2), lambda x: x[1:, ::2].unfold(0, 2, 2), [rand(6, 5)])
    # size 0 on such a layout: no windows to concatenate (used to raise from cat([]))
    check_vs_torch(lambda x: x[:, ::2].unfold(1, 0, 1), lambda x: x[:, ::2].unfold(1, 0, 1), [rand(4, 5)])


def test_unfold_is_view_and_errors():
    x = flow.arange(6.0)
    u = x.unfold(0, 2, 2)
    u[1, 0] = 100.0
    assert x[2].item() == 100.0
    check_vs_torch(lambda x: x.unfold(0, 1, 1), lambda x: x.unfold(0, 1, 1), [np.float32(3.0)])
    raises(RuntimeError, "maximum size for tensor at dimension 0 is 6 but size is 7", lambda: x.unfold(0, 7, 1))
    raises(RuntimeError, "step is 0 but must be > 0", lambda: x.unfold(0, 2, 0))
    raises(IndexError, "Dimension out of range", lambda: x.unfold(1, 2, 1))


# ---------------------------------------------------------------- pointwise
def test_diff():
    for kw in [{}, {"n": 2}, {"dim": 0}, {"n": 3, "dim": -2}, {"n": 0}, {"n": 9}]:
        check_vs_torch(lambda x: flow.diff(x.t(), **kw), lambda x: torch.diff(x.t(), **kw), [rand(4, 5)])
    check_vs_torch(lambda x, p, a: flow.diff(x, 2, 1, prepend=p, append=a),
                   lambda x, p, a: torch.diff(x, 2, 1, prepend=p, append=a), [rand(3, 4), rand(3, 2), rand(3, 1)])
    check_vs_torch(lambda x: x.diff(), lambda x: x.diff(), [rand(3, 0)])
    b = np.array([True, False, False, True])
    assert_close(flow.diff(flow.tensor(b)), torch.diff(torch.tensor(b)))
    assert_close(flow.diff(flow.tensor([1, 4, 9])), torch.diff(torch.tensor([1, 4, 9])))
    raises(RuntimeError, "at least one-dimensional", lambda: flow.diff(flow.tensor(1.0)))
    raises(RuntimeError, "order must be non-negative", lambda: flow.diff(flow.ones(3), n=-1))
    raises(RuntimeError, "same dimension as input", lambda: flow.diff(flow.ones(3), prepend=flow.tensor(1.0)))


def test_logaddexp():
    for name in ("logaddexp", "logaddexp2"):
        f, t = both(name)
        check_vs_torch(f, t, [rand(3, 4), rand(4)])
        check_vs_torch(lambda a, b: getattr(a.t(), name)(b), lambda a, b: getattr(a.t(), name)(b),
                       [rand(4, 3) * 50, rand(4)])  # large magnitudes: no overflow
        special = np.array([-INF, INF, INF, -INF, NAN, 1.0, -0.0], dtype="float32")
        other = np.array([-INF, INF, -INF, 3.0, 1.0, NAN, 0.0], dtype="float32")
        check_vs_torch(f, t, [special, other], grad=False)
        check_vs_torch(f, t, [np.float32(1.5), np.float32(-2.0)])
        raises(NotImplementedError, "not implemented for 'Long'", lambda: f(flow.tensor([1]), flow.tensor([2])))


def test_deg2rad_rad2deg():
    for name in ("deg2rad", "rad2deg"):
        f, t = both(name)
        check_vs_torch(f, t, [rand(3, 4)])
        check_vs_torch(f, t, [np.array([180, -90, 0], dtype="int64")])
        check_vs_torch(lambda x: getattr(x.t(), name)(), lambda x: getattr(x.t(), name)(), [rand(2, 3)])
        check_vs_torch(lambda x: getattr(x.clone(), name + "_")(), lambda x: getattr(x.clone(), name + "_")(),
                       [rand(5)])
        # bool converts to the default float dtype as integers do (torch >= 2 accepts it)
        check_vs_torch(f, t, [np.array([True, False])])
        raises(RuntimeError, "can't be cast to the desired output type Long",
               lambda: getattr(flow.tensor([1, 2]), name + "_")())


def test_signbit():
    x = np.array([1.0, -1.0, 0.0, -0.0, INF, -INF, NAN, -NAN], dtype="float32")
    assert_close(flow.signbit(flow.tensor(x)), torch.signbit(torch.tensor(x)))
    assert_close(flow.tensor(x[::2].copy()).signbit(), torch.tensor(x[::2].copy()).signbit())
    assert_close(flow.signbit(flow.tensor([3, -2, 0])), torch.signbit(torch.tensor([3, -2, 0])))
    assert_close(flow.signbit(flow.tensor([True, False])), torch.signbit(torch.tensor([True, False])))
    assert not flow.signbit(flow.tensor(2.0)).item()


def test_heaviside():
    x = np.array([-1.5, 0.0, 2.0, -0.0, NAN], dtype="float32")
    v = np.array([0.5, 0.25, 7.0, 3.0, 1.0], dtype="float32")
    check_vs_torch(flow.heaviside, torch.heaviside, [x, v], grad=False)
    check_vs_torch(lambda a, b: a.heaviside(b), lambda a, b: a.heaviside(b), [rand(3, 4), rand(4)], grad=False)
    assert_close(flow.heaviside(flow.tensor([-2, 0, 3]), flow.tensor([5])),
                 torch.heaviside(torch.tensor([-2, 0, 3]), torch.tensor([5])))
    raises(RuntimeError, "different dtypes", lambda: flow.heaviside(flow.tensor([1.0]), flow.tensor([1])))


def test_float_power():
    a = np.abs(rand(3, 4)) + 0.5
    check_vs_torch(flow.float_power, torch.float_power, [a, rand(4)])
    check_vs_torch(lambda x: flow.float_power(x, 2.5), lambda x: torch.float_power(x, 2.5), [a])
    check_vs_torch(lambda x: x.t().float_power(3), lambda x: x.t().float_power(3), [rand(3, 4)])
    assert_close(flow.float_power(flow.tensor([2, 3]), 2), torch.float_power(torch.tensor([2, 3]), 2))
    y = flow.tensor([2.0], dtype=flow.float64)
    y.float_power_(2)
    assert y.item() == 4.0
    raises(RuntimeError, "Double", lambda: flow.ones(2).float_power_(2))
    # PyTorch's scalar-type names in the message ("Float", not "Float32")
    raises(RuntimeError, "has dtype Float but", lambda: flow.ones(2).float_power_(2))


# ---------------------------------------------------------------- linalg-ish
def test_trace():
    check_vs_torch(flow.trace, torch.trace, [rand(3, 5)])
    check_vs_torch(lambda x: x.t().trace(), lambda x: x.t().trace(), [rand(4, 2)])
    check_vs_torch(flow.trace, torch.trace, [rand(0, 3)])
    assert_close(flow.trace(flow.tensor([[1, 2], [3, 4]])), torch.trace(torch.tensor([[1, 2], [3, 4]])))
    raises(RuntimeError, "expected a matrix", lambda: flow.trace(flow.ones(3)))


@pytest.mark.parametrize("sa,sb", [((2, 3), (3, 2)), ((3,), (2, 2)), ((2, 1, 2), (3,)), ((), (2,)), ((0, 2), (2, 2))])
def test_kron(sa, sb):
    check_vs_torch(flow.kron, torch.kron, [rand(*sa), rand(*sb)])


def test_kron_noncontiguous():
    # (torch's own kron rejects this non-contiguous input when it requires grad: its reference gets a copy)
    check_vs_torch(lambda a, b: a.t().kron(b), lambda a, b: a.t().contiguous().kron(b), [rand(2, 3), rand(2, 2)])


@pytest.mark.parametrize("offset", [0, 1, -2, 4])
def test_diag_family(offset):
    check_vs_torch(lambda x: flow.diag(x, offset), lambda x: torch.diag(x, offset), [rand(3)])
    check_vs_torch(lambda x: flow.diag(x.t(), offset), lambda x: torch.diag(x.t(), offset), [rand(4, 3)])
    check_vs_torch(lambda x: x.diagflat(offset), lambda x: x.diagflat(offset), [rand(2, 2)])
    check_vs_torch(lambda x: flow.diag_embed(x, offset), lambda x: torch.diag_embed(x, offset), [rand(2, 3)])
    check_vs_torch(lambda x: flow.diag_embed(x, offset, 0, -1), lambda x: torch.diag_embed(x, offset, 0, -1),
                   [rand(2, 3, 2)])
    check_vs_torch(lambda x: x.diag_embed(offset, 2, 0), lambda x: x.diag_embed(offset, 2, 0), [rand(3, 2)])


def test_diag_edges_and_errors():
    check_vs_torch(flow.diag, torch.diag, [rand(0)])
    check_vs_torch(flow.diagflat, torch.diagflat, [np.float32(2.0)])
    assert_close(flow.diag(flow.tensor([1, 2])), torch.diag(torch.tensor([1, 2])))
    raises(RuntimeError, "Supports 1D or 2D tensors. Got 3D", lambda: flow.diag(flow.ones(2, 2, 2)))
    raises(RuntimeError, "diagonal dimensions cannot be identical",
           lambda: flow.diag_embed(flow.ones(2, 2), 0, 1, 1))


@pytest.mark.filterwarnings("ignore:Using torch.cross without specifying the dim")
@pytest.mark.parametrize("kw", [{"dim": 0}, {"dim": -1}, {}])
def test_cross(kw):
    shape = (3, 4) if kw.get("dim", 0) == 0 else (4, 3)
    check_vs_torch(lambda a, b: flow.cross(a, b, **kw), lambda a, b: torch.cross(a, b, **kw),
                   [rand(*shape), rand(*shape)], atol=1e-5)


def test_cross_broadcast_and_errors():
    check_vs_torch(lambda a, b: a.cross(b, dim=-1), lambda a, b: a.cross(b, dim=-1), [rand(2, 1, 3), rand(1, 4, 3)],
                   atol=1e-5)
    check_vs_torch(lambda a, b: flow.cross(a.t(), b, dim=1), lambda a, b: torch.cross(a.t(), b, dim=1),
                   [rand(3, 2), rand(2, 3)], atol=1e-5)
    raises(RuntimeError, "must have length 3", lambda: flow.cross(flow.ones(2, 2), flow.ones(2, 2), dim=1))
    raises(RuntimeError, "no dimension of size 3", lambda: flow.cross(flow.ones(2, 2), flow.ones(2, 2)))


@pytest.mark.parametrize("p", [2, 1, 0, 3.5, INF, -INF])
def test_dist(p):
    # (torch's backward of p=0 fails; its gradient is 0 anyway)
    check_vs_torch(lambda a, b: flow.dist(a, b, p), lambda a, b: torch.dist(a, b, p), [rand(3, 4), rand(4)],
                   atol=1e-5, grad=p != 0)


def test_dist_method_and_errors():
    check_vs_torch(lambda a, b: a.t().dist(b), lambda a, b: a.t().dist(b), [rand(3, 2), rand(2, 3)])
    raises(RuntimeError, "must match the size", lambda: flow.dist(flow.ones(2), flow.ones(3)))


def test_cov_corrcoef():
    x = rand(3, 6)
    fw = np.array([1, 2, 1, 3, 1, 2])
    aw = RNG.random(6).astype("float32") + 0.1
    check_vs_torch(flow.cov, torch.cov, [x], atol=1e-5)
    check_vs_torch(lambda a: a.cov(correction=0), lambda a: a.cov(correction=0), [x], atol=1e-5)
    check_vs_torch(lambda a: flow.cov(a.t()), lambda a: torch.cov(a.t()), [rand(6, 3)], atol=1e-5)
    check_vs_torch(flow.cov, torch.cov, [rand(5)], atol=1e-5)
    for kw in [{"fweights": fw}, {"aweights": aw}, {"fweights": fw, "aweights": aw, "correction": 2},
               {"fweights": fw, "aweights": aw, "correction": 0}]:
        fkw = {k: flow.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        check_vs_torch(lambda a: flow.cov(a, **fkw), lambda a: torch.cov(a, **tkw), [x], atol=1e-5)
    assert_close(flow.cov(flow.arange(5)), torch.cov(torch.arange(5)))
    check_vs_torch(flow.corrcoef, torch.corrcoef, [x], atol=1e-5)
    check_vs_torch(lambda a: a.corrcoef(), lambda a: a.corrcoef(), [rand(6)])
    raises(RuntimeError, "two or fewer dimensions", lambda: flow.cov(flow.ones(2, 2, 2)))
    raises(RuntimeError, "integral dtype", lambda: flow.cov(flow.ones(2, 3), fweights=flow.ones(3)))
    raises(RuntimeError, "fweights with Float dtype", lambda: flow.cov(flow.ones(2, 3), fweights=flow.ones(3)))
    raises(RuntimeError, "bool dtype is not supported", lambda: flow.cov(flow.ones(2, 3, dtype=flow.bool)))


# ---------------------------------------------------------------- indexing
@pytest.mark.parametrize("k", [1, 2, 3, 4, -1, -6])
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (-1, 0), (2, 1)])
def test_rot90(k, dims):
    check_vs_torch(lambda x: flow.rot90(x, k, dims), lambda x: torch.rot90(x, k, dims), [rand(2, 3, 4)])
    check_vs_torch(lambda x: x.transpose(0, 2).rot90(k, dims), lambda x: x.transpose(0, 2).rot90(k, dims),
                   [rand(2, 3, 4)])


def test_rot90_errors():
    check_vs_torch(flow.rot90, torch.rot90, [rand(0, 3)])
    raises(RuntimeError, "expected total dims >= 2", lambda: flow.rot90(flow.ones(3)))
    raises(RuntimeError, "expected rotation dims to be different", lambda: flow.rot90(flow.ones(2, 2), 1, [0, -2]))
    raises(RuntimeError, "expected total rotation dims == 2", lambda: flow.rot90(flow.ones(2, 2), 1, [0, 1, 2]))


@pytest.mark.parametrize("dim,index", [(0, [0, 2]), (1, [-1]), (-1, [1, 1]), (0, []), (1, 0)])
def test_index_fill(dim, index):
    f = lambda x: x.t().index_fill(dim, flow.tensor(index, dtype=flow.int64), -2.5)  # noqa: E731
    t = lambda x: x.t().index_fill(dim, torch.tensor(index, dtype=torch.int64), -2.5)  # noqa: E731
    check_vs_torch(f, t, [rand(4, 3)])
    check_vs_torch(lambda x: flow.index_fill(x, dim, flow.tensor(index, dtype=flow.int64), 7.0),
                   lambda x: torch.index_fill(x, dim, torch.tensor(index, dtype=torch.int64), 7.0), [rand(3, 4)])


def test_index_fill_tensor_value_gradient():
    check_vs_torch(lambda x, v: x.index_fill(1, flow.tensor([0, 2]), v),
                   lambda x, v: x.index_fill(1, torch.tensor([0, 2]), v), [rand(2, 3), np.float32(1.5)])
    check_vs_torch(lambda x: x.index_fill(0, flow.tensor([0]), 3.0),
                   lambda x: x.index_fill(0, torch.tensor([0]), 3.0), [np.float32(1.0)])
    assert_close(flow.arange(6).index_fill(0, flow.tensor([1, 3]), 9),
                 torch.arange(6).index_fill(0, torch.tensor([1, 3]), 9))


def test_index_fill_inplace_autograd():
    def run(lib, x):
        y = x * 2
        y.index_fill_(0, lib.tensor([1]), 0.0)
        return y

    check_vs_torch(lambda x: run(flow, x), lambda x: run(torch, x), [rand(3, 2)])
    # through a view: the base sees the write, and gradients follow (CopySlices)
    def run_view(lib, x):
        y = x * 1
        y[:, 1:].index_fill_(1, lib.tensor([0]), 5.0)
        return y

    check_vs_torch(lambda x: run_view(flow, x), lambda x: run_view(torch, x), [rand(3, 3)])
    z = flow.zeros(3)
    v0 = z._version if hasattr(z, "_version") else None
    assert z.index_fill_(0, flow.tensor([2]), 1.0) is z
    assert z.tolist() == [0.0, 0.0, 1.0]
    if v0 is not None:
        assert z._version > v0
    leaf = flow.ones(2, requires_grad=True)
    raises(RuntimeError, "leaf Variable that requires grad", lambda: leaf.index_fill_(0, flow.tensor([0]), 1.0))


def test_index_fill_errors():
    x = flow.ones(3, 3)
    raises(IndexError, "Expected dtype int64 for index", lambda: x.index_fill(0, flow.tensor([0], dtype=flow.int32), 1))
    raises(IndexError, "out of bounds", lambda: x.index_fill(0, flow.tensor([5]), 1))
    raises(IndexError, "Dimension out of range", lambda: x.index_fill(2, flow.tensor([0]), 1))
    raises(RuntimeError, "0-dimensional value tensor", lambda: x.index_fill(0, flow.tensor([0]), flow.ones(2)))


@pytest.mark.parametrize("shape", [(3, 3), (2, 5), (7, 3), (3, 3, 3), (0, 0), (1, 4)])
@pytest.mark.parametrize("wrap", [False, True])
def test_fill_diagonal_(shape, wrap):
    def run(lib, x):
        y = x * 1
        y.fill_diagonal_(-3.0, wrap=wrap)
        return y

    check_vs_torch(lambda x: run(flow, x), lambda x: run(torch, x), [rand(*shape)])


def test_fill_diagonal_noncontiguous_and_errors():
    def run(lib, x):
        y = (x * 1).t()
        y.fill_diagonal_(9.0, True)
        return y

    check_vs_torch(lambda x: run(flow, x), lambda x: run(torch, x), [rand(3, 7)])
    x = flow.zeros(2, 2)
    assert x.fill_diagonal_(1) is x and x.tolist() == [[1.0, 0.0], [0.0, 1.0]]
    raises(RuntimeError, "dimensions must larger than 1", lambda: flow.ones(3).fill_diagonal_(1))
    raises(RuntimeError, "all dimensions of input must be of equal length", lambda: flow.ones(2, 3, 3).fill_diagonal_(1))


# ---------------------------------------------------------------- reductions
def test_sum_to_size():
    for size in [(1, 3), (3,), (2, 1), (1, 1), (2, 3), ()]:
        check_vs_torch(lambda x: x.sum_to_size(size), lambda x: x.sum_to_size(size), [rand(2, 3)])
    check_vs_torch(lambda x: x.t().sum_to_size(1, 2), lambda x: x.t().sum_to_size(1, 2), [rand(2, 3)])
    check_vs_torch(lambda x: x.sum_to_size(4, 1), lambda x: x.sum_to_size(4, 1), [rand(5, 4, 0)])
    raises(RuntimeError, "is not expandable to size", lambda: flow.ones(3).sum_to_size(2))


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cummax_cummin(name, dim):
    f, t = both(name)
    check_vs_torch(lambda x: f(x, dim), lambda x: t(x, dim), [distinct(4, 9)])
    check_vs_torch(lambda x: getattr(x.t(), name)(dim), lambda x: getattr(x.t(), name)(dim), [distinct(9, 4)])
    # ties: the latest extreme's index, NaN propagates with the latest NaN's index
    x = np.array([[1, 3, 3, NAN, 2, NAN, 5], [2, 2, 0, 0, 7, 7, 1]], dtype="float32")
    check_vs_torch(lambda x: f(x, -1), lambda x: t(x, -1), [x], grad=False)
    assert_close(f(flow.tensor([[3, 1, 3], [0, 5, 5]]), 1)[1], t(torch.tensor([[3, 1, 3], [0, 5, 5]]), 1)[1])


def test_cummax_edges():
    r = flow.cummax(flow.tensor(2.0), 0)
    assert r.values.item() == 2.0 and r.indices.item() == 0 and r.indices.dtype == flow.int64
    check_vs_torch(lambda x: flow.cummin(x, 1), lambda x: torch.cummin(x, 1), [rand(2, 0)])
    raises(IndexError, "Dimension out of range", lambda: flow.cummax(flow.ones(3), 1))


@pytest.mark.parametrize("k,dim,keepdim", [(1, -1, False), (3, 0, True), (4, 1, False), (2, -2, False)])
def test_kthvalue(k, dim, keepdim):
    check_vs_torch(lambda x: flow.kthvalue(x, k, dim, keepdim), lambda x: torch.kthvalue(x, k, dim, keepdim),
                   [distinct(4, 5)])
    check_vs_torch(lambda x: x.t().kthvalue(k, dim), lambda x: x.t().kthvalue(k, dim), [distinct(5, 4)])


def test_kthvalue_edges():
    r = flow.kthvalue(flow.tensor([3.0, 1.0, 2.0]), 2)
    assert r.values.item() == 2.0 and r.indices.item() == 2
    check_vs_torch(lambda x: flow.kthvalue(x, 1, 0), lambda x: torch.kthvalue(x, 1, 0), [np.float32(4.0)])
    raises(RuntimeError, "selected number k out of range", lambda: flow.kthvalue(flow.ones(3), 4))
    raises(RuntimeError, "selected number k out of range", lambda: flow.kthvalue(flow.ones(3), 0))


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median(name):
    f, t = both(name)
    check_vs_torch(f, t, [distinct(4, 5)])
    check_vs_torch(f, t, [distinct(6)])  # even count: the lower median
    for dim, keepdim in [(0, False), (1, True), (-1, False)]:
        check_vs_torch(lambda x: f(x, dim, keepdim), lambda x: t(x, dim, keepdim), [distinct(4, 6)])
        check_vs_torch(lambda x: getattr(x.t(), name)(dim), lambda x: getattr(x.t(), name)(dim), [distinct(6, 4)])
    x = np.array([[1, NAN, 3, NAN, 0, 2], [4, 1, 3, 2, NAN, 5], [5, 2, 6, 1, 4, 3]], dtype="float32")
    check_vs_torch(lambda x: f(x, 1), lambda x: t(x, 1), [x])
    check_vs_torch(f, t, [x])
    check_vs_torch(lambda x: f(x, 0), lambda x: t(x, 0), [np.float32(2.5)])
    assert_close(f(flow.tensor([[4, 1, 3, 2]]), 1)[0], t(torch.tensor([[4, 1, 3, 2]]), 1)[0])
    assert math.isnan(f(flow.tensor([])).item())
    raises(IndexError, "Expected reduction dim 1 to have non-zero size", lambda: f(flow.ones(2, 0), 1))


def test_median_global_gradient_spreads_over_ties():
    # PyTorch's global median splits the gradient evenly over every element equal to it
    x = np.array([[1.0, 2.0, 2.0], [0.5, 2.0, 3.0]], dtype="float32")
    check_vs_torch(flow.median, torch.median, [x])
    check_vs_torch(flow.nanmedian, torch.nanmedian, [np.array([NAN, 1.0, 1.0, 5.0, NAN], dtype="float32")])
    check_vs_torch(flow.median, torch.median, [np.array([INF, INF, 1.0], dtype="float32")])


def test_nanmedian_all_nan_row():
    x = flow.tensor([[NAN, NAN], [1.0, NAN]])
    r = flow.nanmedian(x, 1)
    assert math.isnan(r.values[0].item()) and r.values[1].item() == 1.0 and r.indices[1].item() == 0


@pytest.mark.parametrize("name", ["quantile", "nanquantile"])
@pytest.mark.parametrize("interp", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(name, interp):
    f, t = both(name)
    q = [0.0, 0.2, 0.5, 0.75, 1.0]
    check_vs_torch(lambda x: f(x, 0.3, interpolation=interp), lambda x: t(x, 0.3, interpolation=interp),
                   [distinct(3, 5)])
    check_vs_torch(lambda x, q: f(x, q, 1, interpolation=interp), lambda x, q: t(x, q, 1, interpolation=interp),
                   [distinct(3, 5), np.array(q, dtype="float32")], grad=True)
    check_vs_torch(lambda x: f(x.t(), flow.tensor(q), -1, True, interpolation=interp),
                   lambda x: t(x.t(), torch.tensor(q), -1, True, interpolation=interp), [distinct(5, 3)])
    check_vs_torch(lambda x: f(x, 0.5, None, True, interpolation=interp),
                   lambda x: t(x, 0.5, None, True, interpolation=interp), [distinct(2, 3)])
    x = np.array([[1, NAN, 3, 0, 2], [4, 1, 3, 2, 5], [NAN, NAN, NAN, NAN, NAN]], dtype="float32")
    check_vs_torch(lambda x: f(x, flow.tensor(q), 1, interpolation=interp),
                   lambda x: t(x, torch.tensor(q), 1, interpolation=interp), [x], grad=False)
    check_vs_torch(lambda x: f(x, 0.4, 0, interpolation=interp), lambda x: t(x, 0.4, 0, interpolation=interp),
                   [np.float32(2.0)])
    # 0-dim input with keepdim (used to index out of range building the output shape)
    for q0 in (0.4, flow.tensor([0.2, 0.9])):
        tq = q0 if isinstance(q0, float) else torch.tensor(q0.numpy())
        check_vs_torch(lambda x: f(x, q0, 0, True, interpolation=interp),
                       lambda x: t(x, tq, 0, True, interpolation=interp), [np.float32(2.0)])
        check_vs_torch(lambda x: f(x, q0, -1, False, interpolation=interp),
                       lambda x: t(x, tq, -1, False, interpolation=interp), [np.float32(2.0)])


def test_quantile_errors():
    x = flow.arange(5.0)
    raises(RuntimeError, "q must be in the range", lambda: flow.quantile(x, 1.5))
    raises(RuntimeError, "must be either float or double", lambda: flow.quantile(flow.arange(5), 0.5))
    raises(RuntimeError, "same dtype as the input", lambda: flow.quantile(x, flow.tensor([0.5], dtype=flow.float64)))
    raises(RuntimeError, "must be non-empty", lambda: flow.quantile(flow.tensor([]), 0.5))
    raises(RuntimeError, "interpolation must be one of", lambda: flow.quantile(x, 0.5, interpolation="foo"))


def test_histc():
    x = np.array([0.0, 1.0, 1.5, 2.0, 3.0, -1.0, 4.0, 2.999], dtype="float32")
    for kw in [{"bins": 4, "min": 0, "max": 3}, {"bins": 5}, {"bins": 3, "min": 1, "max": 1}]:
        assert_close(flow.histc(flow.tensor(x), **kw), torch.histc(torch.tensor(x), **kw))
    y = rand(100)
    assert_close(flow.tensor(y).histc(7, -1, 1), torch.tensor(y).histc(7, -1, 1))
    assert_close(flow.histc(flow.tensor(y[::3].copy()), 10), torch.histc(torch.tensor(y[::3].copy()), 10))
    assert_close(flow.histc(flow.ones(0), 3), torch.histc(torch.ones(0), 3))
    assert_close(flow.histc(flow.tensor(2.0), 3), torch.histc(torch.tensor(2.0), 3))
    assert_close(flow.histc(flow.tensor(x, dtype=flow.float64), 3), torch.histc(torch.tensor(x, dtype=torch.float64), 3))
    raises(RuntimeError, "bins must be > 0", lambda: flow.histc(flow.ones(3), bins=0))
    raises(RuntimeError, "max must be larger than min", lambda: flow.histc(flow.ones(3), min=3, max=1))
    raises(NotImplementedError, "not implemented for 'Long'", lambda: flow.histc(flow.arange(5)))


def test_bincount():
    x = np.array([1, 3, 1, 0, 7])
    w = rand(5)
    assert_close(flow.bincount(flow.tensor(x)), torch.bincount(torch.tensor(x)))
    assert_close(flow.tensor(x).bincount(minlength=10), torch.tensor(x).bincount(minlength=10))
    assert_close(flow.bincount(flow.tensor(x), flow.tensor(w)), torch.bincount(torch.tensor(x), torch.tensor(w)))
    assert_close(flow.bincount(flow.tensor(x), flow.tensor(x)), torch.bincount(torch.tensor(x), torch.tensor(x)))
    assert_close(flow.bincount(flow.tensor(x, dtype=flow.int32)), torch.bincount(torch.tensor(x, dtype=torch.int32)))
    assert_close(flow.bincount(flow.tensor([], dtype=flow.int64)), torch.bincount(torch.tensor([], dtype=torch.int64)))
    assert_close(flow.bincount(flow.tensor([], dtype=flow.int64), minlength=3),
                 torch.bincount(torch.tensor([], dtype=torch.int64), minlength=3))
    raises(RuntimeError, "1-d non-negative integral", lambda: flow.bincount(flow.tensor([-1])))
    raises(NotImplementedError, "bincount_cpu", lambda: flow.bincount(flow.tensor([1.0])))  # as torch
    raises(RuntimeError, "same length", lambda: flow.bincount(flow.tensor([1]), flow.ones(2)))


# ---------------------------------------------------------------- nn.functional.unfold / fold
UNFOLD_CASES = [
    dict(kernel_size=2),
    dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 2), stride=(2, 1)),
    dict(kernel_size=3, padding=1, stride=2),
    dict(kernel_size=(1, 2), dilation=2, stride=(1, 3)),
]


@pytest.mark.parametrize("kw", UNFOLD_CASES)
def test_unfold_fold(kw):
    x = rand(2, 3, 7, 6)
    check_vs_torch(lambda x: F.unfold(x, **kw), lambda x: torch.nn.functional.unfold(x, **kw), [x])
    check_vs_torch(lambda x: F.unfold(x.transpose(2, 3), **kw),
                   lambda x: torch.nn.functional.unfold(x.transpose(2, 3), **kw), [rand(2, 3, 6, 7)])
    check_vs_torch(lambda x: F.unfold(x, **kw), lambda x: torch.nn.functional.unfold(x, **kw), [rand(3, 7, 6)])
    cols = torch.nn.functional.unfold(torch.zeros(2, 3, 7, 6), **kw)
    c = rand(*cols.shape)
    check_vs_torch(lambda c: F.fold(c, (7, 6), **kw), lambda c: torch.nn.functional.fold(c, (7, 6), **kw), [c],
                   atol=1e-5)
    check_vs_torch(lambda c: F.fold(c, [7, 6], **kw), lambda c: torch.nn.functional.fold(c, [7, 6], **kw), [c[0]],
                   atol=1e-5)


def test_unfold_fold_modules_and_zero_batch():
    m, tm = flow.nn.Unfold(kernel_size=(2, 2), stride=2), torch.nn.Unfold(kernel_size=(2, 2), stride=2)
    check_vs_torch(m, tm, [rand(1, 2, 4, 4)])
    m, tm = flow.nn.Fold(output_size=4, kernel_size=2, stride=2), torch.nn.Fold(output_size=4, kernel_size=2, stride=2)
    check_vs_torch(m, tm, [rand(1, 8, 4)])
    assert repr(flow.nn.Unfold(3)) == repr(torch.nn.Unfold(3))
    assert repr(flow.nn.Fold(4, 2)) == repr(torch.nn.Fold(4, 2))
    check_vs_torch(lambda x: F.unfold(x, 2), lambda x: torch.nn.functional.unfold(x, 2), [rand(0, 2, 3, 3)])


def test_unfold_fold_errors():
    raises(RuntimeError, "Expected 3D or 4D", lambda: F.unfold(flow.ones(1, 1, 1, 4, 4), 2))
    raises(RuntimeError, "calculated shape of the array of sliding blocks", lambda: F.unfold(flow.ones(1, 1, 4, 4), 5))
    raises(RuntimeError, "stride should be greater than zero", lambda: F.unfold(flow.ones(1, 1, 4, 4), 2, stride=0))
    raises(RuntimeError, "divisible by the product of kernel_size", lambda: F.fold(flow.ones(1, 5, 9), 4, 2))
    raises(RuntimeError, "match the calculated number of sliding blocks", lambda: F.fold(flow.ones(1, 4, 8), 4, 2))


_DTYPE_REFUSALS = {
    "trace_bool": lambda L: L.trace(L.ones(2, 2, dtype=L.bool)),
    "median_bool": lambda L: L.median(L.ones(2, 2, dtype=L.bool)),
    "median_dim_bool": lambda L: L.median(L.ones(2, 2, dtype=L.bool), 0),
    "nanmedian_bool": lambda L: L.nanmedian(L.ones(2, 2, dtype=L.bool)),
    "kthvalue_bool": lambda L: L.kthvalue(L.ones(2, 2, dtype=L.bool), 1),
    "cross_bool": lambda L: L.cross(L.ones(3, dtype=L.bool), L.ones(3, dtype=L.bool), dim=0),
    "unfold_long": lambda L: L.nn.functional.unfold(L.ones(1, 2, 4, 4, dtype=L.int64), 2),
    "fold_long": lambda L: L.nn.functional.fold(L.ones(1, 8, 9, dtype=L.int64), (4, 4), 2),
    "grid_sample_long": lambda L: L.nn.functional.grid_sample(
        L.ones(1, 2, 4, 4, dtype=L.int64), L.zeros(1, 2, 2, 2, dtype=L.int64), align_corners=False),
    "grid_sample3d_long": lambda L: L.nn.functional.grid_sample(
        L.ones(1, 1, 2, 2, 2, dtype=L.int64), L.zeros(1, 1, 1, 1, 3, dtype=L.int64), align_corners=False),
    "grid_sample_mixed": lambda L: L.nn.functional.grid_sample(
        L.ones(1, 2, 4, 4, dtype=L.float64), L.zeros(1, 2, 2, 2), align_corners=False),
    "prelu_long": lambda L: L.nn.functional.prelu(L.ones(1, 2, 4, dtype=L.int64), L.ones(1, dtype=L.int64)),
}


@pytest.mark.parametrize("name", list(_DTYPE_REFUSALS))
def test_dtypes_torch_refuses_are_refused_alike(name):
    fn = _DTYPE_REFUSALS[name]
    with pytest.raises(Exception) as want:
        fn(torch)
    with pytest.raises(type(want.value)) as got:
        fn(flow)
    assert str(got.value) == str(want.value)
