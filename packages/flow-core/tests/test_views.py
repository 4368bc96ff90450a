"""View ops: shapes and values like PyTorch, storage sharing, gradients, and bad-view errors."""
import numpy as np
import pytest

import oneflow as flow
from helpers import assert_close, check_vs_torch, gradcheck, torch

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4)

CASES = [
    ("view", lambda x: x.view(4, 6), None),
    ("view_infer", lambda x: x.view(-1, 2), None),
    ("reshape_noncontig", lambda x: x.transpose(0, 2).reshape(-1), None),
    ("expand", lambda x: x[:, :1, :].expand(2, 5, 4) if False else x.sum(1, keepdim=True).expand(2, 5, 4), None),
    ("expand_new_dims", lambda x: x.expand(3, 2, 3, 4), None),
    ("permute", lambda x: x.permute(2, 0, 1), None),
    ("permute_neg", lambda x: x.permute(-1, 0, 1), None),
    ("transpose", lambda x: x.transpose(-1, 0), None),
    ("t", lambda x: x.sum(0).t(), None),
    ("squeeze_unsqueeze", lambda x: x.unsqueeze(1).unsqueeze(-1).squeeze(), None),
    ("squeeze_dim", lambda x: x.unsqueeze(0).squeeze(0), None),
    ("flatten", lambda x: x.flatten(1), None),
    ("unflatten", lambda x: x.unflatten(2, (2, 2)), None),
    ("narrow", lambda x: x.narrow(2, 1, 2), None),
    ("select", lambda x: x.select(1, -1), None),
    ("split", lambda x: x.split(2, dim=2), None),
    ("split_sizes", lambda x: x.split([1, 2], dim=1), None),
    ("chunk", lambda x: x.chunk(3, 2), None),
    ("unbind", lambda x: x.unbind(1), None),
    ("diagonal", lambda x: x.diagonal(0, 1, 2), None),
    ("diagonal_offset", lambda x: x.diagonal(1, -1, -2), None),
    ("movedim", lambda x: x.movedim(0, -1), None),
    ("contiguous", lambda x: x.transpose(0, 1).contiguous(), None),
    ("as_strided", lambda x: x.contiguous().as_strided((3, 3), (4, 1), 2), None),
]


@pytest.mark.parametrize("name,fn,_", CASES, ids=[c[0] for c in CASES])
def test_view_ops_match_torch(name, fn, _):
    check_vs_torch(fn, fn, [A])


@pytest.mark.parametrize("name,fn,_", CASES, ids=[c[0] for c in CASES])
def test_view_ops_gradcheck(name, fn, _):
    x = flow.tensor(A.astype(np.float64) / 10, requires_grad=True)
    gradcheck(lambda t: fn(t), [x])


def test_views_share_storage():
    x = flow.zeros(3, 4)
    for v in (x.view(12), x.t(), x.narrow(1, 1, 2), x.select(0, 2), x.unsqueeze(0), x.diagonal(), x.expand(2, 3, 4)):
        assert v._storage_ptr() == x._storage_ptr()
        assert v._is_view and v._base is not None
    x.view(12).add_(1)
    assert x.sum().item() == 12


def test_zero_size_and_zero_dim():
    z = flow.zeros(0, 3)
    assert z.view(3, 0).shape == (3, 0)
    assert z.reshape(-1, 3).shape == (0, 3)
    s = flow.tensor(5.0)
    assert s.view(1, 1).shape == (1, 1)
    assert s.reshape([]).shape == ()
    assert s.unsqueeze(0).shape == (1,)
    assert s.expand(2, 3).tolist() == [[5.0] * 3] * 2
    assert s.squeeze().shape == () and s.t().shape == ()


def test_bad_views_raise():
    x = flow.zeros(2, 3)
    with pytest.raises(RuntimeError, match="is invalid for input of size 6"):
        x.view(4, 2)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.view(-1, -1)
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        x.t().view(6)
    with pytest.raises(RuntimeError, match="must match the existing size"):
        x.expand(2, 4)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.transpose(0, 2)
    with pytest.raises(RuntimeError, match="duplicate dims"):
        x.permute(0, 0)
    with pytest.raises(IndexError, match="out of range"):
        x.select(0, 5)
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        x.as_strided((4, 4), (4, 1))
    with pytest.raises(IndexError):
        x.narrow(1, 2, 5)


def test_cuda_device_is_recognised_with_clear_error():
    assert flow.device("cuda:1").index == 1 and flow.device("cuda").type == "cuda"
    with pytest.raises(RuntimeError, match="without CUDA"):
        flow.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        flow.device("tpu")


def test_caching_allocator_reuses_blocks():
    x = flow.ones(256, 256)
    for _ in range(3):
        (x * 2 + 1).sum()
    before = flow._C._allocator_stats()["num_system_allocs"]
    for _ in range(50):
        (x * 2 + 1).sum()
    assert flow._C._allocator_stats()["num_system_allocs"] == before


def test_version_counter_shared_by_views():
    x = flow.zeros(4)
    v = x.view(2, 2)
    v0 = x._version
    v.mul_(2)
    assert x._version == v0 + 1 == v._version
