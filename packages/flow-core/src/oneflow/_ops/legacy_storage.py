"""The legacy per-dtype storage classes (``FloatStorage``, ``LongStorage``, ...) and ``Tensor.storage_type``.

As in PyTorch, the classes are names rather than types of their own: calling one makes a
:class:`oneflow.TypedStorage` of that dtype (from a size, zero-filled here, or from a sequence of values), and
``Tensor.storage_type()`` returns the class matching the tensor's dtype."""
from .. import _C
from .storage import TypedStorage

_DTYPES = {"FloatStorage": _C.float32, "DoubleStorage": _C.float64, "HalfStorage": _C.float16,
           "BFloat16Storage": _C.bfloat16, "LongStorage": _C.int64, "IntStorage": _C.int32, "ShortStorage": _C.int16,
           "CharStorage": _C.int8, "ByteStorage": _C.uint8, "BoolStorage": _C.bool}

__all__ = list(_DTYPES)


def _new_storage(cls, *args, **kwargs):
    """``Cls()`` (empty), ``Cls(size)`` or ``Cls(sequence)``: a TypedStorage of ``cls.dtype`` over new memory."""
    from .creation import tensor, zeros

    if kwargs:
        raise TypeError(f"{cls.__name__}() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if len(args) > 1:
        raise TypeError(f"{cls.__name__}() takes at most 1 positional argument ({len(args)} given)")
    arg = args[0] if args else 0
    if isinstance(arg, int) and not isinstance(arg, bool):
        if arg < 0:
            raise RuntimeError(f"Storage size must be non-negative, but got {arg}")
        data = zeros(arg, dtype=cls.dtype)
    else:
        data = tensor(list(arg), dtype=cls.dtype)
    return TypedStorage(data)


def _legacy_class(name, dtype):
    doc = (f"The legacy storage type of ``{dtype}`` tensors: ``{name}(size)`` or ``{name}(sequence)`` makes a "
           f":class:`oneflow.TypedStorage` of that dtype.")
    cls = type(name, (TypedStorage,), {"__new__": _new_storage, "dtype": dtype, "__doc__": doc,
                                       "__module__": "oneflow"})
    return cls


for _name, _dtype in _DTYPES.items():
    globals()[_name] = _legacy_class(_name, _dtype)
del _name, _dtype

_BY_DTYPE = {dt: globals()[name] for name, dt in _DTYPES.items()}


def storage_type(self):
    """storage_type() -> type

    The legacy storage class of this tensor's dtype (``oneflow.FloatStorage`` for float32, ...)."""
    return _BY_DTYPE[self.dtype]


TENSOR_METHODS = {"storage_type": storage_type}
