"""``make_tensor``: random test tensors of a given shape, dtype and device, as ``torch.testing.make_tensor``
makes them (value ranges by dtype, optional non-contiguity, memory format and zero exclusion)."""
import collections.abc
import math
import warnings

from .. import _C

_INTEGRAL = (_C.uint8, _C.int8, _C.int16, _C.int32, _C.int64)
_FLOATING = (_C.float16, _C.bfloat16, _C.float32, _C.float64)


def _value_range(dtype, low, high, lowest, highest, default_low, default_high):
    """``[low, high)`` with defaults filled in, checked, clamped to what ``dtype`` holds (``highest``
    exclusive) and, for integral types, rounded up."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got {low=} and {high=}")
    if low == high and dtype in _FLOATING:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is deprecated "
                      "since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.", FutureWarning,
                      stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} only "
                         f"supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if dtype not in _FLOATING:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False, noncontiguous=False,
                exclude_zero=False, memory_format=None):
    r"""Creates a tensor of the given ``shape``, ``device`` and ``dtype``, filled with values drawn uniformly
    from ``[low, high)``.

    ``low`` / ``high`` outside the range of finite values of ``dtype`` are clamped to it. When ``None`` they
    default to: ``0`` / ``2`` for bool, ``0`` / ``10`` for unsigned integers, ``-9`` / ``10`` for signed
    integers and ``-9`` / ``9`` for floating types.

    Args:
        shape (int or Sequence[int]): the shape, as ints or one sequence.
        dtype (:class:`oneflow.dtype`): the data type.
        device (str or :class:`oneflow.device`): the device.
        low (Number, optional): the inclusive lower limit.
        high (Number, optional): the exclusive upper limit.
        requires_grad (bool): whether autograd records operations on the result (floating types only).
        noncontiguous (bool): make the result non-contiguous (ignored with fewer than two elements); exclusive
            with ``memory_format``.
        exclude_zero (bool): replace zeros by 1 (bool and integers) or by the dtype's smallest positive normal
            number (``finfo(dtype).tiny``).
        memory_format (:class:`oneflow.memory_format`, optional): the memory format of the result.

    Raises:
        ValueError: if ``requires_grad=True`` with a bool or integral dtype, if ``low >= high``, if ``low`` or
            ``high`` is NaN, or if both ``noncontiguous`` and ``memory_format`` are given.
        TypeError: if ``dtype`` is not supported.
    """
    from .. import empty, finfo, iinfo, randint

    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"{noncontiguous=} and {memory_format=}")
    if requires_grad and (dtype == _C.bool or dtype in _INTEGRAL):
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got {dtype=}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        # every other element of a doubled last dim
        shape = (*shape[:-1], 2 * shape[-1])
    if dtype == _C.bool:
        low, high = _value_range(dtype, low, high, 0, 2, 0, 2)
        result = randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _INTEGRAL:
        info = iinfo(dtype)
        # int64's upper bound stays exclusive: one more would not fit randint's bound
        highest = info.max + (1 if dtype != _C.int64 else 0)
        low, high = _value_range(dtype, low, high, info.min, highest, -9, 10)
        result = randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _FLOATING:
        info = finfo(dtype)
        low, high = _value_range(dtype, low, high, info.min, info.max, -9, 9)
        result = empty(shape, device=device, dtype=dtype)
        if high - low >= info.max:
            # the span itself would overflow the dtype: draw half-size values and double them
            result.uniform_(low / 2, high / 2).mul_(2)
        else:
            result.uniform_(low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by torch.testing.make_tensor(). To request "
                        "support, file an issue at: https://github.com/pytorch/pytorch/issues")
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        result[result == 0] = 1 if dtype == _C.bool or dtype in _INTEGRAL else finfo(dtype).tiny
    if dtype in _FLOATING:
        result.requires_grad = requires_grad
    return result
