"""Dead-code elimination: drop nodes whose results nothing needs.

A node is needed when the graph returns (or stores outside, ``ir.escaped``) one of its outputs, when a needed
node reads one, or when it has an effect that outlives the call: it writes memory that is not the node's own
temporary (a variable, an input, or memory something needed still reads) or it draws random numbers (removing
it would change every later draw) or talks to the outside (a collective: every rank must issue it). Liveness is
tracked per memory root, so a view being needed keeps alive what writes into the memory it views.
"""
from ..ir import NODE
from .. import effects


def dead_code_elimination(ir):
    live = set()  # ids of live values and of the memory roots they view

    def mark(v):
        live.add(id(v))
        live.add(id(v.root()))

    for v in ir.output_values():
        mark(v)
    for v, _ in ir.escaped:
        mark(v)
    kept = []
    for n in reversed(ir.nodes):
        needed = any(id(v) in live for v in n.new_outputs())
        if not needed and n.is_effectful():
            if effects.is_random(n.op) or "optimizer" in effects.traits(n.op) or effects.has_side_effects(n.op):
                needed = True
            else:
                for i in n.mutates:
                    root = n.inputs[i].root()
                    if root.kind != NODE or id(root) in live:
                        needed = True
                        break
        if needed:
            kept.append(n)
            for v in n.inputs:
                if v is not None:
                    mark(v)
            for v in n.new_outputs():  # what it defines may be read through a view we keep
                mark(v)
    removed = len(ir.nodes) - len(kept)
    ir.nodes = kept[::-1]
    ir.drop_unused_constants()
    return {"removed": removed}
