"""Every public callable of ``oneflow`` and every public Tensor method has a docstring (``help()`` shows
something useful): the tests list the offenders."""
import inspect

import oneflow as flow


def _doc(obj):
    # a class's own docstring, not one inherited through its metaclass
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)
    return doc if isinstance(doc, str) else ""


def test_every_public_oneflow_callable_has_a_docstring():
    names = [n for n in dir(flow) if not n.startswith("_") and callable(getattr(flow, n))]
    assert len(names) > 600
    offenders = [n for n in names if not _doc(getattr(flow, n)).strip()]
    assert not offenders, f"{len(offenders)} of {len(names)} without a docstring: {offenders}"


def test_every_public_tensor_method_has_a_docstring():
    members = [(n, inspect.getattr_static(flow.Tensor, n)) for n in dir(flow.Tensor) if not n.startswith("_")]
    methods = [(n, m) for n, m in members if callable(m)]
    assert len(methods) > 600
    offenders = [n for n, m in methods if not _doc(m).strip()]
    assert not offenders, f"{len(offenders)} of {len(methods)} without a docstring: {offenders}"


def test_derived_docstrings_point_at_what_they_forward_to():
    assert flow.Tensor.clamp_.__doc__.startswith("In-place version of :meth:`Tensor.clamp`")
    assert ":func:`oneflow.clamp`" in flow.Tensor.clamp.__doc__
    assert flow.dtype.__doc__ and flow.device.__doc__
