"""Passes that replace nodes by others write the replacement as eager code: :func:`traced_nodes` traces it over
the values it reads and copies the traced nodes into the IR, so the new nodes carry the registry's ops and
attributes exactly as tracing user code would make them."""
import oneflow as flow

from ..ir import NODE, Node


def traced_nodes(ir, fn, given, location, what):
    """``fn(*tensors)`` (returning a tuple of tensors) traced over tensors like the values ``given`` of ``ir``:
    ``(nodes, results)``, the traced nodes rewired to read ``given`` and made of new values of ``ir`` (the
    caller places them in ``ir.nodes``), and the values of ``fn``'s results. ``what`` names the rewrite in
    errors."""
    from ..tracer import trace

    examples = [flow.empty(v.shape, dtype=v.dtype, device=v.device) for v in given]
    sub = trace(fn, examples, name=f"{ir.name}_{what.replace(' ', '_')}")
    m = {id(s): v for s, v in zip(sub.inputs, given)}
    for c in sub.constants:
        m[id(c)] = ir.add_constant(c.tensor)
    if sub.variables:  # nothing but the inputs and Python numbers is read; never expected
        raise RuntimeError(f"{ir.name}: {what} traced unexpected variables")
    device = given[0].device
    nodes = []
    for n in sub.nodes:
        copy = Node(n.op, [None if v is None else m[id(v)] for v in n.inputs], n.attrs, [], n.mutates, location,
                    n.multi)
        for o in n.outputs:
            if o is None or o.producer is not n:
                copy.outputs.append(None if o is None else m[id(o)])
                continue
            alias = None if o.alias_of is None else m[id(o.alias_of)]
            nv = ir.new_value(NODE, o.shape, o.dtype, device, producer=copy, alias_of=alias, contiguous=o.contiguous)
            m[id(o)] = nv
            copy.outputs.append(nv)
        nodes.append(copy)
    return nodes, [m[id(o)] for o in sub.outputs]
