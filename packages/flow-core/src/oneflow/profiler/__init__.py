"""Profiling of oneflow programs, with PyTorch's ``torch.profiler`` API.

``profile`` records, for the ops issued inside it (forward, and backward through autograd's engine), their
wall time, call counts and optionally input shapes, allocator memory, Python stacks and FLOPs; ``record_function``
adds named ranges; ``schedule`` and ``tensorboard_trace_handler`` profile chosen steps of a training loop. Results
read like PyTorch's: ``prof.key_averages().table(sort_by="cpu_time_total")``, ``prof.export_chrome_trace(path)``.

How it works and what differs from PyTorch:

* Ops are observed through a dispatch mode (``oneflow._dispatch``) pushed only while recording; it sees each
  registry op called on the profiling thread (nested calls inside an op's kernel are part of that op's time).
  Ops issued on other threads are not recorded; ``record_function`` ranges are recorded on every thread.
* Registry ops are named ``aten::<name>`` when ATen has an op of that name, else ``oneflow::<name>``
  (``oneflow.profiler._op_names``), so tables look like PyTorch's but show oneflow's own decompositions.
* Backward work is grouped under ``autograd::engine::evaluate_function: <Node>`` / ``<Node>`` ranges, and forward
  ops carry the ``sequence_nr`` of the node they created, which links them in traces.
* Only CPU activity exists; ``ProfilerActivity.CUDA`` is accepted with a warning. Memory figures are the net bytes
  of oneflow's CPU allocator, which hands out whole blocks (a multiple of 512 bytes).
* ``with_modules``, ``experimental_config`` and execution traces are accepted but record nothing.
"""
from ._events import DeviceType
from ._profile import ProfilerActivity, profile, supported_activities
from ._record_function import record_function
from ._schedule import ProfilerAction, schedule
from ._trace import tensorboard_trace_handler

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler", "ProfilerAction",
           "ProfilerActivity", "kineto_available", "DeviceType", "record_function", "ExecutionTraceObserver"]


def kineto_available():
    """False: oneflow's profiler does not use PyTorch's Kineto library."""
    return False


class ExecutionTraceObserver:
    """Not supported: oneflow's profiler records no execution traces."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("ExecutionTraceObserver is not supported by oneflow's profiler")
