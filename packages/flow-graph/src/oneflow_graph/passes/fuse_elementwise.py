"""Elementwise-chain fusion: a connected group of elementwise ops whose intermediate results are used only
inside the group becomes one ``_fused_elementwise`` node, whose kernel evaluates the group chunk by chunk in
one pass over memory, calling each op's own CPU kernel (so the result is bitwise the unfused one).

A group has one result (the value used outside it) and saves more intermediate results than it has inputs the kernel
must gather (broadcast or strided ones, copied chunk by chunk: a copy costs about what writing and reading an
intermediate costs, so ``x * s + mask`` with a broadcast mask stays two ops; measured on the bench GPT's attention,
fusing it was slower); every op in it produces a contiguous value of that result's shape (its inputs from outside
may broadcast to it, be strided or 0-dim); the result itself must be contiguous, as the fused kernel writes it. Only
pure, single-result, CPU ops with the ``elementwise`` trait and attributes the program text can carry exactly join;
nothing that writes memory, and no group is formed across a node writing memory that the group reads.
"""
import oneflow as flow
from oneflow import _C

from .. import effects
from ..ir import NODE, Node

_FUSED = "_fused_elementwise"


def fuse_elementwise(ir, casts=False):
    """Fuses the elementwise chains of ``ir`` in place. ``casts`` lets dtype conversions (``to_dtype``) join a
    chain, as a cast feeding a scale (``graph.config.allow_fuse_cast_scale``); they stay out by default.
    Returns ``{"groups", "fused_ops", "kept_gathering"}``."""
    uses, external = ir.uses(), ir.external_ids()  # id(value) -> nodes reading it; values read outside
    pos = {id(n): i for i, n in enumerate(ir.nodes)}
    writes = [i for i, n in enumerate(ir.nodes) if n.mutates]
    written_roots = {i: [id(ir.nodes[i].inputs[k].root()) for k in ir.nodes[i].mutates] for i in writes}
    encoded = {id(n): _encode(n, casts) for n in ir.nodes}
    assigned, groups, kept = set(), [], 0
    for root in reversed(ir.nodes):
        if id(root) in assigned or encoded[id(root)] is None or not root.outputs[0].contiguous:
            continue  # the fused result is contiguous: a strided result keeps its unfused op
        out = root.outputs[0]
        group, frontier = {id(root): root}, [root]
        while frontier:
            m = frontier.pop()
            for v in m.inputs:
                p = v.producer if v is not None and v.kind == NODE else None
                if (p is None or id(p) in group or id(p) in assigned or encoded[id(p)] is None
                        or v.shape != out.shape or id(v) in external
                        or not all(id(u) in group for u in uses.get(id(v), []))):
                    continue
                group[id(p)] = p
                frontier.append(p)
        # a producer whose other users joined later is admitted now that they are in
        changed = True
        while changed:
            changed = False
            for m in list(group.values()):
                for v in m.inputs:
                    p = v.producer if v is not None and v.kind == NODE else None
                    if (p is not None and id(p) not in group and id(p) not in assigned
                            and encoded[id(p)] is not None and v.shape == out.shape and id(v) not in external
                            and all(id(u) in group for u in uses.get(id(v), []))):
                        group[id(p)] = p
                        changed = True
        if len(group) < 2:
            continue
        members = sorted(group.values(), key=lambda n: pos[id(n)])
        ext = _external_inputs(members, group)
        if len(members) - 1 <= _gathered(ext, out):
            kept += 1  # each gathered input costs the fused kernel a copy per element; each intermediate saved
            continue   # is one write and one read: with no more of these than of those it would not win
        lo, hi = pos[id(members[0])], pos[id(root)]
        ext_roots = {id(v.root()) for v in ext}
        if any(lo < i < hi and set(written_roots[i]) & ext_roots for i in writes):
            continue  # moving the group's reads to the root's place would read memory written in between
        groups.append((root, members, ext))
        assigned.update(group)
    if not groups:
        return {"groups": 0, "fused_ops": 0, "kept_gathering": kept}
    replace = {}
    for root, members, ext in groups:
        replace[id(root)] = _fused_node(root, members, ext, encoded)
    fused_away = {id(m) for _, members, _ in groups for m in members}
    ir.nodes = [replace[id(n)] if id(n) in replace else n for n in ir.nodes if id(n) not in fused_away
                or id(n) in replace]
    return {"groups": len(groups), "fused_ops": sum(len(m) for _, m, _ in groups), "kept_gathering": kept}


def _gathered(ext, out):
    """How many of a group's inputs the fused kernel copies chunk by chunk: those neither 0-dim nor dense in
    the result's shape (a broadcast row or column, a strided view)."""
    return sum(1 for v in ext if len(v.shape) > 0 and (tuple(v.shape) != tuple(out.shape) or not v.contiguous))


def _external_inputs(members, group):
    ext, seen = [], set()
    for m in members:
        for v in m.inputs:
            if (v.producer is None or id(v.producer) not in group) and id(v) not in seen:
                seen.add(id(v))
                ext.append(v)
    return ext


def _fused_node(root, members, ext, encoded):
    slot = {id(v): f"i{k}" for k, v in enumerate(ext)}
    lines = []
    for j, m in enumerate(members):
        refs = ",".join(slot[id(v)] for v in m.inputs)
        out = m.outputs[0]
        lines.append(";".join([m.op.name, _dtype_name(out.dtype), refs] + encoded[id(m)]))
        slot[id(out)] = f"r{j}"
    out = root.outputs[0]
    attrs = {"program": "|".join(lines), "shape": list(out.shape), "dtype": out.dtype}
    node = Node(_C.ops._fused_elementwise, list(ext), attrs, [out], location=root.location)
    out.producer = node
    return node


def _dtype_name(dt):
    return str(dt).replace("oneflow.", "")


def _encode(n, casts=False):
    """The node's attributes as program fields, or None when it cannot join a group."""
    op = n.op
    if (n.multi or n.mutates or len(n.outputs) != 1 or n.outputs[0] is None or n.outputs[0].producer is not n
            or op.name == _FUSED or "elementwise" not in op.traits or "random" in op.traits
            or "inplace" in op.traits or not effects.is_pure(op, n.attrs)):
        return None
    out = n.outputs[0]
    if out.alias_of is not None or str(out.device) != "cpu" or not out.shape:
        return None
    if any(v is None or len(v.shape) > len(out.shape) or str(v.device) != "cpu" for v in n.inputs):
        return None
    if not n.inputs:
        return None
    types = {a["name"]: a["type"] for a in op.arguments if not a["is_tensor"]}
    fields = []
    for name in op.attr_names:
        f = _field(types.get(name), n.attrs.get(name), casts)
        if f is None:
            return None
        fields.append(f)
    return fields


def _field(kind, v, casts=False):
    if kind is None:
        return None
    base = kind.rstrip("?")
    if v is None:
        return "n" if kind.endswith("?") else None
    if base == "bool" and isinstance(v, bool):
        return "b1" if v else "b0"
    if base == "int" and isinstance(v, int) and not isinstance(v, bool):
        return f"i{v}"
    if base == "float" and isinstance(v, (int, float)) and not isinstance(v, bool):
        return "f" + float(v).hex()
    if base == "str" and isinstance(v, str) and not any(c in v for c in ";|,"):
        return "s" + v
    if base == "int[]" and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return "I" + ",".join(str(x) for x in v)
    if base == "float[]" and all(isinstance(x, (int, float)) for x in v):
        return "F" + ",".join(float(x).hex() for x in v)
    if base == "Scalar":
        if isinstance(v, bool):
            return "Sb1" if v else "Sb0"
        if isinstance(v, int):
            return f"Si{v}"
        if isinstance(v, float):
            return "Sf" + v.hex()
    if base == "ScalarType" and casts and isinstance(v, flow.dtype):
        return "D" + _dtype_name(v)
    return None  # dtypes (unless casts may join), devices, complex scalars: not carried, the op stays unfused


__all__ = ["fuse_elementwise"]
