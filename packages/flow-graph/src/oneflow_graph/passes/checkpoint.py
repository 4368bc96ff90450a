"""Activation checkpointing: the forward ops of a checkpointed module run again in the backward.

For each region (the nodes one call of a checkpointed module traced), the values it defines that backward nodes
read are not kept from the forward: the region's pure ops are copied in front of the first backward node that
reads one, and the backward reads the copies. So the forward's values die after their last forward use and the
arena holds them only while the backward needs them. Ops with effects (random ops, running-stat updates,
in-place writes) are not copied: their results stay saved, so the recomputation gives the same bits."""
from .. import effects
from ..ir import NODE, Node


def activation_checkpointing(ir, regions, backward_nodes):
    """Rewrites ``ir`` in place; ``regions``: lists of forward nodes; ``backward_nodes``: the nodes the backward
    traced. Returns ``{"regions", "recomputed_ops", "saved_values_before", "saved_values_after"}``."""
    stats = {"regions": 0, "recomputed_ops": 0}
    bwd = {id(n) for n in backward_nodes}
    stats["saved_values_before"] = _crossing(ir, bwd)
    for region in regions:
        present = {id(n) for n in ir.nodes}
        nodes = [n for n in region if id(n) in present and id(n) not in bwd]
        defined = {id(v) for n in nodes for v in n.new_outputs()}
        pos = {id(n): i for i, n in enumerate(ir.nodes)}
        users = [n for n in ir.nodes if id(n) in bwd and any(v is not None and id(v) in defined for v in n.inputs)]
        if not users:
            continue
        first = min(pos[id(u)] for u in users)
        copies, m = [], {}
        for n in nodes:
            if not effects.is_pure(n.op, n.attrs) or n.mutates or len(n.new_outputs()) != len(n.outputs):
                continue
            copy = Node(n.op, [m.get(id(v), v) if v is not None else None for v in n.inputs], n.attrs, [],
                        n.mutates, n.location, n.multi)
            for o in n.outputs:
                alias = None if o.alias_of is None else m.get(id(o.alias_of), o.alias_of)
                nv = ir.new_value(NODE, o.shape, o.dtype, o.device, producer=copy, alias_of=alias,
                                  contiguous=o.contiguous)
                nv.name = o.name
                m[id(o)] = nv
                copy.outputs.append(nv)
            copies.append(copy)
        for u in users:
            u.inputs = [m.get(id(v), v) if v is not None else None for v in u.inputs]
        ir.nodes[first:first] = copies
        bwd.update(id(c) for c in copies)
        backward_nodes.extend(copies)
        stats["regions"] += 1
        stats["recomputed_ops"] += len(copies)
    # copies no backward node came to read
    from .dce import dead_code_elimination

    dead_code_elimination(ir)
    stats["saved_values_after"] = _crossing(ir, {id(n) for n in backward_nodes})
    return stats


def _crossing(ir, bwd):
    """How many values forward nodes define and backward nodes read (what the forward keeps for the backward)."""
    fwd_values = {id(v) for n in ir.nodes if id(n) not in bwd for v in n.new_outputs()}
    return len({id(v) for n in ir.nodes if id(n) in bwd for v in n.inputs if v is not None and id(v) in fwd_values})
