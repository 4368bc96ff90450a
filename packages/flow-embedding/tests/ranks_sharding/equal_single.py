"""On this job's ranks, a sharded MultiTableEmbedding equals one single-rank table holding the whole batch:
forward values, the gradients' effect through several SGD (momentum) and Adam steps, duplicate ids within and
across ranks, a rank with an empty batch, explicit table_ids, per-rank snapshots, and errors that every rank
sees. Argument: a scratch folder."""
import os
import sys

import numpy as np

import oneflow as flow
from oneflow_embedding import sharding

oe = flow.one_embedding
r, n = flow.env.get_rank(), flow.env.get_world_size()
root = sys.argv[1]
NT, DIM, IDS = 3, 4, 25


def make(name, path, single=False):
    tables = [oe.make_table_options(oe.make_uniform_initializer(-0.5, 0.5)),
              oe.make_table_options(oe.make_normal_initializer(0.0, 0.3)),
              oe.make_table_options(oe.make_constant_initializer(0.25))]
    store = oe.make_device_mem_store_options(path, capacity=4 * NT * IDS, size_factor=3)
    if not single:
        return oe.MultiTableEmbedding(name, DIM, flow.float32, flow.int64, tables, store, seed=7)
    real = sharding.rank_and_world
    sharding.rank_and_world = lambda: (0, 1)  # the reference: one rank's whole table, in this process
    try:
        return oe.MultiTableEmbedding(name, DIM, flow.float32, flow.int64, tables, store, seed=7)
    finally:
        sharding.rank_and_world = real


rng = np.random.default_rng(0)  # the same batches on every rank
STEPS = 6


def batches(step):
    """Each rank's (ids, table_ids or None) of this step; rank n-1 has an empty batch at step 2."""
    out = []
    for q in range(n):
        b = 0 if (step == 2 and q == n - 1) else int(rng.integers(1, 6))
        ids = rng.integers(0, IDS, (b, NT)).astype(np.int64)
        ids[:, 0] = ids[:, 1]  # the same id in two tables: different rows
        if step % 2:
            out.append((ids.reshape(-1), rng.integers(0, NT, b * NT).astype(np.int64)))
        else:
            out.append((ids, None))
    return out


def tensor(a):
    return None if a is None else flow.tensor(a)


def every_row(emb):
    ids = np.tile(np.arange(IDS, dtype=np.int64), NT)
    tab = np.repeat(np.arange(NT, dtype=np.int64), IDS)
    with flow.no_grad():
        return emb(flow.tensor(ids), flow.tensor(tab)).numpy()


for opt_name in ("sgd", "adam"):
    emb = make(f"emb_{opt_name}", os.path.join(root, "sharded"))
    ref = make(f"emb_{opt_name}", os.path.join(root, f"ref{r}"), single=True)
    assert emb.world_size == n and ref.world_size == 1

    def optimizer(m):
        if opt_name == "sgd":
            return flow.optim.SGD(m.parameters(), lr=0.3, momentum=0.9)
        return flow.optim.Adam(m.parameters(), lr=0.05)

    opt, ref_opt = optimizer(emb), optimizer(ref)
    for step in range(STEPS):
        data = batches(step)
        w = [rng.standard_normal((*ids.shape, DIM)).astype(np.float32) for ids, _ in data]
        ids, tab = data[r]
        opt.zero_grad()
        out = emb(tensor(ids), tensor(tab))
        assert tuple(out.shape) == (*ids.shape, DIM)
        (out * out * flow.tensor(w[r])).sum().backward()
        opt.step()
        # the reference: all ranks' ids in one batch, the mean of the ranks' losses
        all_ids = np.concatenate([d[0].reshape(-1) for d in data])
        all_tab = np.concatenate([np.tile(np.arange(NT), d[0].shape[0]) if d[1] is None else d[1] for d in data])
        ref_opt.zero_grad()
        ref_out = ref(flow.tensor(all_ids), flow.tensor(all_tab.astype(np.int64)))
        all_w = np.concatenate([x.reshape(-1, DIM) for x in w])
        ((ref_out * ref_out * flow.tensor(all_w)).sum() / n).backward()
        ref_opt.step()
        start = sum(d[0].size for d in data[:r])
        np.testing.assert_allclose(out.detach().numpy().reshape(-1, DIM),
                                   ref_out.detach().numpy()[start:start + ids.size], rtol=1e-6, atol=1e-6,
                                   err_msg=f"{opt_name} forward, step {step}")
    np.testing.assert_allclose(every_row(emb), every_row(ref), rtol=1e-5, atol=1e-6,
                               err_msg=f"{opt_name}: the tables after {STEPS} steps")
    # each rank holds its shard only: the shards partition the rows
    held = np.zeros(n, np.int64)
    held[r] = emb.num_rows()
    flow.comm.all_reduce(flow.from_numpy(held))
    assert held.sum() == ref.num_rows(), (held, ref.num_rows())
    assert os.path.isdir(os.path.join(root, "sharded", f"{r}-{n}", f"emb_{opt_name}"))

# per-rank snapshots: save, train on, load back
saved = every_row(emb)
emb.save_snapshot("s1")
# the shards' snapshots together are the whole table: read every rank's folder with the persistent table reader
folders = [os.path.join(root, "sharded", f"{q}-{n}", "emb_adam") for q in range(n)]
reader = oe.make_persistent_table_reader(folders, "s1", flow.int64, flow.float32, 3 * DIM)
got = {(int(t), int(k)): v[:DIM] for ts, ks, vs in reader.read_with_table_ids() for t, k, v in zip(ts, ks, vs)}
assert len(got) == NT * IDS, len(got)
for i, (t, k) in enumerate(zip(np.repeat(np.arange(NT), IDS), np.tile(np.arange(IDS), NT))):
    np.testing.assert_array_equal(got[(int(t), int(k))], saved[i])
opt.zero_grad()
(emb(flow.tensor(np.arange(IDS * NT, dtype=np.int64).reshape(IDS, NT) % IDS)) ** 2).sum().backward()
opt.step()
assert not np.allclose(every_row(emb), saved)
emb.load_snapshot("s1")
np.testing.assert_array_equal(every_row(emb), saved)
assert os.path.isdir(os.path.join(root, "sharded", f"{r}-{n}", "emb_adam", "snapshots", "s1"))
# a snapshot missing on one rank: that rank raises FileNotFoundError, the others a RuntimeError naming it
if r == n - 1:
    os.unlink(os.path.join(root, "sharded", f"{r}-{n}", "emb_adam", "snapshots", "s1"))
try:
    emb.load_snapshot("s1")
    raise AssertionError("a missing snapshot must raise")
except FileNotFoundError as e:
    assert r == n - 1 and "s1" in str(e), e
except RuntimeError as e:
    assert r != n - 1 and f"load_snapshot failed on rank(s) [{n - 1}]" in str(e), e

# bad input on one rank: that rank gets its error, the others a RuntimeError naming it; nobody hangs
bad = np.array([[1, 2, -3 if r == n - 1 else 4]], np.int64)
try:
    emb(flow.tensor(bad))
    raise AssertionError("a negative id must raise")
except ValueError as e:
    assert r == n - 1 and "negative id -3" in str(e), e
except RuntimeError as e:
    assert r != n - 1 and f"rank(s) [{n - 1}]" in str(e), e
try:
    emb(flow.tensor([[1, 2]]), flow.tensor([[0, 5 if r == 0 else 1]]))
    raise AssertionError("an out-of-range table id must raise")
except IndexError as e:
    assert r == 0 and "out of range" in str(e), e
except RuntimeError as e:
    assert r != 0 and "rank(s) [0]" in str(e), e
np.testing.assert_array_equal(every_row(emb), saved)  # still usable, unchanged
print(f"rank {r}: sharding ok", flush=True)
