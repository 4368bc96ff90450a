"""Odds and ends of PyTorch's tensor API: layouts and kind queries, the complex-number API on real tensors,
floating-point decomposition (ldexp, frexp), random in-place fills (cauchy_,
geometric_, log_normal_), put/index_reduce, and legacy helpers (apply_, map_, new, resize, as_subclass).

Functions without a registry kernel run through NumPy on CPU memory; their gradients are custom
``autograd.Function`` backwards written with registry ops.
"""
import builtins
import collections
import math
import operator
import warnings

import numpy as np

from .. import _C
from ..autograd.function import Function
from ._names import torch_dtype_name
from .creation import _device, _shape
from .creation_random import _gen
from .misc import can_cast
from .reduce import sum_to_size

ops = _C.ops

__all__ = ["layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "real",
           "imag", "conj", "conj_physical", "resolve_conj", "resolve_neg", "is_conj", "is_neg", "angle", "isreal",
           "adjoint", "ldexp", "ldexp_", "frexp", "put", "index_reduce"]


# ---- layouts -----------------------------------------------------------------------------------------------
class layout:
    """The memory layout of a tensor. Only ``oneflow.strided`` tensors exist; the sparse layouts are names that
    code written for PyTorch compares against."""

    _sealed = False

    def __new__(cls, name=None):
        if cls._sealed:
            raise TypeError("cannot create 'oneflow.layout' instances")
        obj = super().__new__(cls)
        obj._name = name
        return obj

    def __repr__(self):
        return f"oneflow.{self._name}"

    def __reduce__(self):
        return self._name  # pickles as the module attribute, so identity survives


strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc = (
    layout(n) for n in ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"))
layout._sealed = True
layout.__module__ = "oneflow"


# ---- complex-number API on real tensors --------------------------------------------------------------------
def _float_dtype(dtype):
    """Integer and bool inputs of PyTorch's float ops compute in the default float dtype."""
    return dtype if dtype.is_floating_point else _C.get_default_dtype()


def real(input):
    """The real part of ``input``: ``input`` itself, as all oneflow tensors are real."""
    return input


def imag(input):
    """The imaginary part of a complex tensor; raises RuntimeError, as oneflow tensors are real."""
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def conj(input):
    """The complex conjugate; for a real tensor, ``input`` itself (as PyTorch returns it)."""
    return input


conj_physical = resolve_conj = resolve_neg = conj


def is_conj(input):
    """Whether ``input`` has its conjugate bit set (never, for real tensors)."""
    return False


def is_neg(input):
    """Whether ``input`` has its negative bit set (never, for real tensors)."""
    return False


class _Angle(Function):
    @staticmethod
    def forward(ctx, x, dtype):
        ctx.shape, ctx.dtype = list(x.shape), dtype
        xf = ops.to_dtype(x, dtype) if x.dtype != dtype else x
        body = ops.where(ops.lt(xf, 0.0), math.pi, 0.0)
        return ops.to_dtype(ops.where(ops.isnan(xf), xf, body), dtype)

    @staticmethod
    def backward(ctx, g):
        return ops.mul(g, 0.0), None  # the argument of a real number is piecewise constant


def angle(input):
    """The argument of each element: 0 for ``x >= 0``, ``pi`` for ``x < 0``; NaN stays NaN. Integer inputs give
    the default float dtype."""
    return _Angle.apply(input, _float_dtype(input.dtype))


def isreal(input):
    """Whether each element is real-valued: all True for real dtypes."""
    return ops.fill_(_C._empty(list(input.shape), _C.bool, None), True)


def adjoint(input):
    """The conjugate transpose of the last two dimensions (a view)."""
    if input.dim() == 0:
        warnings.warn("adjoint() is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=2)
        return input
    if input.dim() < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.dim()}-D tensor.")
    return ops.transpose(input, -2, -1)


def _H(self):
    """The conjugate transpose of a matrix (2-D only; 0-D tensors are returned with a deprecation warning)."""
    if self.dim() == 0:
        warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=3)
        return self
    if self.dim() != 2:
        extra = " For batches of matrices, consider using tensor.mH" if self.dim() > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor.{extra}")
    return ops.transpose(self, 0, 1)


def _output_nr(self):
    """The index of this tensor among the outputs of its ``grad_fn`` (0 for leaves)."""
    if self.grad_fn is None:
        return 0
    # a view's backward edge records which output of the producing node it reads
    prev = _C.is_grad_enabled()
    _C._set_grad_enabled(True)
    try:
        probe = ops.as_strided(self, list(self.shape), list(self.stride()), self.storage_offset())
    except RuntimeError:  # e.g. inference tensors, which record no edges
        return 0
    finally:
        _C._set_grad_enabled(prev)
    edges = probe.grad_fn.next_functions if probe.grad_fn is not None else ()
    return edges[0][1] if edges and edges[0][0] is not None else 0


# ---- helpers for NumPy-computed elementwise ops ------------------------------------------------------------
def _np(t):
    """A float64/int NumPy copy of ``t``'s values (bfloat16 goes through float32, which NumPy lacks)."""
    t = t.detach()
    if t.dtype == _C.bfloat16:
        t = ops.to_dtype(t, _C.float32)
    return np.array(_C._to_numpy(ops.contiguous(t)), copy=True)


def _from_np(arr, dtype):
    t = _C._from_numpy(np.ascontiguousarray(arr))
    return ops.to_dtype(t, dtype) if t.dtype != dtype else t


def _need_tensor(op, name, pos, value):
    if not isinstance(value, _C.TensorBase):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not {type(value).__name__}")


def _check_inplace(self, result, op=None):
    """PyTorch's checks for writing an out-of-place ``result`` into ``self``: same shape, castable dtype."""
    if list(result.shape) != list(self.shape):
        raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the broadcast shape "
                           f"{list(result.shape)}")
    if not can_cast(result.dtype, self.dtype):
        prefix = f"{op}: " if op else ""
        raise RuntimeError(f"{prefix}result type {torch_dtype_name(result.dtype)} can't be cast to the desired "
                           f"output type {torch_dtype_name(self.dtype)}")


def _write(self, result, op=None):
    _check_inplace(self, result, op)
    return ops.copy_(self, result)


def _inplace(fn, op=None):
    """An in-place method computing ``fn(self, ...)`` out of place and copying it into ``self``. While autograd
    records, ``fn`` sees a clone, so the values its backward saves are not the ones the copy overwrites."""
    def method(self, *args, **kwargs):
        src = ops.clone(self) if self.requires_grad and _C.is_grad_enabled() else self
        return _write(self, fn(src, *args, **kwargs), op)

    method.__name__ = f"{fn.__name__}_"
    method.__doc__ = f"In-place ``{fn.__name__}``."
    return method


def _sum_to(g, shape):
    return g if list(g.shape) == list(shape) else sum_to_size(g, *shape)


# ---- floating-point decomposition ------------------------------------------------------------------------
def ldexp(input, other):
    """``input * 2 ** other``; integer inputs give the default float dtype."""
    _need_tensor("ldexp", "other", 2, other)
    dtype = _float_dtype(_C._result_type([input, other]))
    x = ops.to_dtype(input, dtype) if input.dtype != dtype else input
    e = ops.to_dtype(other, dtype) if other.dtype != dtype else other
    return ops.mul(x, ops.exp2(e))


_ldexp_inplace = _inplace(ldexp)


def ldexp_(input, other):
    """In-place :func:`ldexp`."""
    if not can_cast(_float_dtype(_C._result_type([input, other])), input.dtype):
        raise RuntimeError(f"ldexp can't be cast to the desired output type {torch_dtype_name(input.dtype)}")
    return _ldexp_inplace(input, other)


frexp_return = collections.namedtuple("frexp", ["mantissa", "exponent"])


def frexp(input):
    """Decomposes ``input`` into ``mantissa * 2 ** exponent`` with ``0.5 <= |mantissa| < 1`` (int32 exponent);
    returns the named tuple ``(mantissa, exponent)``."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    _, e = np.frexp(_np(input))
    exponent = _from_np(e.astype(np.int32), _C.int32)
    # mantissa = input * 2**-exponent exactly, which also gives PyTorch's gradient 2**-exponent; half types
    # scale in float32, where 2**-exponent of their subnormals does not overflow
    wide = _C.float32 if input.dtype in (_C.float16, _C.bfloat16) else input.dtype
    x = ops.to_dtype(input, wide) if wide != input.dtype else input
    mantissa = ops.mul(x, ops.exp2(ops.neg(ops.to_dtype(exponent, wide))))
    if wide != input.dtype:
        mantissa = ops.to_dtype(mantissa, input.dtype)
    return frexp_return(mantissa, exponent)


# ---- in-place forms of existing ops ---------------------------------------------------------------------------
def _heaviside(self, values):
    from .binary import heaviside

    return heaviside(self, values)


def _addbmm(self, batch1, batch2, *, beta=1, alpha=1):
    from .linalg import addbmm

    return addbmm(self, batch1, batch2, beta=beta, alpha=alpha)


def _addr(self, vec1, vec2, *, beta=1, alpha=1):
    from .linalg import addr

    return addr(self, vec1, vec2, beta=beta, alpha=alpha)


def _mvlgamma(self, p):
    from ..special import multigammaln

    return multigammaln(self, p)


def _polygamma(self, n):
    from ..special import polygamma

    return polygamma(n, self)


_heaviside.__name__, _addbmm.__name__, _addr.__name__ = "heaviside", "addbmm", "addr"
_mvlgamma.__name__, _polygamma.__name__ = "mvlgamma", "polygamma"


# ---- random in-place fills -------------------------------------------------------------------------------------
def _uniform_open(self, generator, op):
    """Uniform samples in (0, 1] of ``self``'s shape, in float64 for float64 tensors, else float32."""
    dt = _C.float64 if self.dtype == _C.float64 else _C.float32
    u = _C._empty(list(self.shape), dt, None)
    ops.uniform_(u, 0.0, 1.0, generator=_gen(generator, op))
    return ops.sub(1.0, u)


def _fill_random(self, values):
    prev = _C.is_grad_enabled()
    # like PyTorch's random fills: no history is recorded, but a leaf that requires grad is still refused
    if self.is_leaf and self.requires_grad and prev:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    _C._set_grad_enabled(False)
    try:
        return ops.copy_(self, values)
    finally:
        _C._set_grad_enabled(prev)


def _continuous(self, name, kernel):
    if not self.dtype.is_floating_point:
        if kernel:
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_dtype_name(self.dtype)}'")
        long_names = {_C.int64: "long int", _C.int32: "int", _C.int16: "short int", _C.int8: "signed char",
                      _C.uint8: "unsigned char", _C.bool: "bool"}
        raise RuntimeError(f"{name} distribution is a continuous probability distribution. dtype must be a floating "
                           f"point but you specified {long_names.get(self.dtype, str(self.dtype))}")


def _cauchy_(self, median=0, sigma=1, *, generator=None):
    """Fills ``self`` with samples of the Cauchy distribution ``median + sigma * tan(pi * (u - 1/2))``."""
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    _continuous(self, "Cauchy", None)
    u = _uniform_open(self, generator, "cauchy_")
    return _fill_random(self, ops.add(ops.mul(ops.tan(ops.mul(ops.sub(u, 0.5), math.pi)), sigma), median))


def _geometric_(self, p, *, generator=None):
    """Fills ``self`` with samples of the geometric distribution: the number of Bernoulli(``p``) trials up to
    and including the first success (1, 2, ...)."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    if self.dtype == _C.bool:
        raise NotImplementedError("\"geometric_cpu\" not implemented for 'Bool'")
    u = _uniform_open(self, generator, "geometric_")
    return _fill_random(self, ops.ceil(ops.div(ops.log(u), math.log1p(-p))))


def _log_normal_(self, mean=1, std=2, *, generator=None):
    """Fills ``self`` with samples of ``exp(N(mean, std^2))``."""
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    _continuous(self, "LogNormal", "log_normal_cpu")
    n = _C._empty(list(self.shape), _C.float64 if self.dtype == _C.float64 else _C.float32, None)
    ops.normal_(n, builtins.float(mean), builtins.float(std), generator=_gen(generator, "log_normal_"))
    return _fill_random(self, ops.exp(n))


# ---- put / index_reduce --------------------------------------------------------------------------------------
def put(input, index, source, accumulate=False):
    """A copy of ``input`` with ``source`` written at the flat ``index`` positions of its flattened view (summed
    into them when ``accumulate``). Negative indices count from the end."""
    if index.dtype != _C.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {torch_dtype_name(index.dtype)}")
    if source.dtype != input.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{torch_dtype_name(input.dtype)} and source.dtype = {torch_dtype_name(source.dtype)}")
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    n = input.numel()
    flat_index = ops.reshape(index, [-1])
    if flat_index.numel():
        bad = ops.logical_or(ops.ge(flat_index, n), ops.lt(flat_index, -n))
        if ops.any(bad).item():
            first = flat_index[ops.nonzero(bad)[0, 0].item()].item()
            raise IndexError(f"out of range: tried to access index {first} on a tensor of {n} elements.")
    flat_index = ops.where(ops.lt(flat_index, 0), ops.add(flat_index, n), flat_index)
    flat = ops.reshape(input, [n])
    out = ops.index_put(flat, ops.reshape(source, [-1]), [flat_index], accumulate)
    return ops.reshape(out, list(input.shape))


def put_(self, index, source, accumulate=False):
    """In-place :func:`put`."""
    return ops.copy_(self, put(self, index, source, accumulate))


_index_reduce_warned = False


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """A copy of ``input`` where slice ``index[i]`` along ``dim`` is reduced (``'prod'``, ``'mean'``, ``'amax'``
    or ``'amin'``) with slice ``i`` of ``source``; ``include_self=False`` leaves ``input``'s values out of the
    reduction at the indexed slices."""
    global _index_reduce_warned
    if not _index_reduce_warned:
        _index_reduce_warned = True
        warnings.warn("index_reduce() is in beta and the API may change at any time.", UserWarning, stacklevel=2)
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    nd = builtins.max(input.dim(), 1)
    if not -nd <= dim < nd:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {dim})")
    dim = dim % nd
    if index.dim() > 1:
        raise IndexError(f"index_reduce_(): Index is supposed to be a vector, but got dim: {index.dim()} with type: "
                         f"{torch_dtype_name(index.dtype)} and size: {list(index.shape)}")
    if index.dtype not in (_C.int32, _C.int64):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: "
                           f"{torch_dtype_name(index.dtype)}")
    if input.dtype != source.dtype:
        raise RuntimeError(f"index_reduce_(): self ({torch_dtype_name(input.dtype)}) and source "
                           f"({torch_dtype_name(source.dtype)}) must have the same scalar type")
    if input.dim() == 0 or source.dim() == 0:
        if input.dim() != source.dim():
            raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified "
                               f"dimension. Got self.shape = {list(input.shape)} source.shape = {list(source.shape)}")
        out = index_reduce(ops.reshape(input, [1]), 0, index, ops.reshape(source, [1]), reduce,
                           include_self=include_self)
        return ops.reshape(out, [])
    n = index.numel()
    src_len = source.shape[dim] if source.dim() > dim else 1
    if n != src_len:
        raise RuntimeError(f"index_reduce_(): Number of indices ({n}) should be equal to source.size(dim): "
                           f"({src_len}), for dim: {dim}")
    if source.dim() != input.dim() or any(s != t for d, (s, t) in enumerate(zip(source.shape, input.shape))
                                          if d != dim):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(input.shape)} source.shape = {list(source.shape)}")
    idx = ops.reshape(index, [-1])
    if n and ops.any(ops.logical_or(ops.ge(idx, input.shape[dim]), ops.lt(idx, 0))).item():
        raise IndexError("index out of range in self")
    view = [1] * input.dim()
    view[dim] = n
    full = ops.expand(ops.reshape(ops.to_dtype(idx, _C.int64), view), list(source.shape))
    return ops.scatter_reduce(input, dim, full, source, reduce, include_self=include_self)


def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    """In-place :func:`index_reduce`."""
    # prod/amax/amin backwards save self, which the copy below overwrites: reduce a clone while recording
    src = ops.clone(self) if self.requires_grad and _C.is_grad_enabled() else self
    return ops.copy_(self, index_reduce(src, dim, index, source, reduce, include_self=include_self))


# ---- legacy helpers ----------------------------------------------------------------------------------------
def _py_caster(dtype):
    if dtype.is_floating_point:
        return builtins.float
    if dtype == _C.bool:
        return builtins.bool
    return lambda v: builtins.int(v) if isinstance(v, builtins.float) else operator.index(v)


def _elementwise_py(self, values, op):
    if self.requires_grad:
        raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use var.detach().{op}() instead.")
    if self.device.type != "cpu":
        raise TypeError(f"{op}_ is only implemented on CPU tensors")
    from .creation import tensor

    new = tensor(values, dtype=self.dtype) if values else _C._empty([0], self.dtype, None)
    return ops.copy_(self, ops.reshape(new, list(self.shape)))


def apply_(self, callable):
    """Applies ``callable`` to each element of ``self`` in place (CPU only; slow, element by element)."""
    cast = _py_caster(self.dtype)
    return _elementwise_py(self, [cast(callable(v)) for v in self.detach().reshape(-1).tolist()], "apply_")


def map_(self, tensor, callable):
    """Sets each element of ``self`` to ``callable(self_element, tensor_element)``, with ``tensor`` broadcast to
    ``self``'s shape (in place; CPU only)."""
    from .._tensor import _TYPE_NAMES

    if tensor.dtype != self.dtype:
        raise TypeError(f"map_: expected oneflow.{_TYPE_NAMES[self.dtype]} for 'other' "
                        f"(got oneflow.{_TYPE_NAMES[tensor.dtype]})")
    if tensor.dim() > self.dim():
        raise RuntimeError(f"expand({list(tensor.shape)}, size={list(self.shape)}): the number of sizes provided "
                           f"({self.dim()}) must be greater or equal to the number of dimensions in the tensor "
                           f"({tensor.dim()})")
    other = ops.expand(tensor.detach(), list(self.shape)).reshape(-1).tolist()
    cast = _py_caster(self.dtype)
    vals = [cast(callable(a, b)) for a, b in zip(self.detach().reshape(-1).tolist(), other)]
    return _elementwise_py(self, vals, "map_")


def as_subclass(self, cls):
    """``self`` as an instance of ``cls`` (a subclass of ``oneflow.Tensor``): the same data, and, like PyTorch's,
    attached to ``self``'s autograd graph through an alias (so the result is not a leaf when ``self`` requires
    grad)."""
    if not (isinstance(cls, type) and issubclass(cls, _C.TensorBase)):
        raise TypeError("Creating a Tensor subclass from a class that does not inherit from Tensor is not possible. "
                        "Make sure your class inherits from Tensor.")
    alias = ops.as_strided(self, list(self.shape), list(self.stride()), self.storage_offset())
    # _make_subclass would detach; adopting the alias's impl keeps its grad_fn
    out = _C.TensorBase.__new__(cls)
    _C.TensorBase.__init__(out)
    out._assign(alias)
    return out


def new(self, *args, device=None, **kwargs):
    """The legacy constructor: ``new()`` (empty), ``new(*sizes)`` / ``new(Size)`` (uninitialised), ``new(data)``
    (a copy of a sequence) or ``new(tensor)`` (``tensor`` itself, which must have ``self``'s dtype); the result
    always has ``self``'s dtype."""
    from .._tensor import Size, _TYPE_NAMES
    from .creation import tensor

    _device(device)
    if kwargs:
        kinds = ", ".join(type(a).__name__ for a in args)
        raise TypeError(f"new() received an invalid combination of arguments - got ({kinds}, "
                        f"{', '.join(f'{k}={type(v).__name__}' for k, v in kwargs.items())})")
    if not args:
        return _C._empty([0], self.dtype, None)
    if builtins.all(isinstance(a, (builtins.int, np.integer)) and not isinstance(a, builtins.bool) for a in args) \
            or (len(args) == 1 and isinstance(args[0], Size)):
        return _C._empty(_shape(args, "new"), self.dtype, None)
    if len(args) != 1:
        raise TypeError(f"new() received an invalid combination of arguments - got "
                        f"({', '.join(type(a).__name__ for a in args)})")
    data = args[0]
    if isinstance(data, _C.TensorBase):
        if data.dtype != self.dtype:
            raise TypeError(f"expected oneflow.{_TYPE_NAMES[self.dtype]} (got oneflow.{_TYPE_NAMES[data.dtype]})")
        return data.detach()
    if isinstance(data, (builtins.int, builtins.float, builtins.bool)):
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    if isinstance(data, np.ndarray) or self.dtype.is_floating_point or self.dtype == _C.bool:
        return tensor(data, dtype=self.dtype)
    # sequence data cast to an integer dtype truncates, as PyTorch's legacy constructor does
    return ops.to_dtype(tensor(data, dtype=_C.float64 if _has_float(data) else _C.int64), self.dtype)


def _has_float(data):
    if isinstance(data, (list, tuple)):
        return any(_has_float(d) for d in data)
    return isinstance(data, (builtins.float, np.floating))


def _resize_autograd(self, shape, op):
    n = 1
    for s in shape:
        n *= s
    if n != self.numel():
        size = "x".join(str(s) for s in shape)
        raise RuntimeError(f"requested resize to {size} ({n} elements in total), but the given tensor has a size of "
                           f"{'x'.join(str(s) for s in self.shape)} ({self.numel()} elements). autograd's resize can "
                           "only change the shape of a given tensor, while preserving the number of elements. ")
    return ops.reshape(self, shape)


def resize(self, *sizes):
    """The deprecated out-of-place resize: ``self`` reshaped to ``sizes``, which must keep the number of elements."""
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _resize_autograd(self, _shape(sizes, "resize"), "resize")


def resize_as(self, other):
    """The deprecated out-of-place ``resize_as``: ``self`` reshaped to ``other``'s shape (same number of
    elements)."""
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _resize_autograd(self, list(other.shape), "resize_as")


def _new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False, **kw):
    """An uninitialised tensor with the given ``size`` and ``stride`` (dtype defaults to ``self``'s)."""
    from .creation import empty_strided

    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad, **kw)


def _false(self):
    return False


TENSOR_METHODS = {
    "layout": property(lambda self: strided, doc="The memory layout: always ``oneflow.strided``."),
    **{name: property(_false) for name in ("is_sparse", "is_sparse_csr", "is_quantized", "is_mkldnn", "is_nested",
                                            "is_xpu", "is_mps", "is_ipu", "is_xla", "is_vulkan", "is_mtia",
                                            "is_maia")},
    "is_conj": is_conj, "is_neg": is_neg, "conj": conj, "conj_physical": conj_physical,
    "resolve_conj": resolve_conj, "resolve_neg": resolve_neg,
    "real": property(real, doc="The real part: the tensor itself."),
    "imag": property(imag, doc="The imaginary part: raises RuntimeError for real dtypes."),
    "angle": angle, "isreal": isreal, "adjoint": adjoint, "H": property(_H), "output_nr": property(_output_nr),
    "ldexp": ldexp, "ldexp_": ldexp_, "frexp": frexp,
    "heaviside_": _inplace(_heaviside), "addbmm_": _inplace(_addbmm), "addr_": _inplace(_addr),
    "mvlgamma_": _inplace(_mvlgamma, "mvlgamma"), "polygamma_": _inplace(_polygamma),
    "cauchy_": _cauchy_, "geometric_": _geometric_, "log_normal_": _log_normal_,
    "put": put, "put_": put_, "index_reduce": index_reduce, "index_reduce_": index_reduce_,
    "apply_": apply_, "map_": map_, "as_subclass": as_subclass, "new": new, "resize": resize,
    "resize_as": resize_as, "new_empty_strided": _new_empty_strided,
}
