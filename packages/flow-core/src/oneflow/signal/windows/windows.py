r"""The window functions of ``torch.signal.windows``: ``M`` points of a window, symmetric (``sym=True``, for
filter design) or periodic (``sym=False``, for spectral analysis: the first ``M`` points of the symmetric
window of ``M + 1`` points).

The windows ``oneflow.hann_window`` & co. already compute (Hann, Hamming, Blackman, Bartlett, Kaiser) are
reused with ``periodic = not sym``; the others are computed here in float64 and rounded to ``dtype``. These
functions check their arguments as PyTorch's do (``ValueError``, float32/float64 only)."""
import collections.abc
import math

import numpy as np

from ... import _C
from ..._ops import signal as _windows

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming",
           "hamming", "hann", "kaiser", "nuttall"]


def _checks(name, M, dtype, layout):
    """PyTorch's common checks; returns the dtype to use."""
    dtype = dtype or _C.get_default_dtype()
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    from ... import strided

    if layout is not None and layout != strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (_C.float32, _C.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _tensor(values, dtype, device, requires_grad):
    from ..._ops.creation import _device, tensor

    _device(device)
    t = tensor(np.asarray(values, dtype=np.float64), dtype=dtype)
    return t.requires_grad_() if requires_grad else t


def _denominator(M, sym):
    # the span of the symmetric window the points are taken from: M - 1, or M for a periodic window
    return M - 1 if sym else M


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    r"""Computes the general cosine window :math:`w_n = \sum_{i} (-1)^i a_i \cos(2 \pi i n / N)`, with
    :math:`N = M - 1` if ``sym`` else :math:`M`.

    Args:
        M (int): the length of the window.

    Keyword args:
        a (Iterable): the coefficients :math:`a_i`.
        sym (bool, optional): symmetric (default) or periodic window.
        dtype, layout, device, requires_grad: as for tensor factories.
    """
    dtype = _checks("general_cosine", M, dtype, layout)
    if M <= 1:
        return _tensor(np.ones(M), dtype, device, requires_grad)
    if not isinstance(a, collections.abc.Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    a = list(a)
    if not a:
        raise ValueError("Coefficients cannot be empty")
    z = 2 * math.pi * np.arange(M) / _denominator(M, sym)
    values = sum((-1) ** i * float(w) * np.cos(i * z) for i, w in enumerate(a))
    return _tensor(values, dtype, device, requires_grad)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    r"""Computes the general Hamming window :math:`w_n = \alpha - (1 - \alpha) \cos(2 \pi n / N)`, with
    :math:`N = M - 1` if ``sym`` else :math:`M`."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    r"""Computes the Hann window :math:`w_n = \frac{1}{2} [1 - \cos(2 \pi n / N)]`, with :math:`N = M - 1` if
    ``sym`` else :math:`M` (same as :func:`oneflow.hann_window` with ``periodic = not sym``)."""
    dtype = _checks("general_cosine", M, dtype, layout)  # PyTorch reports its general form
    return _windows.hann_window(M, not sym, dtype=dtype, device=device, requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    r"""Computes the Hamming window :math:`w_n = 0.54 - 0.46 \cos(2 \pi n / N)`, with :math:`N = M - 1` if
    ``sym`` else :math:`M`."""
    dtype = _checks("general_cosine", M, dtype, layout)  # PyTorch reports its general form
    return _windows.hamming_window(M, not sym, dtype=dtype, device=device, requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    r"""Computes the Blackman window :math:`w_n = 0.42 - 0.5 \cos(2 \pi n / N) + 0.08 \cos(4 \pi n / N)`,
    with :math:`N = M - 1` if ``sym`` else :math:`M`."""
    dtype = _checks("blackman", M, dtype, layout)
    return _windows.blackman_window(M, not sym, dtype=dtype, device=device, requires_grad=requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    r"""Computes the Bartlett (triangular) window :math:`w_n = 1 - |2n / N - 1|`, with :math:`N = M - 1` if
    ``sym`` else :math:`M`."""
    dtype = _checks("bartlett", M, dtype, layout)
    return _windows.bartlett_window(M, not sym, dtype=dtype, device=device, requires_grad=requires_grad)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    r"""Computes the Kaiser window :math:`w_n = I_0(\beta \sqrt{1 - (2n / N - 1)^2}) / I_0(\beta)`, with
    :math:`N = M - 1` if ``sym`` else :math:`M` and :math:`I_0` the zeroth-order modified Bessel function of
    the first kind."""
    dtype = _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    return _windows.kaiser_window(M, not sym, beta, dtype=dtype, device=device, requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    r"""Computes the minimum 4-term Blackman-Harris window according to Nuttall:
    :math:`w_n = 0.3635819 - 0.4891775 \cos(z_n) + 0.1365995 \cos(2 z_n) - 0.0106411 \cos(3 z_n)`, with
    :math:`z_n = 2 \pi n / N` and :math:`N = M - 1` if ``sym`` else :math:`M`."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def cosine(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    r"""Computes the cosine (sine) window :math:`w_n = \sin(\pi (n + 1/2) / M')`, with :math:`M' = M` if
    ``sym`` else :math:`M + 1`."""
    dtype = _checks("cosine", M, dtype, layout)
    span = M + 1 if not sym and M > 1 else M
    return _tensor(np.sin(math.pi * (np.arange(M) + 0.5) / max(span, 1)), dtype, device, requires_grad)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    r"""Computes the exponential (Poisson) window :math:`w_n = \exp(-|n - c| / \tau)`.

    Keyword args:
        center (float, optional): :math:`c`; default the middle, ``(M - 1) / 2`` (``M / 2`` when periodic).
            Only periodic windows accept it.
        tau (float, optional): the decay, positive. Default: 1.0.
    """
    dtype = _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    return _tensor(np.exp(-np.abs(np.arange(M) - center) / tau), dtype, device, requires_grad)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
    r"""Computes the Gaussian window :math:`w_n = \exp(-(n - c)^2 / (2 \sigma^2))`, centred at
    :math:`c = (M - 1) / 2` (``M / 2`` when periodic).

    Keyword args:
        std (float, optional): the standard deviation :math:`\sigma`, positive. Default: 1.0.
    """
    dtype = _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    center = (M if not sym and M > 1 else M - 1) / 2.0
    return _tensor(np.exp(-((np.arange(M) - center) ** 2) / (2.0 * std * std)), dtype, device, requires_grad)
