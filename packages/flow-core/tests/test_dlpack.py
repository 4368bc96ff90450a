"""The DLPack protocol (Tensor.__dlpack__/__dlpack_device__, flow.from_dlpack) against NumPy, PyTorch and a
DLTensor built by hand with ctypes (the ABI itself), and oneflow.utils.tensor.from_torch/to_torch."""
import ctypes
import gc
import warnings
import weakref

import numpy as np
import pytest

import oneflow as flow
from oneflow.utils.tensor import from_torch, to_torch
from helpers import torch

ALL = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def capsule_name(cap):
    get = ctypes.pythonapi.PyCapsule_GetName
    get.restype, get.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return get(cap).decode()


def allocated():
    gc.collect()
    return flow._C._allocator_stats()["allocated_bytes"]


# ---- capsules ---------------------------------------------------------------------------------------------------
def test_capsule_kinds_and_consumption():
    f = flow.arange(4.0)
    legacy, versioned = f.__dlpack__(), f.__dlpack__(max_version=(1, 0))
    assert capsule_name(legacy) == "dltensor" and capsule_name(versioned) == "dltensor_versioned"
    assert capsule_name(f.__dlpack__(max_version=(0, 8))) == "dltensor"  # a pre-1.0 consumer
    g = flow.from_dlpack(legacy)
    assert capsule_name(legacy) == "used_dltensor" and g.data_ptr() == f.data_ptr()
    t = torch.utils.dlpack.from_dlpack(versioned)
    assert capsule_name(versioned) == "used_dltensor_versioned" and t.data_ptr() == f.data_ptr()
    with pytest.raises(ValueError, match="already consumed"):
        flow.from_dlpack(legacy)
    with pytest.raises(TypeError, match="DLPack capsule or an object with __dlpack__"):
        flow.from_dlpack(object())


def test_exported_capsule_keeps_the_storage_alive():
    base = allocated()
    f = flow.ones(1 << 18)  # 1 MiB
    cap = f.__dlpack__(max_version=(1, 1))
    del f
    assert allocated() - base >= 1 << 20  # the capsule holds the storage
    del cap  # never consumed: its destructor calls the deleter
    assert allocated() - base < 1 << 20
    f = flow.arange(5.0)
    cap = f.__dlpack__()
    del f
    gc.collect()
    assert torch.from_dlpack(cap).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_imported_memory_lives_as_long_as_the_tensor():
    a = np.arange(10.0)
    alive = weakref.ref(a)
    f = flow.from_dlpack(a)
    view = f[2:5]
    del a, f
    gc.collect()
    assert alive() is not None and view.tolist() == [2.0, 3.0, 4.0]
    del view
    gc.collect()
    assert alive() is None  # the last view released NumPy's capsule through its deleter


# ---- a DLTensor made by hand: the struct layouts and every field ------------------------------------------------
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


LEGACY_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", LEGACY_DELETER)]


class DLManagedTensorVersioned(ctypes.Structure):
    pass


VERSIONED_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                                     ("manager_ctx", ctypes.c_void_p), ("deleter", VERSIONED_DELETER),
                                     ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_NAMES = {n: ctypes.create_string_buffer(n.encode()) for n in ("dltensor", "dltensor_versioned")}


def make_capsule(managed, name):
    # a capsule keeps the pointer to its name, not a copy: the names live in _NAMES
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    return new(ctypes.addressof(managed), ctypes.addressof(_NAMES[name]), None)


def hand_made(versioned, major=1, code=2, bits=32, device_type=1, flags=0):
    """A 2x3 float32 view with strides (1, 2) at element offset 1 of a 7-float buffer, as a capsule."""
    buf = (ctypes.c_float * 7)(*range(7))
    shape, strides = (ctypes.c_int64 * 2)(2, 3), (ctypes.c_int64 * 2)(1, 2)
    dl = DLTensor(ctypes.cast(buf, ctypes.c_void_p), DLDevice(device_type, 0), 2, DLDataType(code, bits, 1),
                  shape, strides, 4)
    deleted = []
    if versioned:
        deleter = VERSIONED_DELETER(lambda p: deleted.append(True))
        managed = DLManagedTensorVersioned(major, 1, None, deleter, flags, dl)
        cap = make_capsule(managed, "dltensor_versioned")
    else:
        deleter = LEGACY_DELETER(lambda p: deleted.append(True))
        managed = DLManagedTensor(dl, None, deleter)
        cap = make_capsule(managed, "dltensor")
    return cap, deleted, (buf, shape, strides, deleter, managed)


@pytest.mark.parametrize("versioned", [False, True])
def test_hand_made_dltensor(versioned):
    cap, deleted, keep = hand_made(versioned)
    f = flow.from_dlpack(cap)
    assert capsule_name(cap) == ("used_dltensor_versioned" if versioned else "used_dltensor")
    assert f.shape == (2, 3) and f.stride() == (1, 2) and f.dtype == flow.float32
    assert f.tolist() == [[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]  # byte_offset 4 skips element 0
    f[0, 0] = 100.0
    assert keep[0][1] == 100.0  # the producer's memory itself
    assert not deleted
    del f
    gc.collect()
    assert deleted == [True]  # the deleter ran once, when the tensor died


def test_hand_made_dltensor_refusals_leave_the_capsule_to_its_owner():
    cap, deleted, keep = hand_made(True, major=2)
    with pytest.raises(BufferError, match="DLPack 2.1, but oneflow supports DLPack up to 1"):
        flow.from_dlpack(cap)
    assert capsule_name(cap) == "dltensor_versioned" and not deleted
    cap, deleted, keep = hand_made(False, code=5, bits=64)
    with pytest.raises(TypeError, match="complex64 is not supported by oneflow"):
        flow.from_dlpack(cap)
    assert capsule_name(cap) == "dltensor"
    cap, deleted, keep = hand_made(False, device_type=2)
    with pytest.raises(BufferError, match="DLPack device cuda:0 .*CPU memory only"):
        flow.from_dlpack(cap)
    cap, deleted, keep = hand_made(False, code=2, bits=8)
    with pytest.raises(TypeError, match="float8 is not supported"):
        flow.from_dlpack(cap)


def test_read_only_flag_warns():
    cap, deleted, keep = hand_made(True, flags=1)
    with pytest.warns(UserWarning, match="read-only"):
        flow.from_dlpack(cap).sum()


# ---- NumPy --------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [d for d in ALL if d != "bfloat16"])
def test_numpy_both_ways_share_memory(dtype):
    f = flow.tensor([[1, 0, 1], [0, 1, 1]], dtype=getattr(flow, dtype))
    a = np.from_dlpack(f)
    assert a.dtype == np.dtype(dtype if dtype != "bool" else np.bool_) and a.tolist() == f.tolist()
    a[0, 1] = 1
    assert f.tolist()[0][1] == 1
    b = np.zeros((2, 3), dtype=np.dtype(dtype if dtype != "bool" else np.bool_))
    g = flow.from_dlpack(b)
    b[1, 2] = 1
    assert g.dtype == f.dtype and g.tolist()[1][2] == 1


def test_numpy_layouts():
    f = flow.arange(24.0).view(2, 3, 4)
    for view in (f.permute(2, 0, 1), f[:, 1:, ::2], f[1], f[0, 0, 0], f[:, :0]):
        a = np.from_dlpack(view)
        assert a.shape == tuple(view.shape) and a.tolist() == view.tolist()
        if view.numel():
            assert [s // 4 for s in a.strides] == list(view.stride())
    a = np.arange(24, dtype=np.int64).reshape(4, 6)[1:, ::3]
    g = flow.from_dlpack(a)
    assert g.stride() == (6, 3) and g.tolist() == a.tolist()
    a[0, 0] = -1
    assert g[0, 0].item() == -1


def test_numpy_copy_and_device_requests():
    f = flow.arange(3.0)
    c = np.from_dlpack(f, copy=True)
    c[0] = 9.0
    assert f.tolist() == [0.0, 1.0, 2.0]
    shared = np.from_dlpack(f, copy=False)
    shared[1] = 7.0
    assert f[1].item() == 7.0
    assert f.__dlpack_device__() == (1, 0)


def test_read_only_numpy_array_is_shared_with_a_warning():
    a = np.arange(3.0)
    a.flags.writeable = False
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        g = flow.from_dlpack(a)
    assert g.tolist() == [0.0, 1.0, 2.0] and g.data_ptr() == a.ctypes.data
    assert any("read-only" in str(x.message) for x in w)


# ---- PyTorch ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL)
def test_torch_both_ways_share_memory(dtype):
    f = flow.tensor([1, 0, 1, 1], dtype=getattr(flow, dtype))
    t = torch.from_dlpack(f)
    assert t.dtype == getattr(torch, dtype) and t.data_ptr() == f.data_ptr()
    t[1] = 1
    assert f.tolist()[1] == 1
    src = torch.tensor([0, 1, 0], dtype=getattr(torch, dtype))
    g = flow.from_dlpack(src)
    assert g.dtype == getattr(flow, dtype) and g.data_ptr() == src.data_ptr()
    g[0] = 1
    assert src.tolist()[0] == 1


def test_torch_layouts_and_lifetimes():
    src = torch.arange(60.0).view(3, 4, 5)
    for view in (src.transpose(0, 2), src[1:, ::2, 3], src[2, 1, 4], src[:, :0], src.expand(2, 3, 4, 5)):
        g = flow.from_dlpack(view)
        assert tuple(g.shape) == tuple(view.shape) and g.stride() == view.stride() and g.tolist() == view.tolist()
    f = flow.arange(60.0).view(3, 4, 5)
    for view in (f.transpose(0, 2), f[1:, ::2, 3], f[2, 1, 4], f[:, :0]):
        t = torch.from_dlpack(view)
        assert tuple(t.shape) == tuple(view.shape) and t.stride() == view.stride() and t.tolist() == view.tolist()
    t = torch.from_dlpack(f[1])
    del f
    gc.collect()
    assert t[0, 0].item() == 20.0
    g = flow.from_dlpack(torch.ones(3) * 2)  # the torch temporary dies, its memory does not
    gc.collect()
    assert g.tolist() == [2.0, 2.0, 2.0]


def test_torch_unsupported_dtypes_and_protocol_errors():
    with pytest.raises(TypeError, match="complex64 is not supported by oneflow"):
        flow.from_dlpack(torch.zeros(2, dtype=torch.complex64))
    with pytest.raises(TypeError, match="uint16 is not supported by oneflow"):
        flow.from_dlpack(torch.zeros(2, dtype=torch.uint16))
    with pytest.raises(BufferError, match="require gradient"):
        flow.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError, match="to DLPack device cuda:0"):
        flow.ones(2).__dlpack__(dl_device=(2, 0))
    assert capsule_name(flow.ones(2).__dlpack__(dl_device=(1, 0))) == "dltensor"
    with pytest.raises(TypeError, match="stream must be an int"):
        flow.ones(2).__dlpack__(stream="s")
    with pytest.raises(BufferError, match="device 'meta'.*CPU memory only"):
        flow.ones(2, device="meta").__dlpack__()

    class OnGpu:
        def __dlpack_device__(self):
            return (2, 1)

        def __dlpack__(self, **kw):
            raise AssertionError("not asked: the device is checked first")

    with pytest.raises(BufferError, match="OnGpu on DLPack device cuda:1"):
        flow.from_dlpack(OnGpu())


def test_legacy_producer_without_max_version():
    class Legacy:  # a pre-1.0 producer: __dlpack__(stream=None) only
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return torch.utils.dlpack.to_dlpack(self.t)

    src = torch.arange(3)
    assert flow.from_dlpack(Legacy(src)).tolist() == [0, 1, 2]


# ---- from_torch / to_torch ----------------------------------------------------------------------------------------
def test_from_torch_and_to_torch_share_memory():
    t = torch.arange(12.0).view(3, 4)[:, 1::2]
    f = from_torch(t)
    assert f.shape == (3, 2) and f.stride() == (4, 2) and f.data_ptr() == t.data_ptr()
    f.mul_(10)
    assert t.tolist() == [[10.0, 30.0], [50.0, 70.0], [90.0, 110.0]]
    back = to_torch(f)
    assert back.data_ptr() == t.data_ptr() and back.stride() == (4, 2)
    back.zero_()
    assert f.sum().item() == 0
    b = from_torch(torch.tensor([True, False]))
    assert b.dtype == flow.bool and to_torch(b).dtype == torch.bool


def test_gradients_are_not_shared():
    w = torch.ones(3, requires_grad=True)
    f = from_torch(w)
    assert not f.requires_grad and f.is_leaf
    f.requires_grad_()
    (f * 2).sum().backward()
    assert f.grad.tolist() == [2.0, 2.0, 2.0] and w.grad is None
    p = flow.nn.Parameter(flow.ones(2))
    t = to_torch(p)
    assert not t.requires_grad and t.data_ptr() == p.data_ptr()


def test_from_torch_errors():
    with pytest.raises(RuntimeError, match="torch.sparse_coo torch tensor"):
        from_torch(torch.eye(2).to_sparse())
    with pytest.raises(RuntimeError, match="on 'meta'.*CPU memory only"):
        from_torch(torch.ones(2, device="meta"))
    with pytest.raises(TypeError, match="expected a torch.Tensor, got numpy.ndarray"):
        from_torch(np.ones(2))
    with pytest.raises(TypeError, match="expected a oneflow.Tensor"):
        to_torch(torch.ones(2))
