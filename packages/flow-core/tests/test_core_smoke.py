"""Basic behaviour of the core: creation, arithmetic, views, autograd through the registry."""
import numpy as np
import pytest

import oneflow as flow
from helpers import check_vs_torch, gradcheck, torch


def test_add_broadcast_and_scalars():
    a = np.random.randn(2, 3).astype(np.float32)
    b = np.random.randn(3).astype(np.float32)
    check_vs_torch(lambda x, y: x + y * 2 - 1, lambda x, y: x + y * 2 - 1, [a, b])
    check_vs_torch(lambda x, y: 1 / (x * y + 3), lambda x, y: 1 / (x * y + 3), [a, b])


def test_type_promotion_matches_torch():
    for da, db in [(np.int32, np.float64), (np.int64, np.float32), (np.uint8, np.int8), (np.bool_, np.int16)]:
        a, b = np.ones(3, da), np.ones(3, db)
        f = flow.tensor(a) + flow.tensor(b)
        t = torch.tensor(a) + torch.tensor(b)
        assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert (flow.ones(2, dtype=flow.int32) * 2.5).dtype == flow.float32
    assert (flow.ones(2, dtype=flow.float16) + flow.tensor(1.0, dtype=flow.float64)).dtype == flow.float16


def test_views_share_storage_and_bump_version():
    x = flow.zeros(4, 6)
    v = x.view(6, 4).t()
    assert v.shape == (4, 6) and not v.is_contiguous()
    s = x[1] if hasattr(flow.Tensor, "__getitem__") else flow.select(x, 0, 1)
    before = x._version
    s.add_(1)
    assert x._version == before + 1
    assert x.numpy()[1].tolist() == [1.0] * 6


def test_backward_through_views_and_sum():
    x = flow.randn(3, 4, dtype=flow.float64, requires_grad=True) if hasattr(flow, "randn") else flow.tensor(
        np.random.randn(3, 4), requires_grad=True)
    gradcheck(lambda t: (t.view(4, 3).t() * t).sum(dim=1), [x])


def test_leaf_inplace_error():
    x = flow.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)


def test_modified_saved_tensor_error():
    x = flow.ones(3, requires_grad=True)
    y = x * 2
    z = y * y
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_numpy_zero_copy():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = flow.from_numpy(a)
    a[0, 0] = 42
    assert t.numpy()[0, 0] == 42
    t.numpy()[1, 2] = -1
    assert a[1, 2] == -1


def test_bad_broadcast_raises():
    with pytest.raises(RuntimeError, match="must match the size"):
        flow.ones(2, 3) + flow.ones(4)
