"""A user's op mixing a local tensor with global ones raises a RuntimeError naming the op and the fix
(to_global), as OneFlow does, also where the user hands the local tensor to a framework function or module
(or one that function computes a local tensor from, like SDPA's bias from a bool mask);
Python scalars and 0-dim CPU tensors mix as the same value on every rank; the core's own composites, backward
formulas and Python functions, which make local tensors inside ops on global ones, keep working."""
import numpy as np

import oneflow as flow
import oneflow.nn.functional as F

r, n = flow.env.get_rank(), flow.env.get_world_size()
S, B, P = flow.sbp.split, flow.sbp.broadcast, flow.sbp.partial_sum
p = flow.placement("cpu", ranks=list(range(n)))
rng = np.random.default_rng(1)
a_np = rng.standard_normal((2 * n + 1, 4)).astype(np.float32)


def expect_mixing_error(op_name, index, fn):
    try:
        fn()
    except RuntimeError as e:
        msg = str(e)
        assert msg.startswith(f"{op_name}(): input {index} is a local tensor"), msg
        assert "to_global" in msg and "mixed with global tensors" in msg, msg
        return
    raise AssertionError(f"{op_name}: mixing a local tensor with global ones did not raise")


for sbp in (S(0), B, P):
    g = flow.tensor(a_np, placement=p, sbp=sbp)
    local = flow.tensor(a_np)
    expect_mixing_error("add", 1, lambda: g + local)
    expect_mixing_error("add", 0, lambda: local + g)
    expect_mixing_error("mul", 1, lambda: g * flow.ones(4))  # broadcastable shapes do not make it allowed
    expect_mixing_error("matmul", 1, lambda: flow.matmul(g, flow.ones(4, 3)))
    expect_mixing_error("add_", 1, lambda: g.clone().add_(local))
    expect_mixing_error("add_", 0, lambda: local.clone().add_(g))
    expect_mixing_error("where", 0, lambda: flow.where(flow.tensor(a_np > 0), g, g))
    expect_mixing_error("cat", 1, lambda: flow.cat([g, local]))
    w = flow.nn.Linear(4, 3)  # a local module applied to a global input
    try:
        w(g)
    except RuntimeError as e:
        assert "is a local tensor" in str(e) and "to_global" in str(e), e
    else:
        raise AssertionError("a local Linear on a global input did not raise")
    # scalars: Python numbers and 0-dim CPU tensors are the same value on every rank
    np.testing.assert_allclose((g + 2).numpy(), a_np + 2, rtol=1e-6)
    np.testing.assert_allclose((g * flow.tensor(3.0)).numpy(), a_np * 3, rtol=1e-6)
    np.testing.assert_allclose((flow.tensor(0.5, dtype=flow.float64) * g).numpy(), a_np * 0.5, rtol=1e-6)
    np.testing.assert_allclose(flow.clamp(g, -0.5, 0.5).numpy(), np.clip(a_np, -0.5, 0.5))
    np.testing.assert_allclose(flow.where(g > 0, g, 0.0).numpy(), np.where(a_np > 0, a_np, 0))
    expect_mixing_error("index", 1, lambda: g[flow.tensor([0, 2])])  # a local index tensor is the user's
    # Python data as an index or an assigned value is made a broadcast global tensor by the core
    np.testing.assert_array_equal(g[[0, 2]].numpy(), a_np[[0, 2]])
    np.testing.assert_array_equal(g[np.array([2, 1]), 1:3].numpy(), a_np[[2, 1], 1:3])
    np.testing.assert_array_equal(g[range(1, 3)].numpy(), a_np[1:3])
    h = g.clone()
    h[[0, 2]] = 1.5
    h[1] = [7.0, 7.0, 7.0, 7.0]
    want = a_np.copy()
    want[[0, 2]] = 1.5
    want[1] = 7.0
    np.testing.assert_array_equal(h.numpy(), want)
    # after a refused op the next ops work (no state left behind)
    np.testing.assert_allclose((g - g).numpy(), np.zeros_like(a_np), atol=0)

# the core's internal ops on global tensors make local tensors and still work: feature dropout's mask (a
# composite), index and gather backward (zeros made by the formulas), cross entropy's backward
for sbp in (S(0), B):
    x = flow.tensor(a_np, placement=p, sbp=sbp).requires_grad_()
    idx = flow.tensor([0, 2, 1, 0], placement=p, sbp=B)
    y = (x[idx] * 2).sum() + x.gather(1, flow.tensor(np.zeros((2 * n + 1, 1), np.int64), placement=p, sbp=sbp)).sum()
    y.backward()
    xl = flow.tensor(a_np, requires_grad=True)
    ((xl[flow.tensor([0, 2, 1, 0])] * 2).sum() + xl.gather(1, flow.zeros(2 * n + 1, 1, dtype=flow.int64)).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), xl.grad.numpy(), rtol=1e-6)
    target = flow.tensor(np.arange(2 * n + 1) % 4, placement=p, sbp=sbp)
    xc = flow.tensor(a_np, placement=p, sbp=sbp).requires_grad_()
    F.cross_entropy(xc, target).backward()
    xcl = flow.tensor(a_np, requires_grad=True)
    F.cross_entropy(xcl, flow.tensor(np.arange(2 * n + 1) % 4)).backward()
    np.testing.assert_allclose(xc.grad.numpy(), xcl.grad.numpy(), rtol=1e-5, atol=1e-7)
    flow.manual_seed(4)
    d = F.dropout2d(flow.tensor(a_np[:, :, None, None].repeat(3, 2), placement=p, sbp=sbp), 0.5)
    flow.manual_seed(4)
    dl = F.dropout2d(flow.tensor(a_np[:, :, None, None].repeat(3, 2)), 0.5)
    np.testing.assert_array_equal(d.numpy(), dl.numpy())
# the framework's Python functions: a local tensor the user hands in (or a view of it) raises; the local
# tensors they make themselves (a causal mask, an RNN's zero state) mix as broadcast
q_np = rng.standard_normal((2, 2, 5, 4)).astype(np.float32)
for sbp in (S(0), B):
    gq = flow.tensor(q_np, placement=p, sbp=sbp)
    want = F.scaled_dot_product_attention(*[flow.tensor(q_np)] * 3, is_causal=True).numpy()
    np.testing.assert_allclose(F.scaled_dot_product_attention(gq, gq, gq, is_causal=True).numpy(), want, rtol=1e-5,
                               atol=1e-6)
    # a float mask is added as it is; a bool one is first made an additive bias, a local tensor the framework
    # computes from the user's: refused as well, naming the argument (its value could differ between ranks)
    for mask in (flow.zeros(5, 5), flow.ones(5, 5, dtype=flow.bool), flow.ones(5, 5, dtype=flow.bool)[None]):
        try:
            F.scaled_dot_product_attention(gq, gq, gq, attn_mask=mask)
        except RuntimeError as e:
            assert "is a local tensor" in str(e) and "to_global" in str(e), e
            assert mask.dtype != flow.bool or "argument 'attn_mask'" in str(e), e
        else:
            raise AssertionError(f"a local {mask.dtype} attn_mask with global q, k, v did not raise")
    mha = flow.nn.MultiheadAttention(4, 2, batch_first=True)
    mha.to_global(p, B)
    gx = flow.tensor(q_np[0], placement=p, sbp=sbp)
    try:
        mha(gx, gx, gx, attn_mask=flow.ones(5, 5, dtype=flow.bool))
    except RuntimeError as e:
        assert "argument 'attn_mask'" in str(e) and "to_global" in str(e), e
    else:
        raise AssertionError("a local bool attn_mask handed to a global MultiheadAttention did not raise")
    bool_mask = np.tril(np.ones((5, 5), bool))
    want = F.scaled_dot_product_attention(*[flow.tensor(q_np)] * 3, attn_mask=flow.tensor(bool_mask)).numpy()
    got = F.scaled_dot_product_attention(gq, gq, gq, attn_mask=flow.tensor(bool_mask, placement=p, sbp=B))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
    try:
        F.linear(flow.tensor(a_np, placement=p, sbp=sbp), flow.ones(3, 4))
    except RuntimeError as e:
        assert "is a local tensor" in str(e), e
    else:
        raise AssertionError("F.linear with a local weight did not raise")
    seq = rng.standard_normal((5, 2 * n, 8)).astype(np.float32)
    flow.manual_seed(0)
    lstm = flow.nn.LSTM(8, 4)
    want = lstm(flow.tensor(seq))[0].detach().numpy()
    lstm.to_global(p, B)
    with flow.no_grad():
        got = lstm(flow.tensor(seq, placement=p, sbp=B))[0]
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)
assert flow._C._internal_depth() == 0
print("global mixing ok")
