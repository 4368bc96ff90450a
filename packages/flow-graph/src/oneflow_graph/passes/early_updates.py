"""Optimizer updates as early as their inputs allow: the traced optimizer step is one multi-tensor update after
the whole backward, so every gradient stays alive until the end of the step, and those of the last layers (the
first ones backward makes, and in ResNet-18 most of the parameters) sit in the arena through the memory peak in
the middle of backward. This pass splits each update node into one per point of the backward where a group of
its parameters becomes ready, and moves each part right after that point, so that its gradients die there.

A parameter is ready after the last node before the update that makes or reads any of the tensors the update
reads or writes for it (its gradient, the parameter and its optimizer state, through views too) and after the
nodes making the update's shared inputs (the learning rate). Nothing between that point and the update reads
or writes them, so updating earlier changes no value: the optimizers' per-parameter updates are independent
(every ``optimizer`` op of the registry takes parallel per-parameter lists). Gradient clipping and the grad
scaler's unscaling read every gradient before the update, so their parameters are ready only at the end, where
the update stays whole.

Parameters whose gradients are smaller than ``min_bytes`` stay in the update at the end, so a model of many small
tensors keeps one multi-tensor kernel call. Pipelined IRs are left alone (their schedule places every node).
"""
from ..ir import NODE, Node

MIN_BYTES = 1 << 20


def split_optimizer_updates(ir, min_bytes=MIN_BYTES):
    """Splits and moves the optimizer update nodes of ``ir`` in place. Returns ``{"moved_params", "parts"}``."""
    stats = {"moved_params": 0, "parts": 0}
    if ir.__dict__.get("pipeline"):
        return stats
    for u in [n for n in ir.nodes if "optimizer" in n.op.traits]:
        _split(ir, u, min_bytes, stats)
    return stats


def _split(ir, u, min_bytes, stats):
    layout = _layout(u)
    if layout is None:
        return
    lists, shared, n = layout
    pos = {id(x): i for i, x in enumerate(ir.nodes)}
    at = pos[id(u)]
    # fresh optimizer state (the first step's new buffers: `empty` nodes only the update reads) is made where the
    # optimizer step was traced, at the end; it moves with its part instead of holding the part there
    uses = ir.uses()
    made = {id(v): v.producer for v in u.inputs
            if v is not None and v.kind == NODE and _creation(v.producer) and uses.get(id(v)) == [u]}
    moving = {id(p) for p in made.values()}
    last_use = {}  # root id -> position of the last node before the update using it
    for i, node in enumerate(ir.nodes[:at]):
        if id(node) not in moving:
            for v in node.inputs:
                if v is not None:
                    last_use[id(v.root())] = i
    external = ir.external_ids()

    def ready(values):
        p = -1
        for v in values:
            if v is None:
                continue
            if id(v) in made:
                p = max(p, ready(made[id(v)].inputs))
                continue
            if v.kind == NODE:
                p = max(p, pos[id(v.producer)])
            p = max(p, last_use.get(id(v.root()), -1))
        return p

    floor = ready(u.inputs[i] for i in shared)
    grads = lists[1]
    groups = {}  # position -> parameter indices updated right after it
    for k in range(n):
        g = u.inputs[grads[k]] if grads else None
        if g is None or g.kind != NODE or id(g) in external or g.nbytes() < min_bytes:
            continue
        p = max(floor, ready(u.inputs[idx[k]] for idx in lists if idx))
        if p < at - 1:
            groups.setdefault(p, []).append(k)
    if not groups:
        return
    moved = {k for ks in groups.values() for k in ks}
    rest = [k for k in range(n) if k not in moved]
    parts = {p: _part(u, lists, shared, ks) for p, ks in groups.items()}
    carried = {p: [made[id(v)] for v in part.inputs if id(v) in made] for p, part in parts.items()}
    gone = {id(x) for xs in carried.values() for x in xs}
    out = []
    for i, node in enumerate(ir.nodes):
        if node is u:
            if rest:
                out.append(_part(u, lists, shared, rest))
            continue
        if id(node) not in gone:
            out.append(node)
        if i in parts:
            out.extend(carried[i])
            out.append(parts[i])
    ir.nodes = out
    stats["moved_params"] += len(moved)
    stats["parts"] += len(parts)


def _layout(u):
    """(per-list flat input indices, shared input indices, parameter count) of an update node, or None where
    its inputs are not parallel per-parameter lists (or it returns values someone could read)."""
    if u.outputs or not u.multi:
        return None
    lengths = u.attrs.get("_list_lengths")
    args = [a for a in u.op.arguments if a["is_tensor"]]
    if lengths is None or len(lengths) != sum(a["type"] == "Tensor[]" for a in args):
        return None
    n = lengths[0]
    if any(m not in (0, n) for m in lengths):
        return None
    lists, shared, flat, li = [], [], 0, 0
    for a in args:
        if a["type"] == "Tensor[]":
            lists.append(list(range(flat, flat + lengths[li])))
            flat += lengths[li]
            li += 1
        else:
            shared.append(flat)
            flat += 1
    if flat != len(u.inputs) or args[1]["name"] != "grads":
        return None
    return lists, shared, n


def _part(u, lists, shared, ks):
    """The update of parameters ``ks`` alone."""
    remap = {}
    inputs, li = [], 0
    flat = 0
    for a in [a for a in u.op.arguments if a["is_tensor"]]:
        if a["type"] == "Tensor[]":
            idx = lists[li]
            li += 1
            for k in (ks if idx else ()):
                remap[idx[k]] = len(inputs)
                inputs.append(u.inputs[idx[k]])
        else:
            remap[shared[flat]] = len(inputs)
            inputs.append(u.inputs[shared[flat]])
            flat += 1
    attrs = dict(u.attrs)
    attrs["_list_lengths"] = [len(ks) if idx else 0 for idx in lists]
    if attrs.get("fresh"):  # SGD's first step: indices of the fresh momentum buffers
        where = {k: j for j, k in enumerate(ks)}
        attrs["fresh"] = [where[k] for k in attrs["fresh"] if k in where]
    mutates = tuple(remap[i] for i in u.mutates if i in remap)
    return Node(u.op, inputs, attrs, [], mutates, u.location, u.multi)


def _creation(node):
    """Whether ``node`` makes a new tensor from attributes alone (reads no value, writes nothing)."""
    return (not node.mutates and len(node.new_outputs()) == 1 and all(v is None for v in node.inputs)
            and "creation" in node.op.traits and "random" not in node.op.traits)


__all__ = ["split_optimizer_updates"]
