"""Shape/index ops against PyTorch: forward, backward, gradchecks, odd layouts and error cases."""
import numpy as np
import pytest

import oneflow as flow
from helpers import assert_close, check_vs_torch, gradcheck, torch

rng = np.random.default_rng(0)


def R(*s):
    return rng.standard_normal(s)


def L(a):
    return np.asarray(a, dtype=np.int64)


# ---- cat / stack ---------------------------------------------------------------------------------------
def test_cat_forward_backward():
    a, b, c = R(2, 3), R(4, 3), R(1, 3)
    check_vs_torch(lambda x, y, z: flow.cat([x, y, z]), lambda x, y, z: torch.cat([x, y, z]), [a, b, c])
    check_vs_torch(lambda x, y: flow.cat((x.t(), y.t()), dim=-1), lambda x, y: torch.cat((x.t(), y.t()), dim=-1), [a, b])
    check_vs_torch(lambda x, y: flow.concat([x, y], 0), lambda x, y: torch.concat([x, y], 0), [a, b])
    gradcheck(lambda x, y: flow.cat([x, y[:, ::2]], 1), [flow.tensor(R(2, 3), requires_grad=True),
                                                          flow.tensor(R(2, 4), requires_grad=True)])


def test_cat_promotion_empty_and_errors():
    r = flow.cat([flow.ones(2, dtype=flow.int32), flow.ones(3, dtype=flow.float64)])
    assert r.dtype == flow.float64 and r.shape == (5,)
    r = flow.cat([flow.ones(2, 3, dtype=flow.int32), flow.tensor([]), flow.zeros(1, 3, dtype=flow.int32)])
    t = torch.cat([torch.ones(2, 3, dtype=torch.int32), torch.tensor([]), torch.zeros(1, 3, dtype=torch.int32)])
    assert_close(r, t)
    assert_close(flow.cat([flow.zeros(0, 3), flow.ones(2, 3)]), torch.cat([torch.zeros(0, 3), torch.ones(2, 3)]))
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0. Expected size 4 but got "
                                           "size 5 for tensor number 1 in the list."):
        flow.cat([flow.ones(3, 4), flow.ones(3, 5)])
    with pytest.raises(RuntimeError, match="Tensors must have same number of dimensions: got 2 and 1"):
        flow.cat([flow.ones(3, 4), flow.ones(3)])
    with pytest.raises(IndexError, match="Dimension out of range"):
        flow.cat([flow.ones(3, 4)], dim=3)
    with pytest.raises(ValueError, match="expected a non-empty list"):
        flow.cat([])
    with pytest.raises(RuntimeError, match="zero-dimensional tensor"):
        flow.cat([flow.tensor(1.0)])


def test_stack_family():
    a, b = R(2, 3), R(2, 3)
    for d in [0, 1, 2, -1, -3]:
        check_vs_torch(lambda x, y: flow.stack([x, y], d), lambda x, y: torch.stack([x, y], d), [a, b])
    for fn in ["hstack", "vstack", "dstack", "column_stack"]:
        for shapes in [[(3,), (3,)], [(2, 3), (2, 3)], [(), ()]]:
            arrs = [R(*s) for s in shapes]
            check_vs_torch(lambda *x: getattr(flow, fn)(list(x)), lambda *x: getattr(torch, fn)(list(x)), arrs)
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size, but got \\[3, 4\\] at entry 0 "
                                           "and \\[3, 5\\] at entry 1"):
        flow.stack([flow.ones(3, 4), flow.ones(3, 5)])
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        flow.stack([])


# ---- gather / scatter ----------------------------------------------------------------------------------
def test_gather():
    x = R(3, 4)
    ix = L(rng.integers(0, 4, (3, 6)))
    check_vs_torch(lambda a: flow.gather(a, 1, flow.tensor(ix)), lambda a: torch.gather(a, 1, torch.tensor(ix)), [x])
    ix0 = L(rng.integers(0, 3, (2, 4)))
    check_vs_torch(lambda a: a.t().gather(1, flow.tensor(ix0).t()), lambda a: a.t().gather(1, torch.tensor(ix0).t()), [x])
    check_vs_torch(lambda a: a.gather(0, flow.tensor(ix0[:, :2]).int()), lambda a: a.gather(0, torch.tensor(ix0[:, :2]).int()), [x])
    check_vs_torch(lambda a: a.gather(0, flow.tensor(0)), lambda a: a.gather(0, torch.tensor(0)), [R()])
    check_vs_torch(lambda a: a.gather(1, flow.zeros(3, 0, dtype=flow.int64)),
                   lambda a: a.gather(1, torch.zeros(3, 0, dtype=torch.int64)), [x])
    gradcheck(lambda a: a.gather(1, flow.tensor(L([[0, 0, 3], [1, 2, 1], [3, 3, 3]]))), [flow.tensor(x, requires_grad=True)])
    t = flow.tensor(x)
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1 with size 4"):
        t.gather(1, flow.tensor(L([[5]])))
    # the bounds are checked while gathering (in parallel over a large index); negative and far-off
    # indices raise before the result can be used, naming the first bad one, as torch does
    big = rng.integers(0, 512, (256, 512))
    got = flow.gather(flow.tensor(np.arange(256 * 512, dtype=np.float32).reshape(256, 512)), 1, flow.tensor(big))
    np.testing.assert_array_equal(got.numpy(), np.take_along_axis(np.arange(256 * 512).reshape(256, 512), big, 1))
    for bad, msg in ((-1, "index -1 is out of bounds"), (1 << 40, "index 1099511627776 is out of bounds")):
        b = big.copy()
        b[200, 300] = bad
        with pytest.raises(RuntimeError, match=msg):
            flow.gather(flow.ones(256, 512), 1, flow.tensor(b))
    with pytest.raises(RuntimeError, match="index 0 is out of bounds for dimension 1 with size 0"):
        flow.gather(flow.ones(3, 0), 1, flow.zeros(3, 2, dtype=flow.int64))
    with pytest.raises(RuntimeError, match="Expected dtype int32/int64 for index"):
        t.gather(1, flow.tensor([[1.0]]))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        t.gather(1, flow.tensor(L([1])))
    with pytest.raises(RuntimeError, match="Size does not match at dimension 0"):
        t.gather(1, flow.zeros(4, 1, dtype=flow.int64))


def test_scatter_variants():
    x, src = R(3, 5), R(2, 5)
    ix = L([[0, 1, 2, 0, 1], [2, 0, 1, 1, 0]])
    for fn in [lambda lib, a, s: a.scatter(0, lib.tensor(ix), s),
               lambda lib, a, s: lib.scatter(a, 0, lib.tensor(ix[:, :3]), s[:, :3]),
               lambda lib, a, s: a.scatter_add(0, lib.tensor(ix), s),
               lambda lib, a, s: a.scatter_reduce(0, lib.tensor(ix), s, "sum"),
               lambda lib, a, s: a.scatter_reduce(0, lib.tensor(ix), s, "mean", include_self=False),
               lambda lib, a, s: a.scatter_reduce(0, lib.tensor(ix), s, "mean"),
               lambda lib, a, s: a.t().scatter(1, lib.tensor(ix).t(), s.t())]:
        check_vs_torch(lambda a, s: fn(flow, a, s), lambda a, s: fn(torch, a, s), [x, src])
    check_vs_torch(lambda a, s: a.scatter(0, flow.tensor(ix), s, reduce="add"),
                   lambda a, s: a.scatter(0, torch.tensor(ix), s, reduce="add"), [x, src], grad=False)
    check_vs_torch(lambda a, s: a.scatter(0, flow.tensor(ix), s, reduce="multiply"),
                   lambda a, s: a.scatter(0, torch.tensor(ix), s, reduce="multiply"), [x, src], grad=False)
    uniq = L([[0, 1, 2, 0, 1]])
    check_vs_torch(lambda a: a.scatter(1, flow.tensor(uniq), 2.5), lambda a: a.scatter(1, torch.tensor(uniq), 2.5), [x])
    check_vs_torch(lambda a: a.scatter(1, flow.tensor(uniq), value=-1.0),
                   lambda a: a.scatter(1, torch.tensor(uniq), value=-1.0), [x])
    for red in ["prod", "amax", "amin"]:
        for inc in [True, False]:
            f = flow.tensor(x).scatter_reduce(0, flow.tensor(ix), flow.tensor(src), red, include_self=inc)
            t = torch.tensor(x).scatter_reduce(0, torch.tensor(ix), torch.tensor(src), red, include_self=inc)
            assert_close(f, t)
    xi = flow.zeros(3, 5, dtype=flow.int64)
    ti = torch.zeros(3, 5, dtype=torch.int64)
    assert_close(xi.scatter_add(0, flow.tensor(ix), flow.ones(2, 5, dtype=flow.int64)),
                 ti.scatter_add(0, torch.tensor(ix), torch.ones(2, 5, dtype=torch.int64)))
    # in-place
    f, t = flow.tensor(x), torch.tensor(x)
    f.scatter_(0, flow.tensor(ix), flow.tensor(src)).scatter_add_(0, flow.tensor(ix), flow.tensor(src))
    t.scatter_(0, torch.tensor(ix), torch.tensor(src)).scatter_add_(0, torch.tensor(ix), torch.tensor(src))
    assert_close(f, t)
    gradcheck(lambda a, s: a.scatter(0, flow.tensor(ix[:1]), s[:1]), [flow.tensor(x, requires_grad=True),
                                                               flow.tensor(src, requires_grad=True)])
    gradcheck(lambda a, s: a.scatter_add(0, flow.tensor(ix), s), [flow.tensor(x, requires_grad=True),
                                                               flow.tensor(src, requires_grad=True)])
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1 with size 5"):
        flow.tensor(x).scatter(1, flow.tensor(L([[5]])), 1.0)
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 0 with size 3"):
        flow.tensor(x).scatter_add(0, flow.tensor(L([[3]])), flow.ones(1, 1, dtype=flow.float64))
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply"):
        flow.tensor(x).scatter(1, flow.tensor(L([[1]])), flow.ones(1, 1, dtype=flow.float64), reduce="foo")
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        flow.tensor(x).scatter(1, flow.tensor(L([[1]])), flow.ones(1, 1))


def test_scatter_reduce_amax_backward():
    x = flow.tensor(R(3, 4), requires_grad=True)
    s = flow.tensor(R(3, 4), requires_grad=True)
    ix = flow.tensor(L(rng.integers(0, 3, (3, 4))))
    gradcheck(lambda a, b: a.scatter_reduce(0, ix, b, "amax"), [x, s])
    gradcheck(lambda a, b: a.scatter_reduce(0, ix, b, "mean", include_self=False), [x, s])


# ---- index_select / index_add / index_copy / take ---------------------------------------------------
def test_index_select_add_copy_take():
    x = R(4, 3)
    ix = L([3, 0, 0, 1])
    check_vs_torch(lambda a: a.index_select(0, flow.tensor(ix)), lambda a: a.index_select(0, torch.tensor(ix)), [x])
    check_vs_torch(lambda a: a.t().index_select(1, flow.tensor(ix[:2]).int()),
                   lambda a: a.t().index_select(1, torch.tensor(ix[:2]).int()), [x])
    check_vs_torch(lambda a: a.index_select(1, flow.tensor(1)), lambda a: a.index_select(1, torch.tensor(1)), [x])
    check_vs_torch(lambda a: a.index_select(0, flow.tensor(L([]))), lambda a: a.index_select(0, torch.tensor(L([]))), [x])
    src = R(3, 3)
    ia = L([1, 1, 3])
    check_vs_torch(lambda a, s: a.index_add(0, flow.tensor(ia), s), lambda a, s: a.index_add(0, torch.tensor(ia), s), [x, src])
    check_vs_torch(lambda a, s: a.index_add(0, flow.tensor(ia), s, alpha=2.5),
                   lambda a, s: a.index_add(0, torch.tensor(ia), s, alpha=2.5), [x, src])
    ic = L([2, 0, 3])
    check_vs_torch(lambda a, s: a.index_copy(0, flow.tensor(ic), s), lambda a, s: a.index_copy(0, torch.tensor(ic), s), [x, src])
    f, t = flow.tensor(x), torch.tensor(x)
    f.index_add_(1, flow.tensor(L([0, 2])), flow.ones(4, 2, dtype=flow.float64))
    t.index_add_(1, torch.tensor(L([0, 2])), torch.ones(4, 2, dtype=torch.float64))
    assert_close(f, t)
    gradcheck(lambda a, s: a.index_add(0, flow.tensor(ia), s), [flow.tensor(x, requires_grad=True),
                                                             flow.tensor(src, requires_grad=True)])
    gradcheck(lambda a: a.index_select(0, flow.tensor(ix)), [flow.tensor(x, requires_grad=True)])
    it = L([[0, 11], [-12, 5]])
    check_vs_torch(lambda a: a.take(flow.tensor(it)), lambda a: a.take(torch.tensor(it)), [x])
    check_vs_torch(lambda a: flow.take_along_dim(a, flow.tensor(L([[0], [2], [1], [0]])), 1),
                   lambda a: torch.take_along_dim(a, torch.tensor(L([[0], [2], [1], [0]])), 1), [x])
    t = flow.tensor(x)
    with pytest.raises(IndexError, match="index out of range in self"):
        t.index_select(0, flow.tensor(L([4])))
    with pytest.raises(RuntimeError, match="Expected dtype int32 or int64 for index"):
        t.index_select(0, flow.tensor([1.0]))
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        t.index_select(0, flow.tensor(L([[1]])))
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 4"):  # torch: IndexError
        t.index_add(0, flow.tensor(L([5])), flow.ones(1, 3, dtype=flow.float64))
    with pytest.raises(RuntimeError, match="Number of indices \\(1\\) should be equal to source.size\\(dim\\): \\(2\\)"):
        t.index_add(0, flow.tensor(L([1])), flow.ones(2, 3, dtype=flow.float64))
    with pytest.raises(IndexError, match="index -1 is out of bounds for dimension 0 with size 4"):
        t.index_add(0, flow.tensor(L([-1])), flow.ones(1, 3, dtype=flow.float64))
    with pytest.raises(IndexError, match="index_copy_\\(\\): index 4 is out of bounds for dimension 0 with size 4"):
        t.index_copy(0, flow.tensor(L([4])), flow.ones(1, 3, dtype=flow.float64))
    with pytest.raises(IndexError, match="index out of range in self"):
        t.index_select(0, flow.tensor(L([-1])))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 1 with size 3"):
        t.gather(1, flow.tensor(L([[-1]])))
    with pytest.raises(IndexError, match="out of range: tried to access index 12 on a tensor of 12 elements"):
        t.take(flow.tensor(L([12])))
    assert_close(t, torch.tensor(x))  # nothing was written by the failing calls


# ---- masks ---------------------------------------------------------------------------------------------
def test_masked_ops():
    x = R(3, 4)
    m = rng.random((3, 4)) > 0.5
    mb = rng.random(4) > 0.5
    check_vs_torch(lambda a: a.masked_fill(flow.tensor(m), 2.0), lambda a: a.masked_fill(torch.tensor(m), 2.0), [x])
    check_vs_torch(lambda a: a.masked_fill(flow.tensor(mb), -1), lambda a: a.masked_fill(torch.tensor(mb), -1), [x])
    check_vs_torch(lambda a: a[:1].masked_fill(flow.tensor(m), 2.0), lambda a: a[:1].masked_fill(torch.tensor(m), 2.0), [x])
    check_vs_torch(lambda a, v: a.t().masked_fill(flow.tensor(m).t(), v), lambda a, v: a.t().masked_fill(torch.tensor(m).t(), v),
                   [x, R()])
    check_vs_torch(lambda a: a.masked_select(flow.tensor(m)), lambda a: a.masked_select(torch.tensor(m)), [x])
    check_vs_torch(lambda a: a.masked_select(flow.tensor(mb)), lambda a: a.masked_select(torch.tensor(mb)), [x])
    check_vs_torch(lambda a, s: a.masked_scatter(flow.tensor(m), s), lambda a, s: a.masked_scatter(torch.tensor(m), s), [x, R(13)])
    f, t = flow.tensor(x), torch.tensor(x)
    f.masked_fill_(flow.tensor(mb), flow.tensor(3.0))
    t.masked_fill_(torch.tensor(mb), torch.tensor(3.0))
    assert_close(f, t)
    xi = flow.arange(6).reshape(2, 3) if hasattr(flow, "arange") else flow.tensor(L(np.arange(6).reshape(2, 3)))
    assert_close(xi.masked_fill(flow.tensor([True, False, True]), 9),
                 torch.arange(6).reshape(2, 3).masked_fill(torch.tensor([True, False, True]), 9))
    gradcheck(lambda a: a.masked_select(flow.tensor(m)), [flow.tensor(x, requires_grad=True)])
    t = flow.tensor(x)
    with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks, but got mask with dtype float"):
        t.masked_fill(flow.ones(3, 4), 1.0)
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        t.masked_fill(flow.tensor(m), flow.ones(2))
    with pytest.raises(RuntimeError, match="masked_select: expected BoolTensor for mask"):
        t.masked_select(flow.ones(3, 4))
    with pytest.raises(RuntimeError, match="Number of elements of source < number of ones in mask"):
        t.masked_scatter(flow.ones(3, 4, dtype=flow.bool), flow.ones(3, dtype=flow.float64))


def test_nonzero():
    for a in [R(3, 4) > 0, np.array(5.0), np.array(0), np.zeros((2, 0)), L([0, 3, 0, 1])]:
        assert_close(flow.nonzero(flow.tensor(a)), torch.nonzero(torch.tensor(a)))
        for f, t in zip(flow.tensor(a).nonzero(as_tuple=True), torch.tensor(a).nonzero(as_tuple=True)):
            assert_close(f, t)
    assert_close(flow.argwhere(flow.tensor(L([0, 3]))), torch.argwhere(torch.tensor(L([0, 3]))))


# ---- tril / triu / flip / roll / repeat / tile ---------------------------------------------------------
def test_tril_triu():
    for shape in [(4, 5), (2, 3, 3), (5, 2), (0, 3)]:
        for k in [0, 1, -2, 7]:
            x = R(*shape)
            check_vs_torch(lambda a: flow.tril(a, k), lambda a: torch.tril(a, k), [x])
            check_vs_torch(lambda a: a.triu(diagonal=k), lambda a: a.triu(diagonal=k), [x])
    x = R(4, 3)
    check_vs_torch(lambda a: a.t().tril(), lambda a: a.t().tril(), [x])
    f, t = flow.tensor(x), torch.tensor(x)
    f.t().triu_(1)
    t.t().triu_(1)
    assert_close(f, t)
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        flow.tril(flow.ones(3))


def test_flip_roll():
    x = R(3, 4, 2)
    for dims in [0, [0], (1, 2), [-1, 0], []]:
        check_vs_torch(lambda a: flow.flip(a, dims), lambda a: torch.flip(a, dims if not isinstance(dims, int) else [dims]), [x])
    check_vs_torch(lambda a: a.transpose(0, 2).flip(0, 1), lambda a: a.transpose(0, 2).flip(0, 1), [x])
    check_vs_torch(lambda a: a.fliplr(), lambda a: a.fliplr(), [x])
    for sh, dims in [(1, 0), (-5, 1), ([1, 2], [0, 2]), (7, None), (0, 0), ((2, -1), (1, 1))]:
        check_vs_torch(lambda a: flow.roll(a, sh, dims), lambda a: torch.roll(a, sh, dims), [x])
    check_vs_torch(lambda a: a[:, ::2].roll(1, 1), lambda a: a[:, ::2].roll(1, 1), [x])
    check_vs_torch(lambda a: flow.roll(a, 3), lambda a: torch.roll(a, 3), [R()])
    check_vs_torch(lambda a: flow.roll(a, 3, 0), lambda a: torch.roll(a, 3, 0), [R(0, 2)])
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        flow.tensor(x).flip(0, 0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        flow.tensor(x).flip(5)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        flow.tensor(x).roll([1, 2], [0])


def test_repeat_tile_interleave():
    x = R(2, 3)
    for reps in [(2, 1), (1, 1), (3, 2, 2), (0, 2)]:
        check_vs_torch(lambda a: a.repeat(*reps), lambda a: a.repeat(*reps), [x])
        check_vs_torch(lambda a: a.t().repeat(reps), lambda a: a.t().repeat(reps), [x])
    for reps in [(2,), (2, 2), (1, 2, 3)]:
        check_vs_torch(lambda a: flow.tile(a, reps), lambda a: torch.tile(a, reps), [x])
    check_vs_torch(lambda a: a.repeat(3), lambda a: a.repeat(3), [R()])
    check_vs_torch(lambda a: a.repeat_interleave(2), lambda a: a.repeat_interleave(2), [x])
    check_vs_torch(lambda a: a.repeat_interleave(2, dim=1), lambda a: a.repeat_interleave(2, dim=1), [x])
    check_vs_torch(lambda a: a.repeat_interleave(flow.tensor(L([1, 2])), dim=0),
                   lambda a: a.repeat_interleave(torch.tensor(L([1, 2])), dim=0), [x])
    assert_close(flow.repeat_interleave(flow.tensor(L([2, 0, 1]))), torch.repeat_interleave(torch.tensor(L([2, 0, 1]))))
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be smaller"):
        flow.tensor(x).repeat(2)
    with pytest.raises(RuntimeError, match="repeats must have the same size as input along dim"):
        flow.tensor(x).repeat_interleave(flow.tensor(L([1, 2, 3])), dim=0)


# ---- sort / topk / unique / one_hot --------------------------------------------------------------------
def test_sort_argsort_topk():
    x = R(4, 6)
    for dim in [-1, 0]:
        for desc in [False, True]:
            f = flow.sort(flow.tensor(x), dim, desc)
            t = torch.sort(torch.tensor(x), dim, desc)
            assert_close(f.values, t.values)
            assert_close(f.indices, t.indices)
            check_vs_torch(lambda a: a.sort(dim=dim, descending=desc)[0], lambda a: a.sort(dim=dim, descending=desc)[0], [x])
            assert_close(flow.argsort(flow.tensor(x), dim, desc), torch.argsort(torch.tensor(x), dim, desc))
    ties = np.array([3, 1, 2, 1, 3, 1, np.nan, 0.5, np.nan])
    for desc in [False, True]:
        f, t = flow.tensor(ties).sort(descending=desc, stable=True), torch.tensor(ties).sort(descending=desc, stable=True)
        assert_close(f.values, t.values)
        assert_close(f.indices, t.indices)
    xi = L(rng.integers(0, 5, (3, 7)))
    assert_close(flow.tensor(xi).t().sort(stable=True, dim=0).indices, torch.tensor(xi).t().sort(stable=True, dim=0).indices)
    for k, dim, largest in [(2, -1, True), (3, 0, False), (6, 1, True), (0, 1, True)]:
        f = flow.tensor(x).topk(k, dim, largest)
        t = torch.tensor(x).topk(k, dim, largest)
        assert_close(f.values, t.values)
        assert_close(f.indices, t.indices)
        check_vs_torch(lambda a: a.topk(k, dim, largest)[0], lambda a: a.topk(k, dim, largest)[0], [x])
    assert_close(flow.tensor(3.0).sort()[0], torch.tensor(3.0).sort()[0])
    assert_close(flow.topk(flow.tensor(ties), 3).values, torch.topk(torch.tensor(ties), 3).values)
    w = flow.tensor(R(4, 6))
    gradcheck(lambda a: a.sort(0)[0] * w, [flow.tensor(x, requires_grad=True)])
    gradcheck(lambda a: a.topk(2)[0], [flow.tensor(x, requires_grad=True)])
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        flow.tensor(x).topk(7)
    with pytest.raises(IndexError, match="Dimension out of range"):
        flow.tensor(x).sort(dim=3)


def test_unique():
    a = L([3, 1, 3, 2, 1, 7, 3])
    for inv in [False, True]:
        for cnt in [False, True]:
            f = flow.unique(flow.tensor(a), return_inverse=inv, return_counts=cnt)
            t = torch.unique(torch.tensor(a), return_inverse=inv, return_counts=cnt)
            for x, y in zip(f if isinstance(f, tuple) else (f,), t if isinstance(t, tuple) else (t,)):
                assert_close(x, y)
    m = L([[1, 2], [0, 5], [1, 2], [0, 1]])
    for dim in [0, 1, -1]:
        f = flow.tensor(m).unique(dim=dim, return_inverse=True, return_counts=True)
        t = torch.tensor(m).unique(dim=dim, return_inverse=True, return_counts=True)
        for x, y in zip(f, t):
            assert_close(x, y)
    x2 = R(3, 4).round()
    assert_close(flow.unique(flow.tensor(x2)), torch.unique(torch.tensor(x2)))
    assert_close(flow.unique(flow.tensor(x2).t()), torch.unique(torch.tensor(x2).t()))
    assert_close(flow.unique(flow.tensor(L([]))), torch.unique(torch.tensor(L([]))))
    c = L([1, 1, 2, 2, 3, 1, 1, 2])
    f = flow.unique_consecutive(flow.tensor(c), return_inverse=True, return_counts=True)
    t = torch.unique_consecutive(torch.tensor(c), return_inverse=True, return_counts=True)
    for x, y in zip(f, t):
        assert_close(x, y)
    with pytest.raises(IndexError, match="Dimension out of range"):
        flow.unique(flow.tensor(m), dim=3)


def test_one_hot():
    F, TF = flow.nn.functional, torch.nn.functional
    for a, n in [(L([0, 2, 1]), -1), (L([[0, 2], [1, 1]]), 4), (L([]).reshape(0, 2), 3), (L(1), 3)]:
        assert_close(F.one_hot(flow.tensor(a), n), TF.one_hot(torch.tensor(a), n))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(flow.tensor(L([3])), 2)
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(flow.tensor(L([-1])))
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor of type LongTensor."):
        F.one_hot(flow.tensor([1.0]))


# ---- index / index_put (the registry ops) --------------------------------------------------------------
def _torch_put(a, ix, v):
    c = a.clone()  # torch's index_put takes no None entries; setitem on a clone is the same op
    c[ix] = v
    return c


def test_index_and_index_put_ops():
    x = R(3, 4, 5)
    i0, i2 = L([[0, 2], [1, 1]]), L([4, 0])
    check_vs_torch(lambda a: flow.index_select(a, 2, flow.tensor(i2[:1])), lambda a: torch.index_select(a, 2, torch.tensor(i2[:1])), [x])
    v = R(2, 2, 4)
    check_vs_torch(lambda a, b: a.index_put((flow.tensor(i0), None, flow.tensor(i2)), b),
                   lambda a, b: _torch_put(a, (torch.tensor(i0), slice(None), torch.tensor(i2)), b), [x, v])
    check_vs_torch(lambda a, b: a.index_put((flow.tensor(i0),), b[..., :1, None], accumulate=True),
                   lambda a, b: a.index_put((torch.tensor(i0),), b[..., :1, None], accumulate=True), [x, v])
    f, t = flow.tensor(x), torch.tensor(x)
    f.index_put_((flow.tensor(L([0, 0, 2])),), flow.tensor(1.0, dtype=flow.float64), accumulate=True)
    t.index_put_((torch.tensor(L([0, 0, 2])),), torch.tensor(1.0, dtype=torch.float64), accumulate=True)
    assert_close(f, t)
    gradcheck(lambda a, b: a.index_put((flow.tensor(L([2, 0])), None, flow.tensor(L([1, 1]))), b),
              [flow.tensor(R(3, 2, 2), requires_grad=True), flow.tensor(R(2, 2), requires_grad=True)])
    gradcheck(lambda a: a[flow.tensor(L([2, 0, 2]))][:, [1, 0]], [flow.tensor(R(3, 2), requires_grad=True)])
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        flow.tensor(x).index_put_((flow.tensor(L([5])),), flow.tensor(1.0, dtype=flow.float64))
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match, got Double "
                                           "for the destination and Float for the source."):
        flow.tensor(x).index_put_((flow.tensor(L([1])),), flow.tensor(1.0))
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 3 \\(got 4\\)"):
        flow.tensor(x).index_put((flow.tensor(L([1])),) * 4, flow.tensor(1.0, dtype=flow.float64))


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("dim", [1, 0])
def test_scatter_reduce_large_with_duplicates_matches_torch(reduce, dim):
    # along the innermost dim whole lines run on separate threads; along dim 0 everything runs serially.
    # Small integers keep every order of the sums (and products of +-1, 2) exact.
    g = np.random.default_rng(5)
    ix = g.integers(0, 64, (256, 512))
    src = g.integers(-3, 4, (256, 512)).astype(np.float32) if reduce != "prod" else \
        g.choice(np.array([-1.0, 1.0, 2.0], np.float32), (256, 512))
    self_ = g.integers(-3, 4, (256, 512) if dim == 1 else (64, 512)).astype(np.float32)
    if dim == 0:
        ix = g.integers(0, 64, (256, 512))
    got = flow.tensor(self_).scatter_reduce(dim, flow.tensor(ix), flow.tensor(src), reduce)
    want = torch.tensor(self_).scatter_reduce(dim, torch.tensor(ix), torch.tensor(src), reduce)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    got = flow.tensor(self_).scatter_add(dim, flow.tensor(ix), flow.tensor(src))
    want = torch.tensor(self_).scatter_add(dim, torch.tensor(ix), torch.tensor(src))
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("k", [1, 5, 32, 33, 300])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_a_stable_reference_with_ties_nan_and_inf(k, largest):
    # small k takes the one-pass selection, larger k the partial sort; ties keep the lower index first and
    # NaN ranks above every number, so the result equals a stable sort's first k
    g = np.random.default_rng(k)
    x = g.integers(-20, 20, (6, 300)).astype(np.float32)
    x[1, ::7] = np.nan
    x[2, ::5] = np.inf
    x[3, ::3] = -np.inf
    x[4, :] = np.nan
    vals, idx = flow.topk(flow.tensor(x), k, dim=1, largest=largest)
    def rank(row, i):  # NaN is the largest value; equal values keep index order
        if np.isnan(row[i]):
            return (0 if largest else 1, 0.0, i)
        return (1 if largest else 0, -row[i] if largest else row[i], i)
    order = np.array([sorted(range(x.shape[1]), key=lambda i, row=row: rank(row, i))[:k] for row in x])
    np.testing.assert_array_equal(idx.numpy(), order)
    np.testing.assert_array_equal(vals.numpy(), np.take_along_axis(x, order, 1))
    tv, _ = torch.topk(torch.tensor(x), k, dim=1, largest=largest)
    np.testing.assert_array_equal(vals.numpy(), tv.numpy())


def test_cat_large_parts_split_across_threads():
    # byte ranges cut across rows and parts (64 KiB chunks): every element lands once, in place
    g = np.random.default_rng(9)
    parts = [g.standard_normal(s).astype(np.float32) for s in ((37, 1000), (5, 1000), (60, 1000))]
    np.testing.assert_array_equal(flow.cat([flow.tensor(p) for p in parts]).numpy(), np.concatenate(parts))
    cols = [g.standard_normal((300, c)).astype(np.float32) for c in (333, 1, 700)]
    np.testing.assert_array_equal(flow.cat([flow.tensor(p) for p in cols], 1).numpy(), np.concatenate(cols, 1))
    # split's backward fills the pieces without a gradient with zeros (the same kernel)
    x = flow.tensor(g.standard_normal((120, 1000)).astype(np.float32), requires_grad=True)
    a, b, c = x.split([50, 20, 50])
    (b * 3).sum().backward()
    want = np.zeros((120, 1000), np.float32)
    want[50:70] = 3
    np.testing.assert_array_equal(x.grad.numpy(), want)
