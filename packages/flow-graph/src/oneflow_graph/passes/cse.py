"""Common-subexpression elimination: a pure op applied again to the same values with the same attributes is
replaced by the first result.

Only pure ops merge (no in-place, random or running-statistics ops, no fresh ``empty``). Memory that some node
writes is never merged: two results that are later written to must stay two tensors, and a value read again
after a write to its memory is a different value (each input is keyed with the number of writes its memory had
seen).
"""
from .. import effects
from ..ir import Value


def attrs_key(attrs):
    return tuple(sorted((k, _freeze(v)) for k, v in attrs.items()))


def _freeze(v):
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, dict):
        return attrs_key(v)
    if isinstance(v, float) and v != v:  # NaN never equals itself: key it by its text
        return ("nan",)
    try:
        hash(v)
    except TypeError:
        return ("id", id(v))
    return (type(v).__name__, v)


def common_subexpression_elimination(ir):
    written = {id(n.inputs[i].root()) for n in ir.nodes for i in n.mutates}
    writes = {}  # id(root) -> number of writes so far
    seen, mapping, kept = {}, {}, []
    region = ir.__dict__.get("recompute_region") or {}  # a checkpoint's recomputation stays apart (recompute.py)
    for n in ir.nodes:
        n.inputs = [mapping.get(v, v) if v is not None else None for v in n.inputs]
        outs = n.new_outputs()
        mergeable = (effects.is_pure(n.op, n.attrs) and outs and len(outs) == len(n.outputs)
                     and not any(id(v.root()) in written for v in outs))
        if mergeable:
            key = (n.op.name, attrs_key(n.attrs), region.get(id(n)),
                   tuple(None if v is None else (v.id, writes.get(id(v.root()), 0)) for v in n.inputs))
            prev = seen.get(key)
            if prev is not None:
                for a, b in zip(n.outputs, prev.outputs):
                    mapping[a] = b
                continue
            seen[key] = n
        for i in n.mutates:
            r = id(n.inputs[i].root())
            writes[r] = writes.get(r, 0) + 1
        kept.append(n)
    removed = len(ir.nodes) - len(kept)
    ir.nodes = kept
    ir.replace_uses(mapping)
    return {"merged": removed}


__all__ = ["common_subexpression_elimination", "attrs_key", "Value"]
