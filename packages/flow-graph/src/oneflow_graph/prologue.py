"""The run-time side of hoisting (:mod:`oneflow_graph.passes.hoist_variables`): the prologue's results, cached
between calls and computed again when a variable they read has changed.

A change is told by each variable's version counter (every in-place write bumps it: ``param.data.mul_(2)``,
``load_state_dict``'s copies, an optimizer step in eager code or in another graph's plan) and its storage
(``param.data = other`` swaps the memory without a write). The cache keeps an alias of each storage it read, so
that a storage swapped out stays allocated and a new one can never reuse its address (and look unchanged).
"""
import weakref

import oneflow as flow

from .executor import Plan


class PrologueCache:
    """Runs ``prologue.ir`` (a :class:`~oneflow_graph.passes.hoist_variables.Prologue`) when its variables have
    changed since the last run (or on the first call) and returns its cached results otherwise. ``runs`` counts
    the runs (for tests and ``graph.debug``)."""

    def __init__(self, prologue, use_native=True):
        self.plan = Plan(prologue.ir, use_native=use_native)
        self._tensors = [v.tensor for v in prologue.ir.variables]
        self._key = None
        self._held = ()
        self._values = None
        self.runs = 0
        self.cached_bytes = sum(v.nbytes() for v in prologue.ir.outputs)
        self.num_ops = len(prologue.ir.nodes)

    def _current_key(self):
        return _variables_key(self._tensors)

    def values(self):
        """The prologue's results for the variables as they are now."""
        key = self._current_key()
        if self._values is None or key != self._key:
            # the key is read before the run, which writes no variable (nothing hoisted does)
            values = list(self.plan.run([]))
            self._held = [t.detach() for t in self._tensors]
            self._values, self._key = values, key
            self.runs += 1
        return self._values

    def invalidate(self):
        """Drops the cached results: the next call computes them again."""
        self._values, self._key, self._held = None, None, ()

    def stats(self):
        return _stats(self)


def _variables_key(tensors):
    """What tells a change of the variables ``tensors``: their version counters and storages."""
    return [x for t in tensors for x in (t._version, t._storage_ptr())]


def _stats(cache):
    mem = cache.plan.memory_stats()
    return {"ops": cache.num_ops, "cached_values": len(cache.plan.ir.outputs), "cached_bytes": cache.cached_bytes,
            "arena_bytes": 0 if mem is None else mem["planned_bytes"], "runs": cache.runs}


class LocalPrologueCache:
    """The cache of a plan's own prologue part (:class:`~oneflow_graph.passes.hoist_variables.LocalPart`: the
    work whose attributes are this signature's input shapes, as a weight packed for them), run on results of
    the shared :class:`PrologueCache`: computed again when that one ran again or a variable it reads changed."""

    def __init__(self, part, use_native=True):
        self.plan = Plan(part.ir, use_native=use_native)
        self._bridge = list(part.bridge)
        self._tensors = [v.tensor for v in part.ir.variables]
        self._key, self._held, self._values = None, (), None
        self.runs = 0
        self.cached_bytes = sum(v.nbytes() for v in part.ir.outputs)
        self.num_ops = len(part.ir.nodes)

    def values(self, shared):
        """The part's results for the shared cache ``shared`` as it is now."""
        base = shared.values()
        key = [id(shared), shared.runs] + _variables_key(self._tensors)
        if self._values is None or key != self._key:
            self._values = list(self.plan.run([base[k] for k in self._bridge]))
            self._held = [t.detach() for t in self._tensors]
            self._key = key
            self.runs += 1
        return self._values

    def stats(self):
        return _stats(self)


def fingerprint(prologue):
    """What a prologue computes, as a hashable key: its ops with their attributes and inputs (variables by the
    tensor they are bound to, constants by value) and its results. Two signatures of one graph (another batch
    size) trace the same prologue, which one cache then serves."""
    from .passes.cse import attrs_key

    ref = {}
    for v in prologue.ir.variables:
        ref[id(v)] = ("var", id(v.tensor))
    for c in prologue.ir.constants:
        t = c.tensor
        try:
            value = t.detach().to(flow.float64).numpy().tobytes() if t.numel() <= 1 << 12 else None
        except (RuntimeError, TypeError):
            value = None
        # a constant whose value is not compared (large, or of a dtype numpy cannot hold) is its own
        ref[id(c)] = ("const", str(t.dtype), tuple(t.shape), value if value is not None else ("id", id(t)))
    steps = []
    for k, n in enumerate(prologue.ir.nodes):
        steps.append((n.name, attrs_key(n.attrs), n.multi, tuple(None if v is None else ref[id(v)] for v in n.inputs)))
        for j, o in enumerate(n.outputs):
            ref[id(o)] = ("out", k, j)
    return tuple(steps), tuple(ref[id(v)] for v in prologue.ir.outputs)


def shared_cache(prologue, caches, use_native=True):
    """The :class:`PrologueCache` of ``prologue`` from ``caches`` (a graph's ``WeakValueDictionary``: a cache
    lives as long as a plan uses it), made when no plan of the graph has the same prologue yet."""
    if caches is None:
        return PrologueCache(prologue, use_native=use_native)
    key = fingerprint(prologue)
    cache = caches.get(key)
    if cache is None:
        cache = caches[key] = PrologueCache(prologue, use_native=use_native)
    return cache


def new_registry():
    return weakref.WeakValueDictionary()
