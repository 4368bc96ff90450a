"""Ops on global tensors equal the single-process result on every SBP combination of their inputs, and the
signature inference picks the expected (cheapest) layouts."""
import itertools

import numpy as np

import oneflow as flow
import oneflow.distributed as dist

r, n = flow.env.get_rank(), flow.env.get_world_size()
S, B, P, PM = flow.sbp.split, flow.sbp.broadcast, flow.sbp.partial_sum, flow.sbp.partial_max
p = flow.placement("cpu", ranks=list(range(n)))
rng = np.random.default_rng(1)


def glob(full, sbp, placement=p):
    x = flow.tensor(full).to_global(placement, (B,) * placement.ranks.ndim)
    return x.to_global(sbp=sbp)


def layouts(ndim):
    return [S(d) for d in range(ndim)] + [B, P]


def check(fn, *arrays, rtol=1e-5, atol=1e-5, sbps=None):
    """fn on global tensors of every layout combination equals fn on the local full tensors."""
    want = fn(*[flow.tensor(a) for a in arrays])
    want = [w.numpy() for w in want] if isinstance(want, tuple) else want.numpy()
    combos = sbps or itertools.product(*[layouts(a.ndim) for a in arrays])
    for combo in combos:
        got = fn(*[glob(a, s) for a, s in zip(arrays, combo)])
        if isinstance(got, tuple):
            for g, w in zip(got, want):
                np.testing.assert_allclose(g.numpy(), w, rtol=rtol, atol=atol, err_msg=f"{fn} {combo}")
        else:
            assert got.is_global and got.shape == want.shape, (combo, got.shape)
            np.testing.assert_allclose(got.numpy(), want, rtol=rtol, atol=atol, err_msg=f"{fn} {combo}")


a = rng.standard_normal((2 * n + 1, 3)).astype(np.float32)  # uneven rows
b = rng.standard_normal((2 * n + 1, 3)).astype(np.float32)
row = rng.standard_normal((3,)).astype(np.float32)

# elementwise, unary and broadcasting binary
check(lambda x: flow.exp(x) + 1, a)
check(lambda x: flow.relu(x) * 2, a)
check(lambda x, y: x + y, a, b)
check(lambda x, y: x * y, a, b)
check(lambda x, y: x - y, a, row)
check(lambda x, y: flow.where(x > 0, x, y), a, b)
check(lambda x: -x, a)
# reductions (split on a reduced dim: partial sums; mean by the logical count; max: partial max)
check(lambda x: x.sum(), a)
check(lambda x: x.sum(0), a)
check(lambda x: x.sum(1, keepdim=True), a)
check(lambda x: x.mean(0), a)
check(lambda x: x.mean(), a)
check(lambda x: flow.amax(x, 0), a)
check(lambda x: x.max(), a)
check(lambda x: flow.softmax(x, 1), a)
# matmul-like
w = rng.standard_normal((3, 4)).astype(np.float32)
check(lambda x, y: flow.matmul(x, y), a, w)
check(lambda x, y: x @ y.T, a, b)
bias = rng.standard_normal((4,)).astype(np.float32)
check(lambda x, y, z: flow.addmm(z, x, y), a, w, bias,
      sbps=itertools.product([S(0), S(1), B], [S(0), S(1), B], [B, P]))
bm = rng.standard_normal((n, 2, 3)).astype(np.float32)
bw = rng.standard_normal((n, 3, 2)).astype(np.float32)
check(lambda x, y: flow.bmm(x, y), bm, bw, sbps=itertools.product([S(0), S(2), B], [S(0), S(1), B]))
# views and reshapes
sq = rng.standard_normal((2 * n, 6)).astype(np.float32)
check(lambda x: x.view(n, 2, 6), sq)
check(lambda x: x.reshape(-1), sq)
check(lambda x: x.transpose(0, 1), a)
check(lambda x: x.view(-1, 3), a)  # uneven: a split of 2n+1 rows is no split of the flat view
check(lambda x: x.unsqueeze(0).expand(2, *x.shape), a)

# more families: shape ops, normalization, convolution, pooling, indexing, losses, scans, reductions with indices
F = flow.nn.functional
img = rng.standard_normal((4, 3, 6, 6)).astype(np.float32)
kern = rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
idx = np.array([0, 2, 1])
lab = rng.integers(0, 3, (2 * n + 1,))
img_sbps = [(s,) for s in [S(0), S(1), S(2), B]]
check(lambda x: flow.cat([x, x * 2], 1), a)
check(lambda x: flow.stack([x, x]), a)
check(lambda x: F.layer_norm(x, (3,)), a)
check(lambda x: F.gelu(x), a)
check(lambda x: flow.cumsum(x, 1), a)
check(lambda x: flow.max(x, 1), a)  # values and indices
check(lambda x: flow.argmax(x, 1), a)
check(lambda x: x[1:3, ::2], a)
check(lambda x: x.var(0), a)
check(lambda x, i: flow.index_select(x, 1, i), a, idx[:2], sbps=[(s, B) for s in [S(0), S(1), B]])
check(lambda x: F.max_pool2d(x, 2), img, sbps=img_sbps)
check(lambda x, k: F.conv2d(x, k), img, kern, sbps=[(s, B) for s in [S(0), B]] + [(B, S(0))])
check(lambda x, t: F.cross_entropy(x, t), a, lab, sbps=[(S(0), S(0)), (B, B), (S(1), B)])

# ---- the inference picks these signatures and collectives (with one rank every layout is the same) ----
if n > 1:
    x0, wb = glob(a, S(0)), glob(w, B)
    with dist.comm_debug() as comm:
        y = flow.matmul(x0, wb)
    assert y.sbp == (S(0),) and comm.records == []  # data parallel: no communication
    y = flow.matmul(glob(a, B), glob(w, S(1)))
    assert y.sbp == (S(1),)  # model parallel
    y = flow.matmul(glob(a, S(1)), glob(w, S(0)))
    assert y.sbp == (P,)
    assert glob(a, S(0)).sum(0).sbp == (P,) and glob(a, S(0)).sum(1).sbp == (S(0),)
    assert flow.amax(glob(a, S(0)), 0).sbp == (PM,)
    assert (glob(a, S(0)) + glob(b, S(0))).sbp == (S(0),)
    xa, xr, xb1, pa, pb = glob(a, S(0)), glob(row, B), glob(b, S(1)), glob(a, P), glob(b, P)
    with dist.comm_debug() as comm:
        z = xa + xr
    assert z.sbp == (S(0),) and comm.records == []
    with dist.comm_debug() as comm:
        z = xa + xb1  # one side moves (all_to_all), not both to broadcast
    assert [c["collective"] for c in comm.records] == ["all_to_all"] and comm.records[0]["op"] == "add", \
        comm.records
    with dist.comm_debug() as comm:
        z = pa + pb
    assert z.sbp == (P,) and comm.records == []  # partial values add without communication
    # a partial tensor reduced for one use keeps the reduced shard: later uses communicate nothing
    pc = glob(a, P)
    with dist.comm_debug() as comm:
        e1, e2 = flow.exp(pc), pc * pc
    assert len(comm.records) == 1 and not pc.sbp[0].is_partial(), (pc.sbp, comm.records)
    np.testing.assert_allclose(pc.numpy(), a, rtol=1e-6)
    np.testing.assert_allclose(e1.numpy(), np.exp(a), rtol=1e-5)
    np.testing.assert_allclose(e2.numpy(), a * a, rtol=1e-5)

# ---- 2 x 2 placement ----
if n == 4:
    mesh = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    x = glob(a, (S(0), B), mesh)
    wm = glob(w, (B, S(1)), mesh)
    y = flow.matmul(x, wm)
    assert y.sbp == (S(0), S(1)), y.sbp
    np.testing.assert_allclose(y.numpy(), a @ w, rtol=1e-5)
    s = (x * 2).sum()
    np.testing.assert_allclose(s.numpy(), (a * 2).sum(), rtol=1e-5)
    for sa, sb in itertools.product(itertools.product([S(0), S(1), B, P], repeat=2), repeat=2):
        np.testing.assert_allclose((glob(a, sa, mesh) + glob(b, sb, mesh)).numpy(), a + b, rtol=1e-5,
                                   err_msg=f"{sa} {sb}")
        np.testing.assert_allclose(flow.matmul(glob(a, sa, mesh), glob(w, sb, mesh)).numpy(), a @ w, rtol=1e-5,
                                   atol=1e-5, err_msg=f"{sa} {sb}")

# in place, out= and random fills
x = glob(a, S(0))
x.mul_(2)
np.testing.assert_allclose(x.numpy(), a * 2, rtol=1e-6)
x.add_(glob(b, B))
np.testing.assert_allclose(x.numpy(), a * 2 + b, rtol=1e-6)
out = glob(np.zeros_like(a), S(1))
flow.add(glob(a, S(0)), glob(b, B), out=out)
np.testing.assert_allclose(out.numpy(), a + b, rtol=1e-6)
flow.manual_seed(5)
want = flow.empty(5, 3).normal_().numpy()
for sbp in [S(0), S(1), B]:
    flow.manual_seed(5)
    g = glob(np.zeros((5, 3), np.float32), sbp).normal_()
    np.testing.assert_array_equal(g.numpy(), want)
for sbp in [S(0), S(1), B]:  # random ops draw as a single process would (dropout's mask, bernoulli)
    for fn in (lambda t: F.dropout(t, 0.5), lambda t: flow.bernoulli(t.sigmoid())):
        flow.manual_seed(7)
        want = fn(flow.tensor(a)).numpy()
        flow.manual_seed(7)
        got = fn(glob(a, sbp))
        assert got.sbp == (sbp,) or n == 1  # one rank: every layout is the same
        np.testing.assert_array_equal(got.numpy(), want)
print("global ops ok")
