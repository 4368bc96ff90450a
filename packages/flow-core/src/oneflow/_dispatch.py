"""The interception layer: Python handlers that see every op below autograd.

Two kinds of handler exist, both called as ``handler.__flow_dispatch__(op, inputs, attrs)`` and returning the
op's output tensor(s):

* **Modes** (``DispatchMode`` subclasses used as context managers) see every op issued while they are active,
  forward and backward; graph tracing is built on them. While a mode handles an op it is popped, so ops it
  issues itself go to the next mode or to the kernels.
* **Tensor subclasses** that define a classmethod ``__flow_dispatch__`` see every op that has one of their
  instances among its inputs (global tensors are built on them). Make the outer object with
  ``oneflow._C._make_wrapper(cls, shape, dtype, device, requires_grad)``: it carries metadata only.

``op`` is an ``OpHandle`` (``op.name``, ``op.traits``, ``op.schema``); ``op.redispatch(inputs, attrs)`` runs it
on other inputs with the same attributes. ``inputs`` is the flat list of tensor inputs (None where an optional
input is absent) and ``attrs`` a dict of the op's attributes by name. Handlers run below autograd: the ops they
issue are not recorded, and autograd records the intercepted op itself above them.
"""
import threading

from . import _C

_state = threading.local()


def _stack():
    s = getattr(_state, "stack", None)
    if s is None:
        s = _state.stack = []
    return s


class DispatchMode:
    """Base class of dispatch modes. Override ``__flow_dispatch__(self, op, inputs, attrs)``."""

    def __flow_dispatch__(self, op, inputs, attrs):
        return op.redispatch(inputs, attrs)

    def __enter__(self):
        s = _stack()
        s.append(self)
        _C._set_mode_depth(len(s))
        return self

    def __exit__(self, *exc):
        s = _stack()
        if s and s[-1] is self:
            s.pop()
        else:
            s.remove(self)
        _C._set_mode_depth(len(s))
        return False


def current_modes():
    """The active dispatch modes, innermost last."""
    return list(_stack())


def _handle(op, inputs, attrs):
    s = _stack()
    if s:
        mode = s.pop()
        _C._set_mode_depth(len(s))
        try:
            return mode.__flow_dispatch__(op, inputs, attrs)
        finally:
            s.append(mode)
            _C._set_mode_depth(len(s))
    for t in inputs:
        if t is not None:
            handler = getattr(type(t), "__flow_dispatch__", None)
            if handler is not None:
                return handler(op, inputs, attrs)
    return op.redispatch(inputs, attrs)


_C._set_dispatch_handler(_handle)
