"""Elementwise results take their inputs' memory layout, by PyTorch's TensorIterator rule (a channels-last
or transposed input passes its layout on; contiguous inputs give contiguous results), and the loops walk
permuted operands in memory order."""
import numpy as np
import pytest

import oneflow as flow
from helpers import assert_close, torch


def _channels_last(lib, a):
    return lib.tensor(a).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)


CASES = {
    "contig+cl": lambda L, a, b: a + b,
    "cl+contig": lambda L, a, b: b + a,
    "cl+scalar": lambda L, a, b: b * 2.5,
    "cl*bcast": lambda L, a, b: b * L.ones(3, 1, 1),
    "bcast*cl": lambda L, a, b: L.ones(3, 1, 1) * b,
    "relu": lambda L, a, b: L.relu(b),
    "clone": lambda L, a, b: b.clone(),
    "to_double": lambda L, a, b: b.double(),
    "where": lambda L, a, b: L.where(b > 0, b, L.zeros(())),
    "size1_slice": lambda L, a, b: b[:, :, :1] + 1,
    "transposed": lambda L, a, b: a[0, 0].t() + 1,
    "transposed+contig": lambda L, a, b: a[0, 0].t() + a[0, 1].t().contiguous(),
    "contig+transposed": lambda L, a, b: a[0, 1].t().contiguous() + a[0, 0].t(),
    "permuted3d": lambda L, a, b: a[0].permute(2, 0, 1) - 1,
    "non_dense": lambda L, a, b: a[:, :, :, ::2] + 1,
}


@pytest.mark.parametrize("name", list(CASES))
def test_result_layout_and_values_match_torch(name):
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 5)).astype(np.float32)
    fr = CASES[name](flow, flow.tensor(x), _channels_last(flow, x))
    tr = CASES[name](torch, torch.tensor(x), torch.tensor(x).contiguous(memory_format=torch.channels_last))
    assert tuple(fr.stride()) == tuple(tr.stride())
    assert fr.is_contiguous() == tr.is_contiguous()
    assert_close(fr, tr)


def test_channels_last_chain_with_gradients():
    x = np.random.default_rng(1).standard_normal((2, 3, 4, 5)).astype(np.float32)
    fx = _channels_last(flow, x).requires_grad_()
    tx = torch.tensor(x).contiguous(memory_format=torch.channels_last).requires_grad_()
    outs = []
    for L, t in ((flow, fx), (torch, tx)):
        y = L.sigmoid(t * 3 + 1) * t
        y.sum().backward()
        outs.append((y, t.grad))
    assert tuple(outs[0][0].stride()) == tuple(outs[1][0].stride())
    assert_close(outs[0][0], outs[1][0].detach())
    assert_close(outs[0][1], outs[1][1])


def test_inplace_on_permuted_and_mixed_layouts():
    # in-place ops write permuted outputs in memory order; operands of other layouts still line up by index
    x = np.random.default_rng(2).standard_normal((4, 6, 5)).astype(np.float32)
    f, t = flow.tensor(x).permute(2, 0, 1), torch.tensor(x).permute(2, 0, 1)
    g = np.random.default_rng(3).standard_normal((5, 4, 6)).astype(np.float32)
    f.mul_(flow.tensor(g)).add_(flow.tensor(g).permute(0, 2, 1).contiguous().permute(0, 2, 1))
    t.mul_(torch.tensor(g)).add_(torch.tensor(g))
    assert_close(f, t)
    assert_close(flow.tensor(x), torch.tensor(x))  # untouched source
    base = flow.zeros(4, 6)
    base.t().copy_(flow.arange(24.0).reshape(6, 4))
    assert_close(base, torch.arange(24.0).reshape(6, 4).t())
