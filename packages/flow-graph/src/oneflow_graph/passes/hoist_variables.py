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

A graph's signatures (other batch sizes) that hoist the same work share one cache of it. Work whose
attributes are the signature's input shapes (a convolution weight packed for one input geometry:
``SIGNATURE_SPECIFIC``) is the prologue's *local* part instead, cached per plan on the shared part's results,
so that sharing the rest survives it.

Views at the end of a hoisted chain stay in the plan: a view costs nothing and a cached one would only keep an
alias of a variable. The results the plan reads become new plan inputs (values ``%h0``, ``%h1``...) that the
executor feeds from the cache; ``ir.prologue`` holds the hoisted nodes as an IR of their own.
"""
from .. import effects
from ..ir import INPUT, GraphIR


# Ops whose attributes are the call's input shapes (a convolution weight packed for one input geometry:
# passes/prepack_conv.py). They and what reads them form the prologue's local part, which each signature of a
# graph has for itself, so that the rest, the same for every batch size, stays one cache per graph.
SIGNATURE_SPECIFIC = frozenset({"convolution_pack_weight"})


class LocalPart:
    """A prologue's signature-specific part: ``ir`` (its inputs are results of the shared part, its outputs
    the cached results the plan reads after the shared part's) and ``bridge``, the indices in the shared part's
    outputs of the values its inputs stand for."""

    def __init__(self, ir, bridge):
        self.ir, self.bridge = ir, bridge


class Prologue:
    """The hoisted part of a graph: ``ir`` (a :class:`GraphIR` with no inputs whose ``outputs`` are cached
    results: the first ``shared_read`` the plan reads, the rest only ``local`` does), ``local`` (a
    :class:`LocalPart` or None) and ``cached``, the input values of the main IR that stand for the results the
    plan reads, in order: the shared part's, then the local part's."""

    def __init__(self, ir, cached, shared_read=None, local=None):
        self.ir, self.cached, self.local = ir, cached, local
        self.shared_read = len(ir.outputs) if shared_read is None else shared_read

    def cached_bytes(self):
        """Bytes the cached results take (what the graph holds between calls beyond its variables)."""
        outs = list(self.ir.outputs) + (list(self.local.ir.outputs) if self.local is not None else [])
        return sum(v.nbytes() for v in outs)


def _signature_specific(nodes):
    """The nodes of ``nodes`` (in order) that are SIGNATURE_SPECIFIC or read one's results."""
    local, out = set(), []
    for n in nodes:
        if n.name in SIGNATURE_SPECIFIC or any(v is not None and v.producer is not None and id(v.producer) in local
                                               for v in n.inputs):
            local.add(id(n))
            out.append(n)
    return out


def _part_ir(ir, name, nodes, outputs):
    """A prologue part: ``nodes`` of ``ir`` with the variables and constants they read, returning ``outputs``."""
    read = {id(v) for n in nodes for v in n.inputs if v is not None}
    part = GraphIR(name)
    part.variables = [v for v in ir.variables if id(v) in read]
    part.constants = [c for c in ir.constants if id(c) in read]
    part.nodes = list(nodes)
    part.outputs = list(outputs)
    return part


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
    local_nodes = _signature_specific(nodes)
    local = {id(n) for n in local_nodes}
    shared_nodes = [n for n in nodes if id(n) not in local]
    in_shared = {id(o) for n in shared_nodes for o in n.outputs}
    shared_results = [r for r in results if id(r) in in_shared]
    local_results = [r for r in results if id(r) not in in_shared]
    # the shared results the local part reads: outputs of the shared part too (after the ones the plan reads)
    bridge, seen = [], set()
    for n in local_nodes:
        for v in n.inputs:
            if v is not None and id(v) in in_shared and id(v) not in seen:
                seen.add(id(v))
                bridge.append(v)
    pro = _part_ir(ir, f"{ir.name}_prologue", shared_nodes,
                   shared_results + [v for v in bridge if v not in shared_results])
    mapping, cached = {}, []
    for k, r in enumerate(shared_results + local_results):
        c = ir.new_value(INPUT, r.shape, r.dtype, r.device, name=f"h{k}", contiguous=r.contiguous)
        mapping[r] = c
        cached.append(c)
    part = None
    if local_nodes:
        loc = _part_ir(ir, f"{ir.name}_prologue_local", local_nodes, local_results)
        ins = {}
        for v in bridge:
            ins[v] = ir.new_value(INPUT, v.shape, v.dtype, v.device, name=f"s{len(ins)}", contiguous=v.contiguous)
        loc.inputs = list(ins.values())
        loc.replace_uses(ins)
        part = LocalPart(loc, [pro.outputs.index(v) for v in bridge])
    ir.nodes = [n for n in ir.nodes if id(n) not in hoisted]
    ir.replace_uses(mapping)
    still = {id(v) for n in ir.nodes for v in n.inputs if v is not None} | ir.external_ids()
    ir.variables = [v for v in ir.variables if id(v) in still]
    ir.drop_unused_constants()
    ir.prologue = Prologue(pro, cached, len(shared_results), part)
    return {"hoisted": len(nodes), "cached_values": len(results), "cached_bytes": ir.prologue.cached_bytes()}


def flat_parts(ir):
    """``(variables, constants, nodes, remap)`` of ``ir`` with its prologue put back in front: the IR as it was
    before hoisting, for saving; ``remap`` maps ``id`` of a cached input to the prologue result it stands for."""
    pro = ir.prologue
    if pro is None:
        return ir.variables, ir.constants, ir.nodes, {}
    parts = [pro.ir] + ([pro.local.ir] if pro.local is not None else [])
    variables, constants = [], []
    for part in parts + [ir]:
        variables += [v for v in part.variables if v not in variables]
        constants += [c for c in part.constants if c not in constants]
    results = list(pro.ir.outputs[:pro.shared_read])
    remap = {}
    if pro.local is not None:  # the local part's inputs are shared results
        remap.update({id(i): pro.ir.outputs[k] for i, k in zip(pro.local.ir.inputs, pro.local.bridge)})
        results += list(pro.local.ir.outputs)
    remap.update({id(c): r for c, r in zip(pro.cached, results)})
    return variables, constants, [n for part in parts + [ir] for n in part.nodes], remap


__all__ = ["hoist_variables", "flat_parts", "LocalPart", "Prologue", "SIGNATURE_SPECIFIC"]
