"""Split global ranges, eye, randperm, tensor(data) and the random *_like functions make only this rank's
block: values equal the single-process tensor of the same seed at the block's positions (every sbp, uneven
splits, a 2-D hierarchy), the generator stands where a single process's would, and a rank's peak memory is
its block's."""
import numpy as np

import oneflow as flow
from shard_util import peak_of, shard_of

r, n = flow.env.get_rank(), flow.env.get_world_size()
S, B, P = flow.sbp.split, flow.sbp.broadcast, flow.sbp.partial_sum
p = flow.placement("cpu", ranks=list(range(n)))


def check(make, name, placement, sbp):
    flow.manual_seed(7)
    local = make()
    want = local.float().numpy() if local.dtype == flow.bfloat16 else local.numpy()
    after = flow.rand(5).numpy()  # the draw after the creation
    flow.manual_seed(7)
    g = make(placement=placement, sbp=sbp)
    got_after = flow.rand(5).numpy()
    sbp = sbp if isinstance(sbp, tuple) else (sbp,)
    assert g.is_global and g.sbp == sbp and tuple(g.shape) == want.shape, (name, g.sbp, g.shape)
    assert g.dtype == local.dtype, (name, g.dtype, local.dtype)
    if local.dtype == flow.bfloat16:
        g = g.float()
    if not any(s.is_partial() for s in sbp):
        np.testing.assert_array_equal(g.to_local().numpy(), shard_of(want, placement, sbp), err_msg=f"{name} {sbp}")
    np.testing.assert_array_equal(g.numpy(), want, err_msg=f"{name} {sbp}")
    np.testing.assert_array_equal(got_after, after, err_msg=f"{name} {sbp}: the generator is out of step")


m = 2 * n + 3  # uneven on 2 and 4 ranks
vectors = [
    (lambda **k: flow.arange(m, **k), "arange int"),
    (lambda **k: flow.arange(0.5, 7.3, 7.3 / m, **k), "arange float"),
    (lambda **k: flow.arange(-3, 2 * m, 2, dtype=flow.float64, **k), "arange f64"),
    (lambda **k: flow.arange(m, step=2, dtype=flow.int32, **k), "arange step="),
    (lambda **k: flow.arange(0.25, m, 0.75, dtype=flow.float16, **k), "arange f16"),
    (lambda **k: flow.linspace(-1.3, 2.7, m, **k), "linspace"),
    (lambda **k: flow.linspace(-1.3, 2.7, m, dtype=flow.float64, **k), "linspace f64"),
    (lambda **k: flow.linspace(0, 1, m, dtype=flow.float16, **k), "linspace f16"),
    (lambda **k: flow.linspace(-2, 3, m, dtype=flow.bfloat16, **k), "linspace bf16"),
    (lambda **k: flow.linspace(0, 100, m, dtype=flow.int64, **k), "linspace int"),
    (lambda **k: flow.linspace(3, 4, 1, **k), "linspace one step"),
    (lambda **k: flow.logspace(-1, 2, m, base=3.0, **k), "logspace"),
    (lambda **k: flow.logspace(-1, 2, m, dtype=flow.float64, **k), "logspace f64"),
    (lambda **k: flow.randperm(m, **k), "randperm"),
    (lambda **k: flow.randperm(4 * m, dtype=flow.int32, **k), "randperm int32"),
    (lambda **k: flow.tensor([1.5, -2, 3, 4, 5.25, 6, 7][:m] + list(range(m - 7)), **k), "tensor list"),
    (lambda **k: flow.tensor(np.arange(m, dtype=np.int32) * 3, **k), "tensor ndarray"),
    (lambda **k: flow.as_tensor(np.linspace(0, 1, m), **k), "as_tensor ndarray"),
    (lambda **k: flow.tensor(flow.arange(m * 1.5, placement=p, sbp=S(0)), **k), "tensor of a global tensor"),
]
for make, name in vectors:
    for sbp in (S(0), B, P):
        check(make, name, p, sbp)

matrices = [
    (lambda **k: flow.eye(m, **k), "eye"), (lambda **k: flow.eye(m, m + 2, dtype=flow.int64, **k), "eye wide"),
    (lambda **k: flow.eye(3, m, dtype=flow.float64, **k), "eye fewer rows than ranks"),
    (lambda **k: flow.tensor([[1, 2.5, 3], [4, 5, 6]] * m, **k), "tensor 2-d list"),
    (lambda **k: flow.tensor(flow.arange(3 * m).reshape(m, 3) * 2, **k), "tensor of a tensor"),
    (lambda **k: flow.tensor(np.arange(2 * m).reshape(m, 2), dtype=flow.float16, **k), "tensor dtype="),
]
for make, name in matrices:
    for sbp in (S(0), S(1), B):
        check(make, name, p, sbp)


def like(fn, *args, **kw):
    """fn(zeros(m, 4) [global with the keywords], ...): a random *_like function of a template that draws
    nothing."""
    return lambda **k: fn(flow.zeros(m, 4, **k), *args, **kw)


for fn, args, kw, name in [(flow.rand_like, (), {}, "rand_like"), (flow.randn_like, (), {}, "randn_like"),
                           (flow.randn_like, (), {"dtype": flow.float64}, "randn_like f64"),
                           (flow.randint_like, (10,), {}, "randint_like high"),
                           (flow.randint_like, (-5, 5), {"dtype": flow.int64}, "randint_like low high")]:
    for sbp in (S(0), S(1), B):
        check(like(fn, *args, **kw), name, p, sbp)
    g = fn(flow.zeros(m, 4, placement=p, sbp=P), *args, **kw)  # a partial template gives broadcast
    assert g.sbp == (B,), g.sbp

if n == 4:  # a 2-D hierarchy
    p2 = flow.placement("cpu", ranks=[[0, 1], [2, 3]])
    for sbp in ((S(0), S(1)), (S(1), S(0)), (S(0), S(0)), (B, S(1))):
        check(lambda **k: flow.eye(5, 7, **k), "eye 2-d hierarchy", p2, sbp)
        check(lambda **k: flow.tensor(np.arange(35.0).reshape(5, 7), **k), "tensor 2-d hierarchy", p2, sbp)
        check(like(flow.randn_like), "randn_like 2-d hierarchy", p2, sbp)
    for sbp in ((S(0), S(0)), (B, S(0)), (S(0), B)):
        check(lambda **k: flow.arange(0.0, 3.3, 0.3, **k), "arange 2-d hierarchy", p2, sbp)
        check(lambda **k: flow.linspace(0, 1, 11, **k), "linspace 2-d hierarchy", p2, sbp)

# the peak on a rank is its block's (the whole tensor never exists): 4 MiB of float32 split n ways
big = 1 << 20
shard = (big // n) * 4
for name, make in [("arange", lambda: flow.arange(0.0, big, 1.0, placement=p, sbp=S(0))),
                   ("linspace", lambda: flow.linspace(0, 1, big, placement=p, sbp=S(0))),
                   ("logspace", lambda: flow.logspace(0, 1, big, placement=p, sbp=S(0))),
                   ("eye", lambda: flow.eye(1024, placement=p, sbp=S(1))),
                   ("tensor", lambda: flow.tensor([[0.5] * 1024] * 1024, placement=p, sbp=S(0))),
                   ("rand_like", lambda: flow.rand_like(src)), ("randint_like", lambda: flow.randint_like(src, 9))]:
    src = flow.empty(1024, 1024, placement=p, sbp=S(0))
    g, peak = peak_of(make)
    assert g.to_local().numel() * 4 <= shard + 4096, (name, g.to_local().shape)
    assert peak <= shard + 64 * 1024, (name, peak, shard)
    del g
print("global shard ranges ok")
