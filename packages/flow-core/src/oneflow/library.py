"""Ops whose kernel is a Python function (``torch.library.custom_op``'s idea): ``oneflow.library.custom_op``.

A custom op is called like a registry op and goes through the same interception layer: dispatch modes (graph
tracing records it as one IR node) and tensor subclasses see it, and ``op.redispatch(inputs, attrs)`` runs it
below them, as the graph executors call every op. Its meta function gives the outputs' shapes and dtypes from
the inputs' metadata, so a trace runs no kernel. An op declared with side effects (a collective, an exchange
with an outside store) is never removed, merged or evaluated at compile time by the graph passes.

These ops live in Python: the core's C++ plan executor does not call them, so a graph holding one runs its
steps as flow-graph's Python loop.
"""
from . import _C
from . import _dispatch

__all__ = ["custom_op", "CustomOp"]

_registered = {}


class CustomOp:
    """A Python-kernel op (made by :func:`custom_op`). Looks to dispatch handlers and graph passes like a
    registry ``OpHandle``: ``name``, ``traits``, ``is_inplace``, ``meta``, ``redispatch``."""

    is_inplace = False
    num_outputs = 1
    arguments = ()

    def __init__(self, name, kernel, meta, traits):
        self.name, self._kernel, self._meta, self.traits = name, kernel, meta, list(traits)

    def __call__(self, *inputs, **attrs):
        """Runs the op on ``inputs`` (tensors) with keyword attributes, through the interception layer."""
        inputs = list(inputs)
        if _dispatch.current_modes() or any(
                t is not None and getattr(type(t), "__flow_dispatch__", None) is not None for t in inputs):
            return _dispatch._handle(self, inputs, attrs)
        return self._run(inputs, attrs)

    def redispatch(self, inputs, attrs):
        """Runs the op below the interception layer (what a handler and a graph plan call)."""
        if _dispatch.current_modes():  # a handler asked for the next one down
            return _dispatch._handle(self, list(inputs), dict(attrs))
        return self._run(list(inputs), dict(attrs))

    def meta(self, inputs, attrs):
        """``[(shape, dtype), ...]`` of the outputs for inputs of the given metadata."""
        out = self._meta(list(inputs), dict(attrs))
        outs = out if isinstance(out, (tuple, list)) else [out]
        return [(tuple(o.shape), o.dtype) for o in outs]

    def sbp_signatures(self, inputs, attrs):
        return []

    def dims(self, inputs, attrs):
        return None

    def _run(self, inputs, attrs):
        if any(t is not None and t.is_meta for t in inputs):
            return self._meta(inputs, attrs)
        try:
            return self._kernel(*inputs, **attrs)
        except (RuntimeError, TypeError, ValueError):
            raise
        except Exception as e:  # noqa: BLE001 - a kernel's own error types reach the caller as RuntimeError
            raise RuntimeError(f"{self.name}: {type(e).__name__}: {e}") from e

    def __repr__(self):
        return f"<custom op {self.name}>"

    def __reduce__(self):  # a saved graph names its ops; the op is found again by name
        return (_lookup, (self.name,))


def _lookup(name):
    op = _registered.get(name)
    if op is None:
        raise RuntimeError(f"custom op {name!r} is not registered in this process (import the package that "
                           f"defines it)")
    return op


def custom_op(name, *, kernel, meta, side_effects=False, traits=()):
    r"""Defines an op whose kernel is the Python function ``kernel``.

    Args:
        name (str): the op's name, unique (``"namespace::op"`` by convention) and not a registry op's.
        kernel (callable): ``kernel(*inputs, **attrs)`` returns the output tensor(s) for real inputs.
        meta (callable): ``meta(inputs, attrs)`` returns tensors on the ``meta`` device of the outputs' shapes
            and dtypes (no data is read).
        side_effects (bool): the op talks to the outside (a collective, a store): graph passes never drop,
            merge or fold it, and it runs exactly where the program issued it.
        traits (sequence of str): further registry trait names.

    Returns:
        CustomOp: the op, callable as ``op(*inputs, **attrs)``.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"custom_op(): name must be a non-empty str, got {name!r}")
    if name in _registered or hasattr(_C.ops, name):
        raise RuntimeError(f"custom_op(): an op named {name!r} is already registered")
    if not callable(kernel) or not callable(meta):
        raise TypeError("custom_op(): kernel and meta must be callables")
    traits = list(traits) + (["side_effect"] if side_effects else [])
    op = _registered[name] = CustomOp(name, kernel, meta, traits)
    return op
