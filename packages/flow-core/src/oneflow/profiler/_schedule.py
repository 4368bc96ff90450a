"""Profiling schedules: which steps of a training loop are recorded (PyTorch's ``torch.profiler.schedule``)."""
import enum
import warnings


class ProfilerAction(enum.Enum):
    """What the profiler does during a step.

    ``NONE``: nothing is recorded. ``WARMUP``: a step before recording (oneflow's profiler needs no warmup, so it
    records nothing either). ``RECORD``: ops are recorded. ``RECORD_AND_SAVE``: the last recorded step of a cycle;
    when it ends, the cycle's results are handed to ``on_trace_ready``. ``DEVICE_STOPPED`` exists for
    compatibility: PyTorch sets it itself when device collection stops early, and a schedule must not return it.
    """

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3
    DEVICE_STOPPED = 4


def schedule(*, wait, warmup, active, repeat=0, skip_first=0, skip_first_wait=0):
    """Returns a callable ``step -> ProfilerAction`` for a profiler's ``schedule`` argument.

    The first ``skip_first`` steps are skipped; then each cycle waits ``wait`` steps, warms up for ``warmup``
    steps and records ``active`` steps (the last one ``RECORD_AND_SAVE``). ``repeat`` cycles run (0: cycles go on
    until profiling ends). With ``skip_first_wait`` nonzero the first cycle starts without its ``wait`` steps.
    """
    # AssertionError, as PyTorch raises for these
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError(f"Invalid profiler schedule arguments: wait={wait} and warmup={warmup} need >= 0, "
                             f"active={active} needs > 0, repeat={repeat} and skip_first={skip_first} need >= 0")
    if warmup == 0:
        warnings.warn("Profiler won't be using warmup, this can skew profiler results", stacklevel=2)
    cycle = wait + warmup + active

    def schedule_fn(step):
        if step < 0:
            raise AssertionError(f"profiler step must be non-negative, got {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait  # as if the first cycle's wait had already passed
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _default_schedule(step):
    """Without a schedule, every step is recorded and results are ready when profiling stops."""
    return ProfilerAction.RECORD
