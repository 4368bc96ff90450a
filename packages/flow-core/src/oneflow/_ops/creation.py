"""Tensor creation: filled tensors (empty, zeros, ones, full and their *_like forms, empty_strided, eye,
scalar_tensor), with the constructors of tensor_data.py (tensors from Python and NumPy data) and ranges.py
(arange, range, linspace, logspace) re-exported. The argument helpers all three share are in _creation_args.py."""
import builtins

import numpy as np

from .. import _C, _global_creation
from .._printing import set_printoptions  # noqa: F401  (exported as oneflow.set_printoptions)
from ._creation_args import (  # noqa: F401  (other modules and the tests reach these through creation)
    _UNSET, _check_requires_grad, _default_device, _device, _finish, _typename, _warn_once, _warned)
# the data and range constructors live in their own modules; other modules import them from here
from .ranges import arange, linspace, logspace, range  # noqa: F401
from .tensor_data import _copy_of, _is_sequence, as_tensor, asarray, from_dlpack, from_numpy, tensor  # noqa: F401

__all__ = ["zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like", "full_like", "scalar_tensor",
           "eye", "set_printoptions", "empty_strided"]


def _shape(size, op="empty", arg="size"):
    """The ``size`` argument of ``op`` as a list of ints: varargs ints or one list/tuple/``Size``, checked and
    with PyTorch's errors for anything else (a bool, float, string, None, 1-D tensor or a nested sequence)."""
    if len(size) == 0:
        raise TypeError(f'{op}() missing 1 required positional arguments: "size"')
    # the common case first: plain non-negative ints, varargs or one list/tuple (creation's per-call cost)
    plain = size[0] if len(size) == 1 and isinstance(size[0], (list, tuple)) else size
    for s in plain:  # a loop, not all(<generator>): half the cost on these short sizes
        if type(s) is not builtins.int or s < 0:
            break
    else:
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


def _like_device(input, device):
    """The device of a ``*_like`` result: ``device``, else ``input``'s."""
    return _device(input.device if device is None else device)


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
    if kw and _global_creation.requested(kw):  # placement=/sbp=: a global tensor (flow-dist)
        return _global_creation.make_global(empty, size, dict(
            kw, dtype=dtype, device=device, requires_grad=requires_grad, out=out, pin_memory=pin_memory,
            memory_format=memory_format))
    shape = _sized("empty", size, kw)
    t = _C._empty(shape, dtype or _C.get_default_dtype(), _device(device))
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
    t = _C._empty_strided(shape, strides, dtype or _C.get_default_dtype(), _device(device))
    return _finish(t, requires_grad)


def _sized(op, size, kw):
    """The shape a filled creator (empty, zeros, ones) was called with: its varargs ``size``, or ``size=`` among
    its keyword arguments ``kw``, which must hold nothing else."""
    if not kw:
        return _shape(size, op)
    shape = _kw_size(size, kw.pop("size", None), op)
    _reject(kw, op)
    return shape


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
    if type(value) is builtins.float or (type(value) is builtins.int and -2 ** 63 <= value < 2 ** 63):
        return value  # the common case, stored as it is
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
    """The registry's ``full`` op (one op that interception modes see as the allocation it is); ``device`` is
    already resolved by ``_device``."""
    t = _C.ops.full(shape, _fill_number(value, dtype, op), dtype=dtype, device=device)
    return _finish(t, requires_grad, out) if requires_grad or out is not None else t


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
    return _filled(shape, fill_value, dtype, _device(device), requires_grad, out)


def zeros(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False, **kw):
    """A tensor of zeros (default dtype unless ``dtype``)."""
    if kw and _global_creation.requested(kw):  # placement=/sbp=: a global tensor (flow-dist)
        return _global_creation.make_global(zeros, size, dict(
            kw, dtype=dtype, device=device, requires_grad=requires_grad, out=out, layout=layout,
            pin_memory=pin_memory))
    # the registry's zeros op: dtype None is the default dtype there
    t = _C.ops.zeros(_sized("zeros", size, kw), dtype=dtype, device=_device(device))
    return _finish(t, requires_grad, out) if requires_grad or out is not None else t


def ones(*size, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False, **kw):
    """A tensor of ones (default dtype unless ``dtype``)."""
    if kw and _global_creation.requested(kw):  # placement=/sbp=: a global tensor (flow-dist)
        return _global_creation.make_global(ones, size, dict(
            kw, dtype=dtype, device=device, requires_grad=requires_grad, out=out, layout=layout,
            pin_memory=pin_memory))
    t = _C.ops.ones(_sized("ones", size, kw), dtype=dtype, device=_device(device))
    return _finish(t, requires_grad, out) if requires_grad or out is not None else t


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
    shape = _like(input, "empty_like")
    t = like_layout(input, _C._empty(shape, dtype or input.dtype, _like_device(input, device)), memory_format)
    return _finish(t, requires_grad)


def _filled_like(input, op, value, dtype, device, requires_grad, memory_format):
    shape = _like(input, op)
    t = like_layout(input, _filled(shape, value, dtype or input.dtype, _like_device(input, device), False, None, op),
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
    return _filled([], s, dtype or _C.get_default_dtype(), _device(device), requires_grad, None)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, out=None, layout=None, pin_memory=False):
    """An ``n`` x ``m`` (default ``n`` x ``n``) matrix with ones on the diagonal."""
    return _finish(_C.ops.eye(n, m, dtype=dtype, device=_device(device)), requires_grad, out)

