"""Random ops on split global tensors draw only this rank's block: bernoulli, dropout (F.dropout, nn.Dropout,
in place), poisson, binomial, normal with tensor mean/std and the Gamma sampler give the single-process values
of the same seed on every sbp (uneven splits, a 2-D hierarchy), the generator stays in step (the default one
and a flow.Generator given as generator=), dropout's gradient equals single-process, and a rank's peak memory is
its shard's;
feature dropout (dropout1d/2d/3d) draws only the shard's part of its (N, C) mask, with the same values."""
import numpy as np

import oneflow as flow
import oneflow.nn.functional as F
from shard_util import peak_of, shard_of

r, n = flow.env.get_rank(), flow.env.get_world_size()
S, B, P = flow.sbp.split, flow.sbp.broadcast, flow.sbp.partial_sum
p = flow.placement("cpu", ranks=list(range(n)))
rng = np.random.default_rng(0)


def glob(a, placement, sbp):
    """The global tensor whose whole value is the array ``a`` (a partial sbp: rank 0 holds it, others zero)."""
    return flow.tensor(a, placement=placement, sbp=sbp)


def check(op, arrays, name, placement, sbp):
    flow.manual_seed(3)
    want = op(*[flow.tensor(a) for a in arrays]).numpy()
    after = flow.rand(5).numpy()
    ins = [glob(a, placement, sbp) for a in arrays]
    flow.manual_seed(3)
    g = op(*ins)
    got_after = flow.rand(5).numpy()
    sbp = sbp if isinstance(sbp, tuple) else (sbp,)
    # a result takes its input's split layout (a partial input's is the planner's choice); on one rank every
    # split costs nothing, so a clone may pick another
    assert g.is_global and tuple(g.shape) == want.shape, (name, sbp, g.shape)
    assert g.sbp == sbp or n == 1 or any(s.is_partial() for s in sbp), (name, sbp, g.sbp)
    if not any(s.is_partial() for s in g.sbp):
        np.testing.assert_array_equal(g.to_local().numpy(), shard_of(want, placement, g.sbp),
                                      err_msg=f"{name} {sbp}")
    np.testing.assert_array_equal(g.numpy(), want, err_msg=f"{name} {sbp}")
    np.testing.assert_array_equal(got_after, after, err_msg=f"{name} {sbp}: the generator is out of step")


def dropout_inplace(x):
    y = x.clone()
    F.dropout(y, 0.4, inplace=True)
    return y


def bernoulli_inplace(x):
    return x.clone().bernoulli_(0.3)


rows, cols = 2 * n + 1, 6
probs = rng.random((rows, cols)).astype(np.float32)
x = rng.standard_normal((rows, cols)).astype(np.float32)
ops = [
    (flow.bernoulli, [probs], "bernoulli"),
    (lambda t: flow.bernoulli(t, p=0.3), [x], "bernoulli p="),
    (bernoulli_inplace, [x], "bernoulli_ p="),
    (lambda t: F.dropout(t, 0.4), [x], "dropout"),
    (lambda t: F.dropout(t.double(), 0.25), [x], "dropout f64"),
    (lambda t: F.dropout(t.half(), 0.5), [x], "dropout f16"),
    (lambda t: F.dropout(t, 1.0), [x], "dropout p=1"),
    (dropout_inplace, [x], "dropout inplace"),
    (lambda t: flow.nn.Dropout(0.2)(t), [x], "nn.Dropout"),
    (lambda t: F.dropout1d(t.unsqueeze(-1), 0.5).squeeze(-1), [x], "dropout1d (feature mask)"),
    (flow.poisson, [probs * 4], "poisson"),
    (flow.binomial, [np.floor(probs * 9), probs[::-1].copy()], "binomial"),
    (lambda m_, s_: flow.normal(m_, s_), [x, probs], "normal(mean, std)"),
    (lambda m_: flow.normal(m_, 2.0), [x], "normal(mean, 2.0)"),
    (lambda a: flow._standard_gamma(a + 0.5), [probs], "_standard_gamma"),
]
for op, arrays, name in ops:
    for sbp in (S(0), S(1), B, P):
        check(op, arrays, name, p, sbp)
check(lambda t: F.dropout(t, 0.3), [rng.standard_normal((3, 2 * n + 1, 5)).astype(np.float32)], "dropout 3-d", p,
      S(1))
# feature dropout: one mask value per (sample, channel), drawn only for the rows and channels this rank holds
feat = rng.standard_normal((rows, n + 2, 2, 3)).astype(np.float32)
feature_ops = [
    (lambda t: F.dropout2d(t, 0.4), "dropout2d"),
    (lambda t: flow.nn.Dropout2d(0.5)(t), "nn.Dropout2d"),
    (lambda t: F.dropout3d(t.unsqueeze(2), 0.3).squeeze(2), "dropout3d"),
    (lambda t: F.dropout2d(t.double(), 0.25), "dropout2d f64"),
    (lambda t: F.dropout2d(t, 1.0), "dropout2d p=1"),
]
for op, name in feature_ops:
    for sbp in (S(0), S(1), S(2), B, P):
        check(op, [feat], name, p, sbp)
for sbp in (S(0), S(1), S(2), B, P):
    check(lambda t: F.dropout1d(t, 0.6), [feat[:, :, 0]], "dropout1d", p, sbp)
for sbp in (S(0), S(1), B, P):
    check(lambda t: F.dropout1d(t, 0.5), [feat[0]], "dropout1d unbatched", p, sbp)
if n == 4:  # a 2-D hierarchy
    p2 = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    for sbp in ((S(0), S(1)), (S(1), S(0)), (S(0), S(0)), (B, S(1)), (P, S(0))):
        check(lambda t: F.dropout(t, 0.5), [x], "dropout 2-d hierarchy", p2, sbp)
        check(flow.bernoulli, [probs], "bernoulli 2-d hierarchy", p2, sbp)
        check(lambda t: F.dropout2d(t, 0.5), [feat], "dropout2d 2-d hierarchy", p2, sbp)

# dropout's gradient on a split tensor equals single-process (the mask is the single-process one)
w = rng.standard_normal((rows, cols)).astype(np.float32)
for sbp in (S(0), S(1), B):
    flow.manual_seed(9)
    xl = flow.tensor(x, requires_grad=True)
    (F.dropout(xl, 0.3) * flow.tensor(w)).sum().backward()
    flow.manual_seed(9)
    xg = glob(x, p, sbp).requires_grad_()
    yg = F.dropout(xg, 0.3)
    (yg * glob(w, p, sbp)).sum().backward()
    assert xg.grad.sbp == (sbp,), xg.grad.sbp
    np.testing.assert_array_equal(xg.grad.numpy(), xl.grad.numpy(), err_msg=f"dropout grad {sbp}")
# and feature dropout's
wf = rng.standard_normal(feat.shape).astype(np.float32)
for sbp in (S(0), S(1), S(2), B):
    flow.manual_seed(9)
    xl = flow.tensor(feat, requires_grad=True)
    (F.dropout2d(xl, 0.3) * flow.tensor(wf)).sum().backward()
    flow.manual_seed(9)
    xg = glob(feat, p, sbp).requires_grad_()
    (F.dropout2d(xg, 0.3) * glob(wf, p, sbp)).sum().backward()
    assert xg.grad.sbp == (sbp,), xg.grad.sbp
    np.testing.assert_array_equal(xg.grad.numpy(), xl.grad.numpy(), err_msg=f"dropout2d grad {sbp}")

# generator=: a flow.Generator seeded alike (or fresh: its default seed is the same on every rank) gives the
# single-process values on every sbp, drawing only the block, and advances as a single process's does
for seeded in (True, False):
    for sbp in (S(0), S(1), B):
        def gen():
            g = flow.Generator()
            if seeded:
                g.manual_seed(123)
            return g

        gl, gg = gen(), gen()
        for make in (lambda g, **k: flow.randn(rows, cols, generator=g, **k),
                     lambda g, **k: flow.rand(rows, cols, generator=g, **k),
                     lambda g, **k: flow.randint(0, 50, (rows, cols), generator=g, **k),
                     lambda g, **k: flow.normal(2.0, 3.0, (rows, cols), generator=g, **k)):
            want = make(gl).numpy()
            np.testing.assert_array_equal(make(gg, placement=p, sbp=sbp).numpy(), want)
        want = flow.randperm(rows * cols, generator=gl).numpy()
        got = flow.randperm(rows * cols, generator=gg, placement=p, sbp=B if sbp == B else S(0))
        np.testing.assert_array_equal(got.numpy(), want)
        want = flow.randn_like(flow.zeros(rows, cols), generator=gl).numpy()
        np.testing.assert_array_equal(flow.randn_like(glob(x, p, sbp), generator=gg).numpy(), want)
        want = flow.bernoulli(flow.tensor(probs), generator=gl).numpy()
        np.testing.assert_array_equal(flow.bernoulli(glob(probs, p, sbp), generator=gg).numpy(), want)
        np.testing.assert_array_equal(flow.rand(3, generator=gg).numpy(), flow.rand(3, generator=gl).numpy())
        b = flow.randn(4, 3, generator=gen(), placement=p, sbp=B).to_local().contiguous()
        gathered = [flow.empty(4, 3) for _ in range(n)]
        flow.comm.all_gather(gathered, b)
        for t in gathered:  # broadcast values are the same on every rank
            np.testing.assert_array_equal(t.numpy(), b.numpy())

# the peak on a rank is its shard's: the mask of a 4 MiB float32 activation split n ways is never whole
big = flow.randn(1024, 1024, placement=p, sbp=S(0))
shard = big.to_local().numel() * 4
_, peak = peak_of(lambda: F.dropout(big, 0.5))
assert peak <= 2 * shard + 64 * 1024, ("dropout", peak, shard)  # the mask and the result
pr = flow.rand(1024, 1024, placement=p, sbp=S(1))
_, peak = peak_of(lambda: flow.bernoulli(pr))
assert peak <= 3 * shard + 64 * 1024, ("bernoulli", peak, shard)  # the result and the float64 probabilities
# feature dropout's mask is drawn as the shard's part too: (N, C) values of an 8 MiB activation split n ways
if n > 1:
    act = flow.randn(4096, 256, 1, 2, placement=p, sbp=S(0))
    shard = act.to_local().numel() * 4
    _, peak = peak_of(lambda: F.dropout2d(act, 0.5))
    # the result, and the mask and what it is drawn from (half the shard each): a whole mask alone is 4 MiB
    assert peak <= 2 * shard + 64 * 1024, ("dropout2d", peak, shard)
print("global shard random ok")
