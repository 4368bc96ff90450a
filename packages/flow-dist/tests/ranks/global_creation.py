"""Creation functions with placement= and sbp=: broadcast values identical on every rank, split values equal
the single-process tensor of the same seed; flow.tensor(data, placement=, sbp=) slices the logical data."""
import numpy as np

import oneflow as flow

r, n = flow.env.get_rank(), flow.env.get_world_size()
S, B, P = flow.sbp.split, flow.sbp.broadcast, flow.sbp.partial_sum
p = flow.placement("cpu", ranks=list(range(n)))
world = flow.comm

cases = [
    (lambda **k: flow.randn(4, 5, **k), "randn"), (lambda **k: flow.rand(2 * n + 1, 3, **k), "rand"),
    (lambda **k: flow.randint(0, 10, (5, 2), **k), "randint"), (lambda **k: flow.normal(1.0, 2.0, (3, 4), **k), "normal"),
    (lambda **k: flow.zeros(3, 2, **k), "zeros"), (lambda **k: flow.ones(5, **k), "ones"),
    (lambda **k: flow.full((3, 3), 7.5, **k), "full"), (lambda **k: flow.arange(2 * n + 1, **k), "arange"),
]
for make, name in cases:
    flow.manual_seed(11)
    want = make().numpy()
    for sbp in [B, S(0)] + ([S(1)] if want.ndim > 1 else []) + [P]:
        flow.manual_seed(11)
        g = make(placement=p, sbp=sbp)
        assert g.is_global and g.sbp == (sbp,) and g.shape == want.shape and g.dtype == flow.tensor(want).dtype
        np.testing.assert_array_equal(g.numpy(), want, err_msg=f"{name} {sbp}")
        if sbp == B:  # the same on every rank
            gathered = [flow.empty(*want.shape, dtype=g.dtype) for _ in range(n)]
            world.all_gather(gathered, g.to_local().contiguous())
            for t in gathered:
                np.testing.assert_array_equal(t.numpy(), want)

data = np.arange(2 * n + 1, dtype=np.float32)
t = flow.tensor(data, placement=p, sbp=S(0))
lo = r * 2 + min(r, 1)
np.testing.assert_array_equal(t.to_local().numpy(), data[lo:lo + 2 + (r == 0)])
np.testing.assert_array_equal(t.numpy(), data)
w = flow.randn(3, 4, placement=p, sbp=B, requires_grad=True)
assert w.requires_grad and w.is_leaf
(w * 2).sum().backward()
np.testing.assert_array_equal(w.grad.numpy(), np.full((3, 4), 2.0))
for like in (flow.zeros_like, flow.ones_like, lambda t: flow.full_like(t, 3.0), flow.empty_like):
    for sbp in (S(0), B, P):
        src = flow.randn(2 * n + 1, 3, placement=p, sbp=sbp)
        t = like(src)
        assert t.is_global and t.placement == p and t.sbp == ((B,) if sbp == P else (sbp,)) and t.shape == src.shape
        if like is not flow.empty_like:
            np.testing.assert_array_equal(t.numpy(), like(flow.randn(2 * n + 1, 3)).numpy())
for bad, exc, match in [(lambda: flow.zeros(2, placement=p), ValueError, "go together"),
                        (lambda: flow.zeros(2, placement=p, sbp=S(1)), ValueError, "out of range"),
                        (lambda: flow.zeros(2, placement=p, sbp=B, device="cpu"), ValueError, "not both")]:
    try:
        bad()
    except exc as e:
        assert match in str(e), e
    else:
        raise AssertionError(match)
print("global creation ok")
