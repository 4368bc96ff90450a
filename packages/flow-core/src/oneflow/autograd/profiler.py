"""PyTorch's ``torch.autograd.profiler``: the single-session ``profile``, ``record_function`` and result types.

The implementation lives in ``oneflow.profiler``; see its module docstring for what is recorded.
"""
from ..profiler._events import DeviceType, EventList, FunctionEvent, FunctionEventAvg, Interval  # noqa: F401
from ..profiler._legacy import profile  # noqa: F401
from ..profiler._record_function import record_function  # noqa: F401
from ..profiler._profile import ProfilerActivity  # noqa: F401

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg", "DeviceType",
           "ProfilerActivity", "kineto_available"]


def kineto_available():
    """False: oneflow's profiler does not use PyTorch's Kineto library."""
    return False
