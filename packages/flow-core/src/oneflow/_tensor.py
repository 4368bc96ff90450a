"""``oneflow.Tensor``: the Python half of the tensor (the C++ half is ``_C.TensorBase``)."""
import builtins

import numpy as np

from . import _C


class Size(tuple):
    """The shape of a tensor: a tuple of ints (``oneflow.Size([2, 3])``)."""

    def __new__(cls, sizes=()):
        return super().__new__(cls, (builtins.int(s) for s in sizes))

    def __repr__(self):
        return f"oneflow.Size([{', '.join(str(s) for s in self)}])"

    def numel(self):
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, k):
        r = super().__getitem__(k)
        return Size(r) if isinstance(k, slice) else r

    def __add__(self, other):
        return Size(tuple(self) + tuple(other))


_C._set_size_class(Size)


def is_tensor(obj):
    """True if ``obj`` is a oneflow tensor."""
    return isinstance(obj, _C.TensorBase)


class Tensor(_C.TensorBase):
    """A multi-dimensional array with autograd.

    ``oneflow.Tensor(data)`` copies ``data`` as float32; ``oneflow.Tensor(2, 3)`` makes an uninitialised
    2×3 float32 tensor. Prefer ``oneflow.tensor(...)`` and the creation functions.
    """

    def __init__(self, *args, **kwargs):
        super().__init__()
        from ._ops import creation

        device = kwargs.pop("device", None)
        if kwargs:
            raise TypeError(f"Tensor(): unexpected keyword arguments {sorted(kwargs)}")
        if len(args) == 0:
            t = _C._empty([0], _C.float32, device)
        elif builtins.all(isinstance(a, builtins.int) for a in args):
            t = _C._empty(list(args), _C.float32, device)
        elif len(args) == 1:
            t = creation.tensor(args[0], dtype=_C.float32, device=device)
        else:
            raise TypeError("Tensor(): expected sizes or a single data argument")
        self._assign(t)

    # ---- conversion -------------------------------------------------------------------------------------
    def numpy(self, *, force=False):
        """The tensor's memory as a NumPy array (shared, no copy, on CPU)."""
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        return _C._to_numpy(self)

    def __array__(self, dtype=None, copy=None):
        a = _C._to_numpy(self.detach()) if self.dtype != _C.bfloat16 else _C._to_numpy(
            _C.ops.to_dtype(self.detach(), _C.float32))
        return a if dtype is None else a.astype(dtype)

    def tolist(self):
        """The data as (nested) Python lists of numbers."""
        t = self.detach()
        if t.dtype == _C.bfloat16:
            t = _C.ops.to_dtype(t, _C.float32)
        return _C._to_numpy(t).tolist()

    def __dlpack__(self, stream=None, **kwargs):
        """A DLPack capsule sharing this tensor's memory (``max_version``, ``dl_device``, ``copy`` as the standard)."""
        return _C._to_dlpack_array(self.detach()).__dlpack__(stream=stream, **kwargs)

    def __dlpack_device__(self):
        return (1, 0)

    def __len__(self):
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(_C.ops.select(self, 0, i) for i in range(self.shape[0]))

    def __bool__(self):
        if self.numel() != 1:
            raise RuntimeError(f"Boolean value of Tensor with more than one value is ambiguous")
        return builtins.bool(self.item())

    def __float__(self):
        return builtins.float(self.item())

    def __int__(self):
        return builtins.int(self.item())

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return builtins.int(self.item())

    def __complex__(self):
        return complex(self.item())

    __hash__ = object.__hash__

    def __repr__(self):
        from . import _printing

        return _printing.tensor_repr(self)

    def __str__(self):  # a subclass's repr (Parameter's "Parameter containing:") is its str too
        return self.__repr__()

    def __format__(self, spec):
        if self.dim() == 0 and self.has_storage_data():
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def has_storage_data(self):
        return not self.is_meta

    def __reduce_ex__(self, proto):
        arr = np.array(self.__array__(), copy=True)
        return (_rebuild_tensor, (arr, str(self.dtype).split(".")[-1], self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        with _C_no_grad():
            r = self._deepcopy_data(memo)
        r.requires_grad = self.requires_grad
        if self.grad is not None:
            r.grad = _C.ops.clone(self.grad.detach())
        if type(self) is not Tensor:
            r = _C._make_subclass(type(self), r, self.requires_grad)
            r.__dict__.update(self.__dict__)
        memo[id(self)] = r
        return r

    def _deepcopy_data(self, memo):
        """A copy of this tensor's values in a copy of its storage: tensors sharing a storage (views of one
        buffer, tied weights) share the copied one, memoized per storage as PyTorch's deepcopy does."""
        if not self.is_contiguous() or self.storage_offset() != 0 or self.untyped_storage().nbytes() != \
                self.numel() * self.element_size():
            key = ("oneflow.storage", self.untyped_storage().data_ptr(), self.dtype)
            flat = memo.get(key)
            if flat is None:
                whole = _C._empty([0], self.dtype, None).set_(self.untyped_storage())
                flat = memo[key] = _C.ops.clone(whole)
                memo.setdefault("oneflow.storages", []).append(whole)  # keeps the pointer's owner alive
            return _C.ops.as_strided(flat, list(self.shape), list(self.stride()), self.storage_offset()).detach()
        key = ("oneflow.storage", self.data_ptr(), self.dtype)
        if key in memo:  # a full-storage tensor whose storage another copied tensor already views
            return _C.ops.as_strided(memo[key], list(self.shape), list(self.stride()), 0).detach()
        r = _C.ops.clone(self.detach())
        memo[key] = r.view(-1) if r.dim() != 1 else r
        memo.setdefault("oneflow.storages", []).append(self)
        return r

    # ---- autograd -----------------------------------------------------------------------------------
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Computes the gradient of this tensor w.r.t. graph leaves (see ``oneflow.autograd.backward``)."""
        from . import autograd

        autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        """Registers ``hook(grad) -> Tensor or None`` to run when this tensor's gradient is computed."""
        return _C._register_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Registers ``hook(tensor) -> None`` on a leaf, run during ``backward`` once its ``.grad`` holds the
        accumulated gradient (e.g. to step an optimizer per parameter); not run by ``autograd.grad``."""
        return _C._register_post_accumulate_grad_hook(self, hook)

    # ---- dtype/device conversion --------------------------------------------------------------------
    def to(self, *args, **kwargs):
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``; returns self when nothing changes."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        copy = kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        fmt = kwargs.pop("memory_format", None)
        if kwargs:
            raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, (str, _C.device)):
                device = a
            elif isinstance(a, _C.TensorBase):
                dtype, device = a.dtype, a.device
            elif a is None:
                continue
            else:
                raise TypeError(f"to() received an invalid combination of arguments: {type(a).__name__}")
        out = self
        if device is not None:
            dev = _C.device(device) if not isinstance(device, _C.device) else device
            if dev.type != "cpu":
                _C._empty([0], _C.float32, dev)  # raises the build's device error
        if dtype is not None and dtype != self.dtype:
            out = _C.ops.to_dtype(out, dtype)
        if fmt is not None:
            from ._ops.memory_format import to_format

            out = to_format(out, fmt)
        if copy and out is self:
            out = _C.ops.clone(self)
        return out

    def cpu(self):
        return self

    def cuda(self, device=None, non_blocking=False):
        return self.to("cuda" if device is None else device)

    def type(self, dtype=None):
        if dtype is None:
            return f"oneflow.{_TYPE_NAMES[self.dtype]}"
        if isinstance(dtype, str):
            dtype = {v: k for k, v in _TYPE_NAMES.items()}[dtype.split(".")[-1]]
        return self.to(dtype)

    def float(self):
        return self.to(_C.float32)

    def double(self):
        return self.to(_C.float64)

    def half(self):
        return self.to(_C.float16)

    def bfloat16(self):
        return self.to(_C.bfloat16)

    def long(self):
        return self.to(_C.int64)

    def int(self):
        return self.to(_C.int32)

    def short(self):
        return self.to(_C.int16)

    def char(self):
        return self.to(_C.int8)

    def byte(self):
        return self.to(_C.uint8)

    def bool(self):
        return self.to(_C.bool)

    def is_floating_point(self):
        return self.dtype.is_floating_point

    def is_complex(self):
        return False

    def is_pinned(self, device=None):
        """Whether the tensor lives in page-locked host memory (never in this build: it has no accelerator)."""
        return False

    def pin_memory(self, device=None):
        """Copies the tensor into page-locked host memory for fast transfers to an accelerator.

        This build has no accelerator, so, as in a CPU-only PyTorch, it raises RuntimeError.
        """
        raise RuntimeError("Cannot access accelerator device when none is available.")

    def share_memory_(self):
        """Moves the tensor's storage into shared memory (in place; a no-op if it is there already), so that
        processes forked afterwards (``multiprocessing`` with the ``fork`` start method) update the same
        values instead of private copies. Returns ``self``."""
        return _C._share_memory_(self)

    def is_shared(self):
        """Whether the tensor's storage is in shared memory (``share_memory_``)."""
        return _C._is_shared(self)

    def get_device(self):
        return -1 if self.device.type == "cpu" else (self.device.index or 0)

    def size_bytes(self):
        return self.numel() * self.element_size()

    @property
    def itemsize(self):
        return self.element_size()

    @property
    def nbytes(self):
        return self.numel() * self.element_size()

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        from ._ops import creation

        return creation.tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad)

    def type_as(self, other):
        return self.to(other.dtype)

    @classmethod
    def __flow_function__(cls):
        return None


_TYPE_NAMES = {
    _C.float32: "FloatTensor", _C.float64: "DoubleTensor", _C.float16: "HalfTensor", _C.bfloat16: "BFloat16Tensor",
    _C.int64: "LongTensor", _C.int32: "IntTensor", _C.int16: "ShortTensor", _C.int8: "CharTensor",
    _C.uint8: "ByteTensor", _C.bool: "BoolTensor",
}


class _C_no_grad:
    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *a):
        _C._set_grad_enabled(self.prev)


def _rebuild_tensor(arr, dtype_name, requires_grad):
    from ._ops import creation

    t = creation.tensor(arr, dtype=getattr(_C, dtype_name))
    if requires_grad:
        t.requires_grad_(True)
    return t


del Tensor.__flow_function__
_C._set_tensor_class(Tensor)
