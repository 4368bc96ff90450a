"""Split global creation makes only this rank's shard: its values equal the single-process tensor of the same
seed at the shard's positions, the generator then stands where a single process's would (the next draw is the
same), and a rank's peak memory is its shard's, not the whole tensor's."""
import numpy as np

import oneflow as flow
from shard_util import shard_of

r, n = flow.env.get_rank(), flow.env.get_world_size()
S, B = flow.sbp.split, flow.sbp.broadcast
p = flow.placement("cpu", ranks=list(range(n)))


def check(make, name, placement, sbp):
    flow.manual_seed(5)
    want = make().numpy()
    after = flow.rand(9).numpy()  # the draw after the creation
    flow.manual_seed(5)
    g = make(placement=placement, sbp=sbp)
    got_after = flow.rand(9).numpy()
    sbp = sbp if isinstance(sbp, tuple) else (sbp,)
    assert g.sbp == sbp and tuple(g.shape) == want.shape, (name, g.sbp, g.shape)
    local = g.to_local().numpy()
    np.testing.assert_array_equal(local, shard_of(want, placement, sbp), err_msg=f"{name} {sbp} shard")
    np.testing.assert_array_equal(g.numpy(), want, err_msg=f"{name} {sbp}")
    np.testing.assert_array_equal(got_after, after, err_msg=f"{name} {sbp}: the generator is out of step")


for rows, cols in [(4 * n, 6), (2 * n + 1, 5), (3, 2 * n + 3), (1, 7)]:  # even, uneven, fewer rows than ranks
    cases = [
        (lambda **k: flow.randn(rows, cols, **k), "randn"),
        (lambda **k: flow.randn(rows, cols, dtype=flow.float64, **k), "randn f64"),
        (lambda **k: flow.randn(rows, cols, dtype=flow.float16, **k), "randn f16"),
        (lambda **k: flow.rand(rows, cols, **k), "rand"),
        (lambda **k: flow.rand(rows, cols, dtype=flow.float64, **k), "rand f64"),
        (lambda **k: flow.randint(-3, 10, (rows, cols), **k), "randint"),
        (lambda **k: flow.randint(0, 2 ** 40, (rows, cols), **k), "randint wide"),
        (lambda **k: flow.normal(1.0, 2.0, (rows, cols), **k), "normal"),
        (lambda **k: flow.zeros(rows, cols, **k), "zeros"), (lambda **k: flow.ones((rows, cols), **k), "ones"),
        (lambda **k: flow.full((rows, cols), 7, **k), "full"),
        (lambda **k: flow.empty(rows, cols, **k).normal_(0.5, 3.0), "normal_"),
        (lambda **k: flow.empty(rows, cols, **k).uniform_(-1.0, 2.0), "uniform_"),
        (lambda **k: flow.empty(rows, cols, dtype=flow.float64, **k).exponential_(), "exponential_"),
        (lambda **k: flow.empty(rows, cols, dtype=flow.int32, **k).random_(0, 100), "random_"),
    ]
    for make, name in cases:
        for sbp in (S(0), S(1), B):
            check(make, f"{name} {rows}x{cols}", p, sbp)
    check(lambda **k: flow.randn(rows, 3, cols, **k), "randn 3-d", p, S(2))
    check(lambda **k: flow.rand(rows * cols, **k), "rand 1-d", p, S(0))

if n == 4:  # a 2-D hierarchy: both dims split, and one tensor dim split twice
    p2 = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    for sbp in ((S(0), S(1)), (S(1), S(0)), (S(0), S(0)), (B, S(1))):
        check(lambda **k: flow.randn(5, 7, **k), "randn 2-d hierarchy", p2, sbp)
        check(lambda **k: flow.zeros(5, 7, **k), "zeros 2-d hierarchy", p2, sbp)

# the peak on a rank is its shard's: 4 MiB of float32 split n ways (the whole tensor never exists)
rows, cols = 1024, 1024
for make in (flow.randn, flow.rand, flow.zeros):
    flow._C._reset_peak_stats()
    base = flow._C._allocator_stats()["allocated_bytes"]
    g = make(rows, cols, placement=p, sbp=S(0))
    peak = flow._C._allocator_stats()["peak_allocated_bytes"] - base
    shard = rows // n * cols * 4
    assert peak <= shard + 64 * 1024, (make.__name__, peak, shard)
    del g
src = flow.empty(rows, cols, placement=p, sbp=S(1))
for like in (flow.zeros_like, flow.ones_like, flow.empty_like, lambda t: flow.full_like(t, 2.0)):
    flow._C._reset_peak_stats()
    base = flow._C._allocator_stats()["allocated_bytes"]
    t = like(src)
    assert t.sbp == (S(1),) and t.to_local().shape == src.to_local().shape
    peak = flow._C._allocator_stats()["peak_allocated_bytes"] - base
    assert peak <= src.to_local().numel() * 4 + 64 * 1024, ("like", peak)
    del t
flow._C._reset_peak_stats()
g = flow.empty(rows, cols, placement=p, sbp=S(1))
base = flow._C._allocator_stats()["allocated_bytes"]
g.normal_()
assert flow._C._allocator_stats()["peak_allocated_bytes"] - base <= 64 * 1024, "normal_ made a whole tensor"

for bad, match in [(lambda: flow.randn(4, placement=p, sbp=S(1)), "out of range"),
                   (lambda: flow.rand(2, 3, placement=p, sbp=S(0), bogus=1), "unexpected keyword")]:
    try:
        bad()
    except (ValueError, TypeError) as e:
        assert match in str(e), e
    else:
        raise AssertionError(match)
print("global shard creation ok")
