"""Tensor creation: from data, filled, ranges (arange/linspace/logspace/eye run in C++, ops/creation.cpp)."""
import builtins
import math
import warnings

import numpy as np

from .. import _C
from .._printing import set_printoptions  # noqa: F401  (exported as oneflow.set_printoptions)

__all__ = ["tensor", "as_tensor", "asarray", "from_numpy", "zeros", "ones", "empty", "full", "zeros_like",
           "ones_like", "empty_like", "full_like", "from_dlpack", "scalar_tensor", "arange", "range", "linspace",
           "logspace", "eye", "set_printoptions", "empty_strided"]

_NP_TO_FLOW = {
    np.dtype(np.bool_): _C.bool, np.dtype(np.uint8): _C.uint8, np.dtype(np.int8): _C.int8,
    np.dtype(np.int16): _C.int16, np.dtype(np.int32): _C.int32, np.dtype(np.int64): _C.int64,
    np.dtype(np.float16): _C.float16, np.dtype(np.float32): _C.float32, np.dtype(np.float64): _C.float64,
}
_NP_TYPE_ERROR = ("can't convert np.ndarray of type {}. The only supported types are: float64, float32, float16, "
                  "int64, int32, int16, int8, uint8, and bool.")
_NEGATIVE_STRIDES = ("At least one stride in the given numpy array is negative, and tensors with negative strides "
                     "are not currently supported. (You can probably work around this by making a copy of your "
                     "array  with array.copy().) ")
_BYTE_ORDER = ("given numpy array has byte order different from the native byte order. Conversion between byte "
               "orders is currently not supported.")
# PyTorch's names for dtypes in its alias errors ("can't alias tensor with dtype 'Float' into dtype 'Double'.")
_SCALAR_TYPE_NAMES = {
    _C.float32: "Float", _C.float64: "Double", _C.float16: "Half", _C.bfloat16: "BFloat16", _C.int64: "Long",
    _C.int32: "Int", _C.int16: "Short", _C.int8: "Char", _C.uint8: "Byte", _C.bool: "Bool",
}

# Warnings PyTorch gives once per process (TORCH_WARN_ONCE); a key is added when its warning has been given.
_warned = set()


def _warn_once(key, message, stacklevel):
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)


def _typename(obj):
    """The type name PyTorch's argument errors use: ``list``, ``numpy.float32``, ``Tensor``."""
    if isinstance(obj, _C.TensorBase):
        return "Tensor"
    cls = type(obj)
    module = cls.__module__.split(".")[0]
    return cls.__name__ if module == "builtins" else f"{module}.{cls.__name__}"


def _np_flow_dtype(np_dtype):
    """The oneflow dtype of a NumPy dtype, or PyTorch's error for one that cannot be converted."""
    if not np_dtype.isnative:
        raise ValueError(_BYTE_ORDER)
    try:
        return _NP_TO_FLOW[np_dtype]
    except KeyError:
        raise TypeError(_NP_TYPE_ERROR.format(f"numpy.{np_dtype.type.__name__}")) from None


def _shape(size, op="empty", arg="size"):
    """The ``size`` argument of ``op`` as a list of ints: varargs ints or one list/tuple/``Size``, checked and
    with PyTorch's errors for anything else (a bool, float, string, None, 1-D tensor or a nested sequence)."""
    if len(size) == 0:
        raise TypeError(f'{op}() missing 1 required positional arguments: "size"')
    # the common case first: plain non-negative ints, varargs or one list/tuple (creation's per-call cost)
    plain = size[0] if len(size) == 1 and isinstance(size[0], (list, tuple)) else size
    if all(type(s) is builtins.int and s >= 0 for s in plain) and (plain is not size or len(size) == 1
                                                                  or type(size[0]) is builtins.int):
        return list(plain)
    if len(size) == 1:
        x = size[0]
        if isinstance(x, (list, tuple)):
            size = x
        elif not _is_index(x):
            raise TypeError(f"{op}(): argument '{arg}' (position 1) must be tuple of ints, not {_typename(x)}")
    elif isinstance(size[0], (list, tuple)):
        raise TypeError(f"{op}() takes 1 positional argument but {len(size)} were given")
    shape = []
    for i, s in enumerate(size):
        if isinstance(s, (builtins.bool, np.bool_, _C.TensorBase)) and not _is_index(s):
            raise TypeError(f"{op}(): argument '{arg}' (position 1) must be tuple of ints, but found element of "
                            f"type {_typename(s)} at pos {i}")
        if not _is_index(s):
            raise TypeError(f"{op}(): argument '{arg}' failed to unpack the object at pos {i + 1} with error "
                            f"\"type must be tuple of ints,but got {_typename(s)}\"")
        shape.append(s.__index__())
    for s in shape:
        if s < 0 and arg == "size":
            if op == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {shape}")
    return shape


def _is_index(x):
    """Whether ``x`` is an integer a size may hold: an int, NumPy integer or 0-d integer array, or an integer
    (not bool) tensor of one element."""
    if isinstance(x, (builtins.bool, np.bool_)):
        return False
    if isinstance(x, (builtins.int, np.integer)):
        return True
    if isinstance(x, np.ndarray):
        return x.ndim == 0 and x.dtype.kind in "iu"
    if isinstance(x, _C.TensorBase):
        return x.numel() == 1 and x.dim() <= 1 and not x.dtype.is_floating_point and x.dtype != _C.bool
    return False


def _device(device):
    """Validates ``device`` (only CPU memory exists in a CPU build; others raise the build's device error)."""
    if device is not None:
        if isinstance(device, builtins.int) and not isinstance(device, builtins.bool):
            device = _C.device("cuda", device)  # an index names an accelerator, as in PyTorch
        d = device if isinstance(device, _C.device) else _C.device(device)
        if d.type != "cpu":
            _C._empty([0], _C.float32, d)
    return None


def _check_requires_grad(dtype):
    # the creation functions' own wording (requires_grad_() on a tensor words it differently, as in PyTorch)
    if not dtype.is_floating_point:
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")


def _finish(t, requires_grad, out=None):
    if out is not None:
        if list(out.shape) != list(t.shape):  # resized like the ops' out= (silently when it was empty)
            if out.numel() != 0:
                warnings.warn(f"An output with one or more elements was resized since it had shape "
                              f"{list(out.shape)}, which does not match the required output shape {list(t.shape)}. "
                              "Pass outputs with zero elements to resize them silently.", UserWarning, stacklevel=3)
            out.resize_(list(t.shape))
        _C.ops.copy_(out, t)
        return out
    if requires_grad:
        _check_requires_grad(t.dtype)
        t.requires_grad_(True)
    return t


# ---- tensor(): PyTorch's rules for Python data ------------------------------------------------------------
def _is_sequence(x):
    """A sequence in the sense of PyTorch's data walk (``PySequence_Check``): lists, tuples, ranges, arrays,
    strings, buffers; not tensors (an element tensor is a scalar), dicts or sets."""
    if isinstance(x, (list, tuple)):
        return True
    if isinstance(x, (_C.TensorBase, dict, set, frozenset)):
        return False
    return hasattr(type(x), "__len__") and hasattr(type(x), "__getitem__")


def _sizes(data):
    """The shape of nested data, read from the first element of every level (the others are checked when the
    values are stored); a string nests without end, which PyTorch reports as too many dimensions."""
    sizes = []
    x = data
    while _is_sequence(x):
        n = len(x)
        sizes.append(n)
        if len(sizes) > 64:
            raise ValueError(f"too many dimensions '{type(x).__name__}'")
        if n == 0:
            break
        x = x[0]
    return sizes


def _infer_dtype(data, seen=None):
    """PyTorch's dtype inference for Python data: the promotion of every element's type, where bools give bool,
    ints int64, floats the default dtype, NumPy scalars/arrays and tensors their own dtype; an empty sequence
    gives the default dtype. ``seen`` collects what was met: ``Tensor`` and ``ndarray`` elements, ``int`` for
    integer or bool numbers."""
    default = _C.get_default_dtype()
    seen = set() if seen is None else seen

    def walk(x):
        # NumPy first: np.float64 is a Python float subclass but keeps its own dtype
        if isinstance(x, np.ndarray):
            seen.add(np.ndarray)
            return _np_flow_dtype(x.dtype)
        if isinstance(x, np.generic):
            if not isinstance(x, np.floating):
                seen.add(builtins.int)
            return _np_flow_dtype(x.dtype)
        if isinstance(x, builtins.bool):
            seen.add(builtins.int)
            return _C.bool
        if isinstance(x, builtins.int):
            seen.add(builtins.int)
            return _C.int64
        if isinstance(x, builtins.float):
            return default
        if isinstance(x, _C.TensorBase):
            seen.add(_C.TensorBase)
            return x.dtype
        if isinstance(x, complex):
            raise TypeError("complex tensors are not supported")
        if isinstance(x, (str, bytes)):
            raise TypeError(f"new(): invalid data type '{type(x).__name__}'")
        if _is_sequence(x):
            if len(x) == 0:
                return default
            result = None
            for e in x:
                if e is x:
                    raise TypeError("new(): self-referential lists are incompatible")
                d = walk(e)
                result = d if result is None else _C.promote_types(result, d)
            return result
        raise RuntimeError(f"Could not infer dtype of {type(x).__name__}")
    return walk(data)


def _scalars(x):
    """``x`` with every element tensor replaced by its Python number (PyTorch reads an element tensor like a
    number, so it must hold exactly one value)."""
    if isinstance(x, (list, tuple)):
        return [_scalars(e) for e in x]
    if isinstance(x, _C.TensorBase):
        if x.numel() != 1:
            if x.dtype.is_floating_point:
                raise ValueError("only one element tensors can be converted to Python scalars")
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return x.item()
    return x


def _leaves(x, sizes, target, dim=0, out=None):
    """The elements of ``x`` in order, checking every level has the length ``sizes`` gives (PyTorch's errors
    for ragged data: a wrong length, a number where a sequence belongs, a sequence where a number belongs)."""
    out = [] if out is None else out
    if dim == len(sizes):
        if _is_sequence(x) and not (isinstance(x, np.ndarray) and x.ndim == 0):
            name = type(x).__name__
            if target.is_floating_point or target == _C.bool:
                raise TypeError(f"must be real number, not {name}")
            raise TypeError(f"'{name}' object cannot be interpreted as an integer")
        out.append(x)
        return out
    if not _is_sequence(x):
        raise TypeError("not a sequence")
    if len(x) != sizes[dim]:
        raise ValueError(f"expected sequence of length {sizes[dim]} at dim {dim} (got {len(x)})")
    for e in x:
        _leaves(e, sizes, target, dim + 1, out)
    return out


def _int_overflow(dtype):
    return RuntimeError(f"value cannot be converted to type {str(dtype).split('.')[-1]} without overflow")


def _check_int_range(arr, dtype):
    """PyTorch's overflow check for integers put into a narrower integer tensor: out of range raises (an unsigned
    type also takes negatives down to -max, which wrap)."""
    info = np.iinfo(str(dtype).split(".")[-1])
    lo, hi = int(arr.min()), int(arr.max())
    if hi > info.max or (lo < -info.max if info.min == 0 else lo < info.min):
        raise _int_overflow(dtype)


def _floats_to_ints(leaves, dtype):
    """Numbers (some floats) stored into an integer tensor as PyTorch stores them one by one: a float must lie
    within the type's range (NaN and infinities never do) and is truncated; an int follows the integer rule."""
    info = np.iinfo(str(dtype).split(".")[-1])
    values = []
    for v in leaves:
        if isinstance(v, (builtins.float, np.floating)):
            f = builtins.float(v)
            if math.isnan(f) or f < info.min or f > builtins.float(info.max):
                raise _int_overflow(dtype)
            # 2**63 passes the check (int64's max rounds up to it as a double) and wraps, as in C++
            values.append(math.trunc(f) if f < 2.0 ** 63 else -2 ** 63)
        else:
            i = builtins.int(v)
            if not -2 ** 63 <= i < 2 ** 63:
                raise ValueError("Overflow when unpacking long long")
            if i > info.max or (i < -info.max if info.min == 0 else i < info.min):
                raise _int_overflow(dtype)
            values.append(i)
    return np.array(values, dtype=np.int64)


def _checked_array(data, sizes, target, np_dtype):
    """``data`` as a NumPy array of ``np_dtype`` and shape ``sizes``, with PyTorch's errors for ragged data and
    for ints beyond int64."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arr = np.array(data, dtype=np_dtype)
    except OverflowError:
        _leaves(data, sizes, target)
        raise ValueError("Overflow when unpacking long long") from None
    except (ValueError, TypeError):
        _leaves(data, sizes, target)  # raises PyTorch's error for ragged data
        raise
    if list(arr.shape) != sizes:
        _leaves(data, sizes, target)
        raise ValueError(f"expected sequence of equal-length sequences, got shape {list(arr.shape)}")
    return arr


def _float_array_to_ints(arr, dtype):
    """``_floats_to_ints`` for an array of floats only, vectorized."""
    info = np.iinfo(str(dtype).split(".")[-1])
    if np.isnan(arr).any() or arr.min() < info.min or arr.max() > builtins.float(info.max):
        raise _int_overflow(dtype)
    with np.errstate(invalid="ignore"):
        # 2.0**63 (allowed for int64, see above) converts to int64's minimum, as in C++ on x86
        return np.where(arr >= 2.0 ** 63, -2 ** 63, np.trunc(arr).astype(np.int64)).astype(np.int64)


def _from_data(data, dtype):
    """A new tensor holding Python data (numbers, nested sequences, NumPy scalars/arrays, element tensors)."""
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    sizes = _sizes(data)
    seen = set()
    inferred = _infer_dtype(data, seen)
    target = dtype or inferred
    if target == _C.bool:
        np_dtype = np.bool_
    else:
        np_dtype = np.float64 if target.is_floating_point else np.int64
    if 0 in sizes:  # nothing to store: PyTorch checks no further
        return _C._empty(sizes, target, None)
    if _C.TensorBase in seen:
        data = _scalars(data)
    if np.ndarray in seen:
        _warn_once("list of ndarrays", "Creating a tensor from a list of numpy.ndarrays is extremely slow. Please "
                   "consider converting the list to a single numpy.ndarray with numpy.array() before converting to "
                   "a tensor.", 4)
    if np_dtype is np.int64 and inferred.is_floating_point and (builtins.int in seen or seen & {np.ndarray,
                                                                                                _C.TensorBase}):
        # numbers of both kinds: each follows its own rule
        arr = _floats_to_ints(_leaves(data, sizes, target), target).reshape(sizes)
    elif np_dtype is np.int64 and inferred.is_floating_point:
        arr = _float_array_to_ints(_checked_array(data, sizes, target, np.float64), target)
    else:
        arr = _checked_array(data, sizes, target, np_dtype)
        if np_dtype is np.int64 and target != _C.int64:
            _check_int_range(arr, target)
    t = _C._from_numpy(arr if arr.flags.c_contiguous and arr.flags.writeable else arr.copy())
    return t if t.dtype == target else _C.ops.to_dtype(t, target)


def _copy_of(data, dtype):
    """``tensor(data, dtype=dtype)`` without the copy-construct warning (for internal callers)."""
    if isinstance(data, _C.TensorBase):
        t = _C.ops.clone(data.detach())
        return t if dtype is None or dtype == t.dtype else _C.ops.to_dtype(t, dtype)
    if isinstance(data, np.ndarray):  # (a NumPy scalar is read as a number: narrowing it is range-checked)
        _np_flow_dtype(data.dtype)
        # a copy, so negative strides (which from_numpy rejects) are fine here
        t = _C._from_numpy(np.array(data, copy=True, order="C"))
        return t if dtype is None or dtype == t.dtype else _C.ops.to_dtype(t, dtype)
    return _from_data(data, dtype)


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    r"""Constructs a tensor with no autograd history by copying ``data``.

    Args:
        data (array_like): a number, (nested) list or tuple, NumPy scalar or array, or tensor.
        dtype (oneflow.dtype, optional): the result's dtype. Default: inferred from ``data`` as PyTorch does --
            Python floats give the default dtype, ints ``int64``, bools ``bool``, NumPy values and tensors their
            own dtype, mixed elements the promotion of their types.
        device (oneflow.device, optional): the result's device.
        requires_grad (bool, optional): whether autograd records operations on the result. Default: ``False``.

    Copying a tensor warns (use ``t.detach().clone()``); ragged data raises ``ValueError``; a Python int out of
    the ``int64`` range raises ``ValueError``; a number out of a narrower integer ``dtype``'s range raises
    ``RuntimeError``.
    """
    _device(device)
    if isinstance(data, _C.TensorBase):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "oneflow.tensor(sourceTensor).", UserWarning, stacklevel=2)
    return _finish(_copy_of(data, dtype), requires_grad)


def _shared_ndarray(arr, what="array"):
    """A tensor sharing ``arr``'s memory. A read-only array is shared too (writing through the tensor is then
    undefined behaviour), with PyTorch's one-time warning."""
    if not arr.flags.writeable:
        if what == "array":
            _warn_once("readonly ndarray", "The given NumPy array is not writable, and PyTorch does not support "
                       "non-writable tensors. This means writing to this tensor will result in undefined behavior. "
                       "You may want to copy the array to protect its data or make it writable before converting it "
                       "to a tensor. This type of warning will be suppressed for the rest of this program.", 4)
        else:
            _warn_once("readonly buffer", "The given buffer is not writable, and PyTorch does not support "
                       "non-writable tensors. This means you can write to the underlying (supposedly non-writable) "
                       "buffer using the tensor. You may want to copy the buffer to protect its data or make it "
                       "writable before converting it to a tensor. This type of warning will be suppressed for the "
                       "rest of this program.", 4)
        arr = np.asarray(_WritableAlias(arr))
    return _C._from_numpy(arr)


class _WritableAlias:
    """Presents a read-only array's memory as writable through the array interface (the importer only takes
    writable arrays); it keeps the array alive for as long as the memory is in use."""

    def __init__(self, arr):
        self._arr = arr
        interface = dict(arr.__array_interface__)
        interface["data"] = (interface["data"][0], False)
        self.__array_interface__ = interface


def as_tensor(data, *, dtype=None, device=None):
    r"""Converts ``data`` to a tensor, sharing memory with a tensor or NumPy array when ``dtype`` allows.

    Args:
        data (array_like): a tensor, NumPy array or scalar, number or (nested) sequence.
        dtype (oneflow.dtype, optional): the result's dtype; a different one than ``data``'s makes a copy.
        device (oneflow.device, optional): the result's device.

    A tensor with the same dtype is returned as is; a NumPy array is shared (a read-only one with a warning;
    one with negative strides is copied, where PyTorch raises). Other data are copied as by :func:`tensor`.
    """
    _device(device)
    if isinstance(data, _C.TensorBase):
        return data if dtype is None or dtype == data.dtype else _C.ops.to_dtype(data, dtype)
    if isinstance(data, np.ndarray):
        _np_flow_dtype(data.dtype)
        t = _copy_of(data, None) if _negative_strides(data) else _shared_ndarray(data)
        return t if dtype is None or dtype == t.dtype else _C.ops.to_dtype(t, dtype)
    return _copy_of(data, dtype)


_UNSET = object()


def _frombuffer(obj, dtype):
    """The bytes of a buffer-protocol object read as elements of ``dtype`` (the default dtype if None)."""
    dtype = dtype or _C.get_default_dtype()
    np_dtype = {v: k for k, v in _NP_TO_FLOW.items()}.get(dtype)
    view = memoryview(obj)
    if np_dtype is None:  # bfloat16: read the bits as int16, then reinterpret
        np_dtype = np.dtype(np.int16)
    if view.nbytes % np_dtype.itemsize:
        raise ValueError(f"buffer length ({view.nbytes} bytes) after offset (0 bytes) must be a multiple of element "
                         f"size ({np_dtype.itemsize})")
    t = _shared_ndarray(np.frombuffer(view, dtype=np_dtype), "buffer")
    return t if t.dtype == dtype else t.view(dtype)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=_UNSET):
    r"""Converts ``obj`` to a tensor, sharing memory when it can (PyTorch's ``asarray``).

    Args:
        obj: a tensor, NumPy array or scalar, DLPack-capable object, object implementing the buffer protocol
            (its bytes are read as elements of ``dtype``, by default the default dtype), number or sequence.
        dtype (oneflow.dtype, optional): the result's dtype. Default: ``obj``'s (inferred for Python data).
        device (oneflow.device, optional): the result's device.
        copy (bool, optional): ``True`` always copies; ``False`` never does and raises ``ValueError`` where it
            would have to (another dtype, Python data); ``None`` (default) copies only when needed.
        requires_grad (bool, optional): for a tensor ``obj`` the default keeps its autograd graph (with a warning
            when it requires grad, as PyTorch's changed default); ``False`` returns it detached. For other data
            the default is ``False``.
    """
    _device(device)
    if isinstance(obj, _C.TensorBase):
        if requires_grad is _UNSET:
            if obj.requires_grad:
                _warn_once("asarray requires_grad", "oneflow.asarray: unspecified requires_grad now defaults to "
                           "obj.requires_grad instead of False. Pass requires_grad=False explicitly to get the old "
                           "behavior and silence this warning.", 2)
            requires_grad = None
        t = _aliased(obj, dtype, copy, lambda t: _C.ops.clone(t))
        if requires_grad is False and t.requires_grad:
            t = t.detach()
        return _finish(t, requires_grad) if requires_grad else t
    requires_grad = requires_grad is not _UNSET and requires_grad
    if isinstance(obj, np.ndarray):
        _np_flow_dtype(obj.dtype)
        if copy:
            t = _copy_of(obj, dtype)
        elif not _negative_strides(obj):
            t = _aliased(_shared_ndarray(obj), dtype, copy, None)
        elif copy is False:
            raise ValueError(_NEGATIVE_STRIDES)
        else:  # copied where PyTorch raises: nothing has to be aliased
            t = _copy_of(obj, dtype)
    elif isinstance(obj, np.generic):
        if copy is False:
            raise RuntimeError("can't alias NumPy scalars. Either remove copy=False or transform it in a ndarray. ")
        t = _copy_of(obj, dtype)
    elif hasattr(obj, "__dlpack__"):
        t = _aliased(_C._from_dlpack(obj), dtype, copy, lambda t: _C.ops.clone(t))
    elif _is_buffer(obj):
        t = _frombuffer(obj, dtype)
        if copy:
            t = _C.ops.clone(t)
    else:
        if copy is False:
            raise ValueError("can't alias arbitrary sequence into a tensor.")
        t = _copy_of(obj, dtype)
    return _finish(t, requires_grad) if requires_grad else t


def _aliased(t, dtype, copy, clone):
    """``t`` in ``dtype``: itself (or a clone when ``copy``), a converted copy when the dtype differs (refused
    when ``copy`` is False)."""
    if dtype is not None and dtype != t.dtype:
        if copy is False:
            raise ValueError(f"can't alias tensor with dtype '{_SCALAR_TYPE_NAMES[t.dtype]}' into dtype "
                             f"'{_SCALAR_TYPE_NAMES[dtype]}'.")
        return _C.ops.to_dtype(t, dtype)
    return clone(t) if copy and clone is not None else t


def _is_buffer(obj):
    if isinstance(obj, (str, _C.TensorBase)):
        return False
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def from_numpy(ndarray):
    r"""Creates a tensor sharing memory with ``ndarray``: changes to one are seen by the other.

    Args:
        ndarray (numpy.ndarray): a native-byte-order array of a supported dtype without negative strides. A
            read-only array is shared too, with a one-time warning (writing through the tensor is undefined
            behaviour).
    """
    if not isinstance(ndarray, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {_typename(ndarray)})")
    _np_flow_dtype(ndarray.dtype)
    if _negative_strides(ndarray):
        raise ValueError(_NEGATIVE_STRIDES)
    return _shared_ndarray(ndarray)


def _negative_strides(arr):
    return builtins.any(st < 0 for st in arr.strides)


def from_dlpack(ext_tensor):
    """A tensor sharing memory with any object implementing the DLPack protocol (or a DLPack capsule)."""
    return _C._from_dlpack(ext_tensor)


def _kw_size(size, kwargs_size, op):
    if kwargs_size is not None:
        if size:
            raise TypeError(f"{op}() got multiple values for argument 'size'")
        if not isinstance(kwargs_size, (list, tuple)):
            raise TypeError(f"{op}(): argument 'size' must be tuple of ints, not {_typename(kwargs_size)}")
        size = (kwargs_size,)
    return _shape(size, op)


def _sequence_arg(x, op, arg, pos):
    """``x`` given as a size-like argument that must be a sequence (``full``'s and ``empty_strided``'s)."""
    if not isinstance(x, (list, tuple)):
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be tuple of ints, not {_typename(x)}")
    return x


def empty(*size, dtype=None, device=None, requires_grad=False, out=None, pin_memory=False, memory_format=None,
          **kw):
    """An uninitialised tensor of the given size."""
    shape = _kw_size(size, kw.pop("size", None), "empty")
    _reject(kw, "empty")
    _device(device)
    t = _C._empty(shape, dtype or _C.get_default_dtype(), None)
    if memory_format is not None:
        from .memory_format import to_format

        t = to_format(t, memory_format)
    return _finish(t, requires_grad, out)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False):
    r"""An uninitialised tensor with the given ``size`` and ``stride``.

    Args:
        size (tuple of ints): the shape.
        stride (tuple of ints): the step in elements between neighbours along each dimension (non-negative).
    """
    shape = _shape((_sequence_arg(size, "empty_strided", "size", 1),), "empty_strided")
    strides = _shape((_sequence_arg(stride, "empty_strided", "stride", 2),), "empty_strided", "stride")
    if len(strides) != len(shape):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of strides "
                           f"({len(strides)})")
    if 0 not in shape and builtins.any(st < 0 for st in strides):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={shape} and strides={strides}")
    _device(device)
    t = _C._empty_strided(shape, strides, dtype or _C.get_default_dtype(), None)
    return _finish(t, requires_grad)


def _reject(kw, op):
    if kw:
        raise TypeError(f"{op}() got an unexpected keyword argument '{next(iter(kw))}'")


def _fill_number(value, dtype, op):
    """``value`` as the number ``fill_`` stores into ``dtype``: a 0-dim tensor gives its number; an int beyond the
    int64 range is converted to float for a floating ``dtype`` and raises PyTorch's errors otherwise."""
    if isinstance(value, _C.TensorBase):
        if value.dim() != 0:
            raise TypeError(f"{op}(): argument 'fill_value' (position 2) must be Number, not Tensor")
        value = value.item()
    if isinstance(value, (builtins.int, np.integer)) and not isinstance(value, (builtins.bool, np.bool_)):
        # PyTorch reads an int as int64, or as uint64 when it is larger; beyond both it raises
        value = builtins.int(value)
        if value >= 2 ** 64:
            raise OverflowError("int too big to convert")
        if value < -2 ** 63:
            raise OverflowError("can't convert negative int to unsigned")
        if value >= 2 ** 63:
            if not dtype.is_floating_point:
                raise RuntimeError("value cannot be converted to type int64_t without overflow")
            return builtins.float(value)
    return value


def _filled(shape, value, dtype, device, requires_grad, out, op="full"):
    _device(device)
    t = _C._empty(shape, dtype, None)
    _C.ops.fill_(t, _fill_number(value, dtype, op))
    return _finish(t, requires_grad, out)


def _fill_dtype(value):
    """The dtype ``full`` infers from its fill value, as PyTorch does for a number: bool -> bool, an integer ->
    int64, a float -> the default dtype (also a NumPy bool, which PyTorch takes as a plain number); a 0-dim tensor
    by the kind of its dtype."""
    if isinstance(value, _C.TensorBase):
        if value.dim() != 0:
            raise TypeError("full(): argument 'fill_value' (position 2) must be Number, not Tensor")
        kind = value.dtype
        return kind if kind == _C.bool else (_C.get_default_dtype() if kind.is_floating_point else _C.int64)
    if isinstance(value, builtins.bool):
        return _C.bool
    if isinstance(value, (builtins.int, np.integer)):
        return _C.int64
    if isinstance(value, (builtins.float, np.floating, np.bool_)):
        return _C.get_default_dtype()
    if isinstance(value, complex):
        raise TypeError("complex tensors are not supported")
    raise TypeError(f"full(): argument 'fill_value' (position 2) must be Number, not {_typename(value)}")


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False):
    r"""A tensor of ``size`` filled with ``fill_value``.

    Args:
        size (list, tuple or oneflow.Size): the shape.
        fill_value (Number or 0-dim tensor): the value.
        dtype (oneflow.dtype, optional): Default: inferred from ``fill_value`` (bool -> ``bool``, int ->
            ``int64``, float -> the default dtype).
    """
    shape = _shape((_sequence_arg(size, "full", "size", 1),), "full")
    if dtype is None:
        dtype = _fill_dtype(fill_value)
    return _filled(shape, fill_value, dtype, device, requires_grad, out)


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False, **kw):
    """A tensor of zeros (default dtype unless ``dtype``)."""
    shape = _kw_size(size, kw.pop("size", None), "zeros")
    _reject(kw, "zeros")
    return _filled(shape, 0, dtype or _C.get_default_dtype(), device, requires_grad, out)


def ones(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False, **kw):
    """A tensor of ones (default dtype unless ``dtype``)."""
    shape = _kw_size(size, kw.pop("size", None), "ones")
    _reject(kw, "ones")
    return _filled(shape, 1, dtype or _C.get_default_dtype(), device, requires_grad, out)


def _like(input, op):
    if not isinstance(input, _C.TensorBase):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return list(input.shape)


def like_layout(input, t, memory_format):
    """``t`` (row-major, shaped like ``input``) laid out as the ``*_like`` functions lay out their result: in
    ``memory_format``, or by default (preserve_format) in ``input``'s own dimension order when ``input`` is
    dense without overlap (a transposed or channels-last tensor), else row-major, as in PyTorch."""
    from .memory_format import laid_out_in, preserve_format, to_format

    if memory_format is not None and memory_format is not preserve_format:
        return to_format(t, memory_format)
    if input.dim() < 2 or input.is_contiguous():
        return t
    order = sorted(builtins.range(input.dim()), key=lambda d: (-input.stride(d), d))
    expected = 1
    for d in reversed(order):
        if input.shape[d] != 1:
            if input.stride(d) != expected:
                return t  # overlapping or with gaps: row-major
            expected *= input.shape[d]
    return laid_out_in(t, order)


def empty_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
               pin_memory=False):
    """An uninitialised tensor shaped (and, by default, strided) like ``input`` (its dtype unless ``dtype``)."""
    _device(device)
    t = like_layout(input, _C._empty(_like(input, "empty_like"), dtype or input.dtype, None), memory_format)
    return _finish(t, requires_grad)


def _filled_like(input, op, value, dtype, device, requires_grad, memory_format):
    t = like_layout(input, _filled(_like(input, op), value, dtype or input.dtype, device, False, None, op),
                    memory_format)
    return _finish(t, requires_grad)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
               pin_memory=False):
    """Zeros shaped (and, by default, strided) like ``input`` (its dtype unless ``dtype``)."""
    return _filled_like(input, "zeros_like", 0, dtype, device, requires_grad, memory_format)


def ones_like(input, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
              pin_memory=False):
    """Ones shaped (and, by default, strided) like ``input`` (its dtype unless ``dtype``)."""
    return _filled_like(input, "ones_like", 1, dtype, device, requires_grad, memory_format)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False, memory_format=None, layout=None,
              pin_memory=False):
    """``fill_value`` shaped (and, by default, strided) like ``input`` (its dtype unless ``dtype``)."""
    return _filled_like(input, "full_like", fill_value, dtype, device, requires_grad, memory_format)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A 0-dim tensor holding ``s`` (default dtype unless ``dtype``)."""
    return _filled([], s, dtype or _C.get_default_dtype(), device, requires_grad, None)


def _number_arg(x, op, name, pos):
    """Checks a bound or step of ``arange``/``range``: a number or 0-dim tensor (PyTorch's ``Number``) whose
    integer value, if any, fits int64."""
    if isinstance(x, _C.TensorBase):
        if x.dim() != 0:
            raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Number, not Tensor")
        return x
    if not isinstance(x, (builtins.int, builtins.float, np.number, np.bool_)):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Number, not {_typename(x)}")
    if isinstance(x, builtins.int) and not -2 ** 63 <= x < 2 ** 63:
        raise OverflowError("int too big to convert")
    return x


def _no_bool(dtype, op):
    if dtype == _C.bool:
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for 'Bool'")


def arange(start=0, end=_UNSET, step=1, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
           pin_memory=False):
    r"""Values from ``start`` to ``end`` (exclusive) by ``step``: ``arange(end)`` or ``arange(start, end, step)``.

    Args:
        start (Number): the first value. Default: ``0``.
        end (Number): the bound, not included.
        step (Number): the gap between neighbours, non-zero. Default: ``1``.
        dtype (oneflow.dtype, optional): Default: ``int64`` when start, end and step are all integers, else the
            default dtype. Its length is ``ceil((end - start) / step)``.
    """
    if end is _UNSET:
        start, end = 0, _number_arg(start, "arange", "end", 1)
    else:
        _number_arg(start, "arange", "start", 1)
        _number_arg(end, "arange", "end", 2)
    _number_arg(step, "arange", "step", 3)
    if dtype is not None:
        _no_bool(dtype, "arange")
        if not dtype.is_floating_point and builtins.int(step) == 0 and step != 0:
            raise ValueError("step must be nonzero")  # a fractional step truncated to an integer dtype
    _device(device)
    return _finish(_C.ops.arange(start, end, step, dtype=dtype), requires_grad, out)


def range(start=0, end=_UNSET, step=1, *, dtype=None, device=None, requires_grad=False, out=None, layout=None):
    r"""Values from ``start`` to ``end`` inclusive by ``step`` (deprecated, as in PyTorch: use :func:`arange`).

    Args:
        start (Number): the first value. Default: ``0``.
        end (Number): the last value (included when the steps reach it).
        step (Number): the gap between neighbours, non-zero. Default: ``1``.
        dtype (oneflow.dtype, optional): Default: the default dtype. For an integer dtype, start, end and step
            are first converted to it (a step of 1.5 becomes 1).
    """
    if end is _UNSET:
        start, end = 0, start
    for name, pos, x in (("start", 1, start), ("end", 2, end), ("step", 3, step)):
        _number_arg(x, "range", name, pos)
    warnings.warn("oneflow.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use oneflow.arange, which produces values in "
                  "[start, end).", UserWarning, stacklevel=2)
    start, end, step = (builtins.float(x) for x in (start, end, step))
    dtype = dtype or _C.get_default_dtype()
    _no_bool(dtype, "range")
    if not dtype.is_floating_point:  # computed in the integer type, as PyTorch does
        start, end, step = (builtins.float(math.trunc(x)) if math.isfinite(x) else x for x in (start, end, step))
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {_range_str(start)} -> {_range_str(end)}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    n = builtins.int((end - start) / step) + 1
    t = _C.ops.arange(0, n, dtype=_C.float64)
    t = _C.ops.to_dtype(t * step + start, dtype)
    return _finish(t, requires_grad, out)


def _range_str(x):
    return str(builtins.int(x)) if math.isfinite(x) and x == builtins.int(x) else str(x)


def _round_half(a, dtype):
    """float32 values rounded to ``dtype`` (float16 or bfloat16), nearest-even, kept as float32."""
    a = np.asarray(a, np.float32)
    if dtype == _C.float16:
        return a.astype(np.float16).astype(np.float32)
    bits = a.view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def _linspace_half(start, end, steps, dtype):
    """linspace in float16/bfloat16 as PyTorch computes it: every operation rounded to the half type (its step
    and the offsets from the nearer end), so results can differ from the float result rounded once."""
    r = lambda x: _round_half(x, dtype)  # noqa: E731
    s, e = r(builtins.float(start)), r(builtins.float(end))
    if steps == 1:
        vals = s.reshape(1)
    else:
        step = r(r(e - s) / np.float32(steps - 1))
        i = np.arange(steps)
        lo = r(s + r(step * i.astype(np.float32)))
        hi = r(e - r(step * (steps - 1 - i).astype(np.float32)))
        vals = np.where(i < steps // 2, lo, hi)
    return _C.ops.to_dtype(_C._from_numpy(np.ascontiguousarray(vals, np.float32)), dtype)


def _scalar_bound(x, op, name):
    if isinstance(x, _C.TensorBase) and x.dim() != 0:
        raise RuntimeError(f"{op} only supports 0-dimensional start and end tensors, but got {name} with "
                           f"{x.dim()} dimension(s).")


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
             pin_memory=False):
    r"""``steps`` evenly spaced values from ``start`` to ``end`` inclusive.

    Args:
        start, end (Number or 0-dim tensor): the first and last values.
        steps (int): the number of values (non-negative).
        dtype (oneflow.dtype, optional): Default: the default dtype.
    """
    _scalar_bound(start, "linspace", "start")
    _scalar_bound(end, "linspace", "end")
    if dtype is not None:
        _no_bool(dtype, "linspace")
    _device(device)
    target = dtype or _C.get_default_dtype()
    if target in (_C.float16, _C.bfloat16) and isinstance(steps, builtins.int) and steps > 0:
        t = _linspace_half(start, end, steps, target)
    else:
        t = _C.ops.linspace(start, end, steps, dtype=dtype)
    return _finish(t, requires_grad, out)


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False, out=None, layout=None,
             pin_memory=False):
    r"""``steps`` values ``base ** e`` for exponents ``e`` evenly spaced from ``start`` to ``end`` inclusive.

    Args:
        start, end (Number or 0-dim tensor): the first and last exponents.
        steps (int): the number of values (non-negative).
        base (float): the base. Default: ``10.0``.
        dtype (oneflow.dtype, optional): Default: the default dtype. Floating results are computed as PyTorch
            computes them (exponents in double from bounds rounded to ``dtype``), so they match it bit for bit.
    """
    _scalar_bound(start, "logspace", "start")
    _scalar_bound(end, "logspace", "end")
    if dtype is not None:
        _no_bool(dtype, "logspace")
    _device(device)
    target = dtype or _C.get_default_dtype()
    if target.is_floating_point and isinstance(steps, builtins.int) and steps > 1:
        t = _logspace_float(start, end, steps, base, target)
    else:
        t = _C.ops.logspace(start, end, steps, base, dtype=dtype)
    return _finish(t, requires_grad, out)


def _to_dtype_value(x, dtype):
    """The Python float ``x`` rounded to the floating ``dtype``."""
    if dtype == _C.float64:
        return builtins.float(x)
    f = np.float32(x)
    return builtins.float(f if dtype == _C.float32 else _round_half(f, dtype))


def _logspace_float(start, end, steps, base, dtype):
    """logspace for a floating dtype as PyTorch computes it: the bounds and their difference in ``dtype``, the
    step and exponents in double, ``base ** exponent`` in double, rounded to ``dtype`` (through float32)."""
    s, e = (_to_dtype_value(builtins.float(x), dtype) for x in (start, end))
    step = _to_dtype_value(e - s, dtype) / (steps - 1)
    i = np.arange(steps, dtype=np.float64)
    exponent = np.where(i < steps // 2, s + step * i, e - step * (steps - 1 - i))
    with np.errstate(all="ignore"):  # a negative base gives NaN, a large exponent inf, as in PyTorch
        vals = np.power(builtins.float(base), exponent)
    if dtype != _C.float64:
        vals = vals.astype(np.float32)  # PyTorch's double -> half conversion goes through float too
    t = _C._from_numpy(np.ascontiguousarray(vals))
    return t if t.dtype == dtype else _C.ops.to_dtype(t, dtype)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False):
    """An ``n`` x ``m`` (default ``n`` x ``n``) matrix with ones on the diagonal."""
    _device(device)
    return _finish(_C.ops.eye(n, m, dtype=dtype), requires_grad, out)
