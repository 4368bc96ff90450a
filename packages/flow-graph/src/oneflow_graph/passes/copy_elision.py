"""Copy elision: ``clone(x)`` becomes ``x`` itself when nothing else can see ``x``'s memory.

The autograd engine copies a gradient into ``.grad`` unless it can prove nobody else holds it; while tracing it
cannot (the tracer holds every tensor), so traced training steps clone each gradient where eager steps steal
it. In the IR the proof is easy: the clone is the only reader of the memory (the source, its views and the
memory they view), which is an intermediate of this call (not an input, variable, constant, output or stored
state), and the source is contiguous, as a stolen gradient is in eager mode. The values are the same, so the
results are bitwise the same.
"""
from collections import defaultdict

from ..ir import NODE


def copy_elision(ir):
    readers = defaultdict(list)  # id(root) -> nodes reading that memory, other than views of it
    for n in ir.nodes:
        view_chain = all(v.alias_of is not None for v in n.new_outputs()) and n.new_outputs()
        for v in n.inputs:
            if v is not None and not view_chain:
                readers[id(v.root())].append(n)
    pinned = ir.external_roots()
    mapping, removed = {}, set()
    for n in ir.nodes:
        if n.name != "clone" or len(n.inputs) != 1 or len(n.new_outputs()) != 1:
            continue
        src = n.inputs[0]
        root = src.root()
        if (root.kind != NODE or not src.contiguous or id(root) in pinned
                or readers[id(root)] != [n] or src.dtype != n.outputs[0].dtype):
            continue
        mapping[n.outputs[0]] = src
        removed.add(id(n))
    ir.nodes = [n for n in ir.nodes if id(n) not in removed]
    ir.replace_uses(mapping)
    return {"removed": len(removed)}
