"""Signatures and docstrings of registry ops, generated from their schema and traits (oneflow._op_docs)."""
import doctest
import functools
import inspect
import pydoc
import re

import pytest
import torch

import oneflow as flow
from oneflow import _C, _op_docs


def _public_ops():
    for info in _C.list_ops():
        op = getattr(_C.ops, info["name"])
        if getattr(flow, info["name"], None) is op:
            yield op


def _flat(text):
    return " ".join(text.split())  # docstrings are wrapped at 100 columns


def _torch_doc_signature(name):
    """The signature on the first line of torch.<name>'s docstring, e.g. ``add(input, other, *, alpha=1,
    out=None) -> Tensor``."""
    first = getattr(torch, name).__doc__.strip().splitlines()[0]
    m = re.match(re.escape(name) + r"\((.*)\)\s*->", first)
    assert m, first
    ns = {}
    exec(f"def f({m.group(1)}): pass", {}, ns)
    return inspect.signature(ns["f"])


# ops whose schema gives exactly PyTorch's documented parameters: names, kinds, defaults
TORCH_DOCUMENTED = ["add", "sub", "mul", "div", "pow", "remainder", "fmod", "sqrt", "exp", "log1p", "sigmoid",
                    "round", "addcmul", "addcdiv", "maximum", "xlogy", "cumsum", "cumprod", "gather",
                    "index_select", "diagonal", "tril", "triu", "unsqueeze", "permute", "select", "eq",
                    "logical_and", "masked_select", "nanmean"]


@pytest.mark.parametrize("name", TORCH_DOCUMENTED)
def test_signature_matches_torch_documentation(name):
    ours = inspect.signature(getattr(flow, name))
    ref = _torch_doc_signature(name)
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == \
           [(p.name, p.kind, p.default) for p in ref.parameters.values()]


def test_signature_details():
    sig = inspect.signature(flow.sum)
    assert str(sig) == "(input, dim=None, keepdim=False, *, dtype=None, out=None)"
    # an optional tensor before required attributes cannot have a default in Python: shown as required
    conv = inspect.signature(flow.convolution)
    assert list(conv.parameters)[:4] == ["input", "weight", "bias", "stride"]
    assert conv.parameters["bias"].default is inspect.Parameter.empty
    # views and in-place ops take no out=; in-place methods keep `self`
    assert "out" not in inspect.signature(flow.permute).parameters
    assert str(inspect.signature(flow.Tensor.add_)) == "(self, other, *, alpha=1)"
    # a bound method drops self, as for Python methods
    assert str(inspect.signature(flow.ones(2).add)) == "(other, *, alpha=1, out=None)"
    # `from` is a Python keyword: the parameter is shown as `from_`
    assert list(inspect.signature(_C.ops.uniform).parameters)[1] == "from_"


def test_signature_binds_like_the_call():
    a, b = flow.tensor([1.0, 2.0]), flow.tensor([3.0, 4.0])
    bound = inspect.signature(flow.add).bind(a, b, alpha=2)
    assert flow.add(*bound.args, **bound.kwargs).tolist() == [7.0, 10.0]
    with pytest.raises(TypeError):
        inspect.signature(flow.add).bind(a, b, 2)  # alpha is keyword-only, as the binding says
    with pytest.raises(TypeError, match="takes 2 positional arguments"):
        flow.add(a, b, 2)


def test_every_signature_parameter_is_a_keyword_the_binding_accepts():
    """A name the signature shows but the binding does not know would mislead; each is passed alone (with a
    value of no valid type) and must fail for its value or for missing arguments, never as unknown."""
    bad = []
    for op in _public_ops():
        for p in inspect.signature(op).parameters.values():
            if p.name.endswith("_") and not op.name.endswith("_"):  # renamed keyword (from_)
                continue
            try:
                op(**{p.name: object()})
            except TypeError as e:
                if "unexpected keyword argument" in str(e):
                    bad.append(f"{op.name}({p.name}=)")
            except Exception:
                pass
    assert not bad, bad


def test_handles_stay_the_c_binding():
    # docs live on the handle class: no Python wrapper in front of the call
    assert type(flow.add) is _C.OpHandle and flow.Tensor.add is flow.add
    assert flow.add.__name__ == flow.add.__qualname__ == "add"
    with pytest.raises(AttributeError):
        flow.add.__wrapped__
    assert functools.wraps(flow.add)(lambda *a: None).__name__ == "add"


def test_docstring_of_add():
    doc = flow.add.__doc__
    assert doc.startswith("add(input, other, *, alpha=1, out=None) -> Tensor\n")
    assert "    other (Tensor or Number): the second operand." in doc
    assert "    alpha (Number, optional): the multiplier. Default: ``1``." in doc
    assert "broadcasting ``input`` and ``other`` to a common shape" in _flat(doc)
    assert "Differentiable" in doc and "In-place form: ``Tensor.add_``" in _flat(doc)
    assert "schema ``add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor``" in _flat(doc)


def test_docstrings_state_traits_and_differentiability():
    assert "Not differentiable" in _flat(flow.eq.__doc__) and "the result is bool" in _flat(flow.eq.__doc__)
    assert "Returns a view" in _flat(flow.permute.__doc__)
    assert "A reduction over ``dim``" in _flat(flow.sum.__doc__)
    assert "Also available as ``oneflow.absolute``" in _flat(flow.abs.__doc__)
    assert flow.Tensor.add_.__doc__.startswith("add_(self, other, *, alpha=1) -> Tensor\n\nIn-place version of "
                                               ":func:`oneflow.add`")
    assert "out (tuple of Tensors, optional)" in flow.max_dim.__doc__


def test_help_renders_name_signature_and_doc():
    text = pydoc.render_doc(flow.add, renderer=pydoc.plaintext)
    assert "add(input, other, *, alpha=1, out=None)" in text and "Args:" in text
    assert "<oneflow op add>" not in text


def _doc_examples():
    return [op for op in _public_ops() if "Example::" in op.__doc__]


def test_generated_examples_run_as_doctests():
    ops = _doc_examples()
    assert len(ops) > 100, len(ops)  # elementwise ops and reductions get one
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    parser = doctest.DocTestParser()
    for op in ops:
        runner.run(parser.get_doctest(op.__doc__, {}, op.name, None, 0))
    assert runner.failures == 0


@pytest.mark.parametrize("text,expected", [
    ("f(Tensor self, Tensor(strict) other, *, Scalar alpha=1) -> Tensor",
     [("Tensor", "self", inspect.Parameter.empty, False), ("Tensor(strict)", "other", inspect.Parameter.empty, False),
      ("Scalar", "alpha", 1, True)]),
    ("g(Tensor?[] indices, int[] padding=0, int[] stride=[], float[] c=[3.5, -4.0], str s=\"\", str m='L') -> Tensor",
     [("Tensor?[]", "indices", inspect.Parameter.empty, False), ("int[]", "padding", 0, False),
      ("int[]", "stride", (), False), ("float[]", "c", (3.5, -4.0), False), ("str", "s", "", False),
      ("str", "m", "L", False)]),
    ("h(float eps=1e-05, Scalar s=0.5, bool b=True, int? k=None, ScalarType? dtype=None) -> (Tensor a, Tensor b)",
     [("float", "eps", 1e-05, False), ("Scalar", "s", 0.5, False), ("bool", "b", True, False),
      ("int?", "k", None, False), ("ScalarType?", "dtype", None, False)]),
])
def test_parse_schema(text, expected):
    name, args, returns = _op_docs.parse_schema(text)
    assert name == text.split("(")[0] and returns == text.split("-> ")[1]
    assert [(a.type, a.name, a.default, a.kwarg_only) for a in args] == expected
