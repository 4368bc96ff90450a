"""``Tensor.set_`` and ``Tensor.is_set_to``: pointing a tensor at another tensor's (or a storage's) memory
with a chosen geometry, and asking whether two tensors view the same memory the same way; plus
``Tensor.data_ptr`` (0 when empty, as in PyTorch) and ``Tensor.const_data_ptr``."""
from .. import _C
from ._names import torch_dtype_name


def _storage_block(storage, dtype):
    """The whole memory block of ``storage`` as a 1-D tensor of ``dtype`` (its bytes reinterpreted when
    ``dtype`` is not the storage's own), sharing that memory."""
    raw = storage._bytes()
    size = _itemsize(dtype)
    count = raw.shape[0] // size
    raw = raw.narrow(0, 0, count * size)
    return raw if dtype == _C.uint8 else raw.view(dtype)


def _itemsize(dtype):
    return _C._empty([0], dtype, None).element_size()


def _contiguous_strides(size):
    strides, step = [], 1
    for n in reversed(size):
        strides.append(step)
        step *= max(n, 1)
    return strides[::-1]


def set_(self, source=None, storage_offset=None, size=None, stride=None):
    """set_(source=None, storage_offset=0, size=None, stride=None) -> Tensor

    Sets the memory, size and strides of ``self`` (in place):

    - ``set_()``: an empty tensor over new, empty memory;
    - ``set_(source)`` with a tensor: the memory, size, strides and offset of ``source`` (same dtype), so
      writes through either tensor are seen by the other;
    - ``set_(source)`` with a storage: all of the storage, as a 1-D tensor of ``self``'s dtype;
    - ``set_(source, storage_offset, size, stride=None)``: that geometry over ``source``'s memory (contiguous
      strides when ``stride`` is omitted).

    ``self`` keeps its own autograd identity. As in PyTorch a leaf that requires grad cannot be set; a tensor
    with autograd history cannot either (PyTorch accepts it but then cannot differentiate through it).
    Memory is never grown to fit the geometry: one that does not fit raises."""
    from .storage import UntypedStorage, TypedStorage

    if self.requires_grad and _C.is_grad_enabled():
        if self.is_leaf:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
        raise RuntimeError("set_(): cannot set a tensor that has autograd history: no gradient is defined for "
                           "set_; call it on tensor.detach() instead.")
    if source is None:
        if storage_offset is not None or size is not None:
            raise TypeError("set_() received an invalid combination of arguments: a storage offset or size "
                            "without a source")
        target = _C._empty([0], self.dtype, None)
    elif isinstance(source, _C.TensorBase):
        if source.dtype != self.dtype:
            raise RuntimeError(f"Could not set tensor of type {_torch_type(source.dtype)} to a tensor of type "
                               f"{_torch_type(self.dtype)}")
        target = source.detach()
    elif isinstance(source, UntypedStorage):
        if isinstance(source, TypedStorage) and source.dtype != self.dtype:
            raise RuntimeError(f"Expected a Storage of type {_torch_type(self.dtype)} or an UntypedStorage, but got "
                               f"type {torch_dtype_name(source.dtype)} for argument 1 'storage'")
        target = _storage_block(source, self.dtype)
    else:
        raise TypeError(f"set_(): argument 'source' (position 1) must be Tensor or Storage, not "
                        f"{type(source).__name__}")
    if (size is None) != (storage_offset is None):
        raise TypeError("set_() received an invalid combination of arguments: storage_offset and size go "
                        "together, as in (source, storage_offset, size, stride=None)")
    if size is not None:
        size = [int(n) for n in size]
        stride = _contiguous_strides(size) if stride is None or len(stride) == 0 else [int(s) for s in stride]
        if len(stride) != len(size):
            raise RuntimeError(f"unequal size length ({len(size)}) and stride length ({len(stride)})")
        target = target.as_strided(size, stride, int(storage_offset or 0))
    self.data = target
    self._bump_version()
    return self


def _torch_type(dtype):
    # PyTorch's message uses the C++ scalar-type spelling: float, double, long, ...
    return {_C.float32: "float", _C.float64: "double", _C.float16: "c10::Half", _C.bfloat16: "c10::BFloat16",
            _C.int64: "long int", _C.int32: "int", _C.int16: "short int", _C.int8: "signed char",
            _C.uint8: "unsigned char", _C.bool: "bool"}.get(dtype, str(dtype))


def is_set_to(self, tensor):
    """is_set_to(tensor) -> bool

    True if both tensors view the same memory block with the same storage offset, size and strides."""
    if not isinstance(tensor, _C.TensorBase):
        raise TypeError(f"is_set_to(): argument 'tensor' (position 1) must be Tensor, not "
                        f"{type(tensor).__name__}")
    return (self._storage_ptr() == tensor._storage_ptr() and self._storage_nbytes() == tensor._storage_nbytes()
            and self.storage_offset() == tensor.storage_offset() and list(self.shape) == list(tensor.shape)
            and list(self.stride()) == list(tensor.stride()))


def data_ptr(self):
    """data_ptr() -> int

    The address of the tensor's first element; 0 for a tensor with no elements, as in PyTorch (even for an
    empty view into a non-empty storage)."""
    return 0 if self.numel() == 0 else _C.TensorBase.data_ptr(self)


def const_data_ptr(self):
    """const_data_ptr() -> int

    The address of the tensor's first element, for reading (the same as :meth:`data_ptr`)."""
    return self.data_ptr()


TENSOR_METHODS = {"set_": set_, "is_set_to": is_set_to, "data_ptr": data_ptr, "const_data_ptr": const_data_ptr}
