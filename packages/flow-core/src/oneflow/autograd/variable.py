"""``oneflow.autograd.variable`` (PyTorch's module path for the legacy ``Variable``)."""
import warnings

from .. import _C

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.TensorBase)


class Variable(metaclass=_VariableMeta):
    """The deprecated ``Variable`` wrapper: ``Variable(t, requires_grad=...)`` is the tensor itself (with
    ``requires_grad`` set), and every tensor is an instance."""

    def __new__(cls, data, requires_grad=False, volatile=False):
        if volatile:
            warnings.warn("volatile was removed and now has no effect. Use `with oneflow.no_grad():` instead.")
        return data.requires_grad_() if requires_grad else data
