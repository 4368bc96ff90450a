"""Docstrings that follow from a name: Tensor methods written as small Python forwarders (lambdas, in-place
forms built in a loop) that carry none of their own get one pointing at what they forward to, and the C++
classes ``dtype`` and ``device`` get theirs here, since nanobind gives them none.

Registry ops get theirs from ``_op_docs``; functions with a docstring of their own keep it.
"""
import types

from . import _C

_CLASS_DOCS = {
    "dtype": "A tensor element type: ``oneflow.float32``, ``oneflow.int64``, ``oneflow.bool`` ... "
             "(``is_floating_point``, ``is_signed``, ``itemsize``).",
    "device": "Where a tensor lives: ``oneflow.device('cpu')``, or ``'cuda'`` / ``'cuda:1'`` in CUDA builds "
              "(``type``, ``index``).",
}


def _has_doc(obj):
    doc = getattr(obj, "__doc__", None)
    return isinstance(doc, str) and bool(doc.strip())


def derived_method_doc(name, Tensor, namespace):
    """The docstring of a Tensor method ``name`` that has none: the in-place form of the method without the
    underscore, or the method form of the function ``oneflow.<name>``; None when neither exists."""
    if name.endswith("_") and not name.endswith("__") and hasattr(Tensor, name[:-1]):
        return f"In-place version of :meth:`Tensor.{name[:-1]}`: writes the result into ``self`` and returns it."
    fn = namespace.get(name)
    if fn is not None and _has_doc(fn):
        return f"Method form of :func:`oneflow.{name}`, with ``self`` as its input tensor."
    return None


def fill(Tensor, namespace):
    """Give the undocumented Python functions among Tensor's methods their derived docstring."""
    for name, obj in list(vars(Tensor).items()):
        if name.startswith("__") or not isinstance(obj, types.FunctionType) or _has_doc(obj):
            continue
        doc = derived_method_doc(name, Tensor, namespace)
        if doc is not None:
            obj.__doc__ = doc
    for name, doc in _CLASS_DOCS.items():
        cls = getattr(_C, name)
        if not _has_doc(cls):
            cls.__doc__ = doc
