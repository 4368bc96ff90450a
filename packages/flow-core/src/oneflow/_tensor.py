"""``oneflow.Tensor``: the Python half of the tensor (the C++ half is ``_C.TensorBase``)."""
import builtins

import numpy as np

from . import _C, _dlpack_protocol
from ._post_accumulate_hooks import _python_post_accumulate_hooks


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

    ``oneflow.Tensor(data)`` copies ``data`` in the default dtype; ``oneflow.Tensor(2, 3)`` makes an
    uninitialised 2×3 tensor of the default dtype; ``oneflow.Tensor(t)`` of a tensor shares its memory. Prefer
    ``oneflow.tensor(...)`` and the creation functions.
    """

    def __init__(self, *args, **kwargs):
        super().__init__()
        device = kwargs.pop("device", None)
        if kwargs:
            raise TypeError(f"Tensor(): unexpected keyword arguments {sorted(kwargs)}")
        self._assign(_legacy_new(_C.get_default_dtype(), args, device, "Tensor"))

    # ---- conversion -------------------------------------------------------------------------------------
    def numpy(self, *, force=False):
        r"""The tensor's memory as a NumPy array (shared, no copy).

        Args:
            force (bool): if True, also converts a tensor that requires grad (detached), as PyTorch's
                ``numpy(force=True)``. Default: ``False`` (such a tensor raises RuntimeError).
        """
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        return _C._to_numpy(self.detach() if force else self)

    # NumPy gives precedence to the tensor's reflected operators and __array_wrap__ (ufunc results are tensors)
    __array_priority__ = 1000

    def __array__(self, dtype=None, copy=None):
        """The NumPy array protocol: shares memory like :meth:`numpy` (so a tensor that requires grad raises, as
        in PyTorch); ``dtype`` converts and ``copy=True`` copies; ``copy=False`` refuses a conversion that would
        copy. A bfloat16 tensor, which NumPy cannot hold, gives a float32 copy (PyTorch raises)."""
        if self.dtype == _C.bfloat16:
            if self.requires_grad:
                self.numpy()  # raises PyTorch's error
            if copy is False:
                raise ValueError("Unable to avoid copy while creating an array as requested.")
            a = _C._to_numpy(_C.ops.to_dtype(self, _C.float32))
            return a if dtype is None else a.astype(dtype, copy=False)
        a = self.numpy()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            if copy is False:
                raise ValueError("Unable to avoid copy while creating an array as requested.")
            return a.astype(dtype)
        return np.array(a, copy=True) if copy else a

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """Wraps a NumPy ufunc's result as a tensor (a bool result as uint8, as PyTorch does)."""
        array = np.asarray(array)
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        from ._ops.creation import from_numpy

        return from_numpy(np.ascontiguousarray(array) if array.ndim else array.copy())

    def tolist(self):
        """The data as (nested) Python lists of numbers."""
        return _numpy_of(self).tolist()

    def __dlpack__(self, stream=None, *, max_version=None, dl_device=None, copy=None):
        r"""A DLPack capsule sharing this tensor's memory (the DLPack/array-API protocol).

        Args:
            stream (int, optional): the consumer's stream; unused for CPU tensors.
            max_version (tuple of int, optional): the highest DLPack version the consumer understands:
                ``(1, x)`` or more gives a versioned capsule (``"dltensor_versioned"``), None a legacy one
                (``"dltensor"``).
            dl_device (tuple, optional): the ``(device_type, device_id)`` the consumer wants; only the tensor's own
                device can be exported (else ``BufferError``).
            copy (bool, optional): True exports a copy (flagged as copied); False or None share memory.

        The capsule holds a reference to the tensor's storage until the consumer releases it. Tensors that
        require grad raise ``BufferError`` (export ``tensor.detach()``).
        """
        return _dlpack_protocol.export(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        """``(device_type, device_id)`` in DLPack's codes: ``(1, 0)`` for CPU tensors."""
        return _dlpack_protocol.dlpack_device(self)

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
            which = "no values" if self.numel() == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {which} is ambiguous")
        return builtins.bool(self.item())

    def _python_scalar(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __float__(self):
        return builtins.float(self._python_scalar())

    def __int__(self):
        return builtins.int(self._python_scalar())

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return builtins.int(self.item())

    def __complex__(self):
        return complex(self._python_scalar())

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
        """Whether the tensor has memory behind it (False for meta tensors, which carry only metadata)."""
        return not self.is_meta

    def __reduce_ex__(self, proto):
        arr = np.array(_numpy_of(self), copy=True)
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
        r"""Registers a backward hook, called with the gradient of this tensor each time it is computed.

        The hook has the signature ``hook(grad) -> Tensor or None``: a tensor it returns replaces the gradient
        (with the same size and dtype); None keeps it. Hooks run in registration order, each on the previous
        one's result. On a leaf they run before the gradient is accumulated into ``.grad``.

        Returns:
            a handle whose ``remove()`` removes the hook (also a context manager that removes it on exit).
        """
        return _C._register_hook(self, _checked_tensor_hook(hook))

    def register_post_accumulate_grad_hook(self, hook):
        r"""Registers ``hook(tensor) -> None`` on a leaf, run during ``backward`` once its ``.grad`` holds the
        accumulated gradient (e.g. to step an optimizer per parameter); not run by ``autograd.grad``.

        Returns:
            a handle whose ``remove()`` removes the hook.
        """
        checked = _checked_post_accumulate_hook(hook)
        handle = _C._register_post_accumulate_grad_hook(self, checked)
        hooks = _python_post_accumulate_hooks(self, create=True)
        hooks.append(checked)
        return _PostAccumulateHandle(handle, hooks, checked)

    # ---- dtype/device conversion --------------------------------------------------------------------
    def to(self, *args, **kwargs):
        r"""Converts the tensor's dtype and/or device; returns ``self`` when nothing changes (unless ``copy``).

        The overloads of PyTorch's ``Tensor.to``::

            to(dtype, non_blocking=False, copy=False, *, memory_format=oneflow.preserve_format)
            to(device=None, dtype=None, non_blocking=False, copy=False, *, memory_format=oneflow.preserve_format)
            to(other, non_blocking=False, copy=False)  # other's dtype and device

        ``non_blocking`` has no effect on CPU.
        """
        if not kwargs and len(args) == 1 and type(args[0]) is _C.dtype:  # to(dtype): the hot case
            return self if args[0] == self.dtype else _C.ops.to_dtype(self, args[0])
        dtype, device, copy, fmt = _parse_to(args, kwargs)
        out = self
        dev = None
        if device is not None:
            from ._ops.creation import _device

            dev = _device(device) or _C.device("cpu")  # raises the build's error for a device it does not have
        if dtype is not None and dtype != self.dtype:
            out = _C.ops.to_dtype(out, dtype)
        if dev is not None and dev != self.device:
            if self.device.type == "meta":
                raise NotImplementedError("Cannot copy out of meta tensor; no data!")
            out = _C.ops.to_device(out, device=dev)
        if fmt is not None:
            from ._ops.memory_format import to_format

            out = to_format(out, fmt)
        if copy and out is self:
            out = _C.ops.clone(self)
        return out

    def cpu(self, memory_format=None):
        """The tensor on the CPU (``self`` when it is there already)."""
        return self if memory_format is None else self.to(memory_format=memory_format)

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        """A copy on a CUDA device (``device``, default the current one); a build without CUDA raises a clear
        error."""
        return self.to("cuda" if device is None else device)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        r"""Without ``dtype``, the legacy type name (``'oneflow.FloatTensor'``); else the tensor converted to
        ``dtype``: a ``oneflow.dtype``, a legacy type class (``oneflow.IntTensor``) or name (``'oneflow.IntTensor'``,
        PyTorch's ``'torch.IntTensor'`` too; a ``cuda`` name needs that device)."""
        if dtype is None:
            return f"oneflow.{_TYPE_NAMES[self.dtype]}"
        if isinstance(dtype, str):
            module, _, name = dtype.rpartition(".")
            target = _TYPE_DTYPES.get(name)
            if target is None or module not in ("torch", "oneflow", "torch.cuda", "oneflow.cuda"):
                raise ValueError(f"invalid type: '{dtype}'")
            if module.endswith(".cuda"):
                return self.to("cuda", target)
            return self.to(target)
        if isinstance(dtype, _LegacyTensorType):
            return self.to(dtype.dtype)
        if isinstance(dtype, _C.dtype):
            return self.to(dtype)
        raise TypeError("dtype must be a type, str, or dtype object")

    def is_floating_point(self):
        """Whether the dtype is a floating-point one (float16, bfloat16, float32 or float64)."""
        return self.dtype.is_floating_point

    def is_complex(self):
        """Whether the dtype is complex: always False, as there are no complex dtypes yet."""
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
        """The CUDA device index of the tensor, or -1 for a CPU tensor."""
        return -1 if self.device.type == "cpu" else (self.device.index or 0)

    def size_bytes(self):
        """The size of the elements in bytes: ``numel() * element_size()``."""
        return self.numel() * self.element_size()

    @property
    def itemsize(self):
        return self.element_size()

    @property
    def nbytes(self):
        return self.numel() * self.element_size()

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False):
        """A new tensor copied from ``data`` (like :func:`oneflow.tensor`), with this tensor's dtype unless
        ``dtype`` is given."""
        from ._ops import creation

        return creation.tensor(data, dtype=dtype or self.dtype, device=self.device if device is None else device,
                               requires_grad=requires_grad)

    def type_as(self, other):
        """This tensor converted to ``other``'s dtype (``self`` itself when they match)."""
        return self.to(other.dtype)

    @classmethod
    def __flow_function__(cls):
        return None


# The dtype-conversion methods, one per legacy tensor type: (method, dtype, the dtype's name in oneflow).
_CAST_METHODS = (
    ("float", _C.float32, "float32"),
    ("double", _C.float64, "float64"),
    ("half", _C.float16, "float16"),
    ("bfloat16", _C.bfloat16, "bfloat16"),
    ("long", _C.int64, "int64"),
    ("int", _C.int32, "int32"),
    ("short", _C.int16, "int16"),
    ("char", _C.int8, "int8"),
    ("byte", _C.uint8, "uint8"),
    ("bool", _C.bool, "bool"),
)


def _make_cast_method(name, dtype, dtype_name):
    def cast(self, memory_format=None):
        # the plain call skips ``to``'s argument parsing: these run in every model's hot path
        if memory_format is None:
            return self if self.dtype == dtype else _C.ops.to_dtype(self, dtype)
        return self.to(dtype, memory_format=memory_format)

    cast.__name__ = name
    cast.__qualname__ = f"Tensor.{name}"
    cast.__doc__ = f"""{name}(memory_format=oneflow.preserve_format) -> Tensor

    ``self.{name}()`` is equivalent to ``self.to(oneflow.{dtype_name})``. See :meth:`to`.

    Args:
        memory_format (:class:`oneflow.memory_format`, optional): the desired memory format of
            returned Tensor. Default: ``oneflow.preserve_format``.
    """
    return cast


for _name, _dtype, _dtype_name in _CAST_METHODS:
    setattr(Tensor, _name, _make_cast_method(_name, _dtype, _dtype_name))
del _name, _dtype, _dtype_name


def _hook_name(hook):
    return getattr(hook, "__name__", type(hook).__name__)


def _checked_tensor_hook(hook):
    """``hook`` with PyTorch's checks on what it returns: a tensor (or None) of the gradient's size and dtype."""
    def checked(grad):
        r = hook(grad)
        if r is None:
            return None
        if not isinstance(r, _C.TensorBase):
            raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")
        if r.shape != grad.shape:
            raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the size of value")
        if r.dtype != grad.dtype:
            raise RuntimeError(f"hook '{_hook_name(hook)}' has changed the type of value (was {grad.dtype} got "
                               f"{r.dtype})")
        return r

    return checked


def _checked_post_accumulate_hook(hook):
    def checked(tensor):
        r = hook(tensor)
        if r is not None and not isinstance(r, _C.TensorBase):  # PyTorch's TypeError; a tensor: RuntimeError
            raise TypeError(f"expected Variable, but hook returned '{type(r).__name__}'")
        return r

    return checked


class _PostAccumulateHandle:
    """Removes a post-accumulate-grad hook from the engine and from the tensor's Python-side list (usable as a
    context manager that removes it on exit)."""

    def __init__(self, handle, hooks, hook):
        self._handle, self._hooks, self._hook = handle, hooks, hook

    def remove(self):
        self._handle.remove()
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


_TYPE_NAMES = {
    _C.float32: "FloatTensor", _C.float64: "DoubleTensor", _C.float16: "HalfTensor", _C.bfloat16: "BFloat16Tensor",
    _C.int64: "LongTensor", _C.int32: "IntTensor", _C.int16: "ShortTensor", _C.int8: "CharTensor",
    _C.uint8: "ByteTensor", _C.bool: "BoolTensor",
}


_TYPE_DTYPES = {v: k for k, v in _TYPE_NAMES.items()}


def _numpy_of(t):
    """A NumPy view of ``t``'s data for reading (bfloat16, which NumPy lacks, as a float32 copy). Not detached
    first: the read ignores autograd, and a subclass must reach its handler as itself."""
    if t.dtype == _C.bfloat16:
        t = _C.ops.to_dtype(t, _C.float32)
    return _C._to_numpy(t)


def _argtype(a):
    if isinstance(a, _C.dtype):
        return "oneflow.dtype"
    if isinstance(a, _C.TensorBase):
        return "Tensor"
    return type(a).__name__


def _parse_to(args, kwargs):
    """``Tensor.to``'s arguments as (dtype, device, copy, memory_format), by PyTorch's three overloads."""
    kwargs = dict(kwargs)
    fmt = kwargs.pop("memory_format", None)

    def invalid():
        got = [_argtype(a) for a in args] + [f"{k}={_argtype(v)}" for k, v in kwargs.items()]
        return TypeError(
            f"to() received an invalid combination of arguments - got ({', '.join(got)}), but expected one of:\n"
            " * (oneflow.device device = None, oneflow.dtype dtype = None, bool non_blocking = False, bool copy = "
            "False, *, oneflow.memory_format memory_format = None)\n"
            " * (oneflow.dtype dtype, bool non_blocking = False, bool copy = False, *, oneflow.memory_format "
            "memory_format = None)\n"
            " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, oneflow.memory_format memory_format "
            "= None)\n")

    first = args[0] if args else None
    if isinstance(first, _C.dtype):
        names = ("dtype", "non_blocking", "copy")
    elif isinstance(first, _C.TensorBase) or "tensor" in kwargs:
        names = ("tensor", "non_blocking", "copy")
    else:
        names = ("device", "dtype", "non_blocking", "copy")
    if len(args) > len(names):
        raise invalid()
    bound = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names or k in bound:
            raise invalid()
        bound[k] = v
    dtype, device = bound.get("dtype"), bound.get("device")
    other = bound.get("tensor")
    if other is not None:
        dtype, device = other.dtype, other.device
    for flag in ("non_blocking", "copy"):
        if not isinstance(bound.get(flag, False), (builtins.bool, np.bool_)):
            raise invalid()
    if dtype is not None and not isinstance(dtype, _C.dtype):
        raise invalid()
    if device is not None and not isinstance(device, (str, _C.device, builtins.int)):
        raise invalid()
    return dtype, device, builtins.bool(bound.get("copy", False)), fmt


def _legacy_new(dtype, args, device, name):
    """A legacy constructor's tensor (``oneflow.Tensor(...)``, ``oneflow.FloatTensor(...)``): no arguments give an
    empty tensor, ints or a ``Size`` an uninitialised one of that shape, a tensor itself (shared; its dtype must be
    ``dtype`` unless this is ``Tensor``), a sequence or array a copy in ``dtype``."""
    from ._ops import creation

    if len(args) == 0:
        return _C._empty([0], dtype, device)
    if len(args) == 1 and isinstance(args[0], Size):
        args = tuple(args[0])
    if builtins.all(isinstance(a, (builtins.int, np.integer)) and not isinstance(a, builtins.bool) for a in args):
        return _C._empty([builtins.int(a) for a in args], dtype, device)
    if len(args) != 1:
        raise TypeError(f"{name}(): expected sizes or a single data argument")
    data = args[0]
    if isinstance(data, _C.TensorBase):
        if name != "Tensor" and data.dtype != dtype:
            raise TypeError(f"expected {dtype} (got {data.dtype})")
        return data.detach()
    if not creation._is_sequence(data):
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    creation._device(device)
    return creation._copy_of(data, dtype)


class _LegacyTensorType(type):
    """The metaclass of PyTorch's legacy tensor types: ``isinstance(t, oneflow.FloatTensor)`` tests ``t``'s
    dtype; calling the type constructs a tensor of it."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.TensorBase) and obj.dtype == cls.dtype and obj.device.type == "cpu"

    def __call__(cls, *args, device=None):
        return _legacy_new(cls.dtype, args, device, cls.__name__)

    def __repr__(cls):
        return f"<class 'oneflow.{cls.__name__}'>"


def _legacy_type(name, dtype):
    return _LegacyTensorType(name, (), {"dtype": dtype, "__module__": "oneflow",
                                        "__doc__": f"The legacy type of ``{dtype}`` CPU tensors."})


FloatTensor = _legacy_type("FloatTensor", _C.float32)
DoubleTensor = _legacy_type("DoubleTensor", _C.float64)
HalfTensor = _legacy_type("HalfTensor", _C.float16)
BFloat16Tensor = _legacy_type("BFloat16Tensor", _C.bfloat16)
LongTensor = _legacy_type("LongTensor", _C.int64)
IntTensor = _legacy_type("IntTensor", _C.int32)
ShortTensor = _legacy_type("ShortTensor", _C.int16)
CharTensor = _legacy_type("CharTensor", _C.int8)
ByteTensor = _legacy_type("ByteTensor", _C.uint8)
BoolTensor = _legacy_type("BoolTensor", _C.bool)
LEGACY_TYPES = (FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, LongTensor, IntTensor, ShortTensor,
                CharTensor, ByteTensor, BoolTensor)


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
