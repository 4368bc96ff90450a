"""The single-session profiler (PyTorch's ``torch.autograd.profiler.profile``).

It records between ``__enter__`` and ``__exit__`` and then answers ``function_events``, ``key_averages()``,
``table()`` and ``export_chrome_trace()``. ``oneflow.profiler.profile`` runs one of these per schedule cycle.
"""
import uuid
import warnings

from ._collector import Collector
from ._events import build_events


class profile:
    """Records the ops issued, ``record_function`` ranges and autograd nodes inside its block (CPU only).

    Args:
        enabled: when False the context manager does nothing.
        record_shapes: record each op's input shapes and dtypes (``key_averages(group_by_input_shape=True)``).
        with_flops: estimate FLOPs of matrix products, convolutions and elementwise arithmetic (implies
            ``record_shapes``).
        profile_memory: record the net bytes oneflow's allocator hands out during each range.
        with_stack: record the Python stack of each event (``export_stacks``, ``group_by_stack_n``).
        use_cuda, use_device, use_kineto, use_cpu, with_modules, experimental_config, acc_events,
        custom_trace_id_callback, post_processing_timeout_s: accepted for compatibility; only CPU activity is
            recorded (device activity is not observable from Python).
    """

    def __init__(self, enabled=True, *, use_cuda=False, use_device=None, record_shapes=False, with_flops=False,
                 profile_memory=False, with_stack=False, with_modules=False, use_kineto=False, use_cpu=True,
                 experimental_config=None, acc_events=False, custom_trace_id_callback=None,
                 post_processing_timeout_s=None, activity_filters=None):
        self.enabled = enabled
        if enabled and (use_cuda or use_device not in (None, "cpu")):
            warnings.warn("oneflow's profiler records CPU activity only; device activity is not recorded")
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_modules = with_modules
        self.use_device = None
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.trace_id = ""
        self._metadata = {}
        self._collector = None
        self._running = False
        self._events = None

    # ---- recording ----------------------------------------------------------------------------------------
    def _start(self):
        """Starts (or, with ``acc_events``, resumes) recording."""
        if self._collector is None or not self.acc_events:
            self._collector = Collector(self.record_shapes, self.profile_memory, self.with_stack, self.with_flops)
        cb = self.custom_trace_id_callback
        self.trace_id = cb() if cb is not None else uuid.uuid4().hex.upper()
        self._collector.start()
        self._running = True
        self._events = None

    def _stop(self):
        if self._running:
            self._collector.stop()
            self._running = False
            self._events = None

    def _toggle(self, enable):
        """Pauses or resumes recording inside a running session."""
        if not self._running:
            return
        if enable and not self._collector.recording:
            self._collector.start()
        elif not enable:
            self._collector.stop()

    def __enter__(self):
        if self.enabled:
            if self._running:
                raise RuntimeError("Profiler context manager is not reentrant")
            self._start()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self._stop()
        return False

    # ---- results ------------------------------------------------------------------------------------------
    def _check_finished(self):
        if not self.enabled or self._collector is None:
            raise RuntimeError("Profiler didn't finish running")
        if self._running:
            raise RuntimeError("Can't get events while the profiler is running; leave its block first")

    @property
    def function_events(self):
        """The recorded events (``EventList``), in start order."""
        self._check_finished()
        if self._events is None:
            meta = {"base_epoch_ns": self._collector.base_epoch_ns,
                    "metadata": {"trace_id": self.trace_id, "profile_memory": int(self.profile_memory),
                                 "record_shapes": int(self.record_shapes), "with_flops": int(self.with_flops),
                                 **self._metadata}}
            self._events = build_events(self._collector, trace_meta=meta)
        return self._events

    def events(self):
        return self.function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        """Events averaged by name (and input shapes / stack prefix); see ``EventList.key_averages``."""
        return self.function_events.key_averages(group_by_input_shape, group_by_stack_n, group_by_overload_name)

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75, max_name_column_width=55,
              max_shapes_column_width=80, header=None, top_level_events_only=False, time_unit=None):
        """The raw events as a table (``key_averages().table(...)`` is usually what is wanted)."""
        return self.function_events.table(sort_by=sort_by, row_limit=row_limit,
                                          max_src_column_width=max_src_column_width,
                                          max_name_column_width=max_name_column_width,
                                          max_shapes_column_width=max_shapes_column_width, header=header,
                                          top_level_events_only=top_level_events_only, time_unit=time_unit)

    def export_chrome_trace(self, path):
        self.function_events.export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        if not self.with_stack:
            raise RuntimeError("export_stacks() requires with_stack=True")
        self.function_events.export_stacks(path, metric)

    def total_average(self):
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self):
        """Total self CPU time of all events, in microseconds."""
        return self.function_events.self_cpu_time_total

    def _add_metadata(self, key, value):
        self._metadata[key] = value
        self._events = None

    def __str__(self):
        return self.table() if self.enabled and self._collector is not None and not self._running else repr(self)
