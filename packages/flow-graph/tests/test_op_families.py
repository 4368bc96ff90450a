"""Eager/graph equivalence op family by op family, forward and gradients: every case runs once eagerly and once
as a training graph whose build computes the op, a loss over its float outputs and ``backward``; the graph
returns the outputs and the gradients of the float inputs. The same kernels run in both, so the results are
bitwise equal. Inputs cover broadcasting, non-contiguous views, zero-size and 0-dim tensors and mixed dtypes."""
import numpy as np
import pytest

import oneflow as flow
from oneflow import nn
from oneflow_graph import Graph

F = nn.functional


def r(*shape, seed=0, positive=False, dtype=np.float32):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return flow.tensor(np.abs(a) + 0.5 if positive else a)


def ints(*shape, high=4, seed=0):
    return flow.tensor(np.random.default_rng(seed).integers(0, high, shape))


# name -> (fn, inputs): float inputs take part as parameters (their gradients are compared), the rest as data
CASES = {
    # unary elementwise
    "unary_math": (lambda a: (a.exp(), a.sin(), a.cos(), a.tanh(), a.sigmoid(), a.erf(), a.abs(), a.neg()),
                   lambda: [r(3, 4)]),
    "unary_positive_domain": (lambda a: (a.log(), a.sqrt(), a.rsqrt(), a.reciprocal(), a.log1p(), a.pow(1.5)),
                              lambda: [r(2, 5, positive=True)]),
    "activations": (lambda a: (F.relu(a), F.gelu(a), F.silu(a), F.elu(a), F.leaky_relu(a, 0.1), F.softplus(a),
                               F.hardswish(a), F.mish(a), a.clamp(-0.5, 0.5)), lambda: [r(4, 6)]),
    "rounding_without_gradient": (lambda a: (a.floor(), a.ceil(), a.round(), a.sign(), a.trunc()),
                                  lambda: [r(7)]),
    # binary elementwise, broadcasting and type promotion
    "binary_same_shape": (lambda a, b: (a + b, a - b, a * b, a / b, flow.maximum(a, b), flow.minimum(a, b),
                                        flow.atan2(a, b)), lambda: [r(3, 4), r(3, 4, seed=1, positive=True)]),
    "binary_broadcasting": (lambda a, b: (a + b, a * b, a / b, a ** 2 + b), lambda: [r(3, 1, 4), r(5, 1, seed=1, positive=True)]),
    "pow_tensor_exponent": (lambda a, b: a.pow(b), lambda: [r(3, 2, positive=True), r(3, 2, seed=2)]),
    "scalars_and_0dim": (lambda a, s: (a * 2.5 + 1, a * s, (s * s).sqrt(), a - s), lambda: [r(2, 3), r()]),
    "mixed_dtypes": (lambda a, i: (a + i, a * i.double(), i * 2, (a > 0) & (i > 1)), lambda: [r(2, 4), ints(2, 4)]),
    "comparisons_and_where": (lambda a, b: (a > b, a <= 0.1, flow.where(a > b, a, b), flow.where(a > 0, a, 0.0),
                                            a.masked_fill(b > 0, 3.0)), lambda: [r(4, 3), r(4, 3, seed=1)]),
    "ternary": (lambda a, b, c: (flow.addcmul(a, b, c, value=0.5), flow.addcdiv(a, b, c), flow.lerp(a, b, 0.3)),
                lambda: [r(3, 3), r(3, 3, seed=1), r(3, 3, seed=2, positive=True)]),
    # reductions
    "reductions": (lambda a: (a.sum(), a.sum(1), a.mean(0, keepdim=True), a.prod(1), a.amax(0), a.amin(1),
                              a.var(1), a.std(0), a.norm(), a.logsumexp(1), a.max(1)[0], a.min(0)[0]),
                   lambda: [r(4, 5)]),
    "scans": (lambda a: (a.cumsum(1), a.cumprod(0)), lambda: [r(3, 4)]),
    "argmax_and_sort": (lambda a: (a.argmax(1), a.sort(1)[0], a.sort(0, descending=True)[1], a.topk(2, 1)[0]),
                        lambda: [r(4, 6)]),
    # linear algebra
    "matmul_family": (lambda a, b, c: (a @ b, flow.bmm(c, c.transpose(1, 2)), F.linear(a, b.t(), b[0]),
                                       flow.einsum("ij,jk->ik", a, b), flow.baddbmm(c, c, c.transpose(1, 2)[:, :, :4])),
                      lambda: [r(3, 4), r(4, 4, seed=1), r(2, 4, 4, seed=2)]),
    "matrix_vector": (lambda m, v: (m @ v, v @ m, flow.outer(v, v), flow.dot(v, v)), lambda: [r(4, 4), r(4, seed=1)]),
    "linalg": (lambda a: (flow.linalg.inv(a), flow.linalg.det(a), flow.linalg.solve(a, a[:, :2])),
               lambda: [r(3, 3) + 3 * flow.eye(3)]),
    # views, shapes and joins
    "views": (lambda a: (a.t(), a.reshape(2, 6), a.view(12)[::3], a.permute(1, 0).contiguous(), a.unsqueeze(1),
                         a[1:, 1::2], a.narrow(1, 1, 2), a.flip(0), a.roll(1, 1), a.expand(2, 3, 4),
                         a.repeat(2, 1), a.squeeze(), a.flatten()), lambda: [r(3, 4)]),
    "joins_and_splits": (lambda a, b: (flow.cat([a, b], 1), flow.stack([a, a * 2]), *a.split(2, 1), *b.chunk(2, 0),
                                       flow.tril(a), flow.triu(b, 1)), lambda: [r(4, 4), r(4, 4, seed=1)]),
    "non_contiguous_inputs": (lambda a: (a.exp() + a, a.sum(0), a @ a.t()), lambda: [r(5, 3).t()[:, 1:]]),
    "zero_size": (lambda a: (a * 2, a.sum(0), a.mean(1), flow.cat([a, a], 0)), lambda: [r(0, 3)]),
    # indexing
    "gather_scatter_index": (lambda a, i: (a.gather(1, i), a.index_select(0, i[0]), a[i[0]], a[:, i[1]],
                                           a.scatter(1, i, 0.0), a.take_along_dim(i, 1), flow.zeros(3, 4).scatter_add(1, i, a[:, :2])),
                             lambda: [r(3, 4), ints(3, 2, high=3)]),
    "ellipsis_none_and_list_indexing": (lambda a: (a[..., 0], a[None, 1], a[:, [0, 2]]), lambda: [r(3, 4)]),
    # neural-network functions
    "softmax_family": (lambda a: (a.softmax(-1), F.log_softmax(a, 0), F.softmin(a, 1)), lambda: [r(3, 5)]),
    "losses": (lambda a, t, y: (F.cross_entropy(a, y), F.cross_entropy(a, y, label_smoothing=0.1),
                                F.nll_loss(F.log_softmax(a, 1), y), F.mse_loss(a, t), F.l1_loss(a, t),
                                F.smooth_l1_loss(a, t), F.binary_cross_entropy_with_logits(a, t.sigmoid()),
                                F.kl_div(F.log_softmax(a, 1), t.softmax(1), reduction="batchmean")),
               lambda: [r(4, 5), r(4, 5, seed=1), ints(4, high=5)]),
    "conv_and_pools": (lambda x, w, w1: (F.conv2d(x, w, padding=1, stride=2), F.conv1d(x[:, :, 0], w1),
                                         F.conv_transpose2d(x, w.transpose(0, 1)), F.max_pool2d(x, 2),
                                         F.avg_pool2d(x, 3, 1, 1), F.adaptive_avg_pool2d(x, 1)),
                       lambda: [r(2, 3, 6, 6), r(4, 3, 3, 3, seed=1), r(4, 3, 2, seed=2)]),
    "normalisations": (lambda x, w, b: (F.layer_norm(x, (6,), w, b), F.group_norm(x, 2),
                                        F.batch_norm(x, None, None, training=True), F.normalize(x, dim=1)),
                       lambda: [r(3, 4, 6), r(6, seed=1), r(6, seed=2)]),
    "embedding_and_interpolate": (lambda e, x, i: (F.embedding(i, e), F.interpolate(x, scale_factor=2, mode="nearest"),
                                                   F.interpolate(x, size=(5, 5), mode="bilinear", align_corners=False),
                                                   F.pad(x, (1, 2, 0, 1))),
                                  lambda: [r(6, 3), r(1, 2, 3, 3, seed=1), ints(2, 3, high=6)]),
    "double_precision": (lambda a, b: (a @ b, (a * b.t()).sum(1).exp()), lambda: [r(3, 3, dtype=np.float64), r(3, 3, seed=1, dtype=np.float64)]),
}


def flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def loss_of(outs):
    """A loss mixing every float output with fixed weights (so each gets a distinct upstream gradient)."""
    terms = [(o * flow.linspace(0.5, 1.5, o.numel(), dtype=o.dtype).view(o.shape)).sum()
             for o in outs if o.is_floating_point() and o.numel()]
    return sum(terms[1:], terms[0]) if terms else None


def split_inputs(inputs):
    return [i for i, x in enumerate(inputs) if x.is_floating_point()]


class OpGraph(Graph):
    """The op, a loss over its float outputs and backward in one graph; the params are the case's float inputs
    (an lr-0 optimizer makes it a training graph without changing them)."""

    def __init__(self, fn, holder, float_at, n):
        super().__init__()
        self.holder = holder
        self.__dict__.update(fn=fn, float_at=float_at, n=n)
        self.add_optimizer(flow.optim.SGD(holder.parameters(), lr=0.0))

    def build(self, *data):
        data, params = iter(data), iter(self.holder.params)
        args = [next(params) if i in self.float_at else next(data) for i in range(self.n)]
        outs = flat(self.fn(*args))
        loss = loss_of(outs)
        if loss is not None:
            loss.backward()
        return outs, [p.grad for p in self.holder.params]


class Holder(nn.Module):
    def __init__(self, tensors):
        super().__init__()
        self.params = nn.ParameterList([nn.Parameter(t.detach().clone()) for t in tensors])


@pytest.mark.parametrize("name", sorted(CASES))
def test_graph_equals_eager_forward_and_gradients(name):
    fn, make = CASES[name]
    inputs = make()
    float_at = split_inputs(inputs)
    eager_params = [inputs[i].detach().clone().requires_grad_(True) for i in float_at]
    it = iter(eager_params)
    args = [next(it) if i in float_at else x for i, x in enumerate(inputs)]
    e_outs = flat(fn(*args))
    e_loss = loss_of(e_outs)
    if e_loss is not None:
        e_loss.backward()
    e_grads = [p.grad for p in eager_params]

    holder = Holder([inputs[i] for i in float_at])
    g = OpGraph(fn, holder, set(float_at), len(inputs))
    data = [x for i, x in enumerate(inputs) if i not in float_at]
    for _ in range(2):  # the first call traces and runs; the second runs the compiled plan only
        g_outs, g_grads = g(*data)
        assert len(g_outs) == len(e_outs)
        for k, (e, o) in enumerate(zip(e_outs, g_outs)):
            assert o.dtype == e.dtype and tuple(o.shape) == tuple(e.shape), (name, k)
            np.testing.assert_array_equal(o.numpy(), e.detach().numpy(), err_msg=f"{name} output {k}")
        for k, (e, o) in enumerate(zip(e_grads, g_grads)):
            if e is None:
                assert o is None, (name, k)
                continue
            np.testing.assert_array_equal(o.numpy(), e.numpy(), err_msg=f"{name} gradient of input {k}")
    assert g._compile_count == 1
    for p, x in zip(holder.params, [inputs[i] for i in float_at]):  # lr 0: parameters untouched
        np.testing.assert_array_equal(p.detach().numpy(), x.numpy())
