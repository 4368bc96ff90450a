"""``nn.Parameter``: a tensor that a Module registers as a learnable parameter."""
from .. import _C
from .._tensor import Tensor


class Parameter(Tensor):
    """A Tensor that is a module parameter: assigning it to a Module attribute registers it.

    ``Parameter(data=None, requires_grad=True)`` shares ``data``'s memory.

    A tensor subclass that keeps its data elsewhere (a wrapper such as flow-dist's global tensor) makes its own
    parameter: ``type(data).__flow_parameter__(data, requires_grad)`` returns an instance of a subclass of
    ``Parameter``, used in place of a plain one.
    """

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = _C._empty([0], _C.get_default_dtype())
        make = getattr(type(data), "__flow_parameter__", None)
        if make is not None:
            if cls is not Parameter:
                raise TypeError(f"{cls.__name__}(): cannot wrap a {type(data).__name__}; only nn.Parameter can")
            return make(data, requires_grad)
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


class UninitializedTensorMixin:
    """Shared behaviour of ``UninitializedParameter`` / ``UninitializedBuffer``: a placeholder without a shape
    until :meth:`materialize` gives it one and turns it into ``cls_to_become``."""

    def materialize(self, shape, device=None, dtype=None):
        """Allocates (uninitialised) storage of ``shape`` on the placeholder's device/dtype (or the given ones)
        and turns the object into a plain ``cls_to_become`` in place."""
        from .._ops import creation

        device = self.data.device if device is None else device
        dtype = self.data.dtype if dtype is None else dtype
        self.data = creation.empty(tuple(shape), device=device, dtype=dtype)
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError(
            "Can't access the shape of an uninitialized parameter or buffer. This error usually happens in "
            "`load_state_dict` when trying to load an uninitialized parameter into an initialized one. Call "
            "`forward` to initialize the parameters before accessing their attributes.")

    def share_memory_(self):
        raise RuntimeError("Can't share memory on an uninitialized parameter or buffer. Call `forward` to "
                           "initialize the parameters before calling `module.share_memory()`.")

    def __repr__(self):
        return f"<{self.__class__.__name__}>"

    def __reduce_ex__(self, proto):
        return (self.__class__, (self.requires_grad,))

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = type(self)(self.requires_grad, self.data.device, self.data.dtype)
        return memo[id(self)]


def is_lazy(param):
    """Whether ``param`` is an ``UninitializedParameter`` or ``UninitializedBuffer``."""
    return isinstance(param, UninitializedTensorMixin)


def _placeholder(cls, requires_grad, device, dtype):
    kw = {}
    if device is not None:
        kw["device"] = device
    from .._ops import creation

    return _C._make_subclass(cls, creation.empty(0, dtype=dtype or _C.get_default_dtype(), **kw), requires_grad)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A parameter whose shape is not known yet (used by the ``Lazy*`` modules); ``materialize(shape)`` turns it
    into a regular :class:`Parameter`. The device/dtype given here are used when it is materialised."""

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return _placeholder(cls, requires_grad, device, dtype)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (used by the ``Lazy*`` norm modules); ``materialize(shape)`` turns
    it into a regular Tensor."""

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None, persistent=True):
        t = _placeholder(cls, requires_grad, device, dtype)
        t.persistent = persistent
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None, persistent=True):
        pass
