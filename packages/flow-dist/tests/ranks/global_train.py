"""Global autograd: gradients through global ops and boxing equal the single-process ones, and a small MLP
trained 20 steps with S(0) data and B parameters (data parallelism, no extra code) equals single-process
training to 1e-5."""
import numpy as np

import oneflow as flow
import oneflow.distributed as dist

r, n = flow.env.get_rank(), flow.env.get_world_size()
S, B, P = flow.sbp.split, flow.sbp.broadcast, flow.sbp.partial_sum
p = flow.placement("cpu", ranks=list(range(n)))
rng = np.random.default_rng(2)


def glob(full, sbp, requires_grad=False):
    x = flow.tensor(full).to_global(p, B).to_global(sbp=sbp)
    return x.requires_grad_() if requires_grad else x


# ---- gradients of single ops and of boxing ----
a = rng.standard_normal((2 * n + 1, 3)).astype(np.float32)
w = rng.standard_normal((3, 4)).astype(np.float32)
ta, tw = flow.tensor(a, requires_grad=True), flow.tensor(w, requires_grad=True)
(flow.matmul(ta, tw).relu() * 3).mean().backward()
for sa, sw in [(S(0), B), (B, S(1)), (S(1), S(0)), (B, B), (S(0), S(0))]:
    ga, gw = glob(a, sa, True), glob(w, sw, True)
    (flow.matmul(ga, gw).relu() * 3).mean().backward()
    assert ga.grad.sbp == ga.sbp and gw.grad.sbp == gw.sbp, (ga.grad.sbp, gw.grad.sbp)  # in the leaf's sbp
    np.testing.assert_allclose(ga.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"{sa} {sw}")
    np.testing.assert_allclose(gw.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=f"{sa} {sw}")
w2 = glob(w, B)
w2.requires_grad = True  # the attribute, like requires_grad_(), makes a leaf whose gradient keeps its sbp
(flow.matmul(glob(a, S(0)), w2)).sum().backward()
assert w2.grad.sbp == (B,)
np.testing.assert_allclose(w2.grad.numpy(), np.repeat(a.sum(0)[:, None], 4, 1), rtol=1e-5)
# boxing is differentiable: to_global between layouts, and from/to local tensors
x = glob(a, S(0), True)
y = x.to_global(sbp=B) * flow.tensor(a).to_global(p, B)
y.sum().backward()
np.testing.assert_allclose(x.grad.numpy(), a, rtol=1e-6)
loc = flow.tensor(np.full((2, 3), float(r + 1)), requires_grad=True)
g = loc.to_global(p, S(0))
(g * g).sum().backward()
np.testing.assert_allclose(loc.grad.numpy(), 2 * loc.detach().numpy())
x = glob(a, S(0), True)
(x.to_local() * 2).sum().backward()
np.testing.assert_allclose(x.grad.numpy(), np.full_like(a, 2.0))

# ---- data parallelism: S(0) data, B parameters ----
d_in, d_h, d_out, batch, lr = 5, 8, 3, 4 * n + 2, 0.1
init = [rng.standard_normal(s).astype(np.float32) * 0.5 for s in [(d_in, d_h), (d_h,), (d_h, d_out), (d_out,)]]
data = [(rng.standard_normal((batch, d_in)).astype(np.float32), rng.standard_normal((batch, d_out)).astype(np.float32))
        for _ in range(20)]


def train(params, wrap):
    losses = []
    for xb, yb in data:
        w1, b1, w2, b2 = params
        h = flow.tanh(flow.matmul(wrap(xb), w1) + b1)
        loss = ((flow.matmul(h, w2) + b2 - wrap(yb)) ** 2).mean()
        loss.backward()
        with flow.no_grad():
            for q in params:
                q -= lr * q.grad
                q.grad = None
        losses.append(loss.item())
    return losses, [q.detach().numpy() for q in params]


single = [flow.tensor(v, requires_grad=True) for v in init]
want_losses, want = train(single, flow.tensor)
params = [glob(v, B, True) for v in init]
with dist.comm_debug() as comm:
    losses, got = train(params, lambda v: glob(v, S(0)))
for q in params:
    assert q.sbp == (B,)
np.testing.assert_allclose(losses, want_losses, rtol=1e-5, atol=1e-6)
for g_, w_ in zip(got, want):
    np.testing.assert_allclose(g_, w_, rtol=1e-5, atol=1e-6)
if n > 1:  # the parameters' partial gradients are all-reduced, once per parameter and step
    grads = [c for c in comm.records if c["op"] == "grad_to_param_sbp"]
    assert len(grads) == 4 * 20 and {c["collective"] for c in grads} == {"all_reduce"}, comm.by_op().keys()

# flow.optim on global parameters (their state is made by the *_like functions: global too)
for make_opt in (lambda ps: flow.optim.SGD(ps, lr=0.05, momentum=0.9), lambda ps: flow.optim.Adam(ps, lr=0.01)):
    results = []
    for wrap, params in ((flow.tensor, [flow.tensor(v, requires_grad=True) for v in init]),
                         (lambda v: glob(v, S(0)), [glob(v, B, True) for v in init])):
        opt = make_opt(params)
        for xb, yb in data[:5]:
            w1, b1, w2, b2 = params
            opt.zero_grad()
            loss = ((flow.matmul(flow.tanh(flow.matmul(wrap(xb), w1) + b1), w2) + b2 - wrap(yb)) ** 2).mean()
            loss.backward()
            opt.step()
        results.append([q.detach().numpy() for q in params])
    for g_, w_ in zip(*results):
        np.testing.assert_allclose(g_, w_, rtol=1e-5, atol=1e-6)

# a 2 x 2 placement: data parallel on both dimensions, and data x model parallel (columns of the weights split)
if n == 4:
    mesh = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    w1, w2 = init[0], init[2]

    def train2(wrap_p, wrap_x):
        ps = [wrap_p(w1), wrap_p(w2)]
        opt = flow.optim.SGD(ps, lr=0.05, momentum=0.9)
        for xb, _ in data[:5]:
            opt.zero_grad()
            (flow.matmul(flow.tanh(flow.matmul(wrap_x(xb), ps[0])), ps[1]) ** 2).mean().backward()
            opt.step()
        return [q.detach().numpy() for q in ps]

    want = train2(lambda v: flow.tensor(v, requires_grad=True), flow.tensor)
    for x_sbp, p_sbp in [((S(0), S(0)), (B, B)), ((S(0), B), (B, S(1))), ((B, S(0)), (B, B))]:
        got = train2(lambda v: flow.tensor(v, placement=mesh, sbp=p_sbp, requires_grad=True),
                     lambda v: flow.tensor(v, placement=mesh, sbp=x_sbp))
        for g_, w_ in zip(got, want):
            np.testing.assert_allclose(g_, w_, rtol=1e-5, atol=1e-6, err_msg=f"{x_sbp} {p_sbp}")
# ---- a Linear layer big enough for the fused weight+bias gradient (_mm_t_colsum, one pass over the output
# gradient): data parallel (S(0) batch, B params) its gradients come out partial and are all-reduced once each;
# column parallel (B input, weight and bias split by output feature) they stay split with no communication
lin_x = rng.standard_normal((64 * n, 64)).astype(np.float32)
lin_w, lin_b = (rng.standard_normal(s).astype(np.float32) * 0.1 for s in [(64, 64), (64,)])
want_w, want_b = flow.tensor(lin_w, requires_grad=True), flow.tensor(lin_b, requires_grad=True)
(flow.nn.functional.linear(flow.tensor(lin_x), want_w, want_b) ** 2).sum().backward()
for x_sbp, w_sbp, b_sbp, grads_comm in ((S(0), B, B, ["all_reduce", "all_reduce"]), (B, S(0), S(0), [])):
    w, b = glob(lin_w, w_sbp, True), glob(lin_b, b_sbp, True)
    out = flow.nn.functional.linear(glob(lin_x, x_sbp), w, b)
    loss = (out ** 2).sum()
    with dist.comm_debug() as comm:
        loss.backward()
    if n > 1:
        assert [c["collective"] for c in comm.records] == grads_comm, comm.records
    assert w.grad.sbp == (w_sbp,) and b.grad.sbp == (b_sbp,), (w.grad.sbp, b.grad.sbp)
    np.testing.assert_allclose(w.grad.numpy(), want_w.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(b.grad.numpy(), want_b.grad.numpy(), rtol=1e-4, atol=1e-4)
print("global train ok")
