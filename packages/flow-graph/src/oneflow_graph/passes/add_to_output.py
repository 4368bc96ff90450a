"""Add-to-output fusion (OneFlow's ``allow_fuse_add_to_output``): ``add(mm(a, b), r)`` becomes ``r.addmm_(a, b)``
when ``r`` dies at the add, so the product is accumulated straight into ``r``'s memory (the GEMM's ``beta = 1``):
one buffer and one pass over memory fewer. It is the pattern of a residual branch ending in a bias-free linear
layer, forward (``x + h @ W.T``) or backward (a residual gradient plus a linear layer's input gradient).

The rewrite needs ``r`` to be an intermediate of this call with its own contiguous memory (not a view, input,
variable, constant, output or escaped value) that no node after the add reads, through views either; the
product's only reader must be the add; shapes and dtypes must match without broadcasting (``alpha = 1``); and
nothing between the product and the add may write the product's operands. The sum is the same up to rounding: a
GEMM that accumulates into its output adds ``r`` before the last blocks of the product instead of after it, so
the pass is off by default, as in OneFlow (``graph.config.allow_fuse_add_to_output(True)``).
"""
from oneflow import _C

from ..ir import NODE, Node

_PRODUCTS = ("mm",)


def fuse_add_to_output(ir):
    uses = ir.uses()
    pos = {id(n): i for i, n in enumerate(ir.nodes)}
    external_roots = ir.external_roots()
    last_read = {}  # id(root) -> the last node position reading that memory (through any view)
    for i, n in enumerate(ir.nodes):
        for v in n.inputs:
            if v is not None:
                last_read[id(v.root())] = i
    replace, drop, mapping = {}, set(), {}
    for n in ir.nodes:
        match = _match(n, uses, pos, last_read, external_roots, ir, drop)
        if match is None:
            continue
        product, r = match
        fused = Node(_C.ops.addmm_, [r, *product.inputs], {"beta": 1, "alpha": 1}, [r], mutates=(0,),
                     location=n.location)
        replace[id(n)] = fused
        drop.add(id(product))
        mapping[n.outputs[0]] = r
    if not replace:
        return {"fused": 0}
    ir.nodes = [replace.get(id(n), n) for n in ir.nodes if id(n) not in drop]
    ir.replace_uses(mapping)
    for fused in replace.values():  # an in-place node's output is its (possibly remapped) first input
        fused.outputs = [fused.inputs[0]]
    backward = ir.__dict__.get("backward_nodes")
    if backward is not None:  # the Graph's record of its backward nodes (activation checkpointing reads it)
        backward[:] = [replace.get(id(m), m) for m in backward if id(m) not in drop]
    return {"fused": len(replace)}


def _match(n, uses, pos, last_read, external_roots, ir, taken):
    """(product node, addend value) when the add ``n`` fuses into its product, else None."""
    if n.op.name != "add" or n.mutates or n.multi or len(n.inputs) != 2 or n.attrs.get("alpha", 1) != 1:
        return None
    out = n.outputs[0]
    if out is None or out.producer is not n:
        return None
    for k in (0, 1):
        m, r = n.inputs[k], n.inputs[1 - k]
        if m is None or r is None or m.kind != NODE or r.kind != NODE:
            continue
        product = m.producer
        if (product.op.name not in _PRODUCTS or id(product) in taken or product.mutates or product.multi
                or uses.get(id(m), []) != [n] or id(m.root()) in external_roots):
            continue
        if not (m.shape == r.shape == out.shape and m.dtype == r.dtype == out.dtype and r.dtype.is_floating_point):
            continue
        if (r.alias_of is not None or not r.contiguous or id(r) in external_roots
                or last_read.get(id(r), -1) > pos[id(n)] or any(v is r for v in product.inputs)):
            continue
        if ir.written_between(pos[id(product)], pos[id(n)], product.inputs):
            continue
        return product, r
    return None


__all__ = ["fuse_add_to_output"]
