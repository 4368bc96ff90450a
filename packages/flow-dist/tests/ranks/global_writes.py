"""In-place writes and data-dependent ops on global tensors equal single-process on every sbp, uneven splits
included: ``x[idx] = v`` and ``index_put_`` (int and bool-mask indices, accumulate with repeats), ``index_add_``,
``masked_fill_``, writes through views (slices, selects, a transpose, a view of a view), ``x[mask]``,
``masked_select`` and ``nonzero`` (data-dependent shapes: broadcast results), with the gradients of the target
and of the written values."""
import numpy as np

import oneflow as flow
from shard_util import shard_of

r, n = flow.env.get_rank(), flow.env.get_world_size()
S, B, P = flow.sbp.split, flow.sbp.broadcast, flow.sbp.partial_sum
p = flow.placement("cpu", ranks=list(range(n)))
rng = np.random.default_rng(5)
rows, cols = 2 * n + 1, 5  # uneven over the rows on every rank count but one
a = rng.standard_normal((rows, cols)).astype(np.float32)
mask = a > 0.2
idx = np.array([0, rows - 1, 1], np.int64)
rep = np.array([1, 0, 1, rows - 1], np.int64)  # repeats: accumulate sums them
vals = rng.standard_normal((3, cols)).astype(np.float32)


class Local:
    """Makes the tensors of a case as a single process does."""

    def __call__(self, arr, sbp=None):
        return flow.tensor(arr)


class Global:
    """Makes them global: the indexed tensor in the sbp under test, the others broadcast unless given one."""

    def __init__(self, sbp):
        self.sbp = sbp

    def __call__(self, arr, sbp=None):
        return flow.tensor(arr, placement=p, sbp=B if sbp is None else sbp)


def sbp_for_mask(sbp):
    return B if sbp == P else sbp


def setitem_int(y, mk, sbp):
    y[mk(idx)] = mk(vals)
    return y


def setitem_pair(y, mk, sbp):
    y[mk(idx), mk(np.array([4, 0, 2]))] = mk(vals[:, 0].copy())
    return y


def index_put_acc(y, mk, sbp):
    return y.index_put_((mk(rep),), mk(np.ones((4, cols), np.float32) * 3), accumulate=True)


def index_add(y, mk, sbp):
    return y.index_add_(1, mk(np.array([4, 1, 4])), mk(np.ones((rows, 3), np.float32)), alpha=2)


def masked_fill(y, mk, sbp):
    return y.masked_fill_(mk(mask, sbp_for_mask(sbp)), -2.5)


def setitem_mask(y, mk, sbp):
    y[mk(mask, sbp_for_mask(sbp))] = 0.5
    return y


def setitem_views(y, mk, sbp):
    y[1:3] = 5.0
    y[:, 1] = 7.0
    y[2] = mk(np.arange(cols, dtype=np.float32))
    y[0:2, 2:4] = mk(np.full((2, 2), -1.0, np.float32))
    v = y[1:]  # a view of a view
    v[:, 3:] = 9.0
    v[-1].fill_(4.0)
    y.narrow(1, 0, 1).mul_(3.0)
    y.t()[4] = 1.5
    return y


cases = [setitem_int, setitem_pair, index_put_acc, index_add, masked_fill, setitem_mask, setitem_views]
for sbp in (S(0), S(1), B, P):
    mk = Global(sbp)
    for case in cases:
        want = case(flow.tensor(a), Local(), None).numpy()
        g = case(flow.tensor(a, placement=p, sbp=sbp), mk, sbp)
        # (a partial target reduced for a view keeps the reduced layout)
        assert g.is_global and (g.sbp == (sbp,) or sbp == P), (case.__name__, sbp, g.sbp)
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-6, err_msg=f"{case.__name__} {sbp}")
        if sbp != P:  # this rank's shard is its part of the single-process value
            np.testing.assert_allclose(g.to_local().numpy(), shard_of(want, p, (sbp,)), rtol=1e-6)

    # data-dependent shapes: the single-process values, broadcast
    g = flow.tensor(a, placement=p, sbp=sbp)
    gm = flow.tensor(mask, placement=p, sbp=sbp_for_mask(sbp))
    for name, got, want in (("x[mask]", g[gm], a[mask]), ("masked_select", flow.masked_select(g, gm), a[mask]),
                            ("nonzero", flow.nonzero(g > 0.2), np.argwhere(mask)),
                            ("x[x > 0]", g[g > 0], a[a > 0]),
                            ("x[mask row]", g[flow.tensor(mask[:, 0], placement=p, sbp=B)], a[mask[:, 0]])):
        assert got.is_global and got.sbp == (B,), (name, got.sbp)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, err_msg=f"{name} {sbp}")
        np.testing.assert_allclose(got.to_local().numpy(), want, rtol=1e-6, err_msg=f"{name} {sbp}")

# the writes a rank can make from what it holds move nothing: x[idx] = v on a split of the indexed dim (each rank
# takes the indices in its rows) or of another dim (its columns of the values), x[mask] = scalar with the mask
# laid out as x; an advanced index over a split dim with split values is gathered and written whole
if n > 1:
    for sbp in (S(0), S(1)):
        want = a.copy()
        want[idx] = vals
        want[want > 0.5] = -1.0
        g = flow.tensor(a, placement=p, sbp=sbp)
        ib, vb = flow.tensor(idx, placement=p, sbp=B), flow.tensor(vals, placement=p, sbp=B)
        with flow.distributed.comm_debug() as comm:
            g[ib] = vb
            g[g > 0.5] = -1.0
        assert comm.records == [], (sbp, comm.records)
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-6)
    g = flow.tensor(a, placement=p, sbp=S(0))
    with flow.distributed.comm_debug() as comm:
        g[flow.tensor(idx, placement=p, sbp=B)] = flow.tensor(vals, placement=p, sbp=S(1))
    assert [c["collective"] for c in comm.records] == ["all_gather", "all_gather"], comm.records
    want = a.copy()
    want[idx] = vals
    np.testing.assert_allclose(g.numpy(), want, rtol=1e-6)
    try:  # an index out of range is the single-process error
        g[flow.tensor([rows], placement=p, sbp=B)] = 1.0
    except IndexError as e:
        assert "out of bounds" in str(e), e
    else:
        raise AssertionError("an index out of range did not raise")

# gradients: a non-leaf target written in place, the written values requiring grad too
w = rng.standard_normal((rows, cols)).astype(np.float32)


def train(mk, sbp, case):
    x = mk(a, sbp).requires_grad_()
    v = mk(vals).requires_grad_()
    y = x * 2.0
    if case == "index_put":
        y[mk(idx)] = v
    elif case == "accumulate":
        y.index_put_((mk(idx),), v * 1.0, accumulate=True)
    elif case == "view":  # through views (autograd rebases the writes onto y, as for local views)
        y[1:3] = v[:2]
        y[:, 1:3] = v[:, :2].sum() * 1.0
        y[1:][-1, 4:] = 2.0
    elif case == "mask":
        y = y.masked_fill(mk(mask, None if sbp is None else sbp_for_mask(sbp)), 0.0)
        y = y + flow.masked_select(x, mk(mask, None if sbp is None else sbp_for_mask(sbp))).sum()
    (y * mk(w, sbp)).sum().backward()
    return x.grad.numpy(), v.grad.numpy() if v.grad is not None else None


for case in ("index_put", "accumulate", "view", "mask"):
    want = train(Local(), None, case)
    for sbp in (S(0), S(1), B):
        got = train(Global(sbp), sbp, case)
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6, err_msg=f"{case} {sbp} x.grad")
        if want[1] is not None:
            np.testing.assert_allclose(got[1], want[1], rtol=1e-5, atol=1e-6, err_msg=f"{case} {sbp} v.grad")
print("global writes ok")
