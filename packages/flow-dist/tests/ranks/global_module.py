"""Modules with global parameters: nn.Parameter of a global tensor, Module.to_global, a model trained 20 steps
with S(0) data and B parameters, and a tensor-parallel MLP (column-split then row-split weights), each equal to
single-process training to 1e-5 with SGD and Adam
(and LAMB, Adafactor, Muon on the split parameters)."""
import copy

import numpy as np

import oneflow as flow

r, n = flow.env.get_rank(), flow.env.get_world_size()
S, B = flow.sbp.split, flow.sbp.broadcast
p = flow.placement("cpu", ranks=list(range(n)))
rng = np.random.default_rng(3)

# ---- nn.Parameter of a global tensor shares its shard and registers in modules ----
g = flow.tensor(rng.standard_normal((4, 3)).astype(np.float32)).to_global(p, B).to_global(sbp=S(0))
w = flow.nn.Parameter(g)
assert isinstance(w, flow.nn.Parameter) and w.is_global and w.requires_grad
assert w.sbp == (S(0),) and w.placement == p and tuple(w.shape) == (4, 3)
np.testing.assert_array_equal(w.detach().numpy(), g.numpy())
with flow.no_grad():
    g.to_local().fill_(7.0)  # the same shard
np.testing.assert_array_equal(w.detach().numpy(), np.full((4, 3), 7.0, np.float32))
assert not flow.nn.Parameter(g, requires_grad=False).requires_grad
assert repr(w).startswith("Parameter containing:")
c = copy.deepcopy(w)
assert isinstance(c, flow.nn.Parameter) and c.is_global and c.sbp == w.sbp
with flow.no_grad():
    c.to_local().fill_(1.0)
assert float(w.detach().numpy()[0, 0]) == 7.0  # a deep copy owns its shard
lin = flow.nn.Linear(3, 2)
lin.weight = flow.nn.Parameter(flow.zeros(2, 3).to_global(p, B))
assert [k for k, _ in lin.named_parameters()] == ["weight", "bias"] and lin.weight.is_global

# ---- data parallelism: S(0) data, Module.to_global(p, B) ----
d_in, d_h, d_out, batch = 5, 8, 3, 4 * n + 2
data = [(rng.standard_normal((batch, d_in)).astype(np.float32), rng.standard_normal((batch, d_out)).astype(np.float32))
        for _ in range(20)]


def model():
    flow.manual_seed(0)
    return flow.nn.Sequential(flow.nn.Linear(d_in, d_h), flow.nn.Tanh(), flow.nn.Linear(d_h, d_out))


def train(m, make_opt, wrap, steps=20):
    opt = make_opt(m.parameters())
    losses = []
    for xb, yb in data[:steps]:
        opt.zero_grad()
        loss = ((m(wrap(xb)) - wrap(yb)) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [q.detach().numpy() for q in m.parameters()]


OPTS = {"sgd": lambda ps: flow.optim.SGD(ps, lr=0.05, momentum=0.9),
        "adam": lambda ps: flow.optim.Adam(ps, lr=0.01)}
for name, make_opt in OPTS.items():
    want_l, want = train(model(), make_opt, flow.tensor)
    m = model().to_global(p, B)
    assert all(q.is_global and q.sbp == (B,) and isinstance(q, flow.nn.Parameter) for q in m.parameters())
    got_l, got = train(m, make_opt, lambda v: flow.tensor(v).to_global(p, B).to_global(sbp=S(0)))
    assert all(q.sbp == (B,) for q in m.parameters())
    np.testing.assert_allclose(got_l, want_l, rtol=1e-5, atol=1e-6, err_msg=name)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)

# ---- tensor parallelism: the first Linear split by output features (weight S(0), bias S(0)), the second by
# input features (weight S(1), bias B); B data ----
TP = [(S(0),), (S(0),), (S(1),), (B,)]


def to_tp(m):
    for (mod, key), sbp in zip([(m[0], "weight"), (m[0], "bias"), (m[2], "weight"), (m[2], "bias")], TP):
        q = getattr(mod, key)
        setattr(mod, key, flow.nn.Parameter(q.detach().to_global(p, B).to_global(sbp=sbp)))
    return m


# updates that read whole parameters (trust ratios, factored statistics, orthogonalisation) on split ones
OPTS.update({"lamb": lambda ps: flow.optim.LAMB(ps, lr=0.01),
             "adafactor": lambda ps: flow.optim.Adafactor(ps, lr=0.01),
             "muon": lambda ps: flow.optim.Muon([q for q in ps if q.dim() == 2], lr=0.01)})  # matrices only
for name, make_opt in OPTS.items():
    want_l, want = train(model(), make_opt, flow.tensor)
    m = to_tp(model())
    got_l, got = train(m, make_opt, lambda v: flow.tensor(v).to_global(p, B))
    assert [q.sbp for q in m.parameters()] == TP
    np.testing.assert_allclose(got_l, want_l, rtol=1e-5, atol=1e-6, err_msg=name)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)
print("global module ok")
