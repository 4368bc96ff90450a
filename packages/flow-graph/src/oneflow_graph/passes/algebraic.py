"""Algebraic simplification: ops that give back their input (``x * 1``, ``x / 1``, ``x - 0``, ``-(-x)``, a
transpose undone by the same transpose, a permutation undone by its inverse, a reshape to the shape the tensor
already has) become that input, and a reshape of a reshape reads the first one's input.

Every rule is exact, bit for bit, so graphs stay bitwise equal to eager code: ``x + 0`` is left alone for
floating dtypes because ``-0.0 + 0`` is ``+0.0`` (``x - 0`` and ``x + (-0.0)`` keep the sign and do go). A
rule applies only where the result has the input's shape and dtype (no broadcasting or type promotion hidden in
it). The arithmetic rules make a fresh tensor into an alias of the input, so they skip values whose memory some
node writes (the write would then reach the other tensor); the view rules keep the memory the view already
shared, and reshape rules need contiguous tensors, where a reshape is surely a view.
"""
from .. import effects
from ..ir import CONSTANT

_RESHAPES = ("reshape", "view")


def algebraic_simplification(ir):
    written = {id(n.inputs[i].root()) for n in ir.nodes for i in n.mutates}
    mapping, kept, stats = {}, [], {"identities": 0, "inverse_pairs": 0, "reshape_chains": 0}
    for n in ir.nodes:
        n.inputs = [mapping.get(v, v) if v is not None else None for v in n.inputs]
        outs = n.new_outputs()
        for v in outs:  # a view of a replaced value views what replaced it
            if v.alias_of is not None:
                v.alias_of = mapping.get(v.alias_of, v.alias_of)
        if len(n.outputs) == 1 and len(outs) == 1 and not n.multi and effects.is_pure(n.op, n.attrs):
            out = outs[0]
            rule, src = _simplify(n, out, written)
            if src is not None:
                mapping[out] = src
                stats[rule] += 1
                continue
            if rule == "reshape_chains":
                stats[rule] += 1
        kept.append(n)
    ir.nodes = kept
    ir.replace_uses(mapping)
    ir.drop_unused_constants()
    stats["removed"] = stats["identities"] + stats["inverse_pairs"]
    return stats


def _simplify(n, out, written):
    """(rule, value that replaces ``out`` or None); the reshape-chain rule rewrites ``n`` itself."""
    name, ins = n.name, n.inputs
    if name in ("mul", "div", "sub", "add") and len(ins) == 2 and None not in ins:
        x = _identity_operand(name, ins, n.attrs, out)
        if x is not None and not _written(x, out, written):
            return "identities", x
        return None, None
    if len(ins) != 1 or ins[0] is None:
        return None, None
    x = ins[0]
    inner = x.producer if x.kind == "node" else None
    if name == "neg" and inner is not None and inner.name == "neg" and len(inner.inputs) == 1:
        src = inner.inputs[0]
        if _same_type(src, out) and not _written(src, out, written) and not _written(x, out, written):
            return "inverse_pairs", src
    elif name == "transpose" and inner is not None and inner.name == "transpose":
        src = inner.inputs[0]
        if _dims(n.attrs, out) == _dims(inner.attrs, out) and _same_type(src, out):
            return "inverse_pairs", src
    elif name == "permute" and inner is not None and inner.name == "permute":
        src = inner.inputs[0]
        p, q = _perm(inner.attrs, out), _perm(n.attrs, out)
        if p is not None and q is not None and [p[i] for i in q] == list(range(len(q))) and _same_type(src, out):
            return "inverse_pairs", src
    elif name in _RESHAPES and x.contiguous:
        if out.shape == x.shape and _same_type(x, out):
            return "identities", x
        if inner is not None and inner.name in _RESHAPES and len(inner.inputs) == 1:
            src = inner.inputs[0]
            if src is not None and src.contiguous and x.alias_of is src and out.alias_of is x:
                n.inputs = [src]
                out.alias_of = src
                if out.shape == src.shape and _same_type(src, out):
                    return "identities", src
                return "reshape_chains", None
    return None, None


def _identity_operand(name, ins, attrs, out):
    """The operand that ``name(ins)`` returns unchanged, if one does."""
    a, b = ins
    candidates = [(a, b)] if name in ("div", "sub") else [(a, b), (b, a)]
    for x, c in candidates:
        v = _scalar(c)
        if v is None or not _same_type(x, out):
            continue
        if name == "mul" and v == 1:
            return x
        if name == "div" and v == 1 and attrs.get("rounding_mode") is None:
            return x
        if name in ("sub", "add") and v == 0 and c is b and attrs.get("alpha", 1) == 1:
            # x - (+0) and x + (-0) keep x's sign of zero; x + (+0) and x - (-0) turn -0.0 into +0.0
            if not out.dtype.is_floating_point or _is_neg_zero(c) == (name == "add"):
                return x
    return None


def _scalar(v):
    """The Python value of a one-element constant, else None."""
    if v.kind != CONSTANT or v.tensor is None or v.tensor.numel() != 1:
        return None
    val = v.tensor.item()
    return val if isinstance(val, (int, float, bool)) and not isinstance(val, complex) else None


def _is_neg_zero(v):
    import math

    val = v.tensor.item()
    return isinstance(val, float) and val == 0 and math.copysign(1.0, val) < 0


def _same_type(x, out):
    return x.shape == out.shape and x.dtype == out.dtype and x.device == out.device


def _written(x, out, written):
    return id(x.root()) in written or id(out.root()) in written


def _dims(attrs, out):
    nd = max(len(out.shape), 1)
    d0, d1 = attrs.get("dim0"), attrs.get("dim1")
    if not isinstance(d0, int) or not isinstance(d1, int):
        return None
    return frozenset((d0 % nd, d1 % nd))


def _perm(attrs, out):
    dims = attrs.get("dims")
    if not isinstance(dims, (list, tuple)) or len(dims) != len(out.shape):
        return None
    nd = max(len(dims), 1)
    return [int(d) % nd for d in dims]


__all__ = ["algebraic_simplification"]
