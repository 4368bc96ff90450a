"""``nn.Parameter``: a tensor that a Module registers as a learnable parameter."""
from .. import _C
from .._tensor import Tensor


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning it to a Module attribute registers it.

    ``Parameter(data=None, requires_grad=True)`` shares ``data``'s memory.
    """

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C._empty([0], _C.get_default_dtype())
        return _C._make_subclass(cls, data.detach(), requires_grad)

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __reduce_ex__(self, proto):
        _, (arr, dtype_name, _) = super().__reduce_ex__(proto)
        return (_rebuild_parameter, (arr, dtype_name, self.requires_grad))

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        r = Parameter(_C.ops.clone(self.detach()), self.requires_grad)
        memo[id(self)] = r
        return r


def _rebuild_parameter(arr, dtype_name, requires_grad):
    from .._ops import creation

    return Parameter(creation.tensor(arr, dtype=getattr(_C, dtype_name)), requires_grad)


class Buffer(Tensor):
    """Marks a tensor as a buffer when assigned to a Module (``nn.Buffer(data, persistent=True)``)."""

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            data = _C._empty([0], _C.get_default_dtype())
        t = _C._make_subclass(cls, data.detach(), False)
        t.persistent = persistent
        return t

    def __init__(self, data=None, *, persistent=True):
        pass
