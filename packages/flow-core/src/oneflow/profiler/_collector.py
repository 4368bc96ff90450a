"""The recording side of the profiler: raw records of op calls, user ranges and autograd nodes.

While a ``Collector`` is started it is the process's current one: a dispatch mode pushed on the starting thread
times every registry op issued there (forward ops and the ops autograd's engine issues in backward, which runs on
the calling thread), ``record_function`` ranges from any thread are opened in it, and each backward pass is
observed through ``oneflow.autograd._engine_observers`` so autograd nodes get ranges of their own (``_backward``).
Nothing is installed while no collector runs, so an idle profiler costs nothing.

Every record takes an open and a close number from one counter. Nesting is rebuilt from those numbers afterwards
(``_events``), which is exact even when two ranges share a clock reading.
"""
import itertools
import os
import sys
import threading
import time

from .. import _C
from .. import autograd as _autograd
from .._dispatch import DispatchMode
from . import _flops
from ._op_names import display_name

_current = None  # the started Collector, if any

# Frames of the profiler and of the dispatch trampoline are not part of a user's stack.
_OWN_FILES = (os.path.dirname(os.path.abspath(__file__)) + os.sep,
              os.path.abspath(sys.modules[DispatchMode.__module__].__file__))
_MAX_STACK = 128


def current():
    """The running collector, or None."""
    return _current


def _allocated_bytes():
    return _C._allocator_stats()["allocated_bytes"]


def python_stack():
    """The caller's Python stack, innermost frame first, as ``file(line): function`` entries (PyTorch's form)."""
    out = []
    f = sys._getframe(1)
    while f is not None and len(out) < _MAX_STACK:
        fname = f.f_code.co_filename
        if not fname.startswith(_OWN_FILES[0]) and fname != _OWN_FILES[1]:
            out.append(f"{fname}({f.f_lineno}): {f.f_code.co_name}")
        f = f.f_back
    return out


class Record:
    """One timed range. ``kind`` is ``"op"`` (a registry op), ``"user"`` (``record_function``) or ``"node"``
    (an autograd node in backward). Times are ``perf_counter_ns`` readings, ``mem`` the allocator's net growth
    over the range (bytes), ``seq_nr`` the autograd sequence number linking a forward op to its backward node."""

    __slots__ = ("name", "kind", "tid", "open_seq", "close_seq", "t0", "t1", "mem0", "mem", "shapes", "dtypes",
                 "stack", "seq_nr", "fwd_tid", "flops", "args")

    def __init__(self, name, kind, tid):
        self.name = name
        self.kind = kind
        self.tid = tid
        self.close_seq = None
        self.mem = 0
        self.shapes = self.dtypes = self.stack = self.seq_nr = self.fwd_tid = self.args = None
        self.flops = 0


def _tensors(out):
    if isinstance(out, _C.TensorBase):
        return (out,)
    if isinstance(out, (tuple, list)):
        return tuple(t for t in out if isinstance(t, _C.TensorBase))
    return ()


class _OpTimer(DispatchMode):
    """Times each registry op issued on the thread that started the collector."""

    def __init__(self, collector):
        self.collector = collector

    def __flow_dispatch__(self, op, inputs, attrs):
        c = self.collector
        if not c.recording:  # stopped from another thread, whose mode stack could not drop this mode
            return op.redispatch(inputs, attrs)
        if c.pending is not None:
            c.link_pending()
        rec = Record(display_name(op), "op", threading.get_native_id())
        if c.record_shapes:
            rec.shapes = [list(t.shape) if t is not None else [] for t in inputs]
            rec.dtypes = [str(t.dtype).rpartition(".")[2] if t is not None else "" for t in inputs]
        if c.with_stack:
            rec.stack = python_stack()
        c.begin(rec)
        try:
            out = op.redispatch(inputs, attrs)
        finally:
            c.end(rec)
        if c.with_flops:
            outs = _tensors(out)
            rec.flops = _flops.estimate(op.name, rec.shapes, list(outs[0].shape) if outs else None, attrs)
        # Autograd attaches the op's node to its outputs after this returns; look at them at the next event to
        # learn the node's sequence number (PyTorch's link between a forward op and its backward). The outputs are
        # held until then: their Python objects are what autograd annotates, and a weak reference would let them
        # go (the tensor lives on under a new wrapper) before the node is attached.
        if _C.is_grad_enabled() and any(t is not None and t.requires_grad for t in inputs):
            c.pending = (rec, _tensors(out))
        return out


class Collector:
    """Raw records of one profiling session; ``start``/``stop`` may alternate (accumulating across cycles)."""

    def __init__(self, record_shapes=False, profile_memory=False, with_stack=False, with_flops=False):
        self.record_shapes = bool(record_shapes or with_flops)  # FLOPs are estimated from input shapes
        self.profile_memory = bool(profile_memory)
        self.with_stack = bool(with_stack)
        self.with_flops = bool(with_flops)
        self.records = []
        self.recording = False
        self.pending = None
        self.seq_threads = {}  # autograd sequence number -> thread of the forward op that made the node
        self._counter = itertools.count()
        self._timer = None
        self._thread = None
        self.base_ns = time.perf_counter_ns()
        self.base_epoch_ns = time.time_ns()

    # ---- session control ----------------------------------------------------------------------------------
    def start(self):
        global _current
        if _current is not None:
            raise RuntimeError("Profiler is already enabled: only one profiler can record at a time")
        from ._backward import BackwardProbe

        _current = self
        self.recording = True
        self._thread = threading.get_ident()
        self._timer = _OpTimer(self)
        self._timer.__enter__()
        self._probe = lambda roots, inputs: BackwardProbe(self, roots, inputs)
        _autograd._engine_observers.append(self._probe)

    def stop(self):
        global _current
        if not self.recording:
            return
        self.link_pending()
        self.recording = False
        if _current is self:
            _current = None
        if threading.get_ident() == self._thread:
            self._timer.__exit__(None, None, None)
        self._timer = None
        try:
            _autograd._engine_observers.remove(self._probe)
        except ValueError:
            pass

    # ---- ranges -------------------------------------------------------------------------------------------
    def begin(self, rec):
        rec.open_seq = next(self._counter)
        if self.profile_memory:
            rec.mem0 = _allocated_bytes()
        self.records.append(rec)
        rec.t0 = time.perf_counter_ns()

    def end(self, rec):
        rec.t1 = time.perf_counter_ns()
        if self.profile_memory:
            rec.mem = _allocated_bytes() - rec.mem0
        rec.close_seq = next(self._counter)

    def open_range(self, name, args=None):
        """Opens a ``record_function`` range on the calling thread and returns its record."""
        if self.pending is not None:
            self.link_pending()
        rec = Record(name, "user", threading.get_native_id())
        rec.args = args
        if self.with_stack:
            rec.stack = python_stack()
        self.begin(rec)
        return rec

    def close_range(self, rec):
        if self.pending is not None:
            self.link_pending()
        self.end(rec)

    def link_pending(self):
        """Gives the last op that may have made an autograd node that node's sequence number."""
        pending, self.pending = self.pending, None
        if pending is None:
            return
        rec, outs = pending
        for t in outs:
            fn = t.grad_fn
            if fn is not None:
                rec.seq_nr = fn._sequence_nr
                self.seq_threads[rec.seq_nr] = rec.tid
                return
