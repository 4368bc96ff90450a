"""Signal-processing helpers of PyTorch's top level: window functions (hann, hamming, blackman, bartlett,
kaiser), trapezoidal integration (trapezoid/trapz/cumulative_trapezoid), histogram, unravel_index and
frombuffer."""
import builtins
import collections
import math

import numpy as np

from .. import _C

ops = _C.ops

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window", "trapezoid",
           "trapz", "cumulative_trapezoid", "histogram", "unravel_index", "frombuffer"]


def _window(name, n, periodic, dtype, requires_grad, fn):
    """A window of ``n`` points from ``fn`` over a symmetric grid; ``periodic`` computes ``n + 1`` points and
    drops the last, as for spectral analysis (PyTorch's convention)."""
    from .creation import tensor

    dtype = dtype or _C.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if n < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={n}")
    if n <= 1:
        values = np.ones(n)
    else:
        m = n + 1 if periodic else n
        values = fn(np.arange(m, dtype=np.float64), m - 1)[:n]
    t = tensor(values, dtype=dtype)
    return t.requires_grad_() if requires_grad else t


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Hann window ``0.5 - 0.5 cos(2 pi n / (N - 1))``."""
    return hamming_window(window_length, periodic, 0.5, 0.5, dtype=dtype, requires_grad=requires_grad,
                          _name="hann_window")


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False, _name="hamming_window"):
    """The generalised Hamming window ``alpha - beta cos(2 pi n / (N - 1))``."""
    return _window(_name, window_length, periodic, dtype, requires_grad,
                   lambda k, span: alpha - beta * np.cos(2 * math.pi * k / span))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The Blackman window ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``."""
    return _window("blackman_window", window_length, periodic, dtype, requires_grad,
                   lambda k, span: 0.42 - 0.5 * np.cos(2 * math.pi * k / span) + 0.08 * np.cos(4 * math.pi * k / span))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangular Bartlett window ``1 - |2 n / (N - 1) - 1|``."""
    return _window("bartlett_window", window_length, periodic, dtype, requires_grad,
                   lambda k, span: 1 - np.abs(2 * k / span - 1))


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    """The Kaiser window ``I0(beta sqrt(1 - (2 n / (N - 1) - 1)^2)) / I0(beta)``."""
    return _window("kaiser_window", window_length, periodic, dtype, requires_grad,
                   lambda k, span: np.i0(beta * np.sqrt(np.clip(1 - (2 * k / span - 1) ** 2, 0, None))) / np.i0(beta))


def _spacing(y, x, dx, dim):
    """Per-interval widths along ``dim``: from the sample points ``x`` (1-D or shaped like ``y``), else ``dx``."""
    if x is None:
        return 1.0 if dx is None else dx
    if dx is not None:
        raise RuntimeError("trapezoid: Cannot specify both x and dx")
    if x.dim() == 1:
        shape = [1] * y.dim()
        shape[dim % y.dim()] = x.shape[0] - 1
        return ops.reshape(ops.sub(ops.slice(x, 0, 1, x.shape[0], 1), ops.slice(x, 0, 0, x.shape[0] - 1, 1)), shape)
    n = x.shape[dim]
    return ops.sub(ops.slice(x, dim, 1, n, 1), ops.slice(x, dim, 0, n - 1, 1))


def _areas(y, x, dx, dim):
    n = y.shape[dim]
    mid = ops.div(ops.add(ops.slice(y, dim, 1, n, 1), ops.slice(y, dim, 0, n - 1, 1)), 2)
    return ops.mul(mid, _spacing(y, x, dx, dim))


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The trapezoidal rule's integral of ``y`` along ``dim`` (sample points ``x``, or a spacing ``dx``)."""
    if y.shape[dim] == 0:
        return ops.sum(y, [dim])
    return ops.sum(_areas(y, x, dx, dim), [dim])


def trapz(y, x=None, *, dx=None, dim=-1):
    """Alias of :func:`trapezoid`."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running trapezoidal integral of ``y`` along ``dim`` (one element shorter than ``y`` there)."""
    if y.shape[dim] == 0:
        return y
    return ops.cumsum(_areas(y, x, dx, dim), dim)


histogram_return = collections.namedtuple("histogram", ["hist", "bin_edges"])


def histogram(input, bins=100, *, range=None, weight=None, density=False, out=None):
    r"""histogram(input, bins=100, *, range=None, weight=None, density=False, out=None) -> (Tensor, Tensor)

    The histogram of the values of ``input``: the one-dimensional case of :func:`oneflow.histogramdd`, with
    its checks (PyTorch builds it the same way).

    Args:
        input (Tensor): floating point values, any shape (flattened).
        bins (int or Tensor): the number of equal-width bins, or their increasing edges (same dtype as input).

    Keyword args:
        range (tuple of float, optional): ``(min, max)`` of the equal-width bins (default: the data's range).
        weight (Tensor, optional): one weight per element of ``input`` (default 1).
        density (bool): normalise to a probability density.
        out (tuple of two Tensors, optional): where to write ``(hist, bin_edges)``.

    Returns:
        ``(hist, bin_edges)``. Every bin holds the values on its left edge, the last bin also those on its
        right edge. Not differentiable, as in PyTorch.
    """
    from .histogramdd import histogramdd

    if isinstance(bins, _C.TensorBase) and bins.dtype != input.dtype:
        from ._names import torch_dtype_name

        raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, but "
                           f"got input with dtype {torch_dtype_name(input.dtype).lower()} and bins for dimension 0 "
                           f"with dtype {torch_dtype_name(bins.dtype).lower()}")
    if weight is not None and weight.numel() == input.numel():
        weight = ops.reshape(weight, [-1])  # one weight per element, whatever its shape (as PyTorch)
    hist, edges = histogramdd(ops.reshape(input, [-1, 1]), [bins], range=range, weight=weight, density=density)
    result = (hist, edges[0])
    if out is not None:
        from .creation import _finish

        result = tuple(_finish(r, False, o) for r, o in zip(result, out))
    return histogram_return(*result)


def unravel_index(indices, shape):
    """The coordinates, one tensor per dim of ``shape``, of flat (row-major) ``indices``."""
    from .creation import tensor

    idx = indices if isinstance(indices, _C.TensorBase) else tensor(indices)
    if idx.dtype.is_floating_point or idx.dtype == _C.bool:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {idx.dtype}")
    shape = [shape] if isinstance(shape, int) else list(shape)
    if builtins.any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(tuple(shape)))
    total = math.prod(shape)
    if idx.numel() and (int(ops.min(idx).item()) < -total or int(ops.max(idx).item()) >= total):
        raise ValueError(f"'indices' must be in range [{-total}, {total - 1}]")
    idx = ops.remainder(ops.to_dtype(idx, _C.int64), total) if total else ops.to_dtype(idx, _C.int64)
    coords = []
    for s in reversed(shape):
        coords.append(ops.remainder(idx, s))
        idx = ops.floor_divide(idx, s)
    return tuple(reversed(coords))


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-D tensor sharing the memory of a Python buffer (bytes-like object), read as ``dtype``."""
    from .tensor_data import _NP_TO_FLOW

    np_dtype = next((k for k, v in _NP_TO_FLOW.items() if v == dtype), None)
    if np_dtype is None:
        raise TypeError(f"frombuffer: unsupported dtype {dtype}")
    arr = np.frombuffer(buffer, dtype=np_dtype, count=count, offset=offset)
    t = _C._from_numpy(arr)
    return t.requires_grad_() if requires_grad else t
