"""The DLPack protocol on oneflow tensors (``Tensor.__dlpack__``, ``Tensor.__dlpack_device__``) and
``oneflow.from_dlpack``; the capsules themselves are made and consumed in C++ (csrc/python/dlpack_bind.cpp)."""
from . import _C

# DLPack's DLDeviceType codes for the devices a tensor can be on (DLPack has no meta device).
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST = 1, 2, 3
_DL_DEVICE_NAMES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi",
                    10: "rocm", 11: "rocm_host", 12: "ext_dev", 13: "cuda_managed", 14: "oneapi", 15: "webgpu",
                    16: "hexagon", 17: "maia"}


def dlpack_device(tensor):
    """``(device_type, device_id)`` as DLPack codes them."""
    dev = tensor.device
    if dev.type == "cuda":
        return (_DL_CUDA, dev.index or 0)
    if dev.type != "cpu":
        raise BufferError(f"__dlpack_device__: tensors on the '{dev.type}' device can't be exchanged through DLPack")
    return (_DL_CPU, 0)


def export(tensor, stream=None, max_version=None, dl_device=None, copy=None):
    """What ``Tensor.__dlpack__`` returns: a capsule sharing the tensor's memory (see its docstring)."""
    if tensor.requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if stream is not None and not isinstance(stream, int):
        raise TypeError(f"__dlpack__: stream must be an int or None, got {type(stream).__name__}")
    if dl_device is not None:
        dl_device = tuple(int(x) for x in dl_device)
        if dl_device != dlpack_device(tensor):
            name = _DL_DEVICE_NAMES.get(dl_device[0], f"type {dl_device[0]}")
            raise BufferError(f"__dlpack__: can't export a tensor on {tensor.device} to DLPack device "
                              f"{name}:{dl_device[1]}; oneflow exports tensors on their own device only")
    versioned = max_version is not None and int(max_version[0]) >= 1
    if copy:
        # a copy the consumer owns alone; the IS_COPIED flag tells it so (versioned capsules only carry flags)
        return _C._to_dlpack(_C.ops.clone(tensor.detach()), versioned, True)
    return _C._to_dlpack(tensor.detach(), versioned, False)


def from_dlpack(ext_tensor):
    """``oneflow.from_dlpack``: see :func:`oneflow.from_dlpack`."""
    if not hasattr(ext_tensor, "__dlpack__"):
        return _C._from_dlpack_capsule(ext_tensor)  # a raw capsule (or a clear TypeError)
    if hasattr(ext_tensor, "__dlpack_device__"):
        kind, index = ext_tensor.__dlpack_device__()
        if int(kind) not in (_DL_CPU, _DL_CUDA_HOST):
            name = _DL_DEVICE_NAMES.get(int(kind), f"type {int(kind)}")
            raise BufferError(f"from_dlpack: can't import a {type(ext_tensor).__name__} on DLPack device "
                              f"{name}:{int(index)}; this build of oneflow imports CPU memory only (copy it to the "
                              "CPU first)")
    try:
        capsule = ext_tensor.__dlpack__(max_version=_C._dlpack_version)
    except TypeError:  # producers older than DLPack 1.0 take no max_version and make legacy capsules
        capsule = ext_tensor.__dlpack__()
    return _C._from_dlpack_capsule(capsule)
