"""Global tensors on this job's ranks: to_global from local tensors, the whole 1-D boxing table (even and uneven
splits) with its collectives and bytes, n-D boxing on a 2 x 2 placement (4 ranks), and the bad-input errors."""
import itertools

import numpy as np

import oneflow as flow
import oneflow.distributed as dist

r, n = flow.env.get_rank(), flow.env.get_world_size()
S, B, P, PM = flow.sbp.split, flow.sbp.broadcast, flow.sbp.partial_sum, flow.sbp.partial_max
p = flow.placement("cpu", ranks=list(range(n)))
rng = np.random.default_rng(0)  # the same stream on every rank


def expect_raises(exc, match, fn):
    try:
        fn()
    except exc as e:
        assert match in str(e), f"{match!r} not in {e!r}"
        return
    raise AssertionError(f"{fn} did not raise {exc.__name__}")


# ---- local -> global (OneFlow's rule: each rank's tensor is its shard) ----
rows = 2 + (1 if r == 0 else 0)  # uneven: rank 0 holds one more row, as a balanced split of 2n+1 does
local = flow.tensor(np.full((rows, 3), r, np.float32))
g = local.to_global(p, S(0))
assert g.is_global and not local.is_global and g.shape == (2 * n + 1, 3) and g.sbp == (S(0),)
assert g.placement == p and g.dtype == flow.float32 and g.size() == flow.Size([2 * n + 1, 3])
assert flow.equal(g.to_local(), local)
expected = np.concatenate([np.full((2 + (i == 0), 3), i, np.float32) for i in range(n)])
np.testing.assert_array_equal(g.numpy(), expected)
b = flow.tensor(np.full((2,), float(r))).to_global(p, B)  # rank 0's value on every rank
np.testing.assert_array_equal(b.to_local().numpy(), [0.0, 0.0])
ps = flow.tensor(np.full((2,), float(r + 1))).to_global(p, P)
np.testing.assert_array_equal(ps.numpy(), np.full(2, n * (n + 1) / 2))
assert ps.sum().item() == n * (n + 1)
assert "placement=oneflow.placement(type=\"cpu\"" in repr(g) and "sbp=(oneflow.sbp.split(dim=0),)" in repr(g)

# ---- the 1-D boxing table, logical values against NumPy, collectives and bytes against the ring minimum ----
ring = {  # (src kind, dst kind) -> (collective, bytes per rank as a fraction of the whole tensor's bytes)
    ("P", "B"): ("all_reduce", 2 * (n - 1) / n), ("P", "S"): ("reduce_scatter", (n - 1) / n),
    ("S", "B"): ("all_gather", (n - 1) / n), ("S", "S"): ("all_to_all", (n - 1) / n / n),
    ("B", "S"): (None, 0), ("B", "P"): (None, 0), ("S", "P"): (None, 0), ("PM", "B"): ("all_reduce", 2 * (n - 1) / n),
}


def kind(s):
    return "PM" if s == PM else "P" if s == P else "S" if s.is_split() else "B"


def make(full, sbp):
    """The global tensor of value ``full`` (the same array on every rank) with ``sbp``."""
    t = flow.tensor(full).to_global(p, B)
    if sbp == P:  # partial values that are not just rank 0's: every rank a random share
        shares = rng.standard_normal((n, *full.shape)).astype(full.dtype)
        shares[-1] = full - shares[:-1].sum(0)
        return flow.tensor(shares[r]).to_global(p, P)
    if sbp == PM:
        pieces = np.stack([full - np.abs(rng.standard_normal(full.shape)).astype(full.dtype) for _ in range(n)])
        pieces[(rng.integers(0, n, full.shape), *np.indices(full.shape))] = full
        return flow.tensor(pieces[r]).to_global(p, PM)
    return t.to_global(sbp=sbp)


for shape in [(2 * n, 3 * n), (2 * n + 1, n + 1)]:  # even, and uneven splits on both dims
    full = rng.standard_normal(shape).astype(np.float32)
    nbytes = full.size * 4
    for src, dst in itertools.product([S(0), S(1), B, P, PM], [S(0), S(1), B, P, PM]):
        x = make(full, src)
        np.testing.assert_allclose(x.numpy(), full, rtol=1e-5, atol=1e-5, err_msg=f"{src}")
        with dist.comm_debug() as comm:
            y = x.to_global(sbp=dst)
        assert y.sbp == (dst,) and y.shape == shape
        assert tuple(y.to_local().shape) == tuple(
            flow.tensor(full).to_global(p, B).to_global(sbp=dst).to_local().shape), (src, dst)
        collective, frac = ring.get((kind(src), kind(dst)), (None, None))
        if src == dst:
            collective, frac = None, 0
        if frac is not None and shape == (2 * n, 3 * n):  # even: exactly the ring minimum
            got = [c["collective"] for c in comm.records]
            assert got == ([collective] if collective else []), (src, dst, got)
            assert comm.get_total_bytes() == int(nbytes * frac), (src, dst, comm.get_total_bytes(), nbytes * frac)
            assert all(c["op"] == "to_global" for c in comm.records)
        np.testing.assert_allclose(y.numpy(), full, rtol=1e-5, atol=1e-5, err_msg=f"{src} -> {dst}")

# ---- n-D boxing on a 2 x 2 placement ----
if n == 4:
    mesh = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    choices = [S(0), S(1), B, P]
    full = rng.standard_normal((5, 6)).astype(np.float32)  # 5 rows: uneven, nested splits of dim 0
    for src, dst in itertools.product(itertools.product(choices, repeat=2), repeat=2):
        x = flow.tensor(full).to_global(mesh, (B, B)).to_global(sbp=src)
        np.testing.assert_allclose(x.numpy(), full, rtol=1e-5, atol=1e-5, err_msg=f"{src}")
        with dist.comm_debug() as comm:
            y = x.to_global(sbp=dst)
        np.testing.assert_allclose(y.numpy(), full, rtol=1e-5, atol=1e-5, err_msg=f"{src} -> {dst}")
        assert all(c["group_size"] == 2 for c in comm.records), comm.records  # by hierarchy dimension
        ref = flow.tensor(full).to_global(mesh, (B, B)).to_global(sbp=dst)
        assert tuple(y.to_local().shape) == tuple(ref.to_local().shape)
        if src[0] == dst[0] and src[1] != dst[1] and not (src[0].is_split() and src[0] in (src[1], dst[1])):
            assert len(comm.records) <= 1, (src, dst, comm.records)  # one dimension moves: one collective
    # a local shard per rank of a 2 x 2 split (S(0), S(1))
    at = [(i, j) for i in range(2) for j in range(2)][r]
    piece = flow.tensor(np.full((2, 3), r, np.float32))
    g = piece.to_global(mesh, (S(0), S(1)))
    assert g.shape == (4, 6)
    np.testing.assert_array_equal(g.numpy()[2 * at[0]:2 * at[0] + 2, 3 * at[1]:3 * at[1] + 3], np.full((2, 3), r))

# ---- placement changes ----
if n >= 2:
    full = rng.standard_normal((4, 3)).astype(np.float32)
    x = flow.tensor(full).to_global(p, B).to_global(sbp=S(0))
    sub = flow.placement("cpu", ranks=[n - 1])
    y = x.to_global(placement=sub, sbp=B)
    assert y.placement == sub
    if r == n - 1:
        np.testing.assert_allclose(y.to_local().numpy(), full)
    z = y.to_global(placement=p, sbp=S(1))
    np.testing.assert_allclose(z.numpy(), full)
    # ranks outside a placement hold nothing and compute nothing
    u = (y * 2 + 1).sum(0)
    v = flow.tensor(full).to_global(sub, B)
    assert u.shape == (3,) and u.placement == sub and v.shape == (4, 3)
    if r == n - 1:
        np.testing.assert_allclose(u.to_local().numpy(), (full * 2 + 1).sum(0), rtol=1e-5)
        np.testing.assert_allclose(v.to_local().numpy(), full)
    else:
        assert u.to_local().numel() == 0 and v.to_local().numel() == 0
    np.testing.assert_allclose(u.to_global(placement=p, sbp=B).numpy(), (full * 2 + 1).sum(0), rtol=1e-5)

# ---- bad input ----
expect_raises(ValueError, "outside the world", lambda: flow.placement("cpu", ranks=[0, n]))
expect_raises(ValueError, "split dim 2 is out of range", lambda: flow.ones(2, 2).to_global(p, S(2)))
expect_raises(ValueError, "needs 2 entries", lambda: flow.ones(2, 2).to_global(
    flow.placement("cpu", ranks=[list(range(n))]), S(0)))
expect_raises(RuntimeError, "expected a global tensor", lambda: flow.ones(2).to_local())
expect_raises(RuntimeError, "local tensor has no placement", lambda: flow.ones(2).placement)
expect_raises(ValueError, "needs both placement and sbp", lambda: flow.ones(2).to_global(p))
expect_raises(TypeError, "must be a oneflow.sbp", lambda: flow.ones(2).to_global(p, "split"))
if n >= 2:
    bad = flow.ones(2 + r, 3)  # rank shapes 2, 3, ...: not a balanced split
    expect_raises(RuntimeError, "do not form a global tensor", lambda: bad.to_global(p, S(0)))
    mixed = flow.ones(3, 2 + r)
    expect_raises(RuntimeError, "do not form a global tensor", lambda: mixed.to_global(p, S(0)))
    a = flow.ones(4).to_global(p, B)
    c = flow.ones(4).to_global(flow.placement("cpu", ranks=[0]), B)
    expect_raises(RuntimeError, "same placement", lambda: a + c)
    # a user's local tensor does not mix with global ones (OneFlow's rule); scalars do
    expect_raises(RuntimeError, "add(): input 1 is a local tensor", lambda: a + flow.full((4,), 2.0))
    np.testing.assert_array_equal((a + flow.tensor(2.0)).numpy(), np.full(4, 3.0))
print("global boxing ok")
