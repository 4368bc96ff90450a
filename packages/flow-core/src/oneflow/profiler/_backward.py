"""Ranges for autograd nodes: what a backward pass spends in each node, as PyTorch's profiler reports it.

Autograd's engine runs nodes one at a time on the calling thread, and the ops a node issues reach the profiler's
dispatch mode like any other op. To attribute them, the collector observes each engine run
(``oneflow.autograd._engine_observers``) with a ``BackwardProbe``: before the run it walks the graph from the roots
and hooks every node; after the run the hooks are removed, so graphs are left as they were. Each node that runs
gets two nested ranges with PyTorch's names:

* ``<Node>`` (e.g. ``MmBackward0``): from the node's pre-hook to its post-hook, i.e. the node's own computation;
* ``autograd::engine::evaluate_function: <Node>``: from the pre-hook until the next node starts (or the run ends),
  so it also covers what the engine does with the node's results (reducing gradients to their inputs' shapes).

``AccumulateGrad`` nodes get no post-hook: the engine keeps the incoming gradients alive for post-hooks, and that
extra reference would stop the accumulator from taking the gradient over as ``.grad`` without a copy. Their ranges
both end when the next node starts. Nodes the engine skips (``autograd.grad`` runs only what leads to its
inputs) fire no post-hook, so their ranges are dropped; accumulators are not hooked at all in that case.
"""
import threading

from ._collector import Record

_EVALUATE = "autograd::engine::evaluate_function: "
_ACCUMULATE = "AccumulateGrad"

# Nodes already hooked by an enclosing engine run (a backward inside a hook): hooked once, so ranges don't double.
_hooked = set()


def _node_key(node):
    # Node wrappers hash by the C++ node's address; the sequence number tells apart a later node at that address
    return (hash(node), node._sequence_nr)


class BackwardProbe:
    """Context manager around one engine run: hooks every node reachable from ``roots``, unhooks on exit.
    ``inputs`` are the tensors whose gradients the run captures (``autograd.grad``), or None."""

    def __init__(self, collector, roots, inputs=None):
        self.collector = collector
        self.roots = roots
        self.capture = inputs is not None
        self.handles = []
        self.keys = []
        self.running = None  # [outer record, inner record, inner closed?] of the node that started last

    def __enter__(self):
        self.collector.link_pending()
        seen = set()
        todo = [t.grad_fn for t in self.roots if getattr(t, "grad_fn", None) is not None]
        while todo:
            node = todo.pop()
            key = _node_key(node)
            if key in seen:
                continue
            seen.add(key)
            todo.extend(fn for fn, _ in node.next_functions if fn is not None)
            name = node.name()
            accumulate = name == _ACCUMULATE
            if key in _hooked or (accumulate and self.capture):
                continue
            _hooked.add(key)
            self.keys.append(key)
            self.handles.append(node.register_prehook(self._pre_hook(name, node._sequence_nr, accumulate)))
            if not accumulate:
                self.handles.append(node.register_hook(self._post_hook()))
        return self

    def __exit__(self, *exc):
        self._finish_running()
        for h in self.handles:
            h.remove()
        _hooked.difference_update(self.keys)
        self.handles = self.keys = None
        return False

    def _finish_running(self):
        """Ends the ranges of the node that started last (its inner range too when it has no post-hook)."""
        running, self.running = self.running, None
        c = self.collector
        if running is None or not c.recording:
            return
        outer, inner, closed = running
        if closed is None:  # an accumulator: its work ends here
            c.end(inner)
            closed = True
        if closed:
            c.end(outer)

    def _pre_hook(self, name, seq_nr, accumulate):
        c = self.collector

        def pre(grad_outputs):
            self._finish_running()
            if not c.recording:
                return None
            c.link_pending()  # drop held op outputs: they may be the very gradient an accumulator takes over
            tid = threading.get_native_id()
            outer, inner = Record(_EVALUATE + name, "node", tid), Record(name, "node", tid)
            for r in (outer, inner):
                r.seq_nr = seq_nr
                r.fwd_tid = c.seq_threads.get(seq_nr)
                c.begin(r)
            self.running = [outer, inner, None if accumulate else False]
            return None

        return pre

    def _post_hook(self):
        c = self.collector

        def post(grad_inputs, grad_outputs):
            running = self.running
            if running is not None and running[2] is False and c.recording:
                c.end(running[1])
                running[2] = True
            return None

        return post
