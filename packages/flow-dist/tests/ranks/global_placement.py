"""Placement changes (to_global onto other ranks) by point-to-point sends to the ranks outside the source: values,
layouts, the bytes moved, and gradients flowing back to the source placement; random ops on placements without
this rank."""
import numpy as np

import oneflow as flow
import oneflow.distributed as dist

r, n = flow.env.get_rank(), flow.env.get_world_size()
S, B = flow.sbp.split, flow.sbp.broadcast
full = np.arange(4 * 3, dtype=np.float32).reshape(4, 3) - 5
everyone = list(range(n))
cases = [([0], [n - 1], B, B), (everyone, [n - 1], S(0), B), ([0], everyone, B, S(1)),
         (everyone, everyone[::-1], S(0), S(0)), (everyone[:1], everyone[-2:], B, S(0))]
for src, dst, s_sbp, d_sbp in cases:
    ps, pd = flow.placement("cpu", ranks=src), flow.placement("cpu", ranks=dst)
    x = flow.tensor(full).to_global(flow.placement("cpu", ranks=everyone), B).to_global(ps, s_sbp)
    x.requires_grad_()
    with dist.comm_debug() as comm:
        y = x.to_global(pd, d_sbp)
    assert y.placement == pd and y.sbp == (d_sbp,), (y.placement, y.sbp)
    # a rank outside a placement holds nothing of it
    np.testing.assert_array_equal(y.detach().numpy(), full if r in dst else np.zeros(0), err_msg=f"{src}->{dst}")
    sends = [c for c in comm.records if c["collective"] == "send"]
    assert all(c["bytes"] == full.nbytes for c in sends), sends  # only the source's first rank sends, once a peer
    want = len([q for q in dst if q not in src]) if r == src[0] else 0  # ranks of both already hold it
    assert len(sends) == want, (r, src, dst, sends)
    (y * flow.tensor(full).to_global(pd, B)).sum().backward()  # the gradient comes back to ps
    assert x.grad.placement == ps and x.grad.sbp == (s_sbp,)
    np.testing.assert_array_equal(x.grad.numpy(), full if r in src else np.zeros(0), err_msg=f"{src}->{dst}")

# a random op on a placement without this rank: nothing kept here, but the generator advances as on the
# placement's ranks (and in a single process), so later draws agree
last = flow.placement("cpu", ranks=[n - 1])
flow.manual_seed(3)
x = flow.ones(4, 4).to_global(flow.placement("cpu", ranks=everyone), B).to_global(last, B)
y, z = flow.nn.functional.dropout(x, 0.5), flow.bernoulli(x * 0.5)
after = flow.rand(3)
flow.manual_seed(3)
ry, rz, rafter = flow.nn.functional.dropout(flow.ones(4, 4), 0.5), flow.bernoulli(flow.ones(4, 4) * 0.5), flow.rand(3)
np.testing.assert_array_equal(after.numpy(), rafter.numpy())
assert tuple(y.shape) == (4, 4) and y.placement == last
np.testing.assert_array_equal(y.to_local().numpy(), ry.numpy() if r == n - 1 else np.zeros(0))
np.testing.assert_array_equal(z.to_local().numpy(), rz.numpy() if r == n - 1 else np.zeros(0))
print("global placement ok")
