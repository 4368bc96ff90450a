"""Reductions with PyTorch's Python signatures where they differ from the registry schemas: ``max``/``min``
(full, along a dim with named (values, indices) results, or elementwise with a tensor), ``var``/``std`` with
``unbiased``, ``norm``, ``aminmax`` and ``linalg.vector_norm``."""
import builtins
import math
import warnings

from .. import _C
from ._names import reject_dtype, torch_dtype_name
from ..amp._policy import autocast_policy

ops = _C.ops

__all__ = ["max", "min", "var", "std", "var_mean", "std_mean", "norm", "aminmax", "cummax", "cummin", "kthvalue",
           "median", "nanmedian", "quantile", "nanquantile", "histc", "bincount", "mode"]


def _return_type(name, fields):
    """A tuple subclass with named fields, like ``torch.return_types.<name>``."""

    def __new__(cls, seq):
        seq = tuple(seq)
        if len(seq) != len(fields):
            raise TypeError(f"oneflow.return_types.{name} takes a sequence of length {len(fields)}")
        return tuple.__new__(cls, seq)

    def __repr__(self):
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"oneflow.return_types.{name}(\n{body})"

    def __reduce__(self):
        return (cls, (tuple(self),))

    ns = {"__new__": __new__, "__repr__": __repr__, "__reduce__": __reduce__, "__slots__": (),
          "_fields": tuple(fields), "n_fields": len(fields)}
    for i, f in enumerate(fields):
        ns[f] = property(lambda self, i=i: tuple.__getitem__(self, i))
    cls = type(name, (tuple,), ns)
    cls.__module__ = "oneflow.return_types"
    cls.__qualname__ = name
    return cls


max_return = _return_type("max", ("values", "indices"))
min_return = _return_type("min", ("values", "indices"))
aminmax_return = _return_type("aminmax", ("min", "max"))
cummax_return = _return_type("cummax", ("values", "indices"))
cummin_return = _return_type("cummin", ("values", "indices"))
kthvalue_return = _return_type("kthvalue", ("values", "indices"))
median_return = _return_type("median", ("values", "indices"))
nanmedian_return = _return_type("nanmedian", ("values", "indices"))
mode_return = _return_type("mode", ("values", "indices"))


def _extreme(name, binary, full, along, rt, input, dim, keepdim, other, out=None):
    if other is not None:
        if dim is not None:
            raise TypeError(f"{name}() received an invalid combination of arguments: both 'dim' and 'other'")
        dim = other
    if isinstance(dim, _C.TensorBase):
        if keepdim:
            raise TypeError(f"{name}() received an invalid combination of arguments: keepdim with a tensor 'other'")
        return getattr(ops, binary)(input, dim, out=out)
    if dim is None:
        if keepdim:
            raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, keepdim=bool), "
                            "but expected one of: (Tensor input), (Tensor input, int dim, bool keepdim), "
                            "(Tensor input, Tensor other)")
        return full(input, out=out)
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    return rt(along(input, dim, keepdim, out=out))


def max(input, dim=None, keepdim=False, *, other=None, out=None):
    """max(input) -> Tensor: the largest element (NaN if any is NaN).

    max(input, dim, keepdim=False) -> (values, indices): the largest element of each slice along ``dim`` and
    its index (the first one on ties). max(input, other) -> Tensor: the elementwise ``maximum``."""
    return _extreme("max", "maximum", ops.max, ops.max_dim, max_return, input, dim, keepdim, other, out)


def min(input, dim=None, keepdim=False, *, other=None, out=None):
    """min(input) / min(input, dim, keepdim=False) -> (values, indices) / min(input, other): like ``max``."""
    return _extreme("min", "minimum", ops.min, ops.min_dim, min_return, input, dim, keepdim, other, out)


def _correction(name, unbiased, correction):
    if unbiased is not None:
        if correction is not None:  # PyTorch's argument parser has no overload taking both
            raise TypeError(f"{name}() received an invalid combination of arguments: can't specify both "
                            "unbiased and correction")
        return 1.0 if unbiased else 0.0
    return correction


def _warn_dof(name, input, result, correction):
    """PyTorch warns when no degree of freedom is left (reduction factor - correction <= 0): the result is
    then inf or NaN rather than a variance. The factor comes from the result's size, so this costs nothing
    when the op has already run (and invalid dims have raised)."""
    n_out = result.numel()
    factor = input.numel() // n_out if n_out else 0
    if factor - (1.0 if correction is None else correction) <= 0:
        warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
                      "reduction factor (input numel divided by output numel).", UserWarning, stacklevel=3)


def _var_args(name, dim, unbiased, keepdim, correction):
    if isinstance(dim, builtins.bool):  # var(input, unbiased)
        if unbiased is not None:
            raise TypeError(f"{name}() received an invalid combination of arguments: unbiased given twice")
        dim, unbiased = None, dim
    return dim, _correction(name, unbiased, correction), keepdim


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The variance over ``dim`` (all dims by default) with Bessel's ``correction`` (1 unless
    ``unbiased=False`` or ``correction`` says otherwise)."""
    dim, corr, keepdim = _var_args("var", dim, unbiased, keepdim, correction)
    out = ops.var(input, dim, correction=corr, keepdim=keepdim)
    _warn_dof("var", input, out, corr)
    return out


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The standard deviation over ``dim``; arguments as for ``var``."""
    dim, corr, keepdim = _var_args("std", dim, unbiased, keepdim, correction)
    out = ops.std(input, dim, correction=corr, keepdim=keepdim)
    _warn_dof("std", input, out, corr)
    return out


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(variance, mean) over ``dim``; arguments as for ``var``."""
    dim, corr, keepdim = _var_args("var_mean", dim, unbiased, keepdim, correction)
    out = tuple(ops.var_mean(input, dim, correction=corr, keepdim=keepdim))
    _warn_dof("var_mean", input, out[0], corr)
    return out


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(standard deviation, mean) over ``dim``; arguments as for ``var``."""
    dim, corr, keepdim = _var_args("std_mean", dim, unbiased, keepdim, correction)
    out = tuple(ops.std_mean(input, dim, correction=corr, keepdim=keepdim))
    _warn_dof("std_mean", input, out[0], corr)
    return out


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The vector ``ord``-norm of ``x`` over ``dim`` (all elements by default): ord may be any real number,
    ``inf`` or ``-inf`` (max/min absolute value) or 0 (number of non-zeros)."""
    if isinstance(ord, str):
        raise TypeError("linalg.vector_norm(): argument 'ord' must be Number, not str")
    _check_norm_dtype(x, dtype, "vector_norm")
    return ops.linalg_vector_norm(x, float(ord), dim, keepdim, dtype=dtype)


def _check_norm_dtype(x, dtype, fn):
    """PyTorch's norms compute in ``dtype`` only when ``x`` converts to it without narrowing (its promotion
    with ``dtype`` is ``dtype``): float64 -> float32 or float16 -> bfloat16 raise."""
    if dtype is None or not x.dtype.is_floating_point or not dtype.is_floating_point:
        return  # non-float inputs and dtypes get the registry op's own errors
    if _C.promote_types(x.dtype, dtype) != dtype:
        raise RuntimeError(f"linalg.{fn}: the dtype of the input ({torch_dtype_name(x.dtype)}) should be "
                           f"convertible without narrowing to the specified dtype ({torch_dtype_name(dtype)})")


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """The norm of ``input``: ``p`` is a number (vector p-norm over ``dim``, all elements by default) or
    ``'fro'`` (the 2-norm of all the elements in ``dim``). ``'nuc'`` needs ``oneflow.linalg.matrix_norm``."""
    if out is not None:
        raise TypeError("norm(): 'out' is not supported")
    if isinstance(dim, builtins.int):
        dim = [dim]
    _check_norm_dtype(input, dtype, "vector_norm")
    if isinstance(p, str):
        if p == "fro":
            if dim is not None and len(dim) > 2:
                raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
            return ops.linalg_vector_norm(input, 2.0, dim, keepdim, dtype=dtype)
        if p == "nuc":
            # oneflow.linalg builds its norms on this module: it can only be imported here, at call time
            from ..linalg import matrix_norm

            # no dim means every dim, as in PyTorch: only a matrix has a nuclear norm then
            dims = tuple(dim) if dim is not None else tuple(range(input.dim()))
            return matrix_norm(input, "nuc", dim=dims, keepdim=keepdim, dtype=dtype)
        raise RuntimeError(f"norm(): invalid norm type '{p}'; expected a number, 'fro' or 'nuc'")
    if p is None:
        p = 2
    return ops.linalg_vector_norm(input, float(p), dim, keepdim, dtype=dtype)


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) of ``input`` (over ``dim`` when given) as a named tuple."""
    if input.numel() == 0 and dim is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    if input.numel() == 0 and input.dim() > 0 and input.shape[dim] == 0:
        raise IndexError(f"aminmax: Expected reduction dim {_norm_dim(input, dim)} to have non-zero size.")
    dims = [] if dim is None else [dim]
    return aminmax_return((ops.amin(input, dims, keepdim), ops.amax(input, dims, keepdim)))


def _norm_dim(input, dim):
    nd = builtins.max(input.dim(), 1)
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    return dim % nd


def _long_arange(n):
    from .creation import arange

    return arange(n, dtype=_C.int64)


def _cum_extreme(input, dim, cmp, rt):
    """Running max/min along ``dim`` with the index of the (latest) extreme: a log-step scan of
    (value, index) pairs on detached data, then a ``gather`` so gradients flow to the selected elements.
    NaN wins, as in PyTorch: once seen, it stays the running value (with the latest NaN's index)."""
    d = _norm_dim(input, dim)
    if input.dim() == 0:
        return rt((ops.clone(input), ops.mul(ops.to_dtype(input.detach(), _C.int64), 0)))
    x = ops.transpose(input.detach(), d, -1)
    n = x.shape[-1]
    v = x
    i = ops.expand(_long_arange(n), list(x.shape))
    s = 1
    while s < n:
        lv, li = ops.slice(v, -1, 0, n - s, 1), ops.slice(i, -1, 0, n - s, 1)
        rv, ri = ops.slice(v, -1, s, n, 1), ops.slice(i, -1, s, n, 1)
        take_r = ops.logical_or(ops.isnan(rv), cmp(rv, lv)) if x.dtype.is_floating_point else cmp(rv, lv)
        v = ops.cat([ops.slice(v, -1, 0, s, 1), ops.where(take_r, rv, lv)], -1)
        i = ops.cat([ops.slice(i, -1, 0, s, 1), ops.where(take_r, ri, li)], -1)
        s *= 2
    idx = ops.contiguous(ops.transpose(i, d, -1))
    return rt((ops.gather(input, d, idx), idx))


def cummax(input, dim):
    """Running maximum along ``dim``: ``(values, indices)``, the index of the latest maximum (NaN propagates)."""
    return _cum_extreme(input, dim, ops.ge, cummax_return)


def cummin(input, dim):
    """Running minimum along ``dim``: ``(values, indices)``, the index of the latest minimum (NaN propagates)."""
    return _cum_extreme(input, dim, ops.le, cummin_return)


def _pick(input, d, sorted_idx, pos, keepdim, rt):
    """Values and indices of ``input`` at sorted position ``pos`` (a tensor shaped like a keepdim reduction)."""
    idx = ops.gather(sorted_idx, d, pos)
    vals = ops.gather(input, d, idx)
    if not keepdim:
        vals, idx = ops.squeeze_dim(vals, d), ops.squeeze_dim(idx, d)
    return rt((vals, idx))


def _0d(input, rt):
    return rt((ops.clone(input), ops.mul(ops.to_dtype(input.detach(), _C.int64), 0)))


def kthvalue(input, k, dim=-1, keepdim=False):
    """The ``k``-th smallest element of each slice along ``dim`` and its index: ``(values, indices)``."""
    d = _norm_dim(input, dim)
    n = input.shape[d] if input.dim() else 1
    if n == 0:  # PyTorch checks the slice, then k, then the dtype
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    reject_dtype("kthvalue_cpu", input, bool_ok=False)
    if input.dim() == 0:
        return _0d(input, kthvalue_return)
    si = ops.sort(input.detach(), d, False, stable=True)[1]
    idx = ops.slice(si, d, k - 1, k, 1)
    vals = ops.gather(input, d, idx)
    if not keepdim:
        vals, idx = ops.squeeze_dim(vals, d), ops.squeeze_dim(idx, d)
    return kthvalue_return((vals, idx))


def mode(input, dim=-1, keepdim=False):
    """The most frequent value of each slice along ``dim`` and an index where it occurs: ``(values, indices)``.
    Among equally frequent values the smallest wins, and the index is its last occurrence (as in PyTorch)."""
    import numpy as np

    d = _norm_dim(input, dim)
    if input.dim() == 0:
        return _0d(input, mode_return)
    if input.shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    a = np.moveaxis(input.detach().numpy(), d, -1)
    rows = a.reshape(-1, a.shape[-1])
    best = np.empty(rows.shape[0], dtype=np.int64)
    for r, row in enumerate(rows):
        # stable sort: equal values keep their order, so the last of a run is the value's last occurrence
        order = np.argsort(row, kind="stable")
        s = row[order]
        starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
        counts = np.diff(np.r_[starts, len(s)])
        run = int(np.argmax(counts))  # first maximal run: the smallest value
        best[r] = order[starts[run] + counts[run] - 1]
    from .creation import tensor

    idx = tensor(best.reshape(a.shape[:-1] + (1,)))
    idx = idx.movedim(-1, d)
    vals = ops.gather(input, d, idx)
    if not keepdim:
        vals, idx = ops.squeeze_dim(vals, d), ops.squeeze_dim(idx, d)
    return mode_return((vals, idx))


def _median_dim(name, input, dim, keepdim, ignore_nan, rt):
    d = _norm_dim(input, dim)
    if input.dim() == 0:
        return _0d(input, rt)
    n = input.shape[d]
    if n == 0:
        raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
    si = ops.sort(input.detach(), d, False, stable=True)[1]  # NaN sorts last
    shape = list(input.shape)
    shape[d] = 1
    if not input.dtype.is_floating_point:
        from .creation import full

        pos = full(shape, (n - 1) // 2, dtype=_C.int64)
    else:
        nans = ops.sum(ops.isnan(input.detach()), [d], True, dtype=_C.int64)
        if ignore_nan:  # lower median of the non-NaN values (position 0, a NaN, when all are NaN)
            pos = ops.clamp_min(ops.floor_divide(ops.add(ops.neg(nans), n - 1), 2), 0)
        else:  # a NaN in the slice makes it the answer: the first NaN
            pos = ops.where(ops.gt(nans, 0), ops.add(ops.neg(nans), n), ops.add(ops.mul(nans, 0), (n - 1) // 2))
    return _pick(input, d, si, ops.to_dtype(pos, _C.int64), keepdim, rt)


def _median_all(input, ignore_nan):
    flat = ops.reshape(input, [-1])
    if flat.shape[0] == 0:
        from .creation import tensor

        if input.dtype.is_floating_point:
            return tensor(float("nan"), dtype=input.dtype)
        # PyTorch stores NaN converted to the integer type: x86's conversion gives the most negative 32/64-bit
        # value, which narrower types truncate to 0
        wide = input.dtype in (_C.int32, _C.int64)
        return tensor(-(2 ** (63 if input.dtype == _C.int64 else 31)) if wide else 0, dtype=input.dtype)
    med = ops.reshape(_median_dim("median", flat, 0, False, ignore_nan, median_return)[0], [])
    if not (flat.requires_grad and _C.is_grad_enabled()):
        return med
    # PyTorch spreads the gradient evenly over every element equal to the median (every NaN for a NaN median):
    # the mean of those elements, its value replaced by the exact median where that is finite
    from .creation import tensor

    m = med.detach()
    hit = ops.logical_or(ops.eq(flat, m), ops.logical_and(ops.isnan(flat), ops.isnan(m)))
    mean_hit = ops.div(ops.sum(ops.where(hit, flat, tensor(0.0, dtype=flat.dtype))), ops.sum(hit, dtype=flat.dtype))
    return ops.where(ops.isfinite(m), ops.add(m, ops.sub(mean_hit, mean_hit.detach())), mean_hit)


def median(input, dim=None, keepdim=False):
    """median(input) -> Tensor: the lower median of all elements (NaN if any is NaN).

    median(input, dim=-1, keepdim=False) -> (values, indices): the lower median of each slice along ``dim``
    and its index; a slice holding NaN gives NaN and the index of its first NaN."""
    reject_dtype("median_cpu" if dim is None else "median_out", input, bool_ok=False)
    if dim is None:
        return _median_all(input, False)
    return _median_dim("median", input, dim, keepdim, False, median_return)


def nanmedian(input, dim=None, keepdim=False):
    """Like ``median``, but ignoring NaN (a slice of only NaN gives NaN)."""
    reject_dtype("median_cpu" if dim is None else "median_out", input, bool_ok=False)
    if dim is None:
        return _median_all(input, True)
    return _median_dim("nanmedian", input, dim, keepdim, True, nanmedian_return)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name, input, q, dim, keepdim, interpolation, ignore_nan):
    from .creation import tensor

    if input.numel() == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if input.dtype not in (_C.float32, _C.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    scalar_q = not isinstance(q, _C.TensorBase)
    if scalar_q:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
        q = tensor([float(q)], dtype=input.dtype)
    else:
        if q.dim() > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype != input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        scalar_q = q.dim() == 0
        q = ops.reshape(q, [-1])
        if q.numel() and not builtins.bool(ops.all(ops.logical_and(ops.ge(q, 0), ops.le(q, 1))).item()):
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    if dim is None:
        x, out_shape = ops.reshape(input, [-1]), ([1] * input.dim() if keepdim else [])
    else:
        d = _norm_dim(input, dim)
        x = ops.transpose(input, d, -1) if input.dim() else ops.reshape(input, [1])
        out_shape = list(input.shape)  # a 0-dim input reduces to a 0-dim result, keepdim or not
        if input.dim() and keepdim:
            out_shape[d] = 1
        elif input.dim():
            out_shape = out_shape[:d] + out_shape[d + 1:]
    srt = ops.sort(x, -1)[0]  # NaN sorts last
    n = x.shape[-1]
    lead = list(x.shape[:-1])
    nans = ops.sum(ops.isnan(x.detach()), [-1], True, dtype=x.dtype)
    qq = ops.reshape(q, [1] * len(lead) + [-1])
    if ignore_nan:  # ranks among the non-NaN values; an all-NaN slice reads position 0 (a NaN)
        rank = ops.clamp_min(ops.mul(qq, ops.add(ops.neg(nans), n - 1)), 0)
    else:  # a NaN in the slice makes every quantile NaN: read the last position
        rank = ops.where(ops.gt(nans, 0), ops.add(ops.mul(nans, 0), n - 1), ops.mul(qq, n - 1))
    if interpolation == "nearest":
        rank = ops.round(rank)
    lo = ops.floor(rank)
    hi = ops.ceil(rank)
    full_shape = lead + [q.shape[0]]
    lo_i = ops.expand(ops.to_dtype(lo, _C.int64), full_shape)
    hi_i = ops.expand(ops.to_dtype(hi, _C.int64), full_shape)
    if interpolation in ("lower", "nearest"):
        r = ops.gather(srt, -1, lo_i)
    elif interpolation == "higher":
        r = ops.gather(srt, -1, hi_i)
    else:
        vlo, vhi = ops.gather(srt, -1, lo_i), ops.gather(srt, -1, hi_i)
        w = ops.sub(rank, lo) if interpolation == "linear" else 0.5
        r = ops.lerp(vlo, vhi, ops.expand(w if isinstance(w, _C.TensorBase) else tensor(w, dtype=x.dtype),
                                          full_shape))
    # (lead..., nq) -> (nq, out_shape...)
    r = ops.permute(r, [r.dim() - 1] + list(range(r.dim() - 1)))
    r = ops.reshape(r, [q.shape[0]] + out_shape)
    return ops.squeeze_dim(r, 0) if scalar_q else r


@autocast_policy("fp32")
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The ``q``-th quantiles (``q`` a number or 1-D tensor in [0, 1]) of ``input`` along ``dim`` (all elements
    by default). Between two data points ``interpolation`` is ``'linear'`` (default), ``'lower'``,
    ``'higher'``, ``'midpoint'`` or ``'nearest'``. A tensor ``q`` adds a leading dim of size ``len(q)``.
    Slices holding NaN give NaN."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, False)


@autocast_policy("fp32")
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """Like ``quantile``, but ignoring NaN (a slice of only NaN gives NaN)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, True)


def histc(input, bins=100, min=0, max=0):
    """A histogram of ``input`` with ``bins`` equal-width bins over ``[min, max]`` (the data's range when
    both are 0); elements outside are ignored. Not differentiable."""
    reject_dtype("histogram_cpu", input, bool_ok=False, integral_ok=False)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    from .creation import zeros

    x = ops.reshape(input.detach(), [-1])
    lo, hi = float(min), float(max)
    if lo == hi and x.numel() > 0:
        lo, hi = float(ops.min(x).item()), float(ops.max(x).item())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histogram(): range of [{lo}, {hi}] is not finite")
    inside = ops.logical_and(ops.ge(x, lo), ops.le(x, hi))
    x = ops.masked_select(x, inside)
    pos = ops.to_dtype(ops.mul(ops.div(ops.sub(x, lo), hi - lo), bins), _C.int64)
    pos = ops.clamp(pos, 0, bins - 1)  # x == max lands in the last bin
    return ops.index_add(zeros(bins, dtype=input.dtype), 0, pos, ops.add(ops.mul(x, 0), 1))


def bincount(input, weights=None, minlength=0):
    """Counts of each value in a 1-D tensor of non-negative integers (``weights`` summed instead of 1s):
    length ``max(input.max() + 1, minlength)``; int64 without weights, else float64 unless weights are float32.
    An empty ``input`` gives int64 zeros of length ``minlength`` even with weights, as in PyTorch."""
    from .creation import zeros

    if input.dtype == _C.bool or input.dtype.is_floating_point:  # PyTorch's kernel takes integer types only
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{torch_dtype_name(input.dtype)}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.dim() == 1 and input.numel() == 0:  # PyTorch: int64 zeros, whatever the weights' dtype
        return zeros(minlength, dtype=_C.int64)
    if input.dim() != 1 or ops.min(input).item() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.dim() != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    n = builtins.max(int(ops.max(input).item()) + 1, minlength)
    idx = ops.to_dtype(input, _C.int64)
    if weights is None:
        return ops.index_add(zeros(n, dtype=_C.int64), 0, idx, ops.add(ops.mul(idx, 0), 1))
    dt = _C.float32 if weights.dtype == _C.float32 else _C.float64
    return ops.index_add(zeros(n, dtype=dt), 0, idx, ops.to_dtype(weights.detach(), dt))


def sum_to_size(self, *size):
    """``Tensor.sum_to_size``: sums ``self`` down to ``size``, which ``self``'s shape must be expandable from."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = [int(s) for s in size]
    shape = list(self.shape)
    lead = len(shape) - len(size)
    ok = lead >= 0 and all(s == t or s == 1 for s, t in zip(size, shape[lead:]))
    if not ok:
        raise RuntimeError(f"size {{{size}}} is not expandable to size {{{shape}}}.")
    dims = list(range(lead)) + [lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1]
    if not dims:
        return self
    r = ops.sum(self, dims, True)
    return ops.reshape(r, size)


def _tensor_max(self, dim=None, keepdim=False, *, other=None):
    """max(dim=None, keepdim=False) -> Tensor or (Tensor, Tensor)

    See :func:`oneflow.max`: the largest element, the largest values and their indices along ``dim``, or the
    elementwise maximum with ``other``."""
    return max(self, dim, keepdim, other=other)


def _tensor_min(self, dim=None, keepdim=False, *, other=None):
    """min(dim=None, keepdim=False) -> Tensor or (Tensor, Tensor)

    See :func:`oneflow.min`: the smallest element, the smallest values and their indices along ``dim``, or the
    elementwise minimum with ``other``."""
    return min(self, dim, keepdim, other=other)


TENSOR_METHODS = {
    "max": _tensor_max, "min": _tensor_min, "var": var, "std": std, "norm": norm, "aminmax": aminmax,
    "cummax": cummax, "cummin": cummin, "kthvalue": kthvalue, "median": median, "nanmedian": nanmedian,
    "quantile": quantile, "nanquantile": nanquantile, "histc": histc, "bincount": bincount, "mode": mode,
    "cumsum_": lambda self, dim, *, dtype=None: self.copy_(ops.cumsum(self, dim, dtype=dtype)),
    "cumprod_": lambda self, dim, *, dtype=None: self.copy_(ops.cumprod(self, dim, dtype=dtype)),
    "sum_to_size": sum_to_size,
}
