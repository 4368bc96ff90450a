"""DDP on this job's ranks equals single-process training on the full batch (20 steps, 1e-5), no_sync
accumulates locally, buffers follow rank 0, and DistributedSampler partitions the data."""
import copy
import sys

import numpy as np

import oneflow as flow
import oneflow.distributed as dist
from oneflow.utils.data import DataLoader, TensorDataset
from oneflow.utils.data.distributed import DistributedSampler

r, n = flow.env.get_rank(), flow.env.get_world_size()
bucket_size = int(sys.argv[1]) if len(sys.argv) > 1 else 2


class Net(flow.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = flow.nn.Conv2d(1, 4, 3, padding=1)
        self.fc1 = flow.nn.Linear(4 * 6 * 6, 16)
        self.fc2 = flow.nn.Linear(16, 3)
        self.register_buffer("seen", flow.zeros(2))

    def forward(self, x):
        x = flow.nn.functional.max_pool2d(flow.relu(self.conv(x)), 2)
        return self.fc2(flow.tanh(self.fc1(x.flatten(1))))


flow.manual_seed(100 + r)  # each rank starts from other weights: DDP must broadcast rank 0's
net = Net()
net.seen.fill_(float(r + 1))
model = flow.nn.parallel.DistributedDataParallel(net, bucket_size=bucket_size)
ref = copy.deepcopy(net)  # after the broadcast: rank 0's initial weights on every rank
assert net.seen.tolist() == [1.0, 1.0]

rng = np.random.default_rng(0)  # the same data on every rank
per_rank = 4
X = flow.tensor(rng.standard_normal((20, n * per_rank, 1, 12, 12)).astype(np.float32))
Y = flow.tensor(rng.integers(0, 3, (20, n * per_rank)).astype(np.int64))
opt = flow.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
ref_opt = flow.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
loss_fn = flow.nn.CrossEntropyLoss()
shard = slice(r * per_rank, (r + 1) * per_rank)
for step in range(20):
    opt.zero_grad()
    loss_fn(model(X[step, shard]), Y[step, shard]).backward()
    opt.step()
    ref_opt.zero_grad()
    loss_fn(ref(X[step]), Y[step]).backward()
    ref_opt.step()
for (name, p), q in zip(net.named_parameters(), ref.parameters()):
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-5, err_msg=name)

# gradients live in the buckets; zeroing them in place (set_to_none=False) makes the engine accumulate straight
# into the bucket, and training stays equal
for step in range(5):
    opt.zero_grad(set_to_none=False)
    loss_fn(model(X[step, shard]), Y[step, shard]).backward()
    opt.step()
    ref_opt.zero_grad(set_to_none=False)
    loss_fn(ref(X[step]), Y[step]).backward()
    ref_opt.step()
for (name, p), q in zip(net.named_parameters(), ref.parameters()):
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-5, err_msg=name)
    b = next(b for b in model._buckets if any(x is p for x in b.params))
    assert b.flat.data_ptr() <= p.grad.data_ptr() < b.flat.data_ptr() + b.flat.numel() * 4, name

# no_sync: the first micro-batch only accumulates; the second backward averages both
opt.zero_grad()
ref_opt.zero_grad()
half = per_rank // 2
xa, xb = X[0, r * per_rank:r * per_rank + half], X[0, r * per_rank + half:(r + 1) * per_rank]
ya, yb = Y[0, r * per_rank:r * per_rank + half], Y[0, r * per_rank + half:(r + 1) * per_rank]
with model.no_sync():
    loss_fn(model(xa), ya).backward()
local = [p.grad.numpy().copy() for p in net.parameters()]
gathered = [None] * n
dist.init_process_group()
dist.all_gather_object(gathered, local[0])
if n > 1:
    assert not np.allclose(gathered[0], gathered[1]), "no_sync must not average"
loss_fn(model(xb), yb).backward()
idx_a = np.concatenate([np.arange(i * per_rank, i * per_rank + half) for i in range(n)])
idx_b = idx_a + half
(loss_fn(ref(X[0][idx_a]), Y[0][idx_a]) + loss_fn(ref(X[0][idx_b]), Y[0][idx_b])).backward()
for p, q in zip(net.parameters(), ref.parameters()):
    np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)

# a parameter left out of the loss: the next forward says so instead of hanging
opt.zero_grad()
model(X[0, shard])  # forward is fine
(net.fc2.bias * 1.0).sum().backward()  # only one parameter gets a gradient
try:
    model(X[0, shard])
    raise AssertionError("a forward after an incomplete reduction must raise")
except RuntimeError as e:
    assert "did not produce gradients" in str(e)

# DistributedSampler: the ranks' shares partition the data; set_epoch reshuffles the same way on every rank
ds = TensorDataset(flow.arange(10))
sampler = DistributedSampler(ds, shuffle=True, seed=3)
assert sampler.num_replicas == n and sampler.rank == r
shares = [None] * n
dist.all_gather_object(shares, list(sampler))
flat = sum(shares, [])
assert len(flat) == n * -(-10 // n) and set(flat) == set(range(10)), shares
sampler.set_epoch(1)
shares1 = [None] * n
dist.all_gather_object(shares1, list(sampler))
assert shares1 != shares and set(sum(shares1, [])) == set(range(10))
loader = DataLoader(ds, batch_size=2, sampler=sampler)
assert sum(len(b[0]) for b in loader) == len(sampler)
print(f"rank {r}: ddp ok", flush=True)
