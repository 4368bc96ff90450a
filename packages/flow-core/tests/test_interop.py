"""NumPy and DLPack interop (zero-copy both ways), tolist/item for every dtype."""
import numpy as np
import pytest

import oneflow as flow
from helpers import torch

ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
NUMPY_OK = [d for d in ALL if d != "bfloat16"]


def test_numpy_shares_memory_both_ways():
    t = flow.arange(6, dtype=flow.float32).view(2, 3)
    a = t.numpy()
    assert a.dtype == np.float32 and a.shape == (2, 3)
    a[0, 1] = 42
    assert t.tolist()[0][1] == 42
    t.add_(1)
    assert a[1, 2] == 6
    v = t.t().numpy()  # a strided view keeps its strides
    assert v.shape == (3, 2) and not v.flags["C_CONTIGUOUS"]
    assert np.shares_memory(v, a)


@pytest.mark.parametrize("dtype", NUMPY_OK)
def test_numpy_dtypes_round_trip(dtype):
    t = flow.tensor([1, 0, 1], dtype=getattr(flow, dtype))
    a = t.numpy()
    assert a.dtype == np.dtype(dtype if dtype != "bool" else np.bool_)
    b = flow.from_numpy(a)
    assert b.dtype == t.dtype and b.tolist() == t.tolist()
    assert flow.tensor(3, dtype=getattr(flow, dtype)).numpy().shape == ()


def test_numpy_errors():
    with pytest.raises(TypeError, match="BFloat16"):
        flow.ones(2, dtype=flow.bfloat16).numpy()
    with pytest.raises(RuntimeError, match="requires grad"):
        flow.ones(2, requires_grad=True).numpy()
    assert flow.ones(2, requires_grad=True).detach().numpy().tolist() == [1, 1]
    assert np.asarray(flow.ones(2, dtype=flow.bfloat16)).dtype == np.float32  # __array__ converts


def test_from_numpy_shares_memory_and_keeps_strides():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    t = flow.from_numpy(a)
    a[0, 0] = -5
    assert t.tolist()[0][0] == -5
    t.mul_(2)
    assert a[2, 3] == 22
    s = flow.from_numpy(a[:, ::2])  # non-contiguous: shared, not copied
    assert s.shape == (3, 2) and s.tolist() == a[:, ::2].tolist()
    a[1, 2] = 1000
    assert s.tolist()[1][1] == 1000
    tt = flow.from_numpy(a.T)
    assert tt.stride() == (1, 4) and tt.tolist() == a.T.tolist()
    e = flow.from_numpy(np.zeros((0, 3), np.float32))
    assert e.shape == (0, 3)
    z = flow.from_numpy(np.array(2.5))
    assert z.dim() == 0 and z.item() == 2.5


def test_from_numpy_errors():
    with pytest.raises(ValueError, match="negative"):
        flow.from_numpy(np.arange(5)[::-1])
    with pytest.raises(TypeError):
        flow.from_numpy(np.zeros(2, dtype=np.complex64))
    with pytest.raises(TypeError):
        flow.from_numpy([1, 2])
    with pytest.raises(TypeError):
        flow.from_numpy(np.array(["a"]))


def test_from_numpy_keeps_array_alive():
    t = flow.from_numpy(np.arange(1000, dtype=np.float64))
    import gc

    gc.collect()
    assert t.tolist()[999] == 999.0


def test_dlpack_with_numpy():
    t = flow.arange(6, dtype=flow.float32).view(2, 3)
    a = np.from_dlpack(t)
    a[1, 1] = -1
    assert t.tolist()[1][1] == -1
    b = np.arange(4, dtype=np.int32)
    f = flow.from_dlpack(b)
    b[0] = 9
    assert f.dtype == flow.int32 and f.tolist()[0] == 9


@pytest.mark.parametrize("dtype", ALL)
def test_dlpack_with_torch_shares_memory(dtype):
    f = flow.tensor([1, 0, 1, 1], dtype=getattr(flow, dtype))
    t = torch.from_dlpack(f)
    assert str(t.dtype).split(".")[-1] == dtype and t.tolist() == f.tolist()
    assert t.data_ptr() == f.data_ptr()
    t[0] = 0
    assert f.tolist()[0] == 0
    src = torch.tensor([1, 1, 0], dtype=getattr(torch, dtype))
    g = flow.from_dlpack(src)
    assert g.dtype == getattr(flow, dtype) and g.tolist() == src.tolist()
    src[2] = 1
    assert g.tolist()[2] == 1


def test_dlpack_strided_and_zero_size():
    src = torch.arange(12.0).view(3, 4).t()
    g = flow.from_dlpack(src)
    assert g.shape == (4, 3) and g.stride() == (1, 4) and g.tolist() == src.tolist()
    e = flow.from_dlpack(torch.zeros(0, 2))
    assert e.shape == (0, 2)
    back = torch.from_dlpack(flow.ones(3, 2).t())
    assert back.shape == (2, 3) and back.stride() == (1, 2)
    s = torch.from_dlpack(flow.tensor(5))
    assert s.dim() == 0 and s.item() == 5
    # a torch view of a flow tensor outlives the flow handle
    f = flow.arange(5.0)
    t = torch.from_dlpack(f)
    del f
    import gc

    gc.collect()
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert flow.ones(2).__dlpack_device__() == (1, 0)


def test_dlpack_capsule():
    cap = torch.to_dlpack(torch.arange(3))
    assert flow.from_dlpack(cap).tolist() == [0, 1, 2]
    with pytest.raises(TypeError):
        flow.from_dlpack(object())


@pytest.mark.parametrize("dtype", ALL)
def test_tolist_and_item_match_torch(dtype):
    vals = [[1.5, -2.0, 0.0], [3.25, 1.0, -0.5]]
    if dtype in ("uint8",):
        vals = [[1, 2, 0], [3, 255, 7]]
    f = flow.tensor(vals, dtype=getattr(flow, dtype))
    t = torch.tensor(vals, dtype=getattr(torch, dtype))
    fl, tl = f.tolist(), t.tolist()
    assert fl == tl
    assert type(fl[0][0]) is type(tl[0][0])
    assert f.t().tolist() == t.t().tolist()
    fi, ti = flow.tensor(vals[0][0], dtype=getattr(flow, dtype)).item(), torch.tensor(vals[0][0], dtype=getattr(
        torch, dtype)).item()
    assert fi == ti and type(fi) is type(ti)
    assert flow.tensor(vals[1][0], dtype=getattr(flow, dtype)).tolist() == torch.tensor(
        vals[1][0], dtype=getattr(torch, dtype)).tolist()
    assert flow.zeros(0, 2, dtype=getattr(flow, dtype)).tolist() == []


def test_item_errors():
    with pytest.raises((RuntimeError, ValueError)):
        flow.ones(2).item()
    assert flow.ones(1, 1).item() == 1.0
    assert float(flow.tensor(2.5)) == 2.5 and int(flow.tensor(7)) == 7
