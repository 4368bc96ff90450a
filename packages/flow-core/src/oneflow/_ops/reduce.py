"""Reductions with PyTorch's Python signatures where they differ from the registry schemas: ``max``/``min``
(full, along a dim with named (values, indices) results, or elementwise with a tensor), ``var``/``std`` with
``unbiased``, ``norm``, ``aminmax`` and ``linalg.vector_norm``."""
import builtins
import importlib
import sys
import types

from .. import _C

ops = _C.ops

__all__ = ["max", "min", "var", "std", "var_mean", "std_mean", "norm", "aminmax"]


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


def _extreme(name, binary, full, along, rt, input, dim, keepdim, other):
    if other is not None:
        if dim is not None:
            raise TypeError(f"{name}() received an invalid combination of arguments: both 'dim' and 'other'")
        dim = other
    if isinstance(dim, _C.TensorBase):
        if keepdim:
            raise TypeError(f"{name}() received an invalid combination of arguments: keepdim with a tensor 'other'")
        return getattr(ops, binary)(input, dim)
    if dim is None:
        if keepdim:
            raise TypeError(f"{name}() received an invalid combination of arguments - got (Tensor, keepdim=bool), "
                            "but expected one of: (Tensor input), (Tensor input, int dim, bool keepdim), "
                            "(Tensor input, Tensor other)")
        return full(input)
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    return rt(along(input, dim, keepdim))


def max(input, dim=None, keepdim=False, *, other=None):
    """max(input) -> Tensor: the largest element (NaN if any is NaN).

    max(input, dim, keepdim=False) -> (values, indices): the largest element of each slice along ``dim`` and
    its index (the first one on ties). max(input, other) -> Tensor: the elementwise ``maximum``."""
    return _extreme("max", "maximum", ops.max, ops.max_dim, max_return, input, dim, keepdim, other)


def min(input, dim=None, keepdim=False, *, other=None):
    """min(input) / min(input, dim, keepdim=False) -> (values, indices) / min(input, other): like ``max``."""
    return _extreme("min", "minimum", ops.min, ops.min_dim, min_return, input, dim, keepdim, other)


def _correction(name, unbiased, correction):
    if unbiased is not None:
        if correction is not None:
            raise RuntimeError(f"{name}: can't specify both unbiased and correction")
        return 1.0 if unbiased else 0.0
    return correction


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
    return ops.var(input, dim, correction=corr, keepdim=keepdim)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The standard deviation over ``dim``; arguments as for ``var``."""
    dim, corr, keepdim = _var_args("std", dim, unbiased, keepdim, correction)
    return ops.std(input, dim, correction=corr, keepdim=keepdim)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(variance, mean) over ``dim``; arguments as for ``var``."""
    dim, corr, keepdim = _var_args("var_mean", dim, unbiased, keepdim, correction)
    return tuple(ops.var_mean(input, dim, correction=corr, keepdim=keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(standard deviation, mean) over ``dim``; arguments as for ``var``."""
    dim, corr, keepdim = _var_args("std_mean", dim, unbiased, keepdim, correction)
    return tuple(ops.std_mean(input, dim, correction=corr, keepdim=keepdim))


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The vector ``ord``-norm of ``x`` over ``dim`` (all elements by default): ord may be any real number,
    ``inf`` or ``-inf`` (max/min absolute value) or 0 (number of non-zeros)."""
    if isinstance(ord, str):
        raise TypeError("linalg.vector_norm(): argument 'ord' must be Number, not str")
    return ops.linalg_vector_norm(x, float(ord), dim, keepdim, dtype=dtype)


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """The norm of ``input``: ``p`` is a number (vector p-norm over ``dim``, all elements by default) or
    ``'fro'`` (the 2-norm of all the elements in ``dim``). ``'nuc'`` needs ``oneflow.linalg.matrix_norm``."""
    if out is not None:
        raise TypeError("norm(): 'out' is not supported")
    if isinstance(dim, builtins.int):
        dim = [dim]
    if isinstance(p, str):
        if p == "fro":
            if dim is not None and len(dim) > 2:
                raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
            return ops.linalg_vector_norm(input, 2.0, dim, keepdim, dtype=dtype)
        if p == "nuc":
            linalg = sys.modules["oneflow"].__dict__.get("linalg")
            matrix_norm = getattr(linalg, "matrix_norm", None)
            if matrix_norm is None:
                raise NotImplementedError("norm(p='nuc') needs oneflow.linalg.matrix_norm (singular values)")
            return matrix_norm(input, "nuc", dim=tuple(dim) if dim is not None else (-2, -1), keepdim=keepdim,
                               dtype=dtype)
        raise RuntimeError(f"norm(): invalid norm type '{p}'; expected a number, 'fro' or 'nuc'")
    if p is None:
        p = 2
    return ops.linalg_vector_norm(input, float(p), dim, keepdim, dtype=dtype)


def aminmax(input, *, dim=None, keepdim=False):
    """(min, max) of ``input`` (over ``dim`` when given) as a named tuple."""
    if input.numel() == 0 and (dim is None or input.shape[dim] == 0):
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    dims = [] if dim is None else [dim]
    return aminmax_return((ops.amin(input, dims, keepdim), ops.amax(input, dims, keepdim)))


def _attach_linalg():
    """``oneflow.linalg.vector_norm``: added to the linalg namespace, created if no other family made one."""
    flow = sys.modules.get("oneflow")
    if flow is None:
        return
    ns = flow.__dict__.get("linalg")
    if ns is None:
        try:
            ns = importlib.import_module("oneflow.linalg")
        except ImportError:
            ns = types.ModuleType("oneflow.linalg", "Linear algebra functions, like torch.linalg.")
            sys.modules["oneflow.linalg"] = ns
        flow.linalg = ns
    if not hasattr(ns, "vector_norm"):
        ns.vector_norm = vector_norm


_attach_linalg()


def _tensor_max(self, dim=None, keepdim=False, *, other=None):
    return max(self, dim, keepdim, other=other)


def _tensor_min(self, dim=None, keepdim=False, *, other=None):
    return min(self, dim, keepdim, other=other)


TENSOR_METHODS = {
    "max": _tensor_max, "min": _tensor_min, "var": var, "std": std, "norm": norm, "aminmax": aminmax,
}
