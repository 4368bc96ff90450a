"""Tensors from data: ``tensor`` (PyTorch's rules for Python and NumPy data: dtype inference, ragged lists,
overflow), and the NumPy and buffer interop ``from_numpy``, ``as_tensor``, ``asarray``, ``from_dlpack``."""
import builtins
import math
import warnings

import numpy as np

from .. import _C, _dlpack_protocol, _global_creation
from ._creation_args import _UNSET, _device, _finish, _typename, _warn_once

__all__ = ["tensor", "as_tensor", "asarray", "from_numpy", "from_dlpack"]

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
def _np_flow_dtype(np_dtype):
    """The oneflow dtype of a NumPy dtype, or PyTorch's error for one that cannot be converted."""
    if not np_dtype.isnative:
        raise ValueError(_BYTE_ORDER)
    try:
        return _NP_TO_FLOW[np_dtype]
    except KeyError:
        raise TypeError(_NP_TYPE_ERROR.format(f"numpy.{np_dtype.type.__name__}")) from None


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


def _host_array(data, dtype):
    """Python data (numbers, nested sequences, NumPy scalars/arrays, element tensors) as a host NumPy array and
    the tensor dtype it stands for (the array holds float64, int64 or bool values); a zero-size result gives
    ``(sizes, dtype)`` with no array."""
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
        return sizes, target
    if _C.TensorBase in seen:
        data = _scalars(data)
    if np.ndarray in seen:
        _warn_once("list of ndarrays", "Creating a tensor from a list of numpy.ndarrays is extremely slow. Please "
                   "consider converting the list to a single numpy.ndarray with numpy.array() before converting to "
                   "a tensor.", 5)
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
    return arr, target


def _array_tensor(arr, target, block=None):
    """The tensor of ``_host_array``'s result, or of its ``block`` (a tuple of slices) only."""
    if not isinstance(arr, np.ndarray):  # zero-size
        sizes = list(arr) if block is None else [len(range(*b.indices(n))) for b, n in zip(block, arr)]
        return _C._empty(sizes, target, None)
    if block is not None:
        arr = np.ascontiguousarray(arr[block])
    t = _C._from_numpy(arr if arr.flags.c_contiguous and arr.flags.writeable else arr.copy())
    return t if t.dtype == target else _C.ops.to_dtype(t, target)


def _from_data(data, dtype):
    """A new tensor holding Python data (numbers, nested sequences, NumPy scalars/arrays, element tensors)."""
    return _array_tensor(*_host_array(data, dtype))


def shard_of_data(data, dtype):
    """``tensor(data, dtype=dtype)``'s logical shape and a function of a block (a tuple of slices, or None for
    the whole) that makes only that block of it: a global ``tensor(data, placement=, sbp=)`` slices the host
    data per rank before any tensor is made."""
    if isinstance(data, _C.TensorBase):
        src = data.detach()
        if getattr(src, "is_global", False) is True:  # its whole value on every rank (a collective), then sliced
            import oneflow

            src = src.to_global(sbp=(oneflow.sbp.broadcast,) * src.placement.ranks.ndim).to_local()

        def make(block):
            t = _C.ops.clone(src if block is None else src[block])
            return t if dtype is None or dtype == t.dtype else _C.ops.to_dtype(t, dtype)

        return list(src.shape), make
    if isinstance(data, np.ndarray):
        _np_flow_dtype(data.dtype)

        def make(block):
            t = _C._from_numpy(np.array(data if block is None else data[block], copy=True, order="C"))
            return t if dtype is None or dtype == t.dtype else _C.ops.to_dtype(t, dtype)

        return list(data.shape), make
    arr, target = _host_array(data, dtype)
    shape = list(arr.shape) if isinstance(arr, np.ndarray) else list(arr)
    return shape, lambda block: _array_tensor(arr, target, block)


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


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False, placement=None, sbp=None):
    r"""Constructs a tensor with no autograd history by copying ``data``.

    Args:
        data (array_like): a number, (nested) list or tuple, NumPy scalar or array, or tensor.
        dtype (oneflow.dtype, optional): the result's dtype. Default: inferred from ``data`` as PyTorch does --
            Python floats give the default dtype, ints ``int64``, bools ``bool``, NumPy values and tensors their
            own dtype, mixed elements the promotion of their types.
        device (oneflow.device, optional): the result's device.
        requires_grad (bool, optional): whether autograd records operations on the result. Default: ``False``.
        placement, sbp (optional): OneFlow's global layout: ``data`` is the whole logical tensor on every rank,
            laid out over ``placement`` by ``sbp`` (needs flow-dist). Default: a local tensor.

    Copying a tensor warns (use ``t.detach().clone()``); ragged data raises ``ValueError``; a Python int out of
    the ``int64`` range raises ``ValueError``; a number out of a narrower integer ``dtype``'s range raises
    ``RuntimeError``.
    """
    if placement is not None or sbp is not None:  # a global tensor (flow-dist)
        return _global_creation.make_global(tensor, (data,), dict(
            dtype=dtype, device=device, requires_grad=requires_grad, pin_memory=pin_memory, placement=placement,
            sbp=sbp))
    dev = _device(device)
    if isinstance(data, _C.TensorBase):
        warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
                      "sourceTensor.detach().clone().requires_grad_(True), rather than "
                      "oneflow.tensor(sourceTensor).", UserWarning, stacklevel=2)
    return _finish(_place(_C.ops.lift_fresh(_copy_of(data, dtype)), dev), requires_grad)


def _place(t, dev):
    """``t`` on the device ``_device`` resolved (None: where it is, the CPU)."""
    return t if dev is None or t.device == dev else _C.ops.to_device(t, device=dev)


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
    With ``placement=`` and ``sbp=`` (flow-dist), ``data`` is the whole logical tensor on every rank and each
    rank copies its shard of it, as :func:`tensor` does.
    """
    dev = _device(device)
    if isinstance(data, _C.TensorBase):
        return _place(data if dtype is None or dtype == data.dtype else _C.ops.to_dtype(data, dtype), dev)
    if isinstance(data, np.ndarray):
        _np_flow_dtype(data.dtype)
        t = _copy_of(data, None) if _negative_strides(data) else _shared_ndarray(data)
        return _place(t if dtype is None or dtype == t.dtype else _C.ops.to_dtype(t, dtype), dev)
    return _place(_C.ops.lift_fresh(_copy_of(data, dtype)), dev)





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
        t = _aliased(_dlpack_protocol.from_dlpack(obj), dtype, copy, lambda t: _C.ops.clone(t))
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
    r"""Creates a tensor sharing memory with ``ext_tensor`` through DLPack, without copying.

    Args:
        ext_tensor: an object with ``__dlpack__`` (NumPy arrays, PyTorch/JAX tensors, ...) or a DLPack capsule
            (``"dltensor"`` or ``"dltensor_versioned"``), which is consumed: it can be imported only once.

    The producer's memory stays alive as long as the tensor (or a view of it) does. Memory on devices this build
    can't reach raises ``BufferError``, dtypes oneflow lacks (complex) ``TypeError``.
    """
    return _dlpack_protocol.from_dlpack(ext_tensor)


