"""tensordot, addr, addbmm, hsplit/vsplit/dsplit, row_stack, logit and sinc against torch: values,
gradients (through check_vs_torch), and the errors."""
import numpy as np
import pytest
import torch

import oneflow as flow
from helpers import check_vs_torch

rng = np.random.default_rng(21)


def R(*s):
    return rng.standard_normal(s).astype(np.float32)


@pytest.mark.parametrize("dims", [2, 1, 0, ([1, 0], [0, 1]), ([2], [1]), [[0, 2], [1, 2]]])
def test_tensordot(dims):
    a, b = R(3, 4, 5), R(4, 3, 5) if not isinstance(dims, int) else R(4, 5, 2)
    if dims == ([2], [1]):
        b = R(2, 5, 3)
    if dims == [[0, 2], [1, 2]]:
        b = R(2, 3, 5)
    if dims == 1:
        b = R(5, 2)
    check_vs_torch(lambda x, y: flow.tensordot(x, y, dims), lambda x, y: torch.tensordot(x, y, dims), [a, b],
                   rtol=1e-4, atol=1e-5)


def test_tensordot_errors():
    with pytest.raises(RuntimeError, match="contracted dimensions need to match, but first has size 4 in dim 1"):
        flow.tensordot(flow.ones(3, 4), flow.ones(5, 2), 1)
    with pytest.raises(RuntimeError, match="both dimension lists should have same length"):
        flow.tensordot(flow.ones(3, 4), flow.ones(4, 3), ([0, 1], [1]))


def test_addr_and_addbmm():
    check_vs_torch(lambda i, u, v: flow.addr(i, u, v, beta=0.5, alpha=2),
                   lambda i, u, v: torch.addr(i, u, v, beta=0.5, alpha=2), [R(3, 4), R(3), R(4)])
    check_vs_torch(lambda i, u, v: i.addr(u, v), lambda i, u, v: i.addr(u, v), [R(4), R(3), R(4)])  # broadcast
    nan = np.full((2, 2), np.nan, np.float32)
    np.testing.assert_allclose(flow.addr(flow.tensor(nan), flow.ones(2), flow.ones(2), beta=0).numpy(),
                               np.ones((2, 2)))
    check_vs_torch(lambda i, a, b: flow.addbmm(i, a, b, beta=0.3, alpha=1.5),
                   lambda i, a, b: torch.addbmm(i, a, b, beta=0.3, alpha=1.5), [R(2, 3), R(4, 2, 5), R(4, 5, 3)],
                   rtol=1e-4, atol=1e-5)
    check_vs_torch(lambda i, a, b: i.addbmm(a, b), lambda i, a, b: i.addbmm(a, b), [R(3), R(4, 2, 5), R(4, 5, 3)],
                   rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="addr: Expected 1-D argument vec1, but got 2-D"):
        flow.addr(flow.ones(2, 2), flow.ones(2, 1), flow.ones(2))


def test_directional_splits_and_row_stack():
    x = np.arange(2 * 4 * 6, dtype=np.float32).reshape(2, 4, 6)
    for name, arg in (("hsplit", 2), ("hsplit", [1, 3]), ("vsplit", 2), ("dsplit", 3), ("dsplit", [2, 5])):
        got = getattr(flow, name)(flow.tensor(x), arg)
        want = getattr(torch, name)(torch.tensor(x), arg)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    np.testing.assert_array_equal(flow.tensor(x[0, 0]).hsplit(3)[2].numpy(), x[0, 0, 4:])  # 1-D: along dim 0
    for case in (lambda L: L.hsplit(L.ones(2, 5), 2), lambda L: L.vsplit(L.ones(3), 1),
                 lambda L: L.dsplit(L.ones(2, 2), 1), lambda L: L.hsplit(L.tensor(1.0), 1)):
        with pytest.raises(RuntimeError) as want:
            case(torch)
        with pytest.raises(RuntimeError, match=str(want.value).replace("(", r"\(").replace(")", r"\)")):
            case(flow)
    np.testing.assert_array_equal(flow.row_stack([flow.ones(3), flow.zeros(3)]).numpy(),
                                  torch.row_stack([torch.ones(3), torch.zeros(3)]).numpy())


def test_logit_and_sinc():
    p = rng.uniform(0.01, 0.99, (3, 4)).astype(np.float32)
    check_vs_torch(lambda x: flow.logit(x), lambda x: torch.logit(x), [p], rtol=1e-5, atol=1e-6)
    check_vs_torch(lambda x: flow.logit(x, eps=0.1), lambda x: torch.logit(x, eps=0.1), [p], rtol=1e-5, atol=1e-6)
    edge = np.array([0.0, 1.0, 0.5], np.float32)
    np.testing.assert_array_equal(flow.logit(flow.tensor(edge)).numpy(), torch.logit(torch.tensor(edge)).numpy())
    x = R(3, 4)
    x[0, 0] = 0.0
    check_vs_torch(lambda t: flow.sinc(t), lambda t: torch.sinc(t), [x], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(flow.tensor(x).sinc().numpy(), torch.tensor(x).sinc().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(flow.sinc(flow.tensor([0, 1, 2])).numpy(), torch.sinc(torch.tensor([0, 1, 2])).numpy(),
                               atol=1e-6)  # integers: default float dtype
