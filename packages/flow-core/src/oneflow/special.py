"""``oneflow.special``: PyTorch's ``torch.special`` over registry ops (so autograd works): the error-function
family (``erf``, ``erfc``, ``erfcx``, ``erfinv``, ``ndtr``, ``ndtri``, ``log_ndtr``), the log-gamma family
(``gammaln``, ``digamma``/``psi``, ``polygamma``, ``multigammaln``), the incomplete gamma functions
(``gammainc``, ``gammaincc``), the modified Bessel functions ``i0``, ``i0e``, ``i1``, ``i1e``, the Hurwitz
``zeta``, ``xlogy``/``xlog1py``/``entr``, the softmax family and the orthogonal polynomials (Chebyshev, shifted
Chebyshev, Hermite, Laguerre, Legendre). The Bessel J/Y/K functions and the Airy function are not provided."""
import math

from . import _C

ops = _C.ops

__all__ = ["expit", "logit", "erf", "erfc", "erfinv", "log1p", "expm1", "exp2", "logsumexp", "softmax",
           "log_softmax", "xlogy", "entr", "sinc", "ndtr", "log_ndtr", "gammaln", "digamma", "psi", "polygamma",
           "multigammaln", "gammainc", "gammaincc", "i0", "i0e", "i1", "i1e", "ndtri", "erfcx", "xlog1py", "zeta",
           "round"] + [f"{name}_polynomial_{k}" for name, k in (
               ("chebyshev", "t"), ("chebyshev", "u"), ("chebyshev", "v"), ("chebyshev", "w"),
               ("shifted_chebyshev", "t"), ("shifted_chebyshev", "u"), ("shifted_chebyshev", "v"),
               ("shifted_chebyshev", "w"), ("hermite", "h"), ("hermite", "he"), ("laguerre", "l"),
               ("legendre", "p"))]


def _float(input):
    """Integer and bool inputs are computed in the default float dtype, as PyTorch's unary float ops do."""
    return input if input.dtype.is_floating_point else ops.to_dtype(input, _C.get_default_dtype())


def _unary(op_name, doc):
    def f(input):
        return getattr(ops, op_name)(_float(input))

    f.__doc__ = doc
    return f


expit = _unary("sigmoid", "The logistic sigmoid ``1 / (1 + exp(-input))``.")
erf = _unary("erf", "The error function.")
erfc = _unary("erfc", "The complementary error function ``1 - erf(input)``.")
erfinv = _unary("erfinv", "The inverse error function.")
log1p = _unary("log1p", "``log(1 + input)``, accurate for small inputs.")
expm1 = _unary("expm1", "``exp(input) - 1``, accurate for small inputs.")
exp2 = _unary("exp2", "``2 ** input``.")
gammaln = _unary("lgamma", "``log(|Gamma(input)|)``.")
digamma = _unary("digamma", "The logarithmic derivative of the gamma function, ``Gamma'(x) / Gamma(x)``.")
psi = digamma
i0 = _unary("i0", "The modified Bessel function of the first kind of order 0, ``I0``.")
i0e = _unary("_special_i0e", "The exponentially scaled ``I0``: ``exp(-|x|) * i0(x)``.")
i1 = _unary("_special_i1", "The modified Bessel function of the first kind of order 1, ``I1``.")
i1e = _unary("_special_i1e", "The exponentially scaled ``I1``: ``exp(-|x|) * i1(x)``.")
ndtri = _unary("_special_ndtri", "The inverse of :func:`ndtr`: the ``x`` with ``ndtr(x) = input``.")
erfcx = _unary("_special_erfcx", "The scaled complementary error function ``exp(x ** 2) * erfc(x)``.")
for _f, _n in ((expit, "expit"), (erf, "erf"), (erfc, "erfc"), (erfinv, "erfinv"), (log1p, "log1p"),
               (expm1, "expm1"), (exp2, "exp2"), (gammaln, "gammaln"), (digamma, "digamma"), (i0, "i0"),
               (i0e, "i0e"), (i1, "i1"), (i1e, "i1e"), (ndtri, "ndtri"), (erfcx, "erfcx")):
    _f.__name__ = _n
del _f, _n


def logit(input, eps=None):
    """``log(p / (1 - p))``, with ``input`` first clamped to ``[eps, 1 - eps]`` when ``eps`` is given."""
    x = _float(input)
    if eps is not None:
        x = ops.clamp(x, eps, 1.0 - eps)
    return ops.log(ops.div(x, ops.sub(1.0, x)))


def logsumexp(input, dim, keepdim=False):
    """``log(sum(exp(input), dim))``, computed stably."""
    from . import logsumexp as _logsumexp

    return _logsumexp(input, dim, keepdim)


def softmax(input, dim, *, dtype=None):
    """Softmax along ``dim`` (after casting to ``dtype`` when given)."""
    from .nn.functional import softmax as _softmax

    return _softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """Log-softmax along ``dim`` (after casting to ``dtype`` when given)."""
    from .nn.functional import log_softmax as _log_softmax

    return _log_softmax(input, dim, dtype=dtype)


def xlogy(input, other):
    """``input * log(other)``, 0 where ``input`` is 0 (NaN where ``other`` is NaN)."""
    from . import xlogy as _xlogy

    return _xlogy(input, other)


def xlog1py(input, other):
    """``input * log1p(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN)."""
    return ops._special_xlog1py(input, other)


def zeta(input, other):
    """The Hurwitz zeta function ``sum_k (k + other) ** -input`` (the Riemann zeta at ``other = 1``)."""
    return ops._special_zeta(input, other)


def gammainc(input, other):
    """The regularized lower incomplete gamma function ``P(input, other)``; the same as ``oneflow.igamma``."""
    return ops.igamma(input, other)


def gammaincc(input, other):
    """The regularized upper incomplete gamma function ``Q(input, other) = 1 - P(input, other)``; the same as
    ``oneflow.igammac``."""
    return ops.igammac(input, other)


def round(input, *, decimals=0):
    """Rounds half to even, to ``decimals`` decimal places; the same as ``oneflow.round``."""
    from . import round as _round

    return _round(input, decimals=decimals)


def entr(input):
    """Elementwise entropy ``-x * log(x)``: 0 at 0, ``-inf`` for negative ``x``. (The gradient is 0 at and below 0;
    PyTorch's is ``inf`` at 0 and NaN below.)"""
    x = _float(input)
    positive = ops.gt(x, 0.0)
    xs = ops.where(positive, x, 1.0)
    body = ops.where(positive, ops.neg(ops.mul(xs, ops.log(xs))), 0.0)
    return ops.where(ops.lt(x, 0.0), -math.inf, ops.where(ops.isnan(x), x, body))


def sinc(input):
    """The normalized sinc ``sin(pi x) / (pi x)``, 1 at 0."""
    x = _float(input)
    zero = ops.eq(x, 0.0)
    px = ops.mul(ops.where(zero, 1.0, x), math.pi)  # keeps the gradient at 0 finite (it is 0 there)
    return ops.where(zero, 1.0, ops.div(ops.sin(px), px))


def ndtr(input):
    """The standard normal CDF ``(1 + erf(x / sqrt(2))) / 2``."""
    return ops.mul(ops.erfc(ops.mul(_float(input), -1.0 / math.sqrt(2.0))), 0.5)


def log_ndtr(input):
    """``log(ndtr(input))``, accurate in the far left tail."""
    x = _float(input)
    left = ops.lt(x, -1.0)
    # left of -1: log(erfc(t) / 2) with t = -x / sqrt(2), written as log(erfcx(t) / 2) - t^2, which neither
    # underflows nor loses digits. Each branch sees only inputs valid for it, so the unused one contributes no
    # NaN gradient.
    t = ops.mul(ops.where(left, x, -2.0), -1.0 / math.sqrt(2.0))
    tail = ops.sub(ops.log(ops.mul(ops._special_erfcx(t), 0.5)), ops.mul(t, t))
    xr = ops.where(left, 0.0, x)
    head = ops.log1p(ops.neg(ops.mul(ops.erfc(ops.mul(xr, 1.0 / math.sqrt(2.0))), 0.5)))
    return ops.where(left, tail, head)


def polygamma(n, input):
    """The ``n``-th derivative of ``digamma`` (``n = 0`` is digamma itself)."""
    return ops._polygamma(_float(input), n)


def multigammaln(input, p):
    """The multivariate log-gamma ``sum_i lgamma(x - i / 2) + p (p - 1) / 4 log(pi)`` over ``i < p``; defined
    for elements above ``(p - 1) / 2`` (elsewhere the sum is returned as is, like PyTorch's)."""
    x = _float(input)
    total = ops.lgamma(x)
    for i in range(1, p):
        total = ops.add(total, ops.lgamma(ops.sub(x, i / 2)))
    return ops.add(total, p * (p - 1) / 4 * math.log(math.pi))


def _polynomial(name, kind, what):
    def f(input, n, *, out=None):
        r = ops._special_polynomial(input, n, kind)
        if out is not None:
            return out.copy_(r)
        return r

    f.__name__ = name
    f.__doc__ = (f"The {what} of degree ``n`` (truncated toward zero; 0 where ``n < 0``) at ``input``; ``n`` is a "
                 "tensor or a number and broadcasts with ``input``. Not differentiable, as in PyTorch.")
    return f


for _kind, (_name, _what) in enumerate([
        ("chebyshev_polynomial_t", "Chebyshev polynomial of the first kind T"),
        ("chebyshev_polynomial_u", "Chebyshev polynomial of the second kind U"),
        ("chebyshev_polynomial_v", "Chebyshev polynomial of the third kind V"),
        ("chebyshev_polynomial_w", "Chebyshev polynomial of the fourth kind W"),
        ("shifted_chebyshev_polynomial_t", "shifted Chebyshev polynomial T*(x) = T(2x - 1)"),
        ("shifted_chebyshev_polynomial_u", "shifted Chebyshev polynomial U*(x) = U(2x - 1)"),
        ("shifted_chebyshev_polynomial_v", "shifted Chebyshev polynomial V*(x) = V(2x - 1)"),
        ("shifted_chebyshev_polynomial_w", "shifted Chebyshev polynomial W*(x) = W(2x - 1)"),
        ("hermite_polynomial_h", "physicists' Hermite polynomial H"),
        ("hermite_polynomial_he", "probabilists' Hermite polynomial He"),
        ("laguerre_polynomial_l", "Laguerre polynomial L"),
        ("legendre_polynomial_p", "Legendre polynomial P")]):
    globals()[_name] = _polynomial(_name, _kind, _what)
del _kind, _name, _what
