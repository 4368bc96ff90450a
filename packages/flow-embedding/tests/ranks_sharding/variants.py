"""More sharded-versus-single-rank cases on this job's ranks: Adagrad and Ftrl, a multi-column embedding,
padding_idx, int32 keys, gradient accumulation over two backward passes, summed gradients
(set_gradient_division(False)), a full store's capacity exhausted on one owner, and the embedding inside a
DistributedDataParallel module. Argument: a scratch folder."""
import os
import sys

import numpy as np

import oneflow as flow
from oneflow_embedding import sharding

oe = flow.one_embedding
r, n = flow.env.get_rank(), flow.env.get_world_size()
root = sys.argv[1]
NT, IDS = 2, 30
rng = np.random.default_rng(1)  # the same draws on every rank


def build(cls, name, dim, tables, key_type, path, single, **kw):
    store = oe.make_device_mem_store_options(path, capacity=kw.pop("capacity", 4 * NT * IDS), size_factor=4)
    real = sharding.rank_and_world
    if single:
        sharding.rank_and_world = lambda: (0, 1)
    try:
        return cls(name, dim, flow.float32, key_type, tables, store, seed=11, **kw)
    finally:
        sharding.rank_and_world = real


def pair(name, cls=oe.MultiTableEmbedding, dim=3, tables=None, key_type=flow.int64, **kw):
    tables = tables or [oe.make_table_options(oe.make_uniform_initializer(-0.5, 0.5)) for _ in range(NT)]
    emb = build(cls, name, dim, tables, key_type, os.path.join(root, "sharded"), False, **dict(kw))
    ref = build(cls, name, dim, tables, key_type, os.path.join(root, f"ref{r}"), True, **dict(kw))
    return emb, ref


def every_row(emb, key_np=np.int64):
    ids = np.tile(np.arange(IDS, dtype=key_np), NT)
    tab = np.repeat(np.arange(NT, dtype=key_np), IDS)
    with flow.no_grad():
        return emb(flow.tensor(ids), flow.tensor(tab)).numpy()


def train_alike(emb, ref, make_opt, steps=4, passes=1, key_np=np.int64, pad=None, divide=True):
    """Trains ``emb`` on each rank's batches and ``ref`` on all of them; compares forwards and final tables."""
    opt, ref_opt = make_opt(emb), make_opt(ref)
    for step in range(steps):
        opt.zero_grad()
        ref_opt.zero_grad()
        for _ in range(passes):
            sizes = [int(rng.integers(0, 5)) for _ in range(n)]
            ids = [rng.integers(0, IDS, (b, NT)).astype(key_np) for b in sizes]
            if pad is not None:
                for a in ids:
                    a[::2, 0] = pad
            w = [rng.standard_normal((b, NT, emb.embedding_dim)).astype(np.float32) for b in sizes]
            out = emb(flow.tensor(ids[r]))
            (out * out * flow.tensor(w[r])).sum().backward()
            ref_out = ref(flow.tensor(np.concatenate(ids)))
            loss = (ref_out * ref_out * flow.tensor(np.concatenate(w))).sum()
            (loss / n if divide else loss).backward()
            start = sum(sizes[:r])
            np.testing.assert_allclose(out.detach().numpy(), ref_out.detach().numpy()[start:start + sizes[r]],
                                       rtol=1e-6, atol=1e-6, err_msg=f"{emb.name}: forward of step {step}")
            if pad is not None:
                assert (ids[r] == pad).sum() >= ids[r].shape[0] // 2 and not out.detach().numpy()[ids[r] == pad].any()
        opt.step()
        ref_opt.step()
    np.testing.assert_allclose(every_row(emb, key_np), every_row(ref, key_np), rtol=1e-5, atol=1e-6,
                               err_msg=f"{emb.name}: the tables after training")


train_alike(*pair("adagrad"), lambda m: flow.optim.Adagrad(m.parameters(), lr=0.2, lr_decay=0.01))
train_alike(*pair("ftrl"), lambda m: oe.Ftrl(m.parameters(), lr=0.2, lambda1=0.01, lambda2=0.1))
train_alike(*pair("accumulate"), lambda m: flow.optim.Adam(m.parameters(), lr=0.1), passes=2)
train_alike(*pair("int32", key_type=flow.int32), lambda m: flow.optim.SGD(m.parameters(), lr=0.5),
            key_np=np.int32)
emb, ref = pair("padded", padding_idx=3)
train_alike(emb, ref, lambda m: flow.optim.SGD(m.parameters(), lr=0.5, momentum=0.5), pad=3)
cols = [oe.make_table_options([oe.make_column_options(oe.make_normal_initializer(0, 0.2)),
                               oe.make_column_options(oe.make_constant_initializer(0.5))]) for _ in range(NT)]
emb, ref = pair("columns", cls=oe.MultiTableMultiColumnEmbedding, dim=[2, 3], tables=cols)
assert emb.embedding_dim == 5
train_alike(emb, ref, lambda m: flow.optim.Adam(m.parameters(), lr=0.1))
sharding.set_gradient_division(False)  # summed gradients: the reference loss is the sum of the ranks' losses
try:
    train_alike(*pair("summed"), lambda m: flow.optim.SGD(m.parameters(), lr=0.1), divide=False)
finally:
    sharding.set_gradient_division(True)

# ids whose 32-bit halves are float32 NaN and infinity patterns travel bit-exact beside the float gradients
emb, ref = pair("huge")
huge = np.array([[0x7F800001, (0x7FA00000 << 32) | 0xFF800001], [2**62 + 5, 0x7F800000 << 32]], np.int64)
opt, ref_opt = flow.optim.SGD(emb.parameters(), lr=0.5), flow.optim.SGD(ref.parameters(), lr=0.5)
for _ in range(2):
    opt.zero_grad()
    ref_opt.zero_grad()
    emb(flow.tensor(huge)).sum().backward()
    (ref(flow.tensor(np.concatenate([huge] * n))).sum() / n).backward()
    opt.step()
    ref_opt.step()
with flow.no_grad():
    np.testing.assert_allclose(emb(flow.tensor(huge)).numpy(), ref(flow.tensor(huge)).numpy(), rtol=1e-6)
    assert not np.allclose(emb(flow.tensor(huge)).numpy(), pair("huge_fresh")[1](flow.tensor(huge)).numpy())

# a full store whose owner runs out of capacity: that owner raises, every other rank names it, the table is intact
small, _ = pair("small", capacity=2 * n)  # 2 rows per rank
pool = np.arange(200, dtype=np.int64)
owner = sharding.owners(pool, n)
keys = np.concatenate([pool[owner == 0][:3], *[pool[owner == q][:1] for q in range(1, n)]])  # 3 rows for rank 0
try:
    small(flow.tensor(keys), flow.tensor(np.zeros(keys.size, np.int64)))
    raise AssertionError("exhausting the capacity must raise")
except RuntimeError as e:
    if r == 0:
        assert "capacity" in str(e), e
    else:
        assert "lookup failed on owner rank(s) [0]" in str(e), e
# rank 0 inserted nothing; the other owners keep the row each initialised (the values any later lookup gives)
assert small.num_rows() == (0 if r == 0 else 1), small.num_rows()
with flow.no_grad():
    small(flow.tensor(keys[:1]), flow.tensor([0]))  # still usable: one of rank 0's ids
held = flow.tensor([small.num_rows()], dtype=flow.int64)
flow.comm.all_reduce(held)
assert held.item() == n, held


# the embedding inside a DDP module: the dense part is averaged, the embedding routed; equal to one rank
class Net(flow.nn.Module):
    def __init__(self, emb):
        super().__init__()
        self.emb, self.fc = emb, flow.nn.Linear(3 * NT, 1)

    def forward(self, ids):
        return self.fc(self.emb(ids).flatten(1)).squeeze(1)


emb, ref_emb = pair("ddp")
flow.manual_seed(5)
net = Net(emb)
flow.manual_seed(5)
ref = Net(ref_emb)
model = flow.nn.parallel.DistributedDataParallel(net)
opt = flow.optim.SGD(model.parameters(), lr=0.3)
ref_opt = flow.optim.SGD(ref.parameters(), lr=0.3)
per = 4
for step in range(4):
    ids = rng.integers(0, IDS, (n * per, NT)).astype(np.int64)
    y = rng.standard_normal(n * per).astype(np.float32)
    opt.zero_grad()
    ((model(flow.tensor(ids[r * per:(r + 1) * per])) - flow.tensor(y[r * per:(r + 1) * per])) ** 2).mean().backward()
    opt.step()
    ref_opt.zero_grad()
    ((ref(flow.tensor(ids)) - flow.tensor(y)) ** 2).mean().backward()
    ref_opt.step()
np.testing.assert_allclose(every_row(emb), every_row(ref_emb), rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(net.fc.weight.detach().numpy(), ref.fc.weight.detach().numpy(), rtol=1e-5, atol=1e-6)
print(f"rank {r}: variants ok", flush=True)
