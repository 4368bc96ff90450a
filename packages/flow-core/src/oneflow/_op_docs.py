"""Signatures and docstrings of registry ops, made from what the registry knows: the schema text, the traits, and
whether the op is differentiable (plus a one-line summary from ``_op_summaries`` where there is one).

Op handles are instances of the C++ class ``_C.OpHandle``, one per op. ``install()`` gives that class two
Python-level attributes: ``__signature__`` and ``__doc__`` properties (so ``inspect.signature(oneflow.add)`` and
``help(oneflow.add)`` work); ``__name__`` and ``__qualname__`` come from the C++ class. Calls do not touch
any of them: ``oneflow.add(a, b)`` still goes straight from the interpreter to the binding's vectorcall. Both
texts are built on first access and cached.
"""
import inspect
import keyword
import textwrap
import threading

from . import _C

_EMPTY = inspect.Parameter.empty
_lock = threading.Lock()
_signatures = {}
_docs = {}


class Arg:
    """One parameter of a schema: ``type`` as written (``Tensor?``, ``int[]``...), ``name``, ``default`` (a Python
    value, or ``inspect.Parameter.empty``), ``kwarg_only``."""

    __slots__ = ("type", "name", "default", "kwarg_only")

    def __init__(self, type_, name, default, kwarg_only):
        self.type, self.name, self.default, self.kwarg_only = type_, name, default, kwarg_only

    @property
    def optional(self):
        return self.type.endswith("?") or self.default is not _EMPTY

    @property
    def base_type(self):
        return self.type.rstrip("?")

    @property
    def is_tensor(self):
        return self.base_type.startswith("Tensor")


def _split_top(text):
    """Split at commas outside brackets and quotes."""
    parts, depth, quote, cur = [], 0, None, []
    for ch in text:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


def _number(text):
    t = text.strip()
    if any(c in t for c in ".eEn") and not t.lstrip("-").isdigit():
        return float(t)
    return int(t)


def parse_default(type_, text):
    """The Python value of a schema default, the way the binding reads it (``dispatch::parse_default``)."""
    base = type_.rstrip("?")
    t = text.strip()
    if t == "None":
        return None
    if base == "bool":
        return t in ("True", "true", "1")
    if base == "str":
        return t[1:-1] if len(t) >= 2 and t[0] in "'\"" and t[-1] == t[0] else t
    if base == "Scalar":
        return {"True": True, "False": False}[t] if t in ("True", "False") else _number(t)
    if base == "int":
        return int(t)
    if base == "float":
        return float(t)
    if base.endswith("[]"):
        if t.startswith("["):
            conv = float if base.startswith("float") else int
            return tuple(conv(x) for x in _split_top(t[1:-1]))
        return _number(t)  # a single number stands for a list of it (``int[] padding=0``)
    return t


def parse_schema(text):
    """``(name, [Arg], returns)`` of a schema such as
    ``add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor``."""
    lp = text.index("(")
    arrow = text.rindex("->")
    rp = text.rindex(")", 0, arrow)
    name = text[:lp].strip()
    returns = text[arrow + 2:].strip()
    args, kwonly = [], False
    for part in _split_top(text[lp + 1:rp]):
        if part == "*":
            kwonly = True
            continue
        decl, _, default = part.partition("=")
        type_, _, arg_name = decl.strip().rpartition(" ")
        value = parse_default(type_, default) if default else _EMPTY
        args.append(Arg(type_.strip(), arg_name.strip(), value, kwonly))
    return name, args, returns


# ---- what the binding does with a schema (python/ops_bind.cpp) --------------------------------------------------

def _schema_of(op):
    return parse_schema(op.schema)


def takes_out(op, args):
    """The binding's rule for PyTorch's ``out=``: ops returning new tensors (not views, not in-place ops)."""
    if op.is_inplace or {"view", "inplace"}.intersection(op.traits):
        return False
    return all(a.name != "out" for a in args)


def _exported_as_function(op):
    import oneflow

    return getattr(oneflow, op.name, None) is op


def _param_name(arg, index, op):
    # the binding also accepts ``input=`` for the first parameter: PyTorch's name, used for functions
    if index == 0 and arg.name == "self" and not op.is_inplace and _exported_as_function(op):
        return "input"
    if keyword.iskeyword(arg.name):  # ``from`` (uniform, random): not a Python identifier
        return arg.name + "_"
    return arg.name


def _parameters(op):
    _, args, _ = _schema_of(op)
    params = []
    positional = [i for i, a in enumerate(args) if not a.kwarg_only]
    # A Python signature cannot put a defaulted positional parameter before a required one; the binding can
    # (an optional ``Tensor? bias`` before required attributes), so such a parameter is shown as required.
    can_default, required_seen = set(), False
    for i in reversed(positional):
        a = args[i]
        if not required_seen and a.optional:
            can_default.add(i)
        elif not a.optional:
            required_seen = True
    for i, a in enumerate(args):
        kind = inspect.Parameter.KEYWORD_ONLY if a.kwarg_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
        default = _EMPTY
        if a.kwarg_only or i in can_default:
            default = a.default if a.default is not _EMPTY else (None if a.type.endswith("?") else _EMPTY)
        params.append(inspect.Parameter(_param_name(a, i, op), kind, default=default))
    if takes_out(op, args):
        params.append(inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
    return params


def _namespace_complete():
    # Texts depend on which names oneflow exports; asked during `import oneflow`, they are built but not kept.
    import oneflow

    return not getattr(getattr(oneflow, "__spec__", None), "_initializing", False)


def _plain_state():
    """Whether examples computed now print what a fresh session prints: no dispatch mode or autocast active,
    the default dtype float32. Otherwise a docstring is built without its example and not kept."""
    import oneflow

    return (not oneflow._dispatch.current_modes() and not oneflow.is_autocast_enabled("cpu")
            and oneflow.get_default_dtype() == oneflow.float32)


def signature(op):
    """The ``inspect.Signature`` of an op handle, from its schema."""
    key = op.name
    sig = _signatures.get(key)
    if sig is None:
        sig = inspect.Signature(_parameters(op))
        if _namespace_complete():
            with _lock:
                _signatures[key] = sig
    return sig


# ---- docstrings -------------------------------------------------------------------------------------------------

_TYPE_NAMES = {
    "Tensor": "Tensor", "Tensor(strict)": "Tensor", "Tensor[]": "sequence of Tensors",
    "Tensor?[]": "sequence of Tensors or None", "int": "int", "int[]": "int or tuple of ints", "float": "float",
    "float[]": "tuple of floats", "bool": "bool", "str": "str", "Scalar": "Number", "ScalarType": "oneflow.dtype",
    "Device": "oneflow.device",
}

# What common parameters mean, by name; parameters not listed get their type and default only.
_ARG_TEXT = {
    "self": "the input tensor.",
    "input": "the input tensor.",
    "other": "the second operand.",
    "keepdim": "whether the output keeps each reduced dimension, with size 1.",
    "dtype": "the dtype of the result.",
    "out": "the output tensor: the result is written into it (resized when its shape differs) and returned.",
    "generator": "the handle (``g._handle``) of the ``oneflow.Generator`` to draw from; None draws from the "
                 "default generator. The Python-level functions take the Generator itself.",
    "reduction": "how the per-element losses are combined: 'none', 'mean' or 'sum'.",
    "target": "the target tensor.",
    "weight": "the weights.",
    "A": "the matrix, or a batch of matrices in the last two dimensions.",
    "alpha": "the multiplier.",
    "dim": "the dimension (or dimensions) to operate on.",
    "train": "whether to apply it (training) or return the input unchanged.",
    "p": "the probability.",
}

_OUT_TEXT_SEVERAL = "the output tensors, one per result, written and returned like a single ``out``."

_TRAIT_TEXT = [
    ("composite", "Defined by other registered ops, which autograd and dispatch modes see one by one."),
    ("view", "Returns a view: the result shares ``{first}``'s storage, so writes to one show in the other."),
    ("data_dependent_shape", "The shape of the result depends on the values of the input."),
    ("random", "Random: it draws from a generator, so seeding (``oneflow.manual_seed``) makes it repeatable."),
]


def _arg_type(arg, op):
    base = arg.base_type
    text = _TYPE_NAMES.get(base, base)
    # the binding wraps Python numbers as 0-dim tensors where a tensor is expected, except Tensor(strict)
    if base == "Tensor" and arg.name != "self" and op.traits and "elementwise" in op.traits:
        text = "Tensor or Number"
    return text + (", optional" if arg.optional else "")


def _aliases(op):
    import oneflow

    names = [k for k, v in vars(oneflow).items() if v is op and k != op.name and not k.startswith("_")]
    return sorted(names)


def _trait_sentences(op, args, first):
    traits = set(op.traits)
    out = []
    if "elementwise" in traits and "broadcast_binary" in traits:
        tensors = [a for a in args if a.is_tensor]
        names = [f"``{first if i == 0 else a.name}``" for i, a in enumerate(tensors)]
        names = " and ".join(names) if len(names) <= 2 else ", ".join(names[:-1]) + " and " + names[-1]
        result = ("the result is bool" if "comparison" in traits else
                  "the result has their promoted dtype (Python numbers count as weakest)")
        out.append(f"Elementwise, broadcasting {names} to a common shape; {result}.")
    elif "elementwise" in traits:
        out.append(f"Elementwise: one result per element of ``{first}``, in its shape.")
    if "reduction" in traits:
        out.append("A reduction" + (" over ``dim``." if any(a.name == "dim" for a in args) else " over all elements."))
    for trait, text in _TRAIT_TEXT:
        if trait in traits:
            out.append(text.format(first=first))
    if op.differentiable and not op.is_inplace:
        out.append("Differentiable: autograd records it when an input requires grad.")
    elif not op.differentiable:
        out.append("Not differentiable: its results never require grad.")
    return out


def _example(op, call):
    """A doctest run on small inputs now, so its printed output is what the op gives; None when no cheap input
    fits (required attributes, random results, errors, non-finite outputs)."""
    import oneflow as flow

    traits = set(op.traits)
    if "random" in traits or op.is_inplace:
        return None
    _, args, _ = _schema_of(op)
    tensors = [a for a in args if a.is_tensor]
    if any(not a.optional for a in args if not a.is_tensor) or any(a.base_type.endswith("[]") for a in tensors):
        return None
    required = [a for a in tensors if not a.optional]
    if "elementwise" in traits and len(required) == 1:
        candidates = [["x = flow.tensor([0.25, 0.5, 1.0, 2.0])"], ["x = flow.tensor([1.5, 2.0, 3.0, 4.0])"],
                      ["x = flow.tensor([1, 2, 3, 4])"], ["x = flow.tensor([True, False])"]]
        calls = [f"{call}(x)"]
    elif "elementwise" in traits and len(required) == 2:
        candidates = [["a = flow.tensor([[1.0, 2.0, 3.0]])", "b = flow.tensor([[0.5], [2.0]])"],
                      ["a = flow.tensor([[4, 6, 9]])", "b = flow.tensor([[2], [3]])"],
                      ["a = flow.tensor([[True, False]])", "b = flow.tensor([[True], [False]])"]]
        calls = [f"{call}(a, b)"]
    elif "reduction" in traits and len(required) == 1:
        candidates = [["x = flow.tensor([[1.0, 2.0], [3.0, 4.0]])"], ["x = flow.tensor([[1, 0], [3, 4]])"]]
        calls = [f"{call}(x)"] + ([f"{call}(x, dim=1)"] if any(a.name == "dim" for a in args) else [])
    else:
        return None
    for setup in candidates:
        env = {"flow": flow}
        lines = ["import oneflow as flow"] + setup
        try:
            for s in setup:
                exec(s, env)
            shown = []
            for c in calls:
                r = eval(c, env)
                results = r if isinstance(r, tuple) else (r,)
                if not all(isinstance(t, flow.Tensor) for t in results):
                    raise TypeError("not a tensor result")
                if any(t.dtype.is_floating_point and not bool(flow.isfinite(t).all()) for t in results):
                    raise ValueError("non-finite")
                shown.append((c, repr(r)))
        except Exception:  # this input does not suit the op: try the next one
            continue
        text = [">>> " + s for s in lines]
        for c, out in shown:
            text.append(">>> " + c)
            text.extend(out.splitlines())
        return text
    return None


def _fill(text, indent=0):
    pad = " " * indent
    return textwrap.fill(text, 100, initial_indent=pad, subsequent_indent=pad + "    " if indent else "",
                         break_on_hyphens=False, break_long_words=False)


def _signature_line(name, sig, returns):
    return f"{name}{sig} -> {returns}"


def docstring(op):
    """A PyTorch-style docstring for an op handle."""
    text = _docs.get(op.name)
    if text is None:
        plain = _namespace_complete() and _plain_state()
        text = _build_doc(op, with_example=plain)
        if plain:
            with _lock:
                _docs[op.name] = text
    return text


def _build_doc(op, with_example=True):
    from ._op_summaries import SUMMARIES

    schema_name, args, returns = _schema_of(op)
    sig = signature(op)
    params = list(sig.parameters.values())
    lines = [_signature_line(op.name, sig, returns), ""]
    if op.is_inplace:
        lines.append(f"In-place version of :func:`oneflow.{schema_name}`: writes the result into ``self`` and "
                     f"returns it.")
        lines += ["", _fill(f"Registry op ``{op.name}``; schema ``{op.schema}``; traits: {', '.join(op.traits)}.")]
        return "\n".join(lines)
    first = params[0].name if params else "input"
    summary = SUMMARIES.get(op.name)
    if summary:
        lines += [_fill(summary), ""]
    lines.append(_fill(" ".join(_trait_sentences(op, args, first))))
    positional = [(p, a) for p, a in zip(params, args) if not a.kwarg_only]
    keyword_args = [(p, a) for p, a in zip(params, args) if a.kwarg_only]
    for title, group in (("Args", positional), ("Keyword args", keyword_args)):
        if not group and not (title == "Keyword args" and "out" in sig.parameters):
            continue
        lines += ["", title + ":"]
        for p, a in group:
            desc = _ARG_TEXT.get(a.name, "")
            if a.default is not _EMPTY:
                desc = (desc + " " if desc else "") + f"Default: ``{a.default!r}``."
            lines.append(_fill(f"{p.name} ({_arg_type(a, op)})" + (f": {desc}" if desc else ""), 4))
        if title == "Keyword args" and "out" in sig.parameters:
            several = returns.startswith("(")
            lines.append(_fill(f"out (tuple of Tensors, optional): {_OUT_TEXT_SEVERAL}" if several else
                               f"out (Tensor, optional): {_ARG_TEXT['out']}", 4))
    extra = []
    inplace = getattr(_C.ops, op.name + "_", None)
    if inplace is not None and inplace.is_inplace:
        extra.append(f"In-place form: ``Tensor.{op.name}_``.")
    aliases = _aliases(op)
    if aliases:
        extra.append("Also available as " + ", ".join(f"``oneflow.{a}``" for a in aliases) + ".")
    extra.append(f"Registry op ``{op.name}``; schema ``{op.schema}``; traits: {', '.join(op.traits) or 'none'}.")
    lines += ["", _fill(" ".join(extra))]
    call = f"flow.{op.name}" if _exported_as_function(op) else None
    example = _example(op, call) if call and with_example else None
    if example:
        lines += ["", "Example::", ""] + ["    " + e for e in example]
    return "\n".join(lines)


# ---- installation on the handle class ---------------------------------------------------------------------------

def install():
    """Attach ``__signature__``, ``__doc__`` and ``__name__`` to every op handle (through their class)."""
    cls = _C.OpHandle
    cls.__signature__ = property(signature)
    cls.__doc__ = property(docstring)
