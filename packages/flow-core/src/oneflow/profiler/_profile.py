"""``oneflow.profiler.profile``: the scheduled profiler of training loops (PyTorch's ``torch.profiler.profile``).

It drives single-session profilers (``_legacy.profile``, kept as ``.profiler``) through a schedule: on each
``step()`` the schedule's action for the new step is compared with the previous one, and the transition starts,
stops or hands over a cycle's results (``on_trace_ready``) exactly as PyTorch's profiler does. Ops are only
intercepted during ``RECORD``/``RECORD_AND_SAVE`` steps; other steps run at full speed.
"""
import enum
import json
import warnings

from ._legacy import profile as _Session
from ._record_function import record_function
from ._schedule import ProfilerAction, _default_schedule


class ProfilerActivity(enum.Enum):
    """Kinds of activity a profiler can be asked for. Only ``CPU`` is recorded; the others are accepted (a
    warning says they are not recorded) so that code written for PyTorch runs unchanged."""

    CPU = 0
    XPU = 1
    CUDA = 2
    HPU = 3
    MTIA = 4
    PrivateUse1 = 5


def supported_activities():
    """The activities this build can record: ``{ProfilerActivity.CPU}``."""
    return {ProfilerActivity.CPU}


def _activity_set(activities, use_cuda):
    if activities is None:
        acts = supported_activities()
    else:
        acts = set()
        for a in activities:  # an entry may be {activity: [filters]} (PyTorch's activity filters)
            acts.update(a.keys() if isinstance(a, dict) else (a,))
    if use_cuda is not None:
        warnings.warn("The use_cuda parameter is deprecated; use activities=[ProfilerActivity.CUDA] instead",
                      FutureWarning)
        if use_cuda:
            acts.add(ProfilerActivity.CUDA)
    if not acts:
        raise AssertionError("No valid profiler activities found")
    if acts - supported_activities():
        warnings.warn(f"oneflow's profiler records CPU activity only; "
                      f"{sorted(a.name for a in acts - supported_activities())} will not be recorded")
    return acts


class profile:
    """Profiler context manager with an optional schedule.

    Args:
        activities: ``ProfilerActivity`` values to record (default: ``supported_activities()``); only CPU
            activity is recorded.
        schedule: callable ``step -> ProfilerAction`` (see ``oneflow.profiler.schedule``); without one every step
            is recorded and results are ready when profiling stops.
        on_trace_ready: called with this profiler at the end of each cycle (when a ``RECORD_AND_SAVE`` step ends
            and when profiling stops while recording), e.g. ``tensorboard_trace_handler(dir)``.
        record_shapes, profile_memory, with_stack, with_flops: what each event records (see
            ``oneflow.autograd.profiler.profile``).
        acc_events: keep events of earlier cycles instead of starting afresh each cycle.
        with_modules, experimental_config, execution_trace_observer, custom_trace_id_callback,
        post_processing_timeout_s, use_cuda: accepted for compatibility (``custom_trace_id_callback`` names each
            cycle's trace id); module hierarchies and execution traces are not recorded.

    Example::

        with oneflow.profiler.profile(schedule=oneflow.profiler.schedule(wait=1, warmup=1, active=2),
                                      on_trace_ready=oneflow.profiler.tensorboard_trace_handler("./log")) as p:
            for batch in loader:
                train_step(batch)
                p.step()
    """

    def __init__(self, *, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, execution_trace_observer=None, acc_events=False, use_cuda=None,
                 custom_trace_id_callback=None, post_processing_timeout_s=None):
        self.activities = _activity_set(activities, use_cuda)
        if execution_trace_observer is not None:
            warnings.warn("execution traces are not supported by oneflow's profiler; the observer is ignored")
        self.record_shapes = record_shapes
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.with_modules = with_modules
        self.experimental_config = experimental_config
        self.execution_trace_observer = None
        self.acc_events = acc_events
        self.custom_trace_id_callback = custom_trace_id_callback
        self.use_device = None
        self.profiler = None  # the single-session profiler of the current (or last) cycle
        self.preset_metadata = {}
        # ProfilerStep#N ranges mark steps in tables and traces when a schedule is used, as in PyTorch
        self.record_steps = schedule is not None
        self.schedule = schedule if schedule is not None else _default_schedule
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.step_rec_fn = None
        self.current_action = self._scheduled(0)
        nothing = []
        self._transitions = {
            (ProfilerAction.NONE, ProfilerAction.NONE): nothing,
            (ProfilerAction.NONE, ProfilerAction.WARMUP): [self.prepare_trace],
            (ProfilerAction.NONE, ProfilerAction.RECORD): [self.prepare_trace, self.start_trace],
            (ProfilerAction.NONE, ProfilerAction.RECORD_AND_SAVE): [self.prepare_trace, self.start_trace],
            (ProfilerAction.WARMUP, ProfilerAction.NONE): [
                lambda: warnings.warn("Incorrect schedule: WARMUP followed by NONE"),
                self.start_trace, self.stop_trace],
            (ProfilerAction.WARMUP, ProfilerAction.WARMUP): nothing,
            (ProfilerAction.WARMUP, ProfilerAction.RECORD): [self.start_trace],
            (ProfilerAction.WARMUP, ProfilerAction.RECORD_AND_SAVE): [self.start_trace],
            (ProfilerAction.RECORD, ProfilerAction.NONE): [
                lambda: warnings.warn("Incorrect schedule: RECORD followed by NONE"), self.stop_trace],
            (ProfilerAction.RECORD, ProfilerAction.WARMUP): [
                lambda: warnings.warn("Incorrect schedule: RECORD followed by WARMUP"), self.stop_trace],
            (ProfilerAction.RECORD, ProfilerAction.RECORD): nothing,
            (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE): nothing,
            (ProfilerAction.RECORD_AND_SAVE, ProfilerAction.NONE): [self.stop_trace, self._trace_ready],
            (ProfilerAction.RECORD_AND_SAVE, ProfilerAction.WARMUP): [
                self.stop_trace, self._trace_ready, self.prepare_trace],
            (ProfilerAction.RECORD_AND_SAVE, ProfilerAction.RECORD): [
                self.stop_trace, self._trace_ready, self.prepare_trace, self.start_trace],
            (ProfilerAction.RECORD_AND_SAVE, ProfilerAction.RECORD_AND_SAVE): [
                self.stop_trace, self._trace_ready, self.prepare_trace, self.start_trace],
            # leaving the profiler (stop / __exit__)
            (ProfilerAction.WARMUP, None): [self.start_trace, self.stop_trace],
            (ProfilerAction.RECORD, None): [self.stop_trace, self._trace_ready],
            (ProfilerAction.RECORD_AND_SAVE, None): [self.stop_trace, self._trace_ready],
        }

    def _scheduled(self, step):
        action = self.schedule(step)
        if action == ProfilerAction.DEVICE_STOPPED:
            raise ValueError("ProfilerAction.DEVICE_STOPPED is set internally by the profiler and must not be "
                             "returned by a user-provided schedule")
        return action

    # ---- the schedule's state machine ---------------------------------------------------------------------
    def _transit(self, prev, cur):
        for action in self._transitions.get((prev, cur), ()):
            action()

    def prepare_trace(self):
        """Makes the next cycle's single-session profiler (kept across cycles with ``acc_events``)."""
        if self.profiler is None or not self.acc_events:
            self.profiler = _Session(record_shapes=self.record_shapes, with_flops=self.with_flops,
                                     profile_memory=self.profile_memory, with_stack=self.with_stack,
                                     with_modules=self.with_modules, acc_events=self.acc_events,
                                     custom_trace_id_callback=self.custom_trace_id_callback)
            for k, v in self.preset_metadata.items():
                self.profiler._add_metadata(k, v)

    def start_trace(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before starting trace")
        self.profiler._start()
        if self.profile_memory:
            self.profiler._add_metadata("profile_memory", 1)

    def stop_trace(self):
        if self.profiler is None:
            raise AssertionError("Profiler must be initialized before stopping trace")
        self.profiler._stop()

    def _trace_ready(self):
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def start(self):
        self._transit(ProfilerAction.NONE, self.current_action)
        if self.record_steps:
            self.step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def stop(self):
        if self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        self._transit(self.current_action, None)

    def step(self):
        """Signals that the next step (iteration) starts: applies the schedule's action for it."""
        if self.step_rec_fn is not None:
            self.step_rec_fn.__exit__(None, None, None)
            self.step_rec_fn = None
        prev = self.current_action
        action = self._scheduled(self.step_num + 1)
        self.step_num += 1
        self.current_action = action
        self._transit(prev, action)
        if self.record_steps:
            self.step_rec_fn = record_function(f"ProfilerStep#{self.step_num}")
            self.step_rec_fn.__enter__()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def toggle_collection_dynamic(self, enable, activities):
        """Pauses (``enable=False``) or resumes recording of ``activities`` inside a recorded step."""
        if ProfilerActivity.CPU not in set(activities) or self.profiler is None:
            return
        self.profiler._toggle(enable)

    # ---- results of the current (or last finished) cycle --------------------------------------------------
    def _session(self, what):
        if self.profiler is None:
            raise AssertionError(f"Profiler must be initialized before {what}")
        return self.profiler

    def events(self):
        """The events of the last cycle (``EventList``)."""
        return self._session("getting events").function_events

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0, group_by_overload_name=False):
        """Events of the last cycle averaged by name (optionally also by input shapes, or by the innermost
        ``group_by_stack_n`` stack frames); ``.table(sort_by=..., row_limit=...)`` prints them."""
        return self._session("getting key averages").key_averages(group_by_input_shape, group_by_stack_n,
                                                                   group_by_overload_name)

    def export_chrome_trace(self, path):
        """Writes the last cycle as a Chrome trace JSON (gzipped if ``path`` ends with ``.gz``)."""
        return self._session("exporting chrome trace").export_chrome_trace(path)

    def export_stacks(self, path, metric="self_cpu_time_total"):
        """Writes folded stacks (needs ``with_stack=True``) for flame-graph tools."""
        return self._session("exporting stacks").export_stacks(path, metric)

    def add_metadata(self, key, value):
        """Adds a top-level string field to exported traces."""
        self.preset_metadata[key] = value
        if self.profiler is not None:
            self.profiler._add_metadata(key, value)

    def add_metadata_json(self, key, value):
        """Adds a top-level field, given as JSON text, to exported traces."""
        self.add_metadata(key, json.loads(value))

    def set_custom_trace_id_callback(self, callback):
        self.custom_trace_id_callback = callback

    def get_trace_id(self):
        return self.profiler.trace_id if self.profiler is not None else None
