"""Memory-first node order (OneFlow's ``enable_straighten_algorithm("MemoryFirst")``): the plan runs its nodes in
one order, and the arena must hold what is alive at the worst step of that order. This pass lists the nodes again,
each time taking, among the nodes whose inputs are ready, the one that grows the live bytes least (the bytes of
its fresh outputs less those of the values it reads last), the traced order breaking ties, and keeps the new order
only when its live peak is lower.

Only data and memory order constrain it: a node follows the producers of what it reads (a view, the value it
views); nodes touching the same memory (the same root value, or variables bound to one storage) keep their order
where one of them writes it (reads among themselves may swap); effectful nodes (random draws, collectives,
optimizer updates, writes) keep their order among themselves, so the generator's numbers and the messages stay as
traced. Each node computes what it computed before from the
same inputs, so results are bitwise the traced order's. Pipelined IRs keep their schedule's order.
"""
from ..ir import CONSTANT, NODE, VARIABLE


def straighten_memory_first(ir):
    n = len(ir.nodes)
    if ir.__dict__.get("pipeline") or n < 3:
        return {"reordered": 0, "peak_before": None, "peak_after": None}
    nodes = ir.nodes
    preds = [set() for _ in range(n)]
    producer_pos = {}
    last_writer, readers_since, last_effect = {}, {}, None
    for i, node in enumerate(nodes):
        written = {_memory(node.inputs[k]) for k in node.mutates}
        for v in node.inputs:
            if v is None:
                continue
            p = producer_pos.get(id(v))
            if p is not None:
                preds[i].add(p)
            root = _memory(v)
            w = last_writer.get(root)
            if w is not None:
                preds[i].add(w)  # read (or write) after write
            if root in written:
                preds[i].update(readers_since.get(root, ()))  # write after read
        for v in node.inputs:
            if v is not None:
                readers_since.setdefault(_memory(v), set()).add(i)
        for root in written:
            last_writer[root] = i
            readers_since[root] = set()
        if node.is_effectful():
            if last_effect is not None:
                preds[i].add(last_effect)
            last_effect = i
        for v in node.new_outputs():
            producer_pos[id(v)] = i  # (a view reads its base: ordered after it like any reader)
        preds[i].discard(i)
    pinned = ir.external_roots()
    order = _memory_first(ir, preds, pinned)
    before, after = _live_peak(ir, list(range(n)), pinned), _live_peak(ir, order, pinned)
    if after >= before:
        return {"reordered": 0, "peak_before": before, "peak_after": before}
    moved = sum(1 for k, i in enumerate(order) if k != i)
    ir.nodes = [nodes[i] for i in order]
    return {"reordered": moved, "peak_before": before, "peak_after": after}


def _memory(v):
    """What identifies the memory ``v`` reads: its root value, or for variables and constants their tensor's
    storage (two variables may be bound to one tensor: a parameter and the copy a grad scaler captured of it)."""
    r = v.root()
    if r.kind in (VARIABLE, CONSTANT) and r.tensor is not None and hasattr(r.tensor, "_storage_ptr"):
        return ("storage", r.tensor._storage_ptr())
    return ("value", id(r))


def _memory_first(ir, preds, pinned):
    nodes = ir.nodes
    n = len(nodes)
    succs = [[] for _ in range(n)]
    waiting = [len(p) for p in preds]
    for i, p in enumerate(preds):
        for j in p:
            succs[j].append(i)
    readers = {}  # id(root) -> how many not yet scheduled nodes read that memory
    size = {}
    for node in nodes:
        for v in node.new_outputs():
            if v.alias_of is None and v.kind == NODE:
                size[id(v)] = v.nbytes()
    for node in nodes:
        for root in {id(v.root()) for v in node.inputs if v is not None}:
            readers[root] = readers.get(root, 0) + 1

    def gain(i):
        freed = 0
        for root in {id(v.root()) for v in nodes[i].inputs if v is not None}:
            if readers[root] == 1 and root not in pinned:
                freed += size.get(root, 0)
        return sum(size.get(id(v), 0) for v in nodes[i].new_outputs()) - freed

    # the gains of ready nodes change as readers finish, so each pick weighs them anew (few nodes are ready at once)
    ready = {i for i in range(n) if waiting[i] == 0}
    order = []
    while ready:
        i = min(ready, key=lambda j: (gain(j), j))
        ready.discard(i)
        order.append(i)
        for root in {id(v.root()) for v in nodes[i].inputs if v is not None}:
            readers[root] -= 1
        for j in succs[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                ready.add(j)
    if len(order) != n:  # a cycle cannot happen in a traced order; keep it if the graph says otherwise
        return list(range(n))
    return order


def _live_peak(ir, order, pinned):
    """The most bytes of fresh intermediates alive at once when the nodes run in ``order`` (``pinned``: the roots
    read outside the graph, alive to the end)."""
    nodes = ir.nodes
    last = {}
    for k, i in enumerate(order):
        for v in nodes[i].inputs:
            if v is not None:
                last[id(v.root())] = k
    born = {}
    for k, i in enumerate(order):
        for v in nodes[i].new_outputs():
            if v.alias_of is None and v.kind == NODE:
                born[id(v)] = (k, v.nbytes())
    delta = [0] * (len(order) + 1)
    for vid, (k, b) in born.items():
        end = len(order) - 1 if vid in pinned else max(k, last.get(vid, k))
        delta[k] += b
        delta[end + 1] -= b
    live = peak = 0
    for d in delta:
        live += d
        peak = max(peak, live)
    return peak


__all__ = ["straighten_memory_first"]
