"""Tensor methods PyTorch has for functions this package only had at the top level (``histogram``,
``prelu``), the legacy ``map2_``, and the always-``None`` ``name`` attribute."""
from .. import _C

ops = _C.ops


def histogram(self, bins=100, *, range=None, weight=None, density=False):
    """histogram(bins=100, *, range=None, weight=None, density=False) -> (Tensor, Tensor)

    See :func:`oneflow.histogram`."""
    from .signal import histogram as _histogram

    return _histogram(self, bins, range=range, weight=weight, density=density)


def prelu(self, weight):
    """prelu(weight) -> Tensor

    See :func:`oneflow.nn.functional.prelu`."""
    from ..nn import functional as F

    return F.prelu(self, weight)


def map2_(self, x, y, callable):
    """map2_(x, y, callable) -> Tensor

    Sets each element of ``self`` to ``callable(self_element, x_element, y_element)``, with ``x`` and ``y``
    broadcast to ``self``'s shape (in place; element by element in Python, so slow; CPU only)."""
    from .._tensor import _TYPE_NAMES
    from .legacy_methods import _elementwise_py, _py_caster

    for arg, t in (("x", x), ("y", y)):
        if t.dtype != self.dtype:
            raise TypeError(f"map2_: expected oneflow.{_TYPE_NAMES[self.dtype]} for argument '{arg}' "
                            f"(got oneflow.{_TYPE_NAMES[t.dtype]})")
    for t in (x, y):
        if t.dim() > self.dim():
            raise RuntimeError(f"expand({list(t.shape)}, size={list(self.shape)}): the number of sizes provided "
                               f"({self.dim()}) must be greater or equal to the number of dimensions in the tensor "
                               f"({t.dim()})")
    xs, ys = (ops.expand(t.detach(), list(self.shape)).reshape(-1).tolist() for t in (x, y))
    cast = _py_caster(self.dtype)
    values = [cast(callable(a, b, c)) for a, b, c in zip(self.detach().reshape(-1).tolist(), xs, ys)]
    return _elementwise_py(self, values, "map2_")


TENSOR_METHODS = {"histogram": histogram, "prelu": prelu, "map2_": map2_,
                  # PyTorch's read-only attribute, always None (a leftover of named tensors)
                  "name": property(lambda self: None)}
