"""Exposes registry ops as ``oneflow.<name>`` functions and ``Tensor.<name>`` methods.

Op handles from ``_C.ops`` are callables that parse arguments by the op's schema and are method
descriptors, so ``Tensor.sin = ops.sin`` binds ``self`` as the first argument. Family modules in
``oneflow._ops`` then add Python-level wrappers where PyTorch's signature differs from the schema; their
definitions win over the raw handles.
"""
import importlib
import pkgutil

from . import _C

def op_by_name(name):
    """The registry op ``name`` (``oneflow._C.ops.<name>``): how a pickled op handle is looked up again."""
    return getattr(_C.ops, name)


# Ops that exist to express other ops' backward or internal plumbing: not part of the public API.
_PRIVATE_TRAITS = {"backward_helper", "optimizer"}


def _public_ops():
    for info in _C.list_ops():
        if _PRIVATE_TRAITS.intersection(info["traits"]):
            continue
        yield info["name"], getattr(_C.ops, info["name"])


def export_ops(namespace):
    """Fill ``namespace`` (the oneflow module dict) and Tensor with ops, then with family overrides."""
    from . import _op_docs
    from ._tensor import Tensor

    _op_docs.install()

    for name, op in _public_ops():
        if not hasattr(Tensor, name) or name.endswith("_"):
            if name not in Tensor.__dict__:
                setattr(Tensor, name, op)
        if not name.endswith("_") and name not in namespace:
            namespace[name] = op
    from . import _ops

    for mod_info in sorted(pkgutil.iter_modules(_ops.__path__), key=lambda m: m.name):
        mod = importlib.import_module(f"{_ops.__name__}.{mod_info.name}")
        for name in getattr(mod, "__all__", ()):
            namespace[name] = getattr(mod, name)
        for name, fn in getattr(mod, "TENSOR_METHODS", {}).items():
            setattr(Tensor, name, fn)
    from . import _derived_docs, _global_creation

    _derived_docs.fill(Tensor, namespace)
    _global_creation.install(namespace)
