"""Ranges: ``arange``, ``range`` (deprecated), ``linspace`` and ``logspace``, with PyTorch's argument rules; the
values are computed in C++ (ops/creation.cpp) or, where PyTorch's rounding must be matched, here."""
import builtins
import math
import warnings

import numpy as np

from .. import _C
from ._creation_args import _UNSET, _device, _finish, _typename

__all__ = ["arange", "range", "linspace", "logspace"]


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
    return _finish(_C.ops.arange(start, end, step, dtype=dtype, device=_device(device)), requires_grad, out)


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


def _linspace_half(start, end, steps, dtype, shard=None):
    """linspace in float16/bfloat16 as PyTorch computes it: every operation rounded to the half type (its step
    and the offsets from the nearer end), so results can differ from the float result rounded once. ``shard``:
    the ``[start, stop]`` indices of the block to make."""
    r = lambda x: _round_half(x, dtype)  # noqa: E731
    s, e = r(builtins.float(start)), r(builtins.float(end))
    first, stop = (0, steps) if shard is None else shard
    if steps == 1:
        vals = s.reshape(1)[first:stop]
    else:
        step = r(r(e - s) / np.float32(steps - 1))
        i = np.arange(first, stop)
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
    dev = _device(device)
    target = dtype or _C.get_default_dtype()
    if target in (_C.float16, _C.bfloat16) and isinstance(steps, builtins.int) and steps > 0 and dev is None:
        t = _linspace_half(start, end, steps, target)
    else:
        t = _C.ops.linspace(start, end, steps, dtype=dtype, device=dev)
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
    t = _C.ops.logspace(start, end, steps, base, dtype=dtype, device=_device(device))
    return _finish(t, requires_grad, out)


# The blocks of split global ranges (``_global_shards``): the arguments were checked by a call of the public
# function on the meta device, so these only compute the block, with the whole result's values at its indices.
def arange_block(start, end, step, dtype, device, shard):
    return _C.ops.arange(start, end, step, dtype=dtype, device=_device(device), shard=shard)


def linspace_block(start, end, steps, dtype, device, shard):
    dev = _device(device)
    target = dtype or _C.get_default_dtype()
    if target in (_C.float16, _C.bfloat16) and isinstance(steps, builtins.int) and steps > 0 and dev is None:
        return _linspace_half(start, end, steps, target, shard)
    return _C.ops.linspace(start, end, steps, dtype=dtype, device=dev, shard=shard)


def logspace_block(start, end, steps, base, dtype, device, shard):
    return _C.ops.logspace(start, end, steps, base, dtype=dtype, device=_device(device), shard=shard)
