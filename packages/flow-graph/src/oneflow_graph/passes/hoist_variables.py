"""Hoisting: the computations that read only graph variables and constants move out of each call into a
*prologue*, whose results the plan caches between calls.

A weight's transpose or cast, the scaled weight and bias of a folded conv + batch norm, a weight-norm style
reparametrisation: such chains depend on nothing the call passes in, so they are computed once and again only
when a variable they read changes (the cache is keyed by the variables' version counters and storages:
:mod:`oneflow_graph.prologue`). A node is hoisted when

- it is pure (no randomness, no in-place write, no effect, no fresh ``empty``: :func:`effects.is_pure`),
- every input is a constant, a variable that no node of the plan writes (a training graph's optimizer writes
  the parameters: their readers stay in the plan, where they see the update), or a hoisted result,
- nothing in the plan writes its results, and the traced program does not hand them out (``ir.escaped``).

Views at the end of a hoisted chain stay in the plan: a view costs nothing and a cached one would only keep an
alias of a variable. The results the plan reads become new plan inputs (values ``%h0``, ``%h1``...) that the
executor feeds from the cache; ``ir.prologue`` holds the hoisted nodes as an IR of their own.
"""
from .. import effects
from ..ir import INPUT, GraphIR


class Prologue:
    """The hoisted part of a graph: ``ir`` (a :class:`GraphIR` with no inputs whose ``outputs`` is the list of
    cached results) and ``cached``, the input values of the main IR that stand for those results, in order."""

    def __init__(self, ir, cached):
        self.ir, self.cached = ir, cached

    def cached_bytes(self):
        """Bytes the cached results take (what the graph holds between calls beyond its variables)."""
        return sum(v.nbytes() for v in self.ir.outputs)


def _storage(t):
    return t._storage_ptr() if t is not None and hasattr(t, "_storage_ptr") else None


def _hoistable(ir):
    written = {id(n.inputs[i].root()) for n in ir.nodes for i in n.mutates}
    # parameters sharing one storage (a flat buffer): a write to one changes what the other reads mid-plan
    written_storage = {_storage(v.tensor) for v in ir.variables if id(v) in written} - {None, 0}
    escaped = {id(v) for v, _ in ir.escaped}
    ok = {id(c) for c in ir.constants}
    ok |= {id(v) for v in ir.variables if id(v) not in written and _storage(v.tensor) not in written_storage}
    nodes = []
    for n in ir.nodes:
        outs = n.new_outputs()
        if not outs or len(outs) != len(n.outputs) or n.mutates or not effects.is_pure(n.op, n.attrs):
            continue
        if not all(v is None or id(v) in ok for v in n.inputs):
            continue
        if any(id(o.root()) in written or id(o) in escaped for o in outs):
            continue
        nodes.append(n)
        ok.update(id(o) for o in outs)
    return ok, nodes


def hoist_variables(ir):
    """Moves the variable-only computations of ``ir`` into ``ir.prologue`` (see the module's docstring).
    Returns ``{"hoisted", "cached_values", "cached_bytes"}``: the nodes moved, the results the plan reads from
    the cache and their bytes."""
    ir.prologue = None
    _, nodes = _hoistable(ir)
    hoisted = {id(n) for n in nodes}
    uses = ir.uses()
    # trailing views stay in the plan, from the last one back (a view read only by views that stay, stays)
    for n in reversed(nodes):
        if all(o.alias_of is not None for o in n.outputs) and not any(
                id(u) in hoisted for o in n.outputs for u in uses.get(id(o), ())):
            hoisted.discard(id(n))
    nodes = [n for n in nodes if id(n) in hoisted]
    if not nodes:
        return {"hoisted": 0, "cached_values": 0, "cached_bytes": 0}
    defined = {id(o): o for n in nodes for o in n.outputs}
    results, seen = [], set()
    for n in ir.nodes:  # the hoisted values the plan still reads, in the order the plan first reads them
        if id(n) in hoisted:
            continue
        for v in n.inputs:
            if v is not None and id(v) in defined and id(v) not in seen:
                seen.add(id(v))
                results.append(v)
    for v in ir.output_values():
        if id(v) in defined and id(v) not in seen:
            seen.add(id(v))
            results.append(v)
    read = {id(v) for n in nodes for v in n.inputs if v is not None}
    pro = GraphIR(f"{ir.name}_prologue")
    pro.variables = [v for v in ir.variables if id(v) in read]
    pro.constants = [c for c in ir.constants if id(c) in read]
    pro.nodes = nodes
    pro.outputs = list(results)
    mapping, cached = {}, []
    for k, r in enumerate(results):
        c = ir.new_value(INPUT, r.shape, r.dtype, r.device, name=f"h{k}", contiguous=r.contiguous)
        mapping[r] = c
        cached.append(c)
    ir.nodes = [n for n in ir.nodes if id(n) not in hoisted]
    ir.replace_uses(mapping)
    still = {id(v) for n in ir.nodes for v in n.inputs if v is not None} | ir.external_ids()
    ir.variables = [v for v in ir.variables if id(v) in still]
    ir.drop_unused_constants()
    ir.prologue = Prologue(pro, cached)
    return {"hoisted": len(nodes), "cached_values": len(results), "cached_bytes": ir.prologue.cached_bytes()}


def flat_parts(ir):
    """``(variables, constants, nodes, remap)`` of ``ir`` with its prologue put back in front: the IR as it was
    before hoisting, for saving; ``remap`` maps ``id`` of a cached input to the prologue result it stands for."""
    pro = ir.prologue
    if pro is None:
        return ir.variables, ir.constants, ir.nodes, {}
    variables = list(pro.ir.variables) + [v for v in ir.variables if v not in pro.ir.variables]
    constants = list(pro.ir.constants) + [c for c in ir.constants if c not in pro.ir.constants]
    remap = {id(c): r for c, r in zip(pro.cached, pro.ir.outputs)}
    return variables, constants, list(pro.ir.nodes) + list(ir.nodes), remap


__all__ = ["hoist_variables", "flat_parts", "Prologue"]
