"""The interception layer: Python handlers that see every op below autograd.

Two kinds of handler exist, both called as ``handler.__flow_dispatch__(op, inputs, attrs)`` and returning the
op's output tensor(s):

* **Modes** (``DispatchMode`` subclasses used as context managers) see every op issued while they are active,
  forward and backward; graph tracing is built on them. While a mode handles an op it is popped, so ops it
  issues itself go to the next mode or to the kernels.
* **Tensor subclasses** that define a classmethod ``__flow_dispatch__`` see every op that has one of their
  instances among its inputs (global tensors are built on them). Make the outer object with
  ``oneflow._C._make_wrapper(cls, shape, dtype, device, requires_grad)``: it carries metadata only.

A tensor subclass may also define a classmethod ``__flow_composite__(op, inputs)``: it is called when user code
calls a composite op (one the core computes out of other ops) with one of its instances among the inputs,
before the ops inside run (those are the core's own, ``_C._internal_depth()`` > 0): it sees the inputs the user
gave, to check them.

``op`` is an ``OpHandle`` (``op.name``, ``op.traits``, ``op.schema``); ``op.redispatch(inputs, attrs)`` runs it
on other inputs with the same attributes. ``inputs`` is the flat list of tensor inputs (None where an optional
input is absent) and ``attrs`` a dict of the op's attributes by name. Where an op has several tensor lists
(the optimizer updates), ``attrs["_list_lengths"]`` gives each list's length; ``split_inputs`` groups the inputs
by parameter. Handlers run below autograd: the ops they
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


def split_inputs(op, inputs, attrs):
    """``inputs`` by the op's tensor parameters, in schema order: ``{name: tensor}``, or a list for a ``Tensor[]``.
    List lengths come from ``attrs["_list_lengths"]`` where the schema keeps them; otherwise the one list is the
    last tensor parameter and holds what the others leave."""
    params = [a for a in op.arguments if a["is_tensor"]]
    is_list = [a["type"].endswith("[]") for a in params]
    lengths = list(attrs.get("_list_lengths", ()))
    if not lengths:
        lengths = [len(inputs) - len(params) + 1] * sum(is_list)
    sizes = iter(lengths)
    counts = [next(sizes, -1) if lst else 1 for lst in is_list]
    if len(lengths) != sum(is_list) or min(counts, default=0) < 0 or sum(counts) != len(inputs):
        raise ValueError(f"{op.name}: {len(inputs)} inputs do not fit its tensor parameters with list lengths "
                         f"{lengths}")
    out, pos = {}, 0
    for a, lst, n in zip(params, is_list, counts):
        out[a["name"]] = list(inputs[pos:pos + n]) if lst else inputs[pos]
        pos += n
    return out


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


def _composite(op, inputs):
    for t in inputs:
        if t is not None:
            check = getattr(type(t), "__flow_composite__", None)
            if check is not None:
                check(op, inputs)
                return


_C._set_dispatch_handler(_handle)
_C._set_composite_handler(_composite)
