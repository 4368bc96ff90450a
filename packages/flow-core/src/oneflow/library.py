"""Ops whose kernel is a Python function: ``oneflow.library.custom_op`` (PyTorch's ``torch.library.custom_op``).

The op is registered into the core's op registry with its schema, a meta function and a CPU kernel that call
back into Python (taking the GIL). It is then an op like the others: called as ``oneflow.ops.<name>``, seen by
dispatch modes (graph tracing records it as one IR node) and tensor subclasses, run by the graph's native plan
executor. An op declared with side effects (a collective, an exchange with an outside store) carries the
``side_effect`` trait: graph passes never remove, merge or fold it.
"""
from . import _C

__all__ = ["custom_op"]

registered = set()  # names of the ops made here (the profiler shows them as oneflow::name)


def _kernel_adapter(fn):
    def run(inputs, attrs):
        return fn(*inputs, **attrs)

    return run


def custom_op(name, schema, *, kernel, meta, side_effects=False, traits=()):
    r"""Registers an op whose CPU kernel is the Python function ``kernel``.

    Args:
        name (str): the op's name, not taken by another op (it becomes ``oneflow.ops.<name>``).
        schema (str): the parameters and results in the registry's schema language, with or without the name:
            ``"(Tensor self, int[] ranks, str reduce='sum') -> Tensor"``. Tensor parameters are the inputs,
            the others attributes.
        kernel (callable): ``kernel(*inputs, **attrs)`` returns the output tensor(s) (new tensors) for real
            inputs.
        meta (callable): ``meta(*inputs, **attrs)`` returns tensors of the outputs' shapes and dtypes (on the
            ``meta`` device will do) without reading data: what tracing and shape inference call.
        side_effects (bool): the op talks to the outside (a collective, a store): graph passes never drop,
            merge or fold it.
        traits (sequence of str): further registry trait names (``op.traits``).

    Returns:
        the op handle (``oneflow.ops.<name>``), callable with the schema's arguments.

    Example::

        >>> def twice(x):
        ...     return x * 2
        >>> op = flow.library.custom_op("my_twice", "(Tensor self) -> Tensor", kernel=twice,
        ...                             meta=lambda x: flow.empty_like(x, device="meta"))
        >>> op(flow.ones(2))
        tensor([2., 2.])
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise TypeError(f"custom_op(): name must be an identifier, got {name!r}")
    if not isinstance(schema, str):
        raise TypeError(f"custom_op(): schema must be a str, got {type(schema).__name__}")
    if not callable(kernel) or not callable(meta):
        raise TypeError("custom_op(): kernel and meta must be callables")
    text = schema.strip()
    if text.startswith("("):
        text = name + text
    elif not text.startswith(name + "("):
        raise ValueError(f"custom_op(): schema {schema!r} does not describe op {name!r}")
    if hasattr(_C.ops, name):
        raise RuntimeError(f"custom_op(): an op named {name!r} is already registered")
    names = list(traits) + (["side_effect"] if side_effects else [])
    _C._register_custom_op(text, names, _kernel_adapter(kernel), _kernel_adapter(meta))
    _C._refresh_ops()
    registered.add(name)
    return getattr(_C.ops, name)
