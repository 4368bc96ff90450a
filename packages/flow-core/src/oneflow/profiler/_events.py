"""Profiler results: ``FunctionEvent`` (one timed range), ``FunctionEventAvg`` (events grouped by key) and
``EventList`` (a list of either, with PyTorch's ``table``/``key_averages``/``export_chrome_trace`` methods).

Times are microseconds, counted from the moment the collector was made; memory is bytes handed out by oneflow's
allocator (its block sizes, so small tensors count at least one block). Only CPU activity is recorded: every
device-side field exists for compatibility and is 0.
"""
import enum


class DeviceType(enum.IntEnum):
    """Where an event ran (PyTorch's ``DeviceType``); the profiler records CPU events only."""

    CPU = 0
    CUDA = 1


class Interval:
    """A ``[start, end]`` range in microseconds."""

    __slots__ = ("start", "end")

    def __init__(self, start, end):
        self.start = start
        self.end = end

    def elapsed_us(self):
        return self.end - self.start

    def __repr__(self):
        return f"Interval(start={self.start}, end={self.end})"


class _DeviceFields:
    """Device-side statistics PyTorch's events carry; always zero here."""

    device_time_total = self_device_time_total = device_memory_usage = self_device_memory_usage = 0
    cuda_time_total = self_cuda_time_total = cuda_memory_usage = self_cuda_memory_usage = 0
    device_type = DeviceType.CPU
    use_device = None
    is_remote = False
    is_legacy = False
    is_async = False
    node_id = -1

    @property
    def device_time(self):
        return 0.0

    cuda_time = device_time


class FunctionEvent(_DeviceFields):
    """One recorded range: a registry op (``aten::mm``), a ``record_function`` range or an autograd node.

    ``cpu_time_total`` is its wall time, ``self_cpu_time_total`` that time less its direct children's;
    ``cpu_memory_usage``/``self_cpu_memory_usage`` the same for allocator bytes (net: frees count negative).
    ``sequence_nr`` links a forward op to the backward node it created (-1 when there is none).
    """

    count = 1

    def __init__(self, id, name, thread, start_us, end_us, *, kind="op", input_shapes=None, input_dtypes=None,
                 stack=None, sequence_nr=-1, fwd_thread=None, cpu_memory_usage=0, flops=0, args=None,
                 trace_name=None):
        self.id = id
        self.name = name
        self.thread = thread
        self.time_range = Interval(start_us, end_us)
        self.kind = kind
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.input_dtypes = input_dtypes if input_dtypes is not None else []
        self.stack = stack if stack is not None else []
        self.sequence_nr = sequence_nr
        self.fwd_thread = fwd_thread if fwd_thread is not None else 0
        self.cpu_memory_usage = cpu_memory_usage
        self.flops = flops
        self.args = args
        self.cpu_children = []
        self.cpu_parent = None
        self.scope = 0
        self.device_index = 0
        self.overload_name = ""
        self.trace_name = trace_name if trace_name is not None else name
        self.concrete_inputs = []
        self.kernels = []

    @property
    def key(self):
        return self.name

    @property
    def is_user_annotation(self):
        return self.kind == "user"

    def append_cpu_child(self, child):
        self.cpu_children.append(child)

    def set_cpu_parent(self, parent):
        self.cpu_parent = parent

    @property
    def cpu_time_total(self):
        return self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self):
        return self.cpu_time_total

    @property
    def self_cpu_memory_usage(self):
        return self.cpu_memory_usage - sum(c.cpu_memory_usage for c in self.cpu_children)

    def __repr__(self):
        return (f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
                f"cpu_time_total={self.cpu_time_total:.3f}us self_cpu_time_total={self.self_cpu_time_total:.3f}us "
                f"input_shapes={self.input_shapes} cpu_memory_usage={self.cpu_memory_usage} "
                f"sequence_nr={self.sequence_nr} parent={self.cpu_parent.id if self.cpu_parent else None}>")


class FunctionEventAvg(_DeviceFields):
    """Events sharing a key (name, and input shapes / stack prefix when grouping by them), summed."""

    def __init__(self):
        self.key = None
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.flops = 0
        self.input_shapes = None
        self.stack = None
        self.scope = None
        self.overload_name = None
        self.cpu_children = None
        self.cpu_parent = None
        self.is_user_annotation = False

    def add(self, other):
        """Adds an event (or another average) into this one; returns self."""
        if self.key is None:  # the first event names the group
            self.key = other.key
            self.input_shapes = other.input_shapes
            self.stack = other.stack
            self.scope = other.scope
            self.overload_name = other.overload_name
            self.cpu_children = other.cpu_children
            self.cpu_parent = other.cpu_parent
            self.is_user_annotation = other.is_user_annotation
        elif other.key != self.key:
            raise ValueError(f"cannot add an event keyed {other.key!r} to an average keyed {self.key!r}")
        self.count += other.count
        self.cpu_time_total += other.cpu_time_total
        self.self_cpu_time_total += other.self_cpu_time_total
        self.cpu_memory_usage += other.cpu_memory_usage
        self.self_cpu_memory_usage += other.self_cpu_memory_usage
        self.flops += other.flops or 0
        return self

    def __iadd__(self, other):
        return self.add(other)

    @property
    def cpu_time(self):
        return self.cpu_time_total / self.count if self.count else 0.0

    def __repr__(self):
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
                f"cpu_time={self.cpu_time:.3f}us count={self.count} input_shapes={self.input_shapes} "
                f"cpu_memory_usage={self.cpu_memory_usage}>")


_STACK_METRICS = ("self_cpu_time_total", "self_cuda_time_total", "self_device_time_total")


class EventList(list):
    """A list of ``FunctionEvent`` (or ``FunctionEventAvg``) with PyTorch's reporting methods."""

    def __init__(self, *args, use_device=None, profile_memory=False, with_flops=False, trace_meta=None):
        super().__init__(*args)
        self._use_device = use_device
        self._profile_memory = profile_memory
        self._with_flops = with_flops
        # base clock of the times and extra top-level fields, for export_chrome_trace
        self._trace_meta = dict(trace_meta or {})

    @property
    def self_cpu_time_total(self):
        """The sum of every event's self CPU time, in microseconds."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shapes=False, group_by_stack_n=0, group_by_overload_name=False):
        """Averages events by name; also by input shapes and/or the innermost ``group_by_stack_n`` stack frames
        when asked. Returns an ``EventList`` of ``FunctionEventAvg``."""
        groups = {}
        for e in self:
            key = (e.key, str(e.input_shapes) if group_by_input_shapes else None,
                   tuple(e.stack[:group_by_stack_n]) if group_by_stack_n > 0 else None,
                   e.overload_name if group_by_overload_name else None)
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg()
            avg.add(e)
        out = EventList(groups.values(), use_device=self._use_device, profile_memory=self._profile_memory,
                        with_flops=self._with_flops, trace_meta=self._trace_meta)
        for avg in out:
            avg.stack = list(avg.stack[:group_by_stack_n]) if group_by_stack_n > 0 else []
            if not group_by_input_shapes:
                avg.input_shapes = ""
        return out

    def total_average(self):
        """Every event summed into one ``FunctionEventAvg`` keyed ``"Total"``."""
        total = FunctionEventAvg()
        for e in self:
            total.count += e.count
            total.cpu_time_total += e.cpu_time_total
            total.self_cpu_time_total += e.self_cpu_time_total
            total.cpu_memory_usage += e.cpu_memory_usage
            total.self_cpu_memory_usage += e.self_cpu_memory_usage
            total.flops += e.flops or 0
        total.key = "Total"
        return total

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        """The events as a text table (see ``oneflow.profiler.profile.key_averages``). ``sort_by`` names an
        attribute to sort on, descending (``"cpu_time_total"``, ``"self_cpu_memory_usage"``, ``"count"``...);
        ``time_unit`` forces ``"s"``, ``"ms"`` or ``"us"``."""
        from ._table import build_table

        return build_table(self, sort_by=sort_by, row_limit=row_limit, max_src_column_width=max_src_column_width,
                           max_name_column_width=max_name_column_width,
                           max_shapes_column_width=max_shapes_column_width, header=header,
                           top_level_events_only=top_level_events_only, time_unit=time_unit,
                           profile_memory=self._profile_memory, with_flops=self._with_flops)

    def __str__(self):
        return self.table()

    def export_chrome_trace(self, path):
        """Writes the events as a Chrome trace (``chrome://tracing``, Perfetto); gzipped if ``path`` ends
        with ``.gz``."""
        from ._trace import write_chrome_trace

        write_chrome_trace(self, path, **self._trace_meta)

    def supported_export_stacks_metrics(self):
        return list(_STACK_METRICS)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Writes one line per event that has a recorded stack, in the folded format flame-graph tools read:
        ``outer;...;inner;event_name value`` with ``metric`` as integer microseconds."""
        if metric not in _STACK_METRICS:
            raise ValueError(f"metric should be one of: {list(_STACK_METRICS)}")
        from ._trace import write_stacks

        write_stacks(self, path, metric)


_STEP_PREFIX = "ProfilerStep#"
_STEP_KEY = "ProfilerStep*"


def build_events(collector, trace_meta=None):
    """The collector's closed records as an ``EventList`` of ``FunctionEvent`` in start order, each linked to its
    enclosing range on the same thread."""
    recs = sorted((r for r in collector.records if r.close_seq is not None), key=lambda r: r.open_seq)
    base = collector.base_ns
    events = []
    stacks = {}  # thread -> enclosing events still open at the current record
    for i, r in enumerate(recs):
        # step ranges share one key (PyTorch's "ProfilerStep*") so tables sum them; traces keep each step's number
        name = _STEP_KEY if r.name.startswith(_STEP_PREFIX) else r.name
        e = FunctionEvent(i, name, r.tid, (r.t0 - base) / 1000.0, (r.t1 - base) / 1000.0, kind=r.kind,
                          input_shapes=r.shapes, input_dtypes=r.dtypes, stack=r.stack,
                          sequence_nr=r.seq_nr if r.seq_nr is not None else -1, fwd_thread=r.fwd_tid,
                          cpu_memory_usage=r.mem, flops=r.flops, args=r.args, trace_name=r.name)
        e._open_seq, e._close_seq = r.open_seq, r.close_seq
        stack = stacks.setdefault(r.tid, [])
        while stack and stack[-1]._close_seq < r.open_seq:
            stack.pop()
        # a range closed out of order (exited after its parent) gets no parent rather than a wrong one
        if stack and r.close_seq < stack[-1]._close_seq:
            e.set_cpu_parent(stack[-1])
            stack[-1].append_cpu_child(e)
        stack.append(e)
        events.append(e)
    return EventList(events, profile_memory=collector.profile_memory, with_flops=collector.with_flops,
                     trace_meta=trace_meta)
