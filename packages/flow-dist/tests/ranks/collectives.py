"""Every collective of oneflow.comm and oneflow.distributed on this job's ranks, against NumPy."""
import numpy as np

import oneflow as flow
import oneflow.distributed as dist

r, n = flow.env.get_rank(), flow.env.get_world_size()
assert dist.is_available() and not dist.is_initialized()


def data(rank, shape=(3, 4), dtype=np.float32):
    return (np.arange(np.prod(shape)).reshape(shape) * (rank + 1) + rank).astype(dtype)


def allclose(t, expected, **kw):
    got = t.float().numpy() if t.dtype == flow.bfloat16 else t.numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-6, **kw)


# ---- oneflow.comm (OneFlow's, no init) ----
x = flow.tensor(data(r))
flow.comm.all_reduce(x)
allclose(x, sum(data(i) for i in range(n)))

out = [flow.empty(3, 4) for _ in range(n)]
flow.comm.all_gather(out, flow.tensor(data(r)))
for i in range(n):
    allclose(out[i], data(i))

big = flow.empty(n * 3, 4)
flow.comm.all_gather_into_tensor(big, flow.tensor(data(r)))
allclose(big, np.concatenate([data(i) for i in range(n)]))

rs = flow.empty(3, 4)
flow.comm.reduce_scatter(rs, [flow.tensor(data(r)) * (j + 1) for j in range(n)])
allclose(rs, sum(data(i) for i in range(n)) * (r + 1))

rst = flow.empty(2, 4)
flow.comm.reduce_scatter_tensor(rst, flow.tensor(data(r, (2 * n, 4))))
allclose(rst, sum(data(i, (2 * n, 4)) for i in range(n))[2 * r:2 * r + 2])

a2a = [flow.empty(2) for _ in range(n)]
flow.comm.all_to_all(a2a, [flow.tensor([r * 10.0 + j, -1.0 * j]) for j in range(n)])
for j in range(n):
    allclose(a2a[j], np.array([j * 10.0 + r, -1.0 * r], np.float32))

b = flow.tensor(data(r))
flow.comm.broadcast(b, n - 1)
allclose(b, data(n - 1))

sc = flow.empty(3, 4)
flow.comm.scatter(sc, [flow.tensor(data(j)) for j in range(n)] if r == 0 else None, src=0)
allclose(sc, data(r))

gl = [flow.empty(3, 4) for _ in range(n)] if r == n - 1 else None
flow.comm.gather(flow.tensor(data(r)), gl, dst=n - 1)
if r == n - 1:
    for j in range(n):
        allclose(gl[j], data(j))

red = flow.tensor(data(r))
flow.comm.reduce(red, 0)
allclose(red, sum(data(i) for i in range(n)) if r == 0 else data(r))  # only dst changes

if r == 0:
    flow.comm.send(flow.arange(6, dtype=flow.int64).reshape(2, 3), 1)
    flow.comm.send(flow.ones(2, dtype=flow.float64), 1, send_meta=False)
elif r == 1:
    got = flow.comm.recv(0)
    assert got.dtype == flow.int64 and tuple(got.shape) == (2, 3)
    np.testing.assert_array_equal(got.numpy(), np.arange(6).reshape(2, 3))
    got = flow.comm.recv(0, shape=(2,), dtype=flow.float64)
    allclose(got, np.ones(2))
flow.comm.barrier()
flow.env.barrier()

# ---- oneflow.distributed (torch's) ----
try:
    dist.all_reduce(flow.ones(1))
    raise AssertionError("all_reduce before init_process_group must raise")
except ValueError as e:
    assert "init_process_group" in str(e)
dist.init_process_group("gloo")
assert dist.is_initialized() and dist.get_rank() == r and dist.get_world_size() == n and dist.get_backend() == "gloo"
try:
    dist.init_process_group()
    raise AssertionError("a second init must raise")
except RuntimeError as e:
    assert "twice" in str(e)

for op, fn in [(dist.ReduceOp.SUM, sum), (dist.ReduceOp.MAX, lambda xs: np.maximum.reduce(list(xs))),
               (dist.ReduceOp.MIN, lambda xs: np.minimum.reduce(list(xs))),
               (dist.ReduceOp.PRODUCT, lambda xs: np.multiply.reduce(list(xs))),
               (dist.ReduceOp.AVG, lambda xs: sum(xs) / n)]:
    for dtype in (np.float32, np.float64, np.int64):
        if op is dist.ReduceOp.AVG and dtype is np.int64:
            continue
        t = flow.tensor(data(r, dtype=dtype) - 3)
        dist.all_reduce(t, op=op)
        np.testing.assert_allclose(t.numpy(), fn(data(i, dtype=dtype) - 3 for i in range(n)), rtol=1e-6)

# bfloat16/float16 are reduced in float32
for dt in (flow.bfloat16, flow.float16):
    t = flow.tensor(data(r, (5,))).to(dt)
    dist.all_reduce(t)
    allclose(t.float(), sum(data(i, (5,)) for i in range(n)))

# non-contiguous (a transpose) in place, 0-dim, zero-size
t = flow.tensor(data(r, (4, 3))).t()
dist.all_reduce(t)
allclose(t, sum(data(i, (4, 3)) for i in range(n)).T)
s = flow.tensor(float(r + 1))
dist.all_reduce(s)
assert s.item() == n * (n + 1) / 2
z = flow.empty(0)
dist.all_reduce(z)
assert z.numel() == 0

# async: Work.wait()
t = flow.tensor(data(r))
w = dist.all_reduce(t, op=dist.ReduceOp.AVG, async_op=True)
w.wait()
assert w.is_completed()
allclose(t, sum(data(i) for i in range(n)) / n)

lst = [flow.empty(3, 4, dtype=flow.float64) for _ in range(n)]
dist.all_gather(lst, flow.tensor(data(r, dtype=np.float64)))
for i in range(n):
    allclose(lst[i], data(i, dtype=np.float64))

ag = flow.empty(n, 3, 4)
dist.all_gather_into_tensor(ag, flow.tensor(data(r)))
allclose(ag, np.stack([data(i) for i in range(n)]))

rst = flow.empty(3)
dist.reduce_scatter_tensor(rst, flow.tensor(data(r, (3 * n,))), op=dist.ReduceOp.MAX)
allclose(rst, np.maximum.reduce([data(i, (3 * n,)) for i in range(n)])[3 * r:3 * r + 3])

# all_to_all_single with uneven splits: rank r sends j+1 rows to rank j
rows_out = [r + 1] * n
inp = flow.tensor(np.concatenate([np.full((j + 1, 2), 100 * r + j, np.float32) for j in range(n)]))
outp = flow.empty(sum(rows_out), 2)
dist.all_to_all_single(outp, inp, output_split_sizes=rows_out, input_split_sizes=[j + 1 for j in range(n)])
allclose(outp, np.concatenate([np.full((r + 1, 2), 100 * i + r, np.float32) for i in range(n)]))

b = flow.tensor(data(r))
dist.broadcast(b, src=1)
allclose(b, data(1))

red = flow.tensor(data(r))
dist.reduce(red, dst=1, op=dist.ReduceOp.MAX)
allclose(red, np.maximum.reduce([data(i) for i in range(n)]) if r == 1 else data(r))

if r == 0:
    dist.send(flow.tensor(data(7)), dst=n - 1)
    w = dist.isend(flow.tensor(data(8)), dst=n - 1)
    w.wait()
if r == n - 1:
    got = flow.empty(3, 4)
    assert dist.recv(got) == 0  # from any rank: the sender's rank comes back
    allclose(got, data(7))
    got2 = flow.empty(3, 4)
    dist.irecv(got2, src=0).wait()
    allclose(got2, data(8))

objs = [None] * n
dist.all_gather_object(objs, {"rank": r})
assert objs == [{"rank": i} for i in range(n)]
ol = [r, "x"] if r == 0 else [None, None]
dist.broadcast_object_list(ol, src=0)
assert ol == [0, "x"]

# groups: src/dst are global ranks; non-members cannot use the group
members = list(range(1, n))
g = dist.new_group(members)
assert dist.get_process_group_ranks(g) == members
if r in members:
    assert dist.get_rank(g) == members.index(r) and dist.get_world_size(g) == len(members)
    t = flow.tensor(data(r))
    dist.all_reduce(t, group=g)
    allclose(t, sum(data(i) for i in members))
    t = flow.tensor(data(r))
    dist.broadcast(t, src=n - 1, group=g)
    allclose(t, data(n - 1))
    assert dist.get_global_rank(g, 0) == 1
else:
    assert dist.get_rank(g) == -1
    try:
        dist.all_reduce(flow.ones(1), group=g)
        raise AssertionError("a non-member must not use the group")
    except RuntimeError as e:
        assert "not a member" in str(e)
assert dist.new_group(members)._comm is g._comm  # cached
even = dist.new_group(range(0, n, 2))
if r % 2 == 0:
    t = flow.tensor([float(r)])
    dist.all_reduce(t, group=even)
    assert t.item() == sum(range(0, n, 2))

# bad input: clear errors, no hang
for call, exc, words in [
    (lambda: dist.broadcast(flow.ones(2), src=n), ValueError, "not a rank"),
    (lambda: dist.all_gather([flow.ones(2)] * (n + 1), flow.ones(2)), ValueError, "one tensor per rank"),
    (lambda: dist.all_reduce([1, 2]), TypeError, "oneflow.Tensor"),
    (lambda: dist.all_reduce(flow.ones(2), op="sum"), TypeError, "ReduceOp"),
    (lambda: dist.all_reduce(flow.ones(2, dtype=flow.int64), op=dist.ReduceOp.AVG), ValueError, "floating"),
    (lambda: dist.all_gather_into_tensor(flow.empty(3), flow.ones(2)), ValueError, "elements"),
    (lambda: dist.send(flow.ones(1), dst=r), ValueError, "same as the rank"),
    (lambda: dist.new_group([0, n]), ValueError, "outside the world"),
    (lambda: dist.init_process_group(), RuntimeError, "twice"),
]:
    try:
        call()
    except exc as e:
        assert words in str(e), (words, str(e))
    else:
        raise AssertionError(f"expected {exc.__name__} with {words!r}")
dist.barrier()

# placement of the whole job, n-D placements
p = flow.env.all_device_placement("cpu")
assert p == flow.placement("cpu", ranks=list(range(n))) and p.hierarchy == flow.Size([n])
if n == 4:
    q = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    assert q.hierarchy == flow.Size([2, 2]) and q != p and hash(q) == hash(flow.placement("cpu", [[0, 1], [2, 3]]))
    from oneflow_dist._groups import communicator

    # the communicators of a 2-D placement: this rank's column (dim 0) and row (dim 1), cached
    row, col = divmod(r, 2)
    for dim, members in ((0, [col, 2 + col]), (1, [2 * row, 2 * row + 1]), (None, [0, 1, 2, 3])):
        c = communicator(q, dim)
        assert c.global_ranks == tuple(members) and c.rank == members.index(r) and communicator(q, dim) is c
        t = flow.tensor([float(r)])
        c.all_reduce(t)
        assert t.item() == sum(members)
    c31 = communicator(flow.placement("cpu", ranks=[3, 1]), 0)  # placement order, not sorted
    if r in (1, 3):
        assert c31.global_ranks == (3, 1) and c31.rank == [3, 1].index(r)
        t = flow.tensor([float(r)])
        c31.broadcast(t, 0)
        assert t.item() == 3.0
    else:
        assert c31 is None
    try:
        communicator(q, 2)
        raise AssertionError("a hierarchy dimension out of range must raise")
    except IndexError as e:
        assert "out of range" in str(e)
try:
    flow.placement("cpu", ranks=[0, n])
    raise AssertionError("a rank outside the world must raise")
except ValueError as e:
    assert "outside the world" in str(e)

dist.destroy_process_group()
assert not dist.is_initialized()
print(f"rank {r}: collectives ok", flush=True)
