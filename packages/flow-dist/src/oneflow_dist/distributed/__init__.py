"""``oneflow.distributed``: the ``torch.distributed`` API on flow-dist's communicators (``import
oneflow.distributed as dist``). Under ``flowrun`` the job is already wired: ``init_process_group()`` needs no
address or rank (they come from the launcher's environment) and accepts the CPU backends' names ("mpi", "gloo").

Ranks given to collectives (``src``, ``dst``) are global ranks, as in PyTorch, also with a ``group``.
"""
from . import _api
from ._api import *  # noqa: F401,F403
from ._api import __all__  # noqa: F401
from ..comm_debug import CommDebugMode, comm_debug  # noqa: F401

__all__ = [*__all__, "comm_debug", "CommDebugMode"]

del _api
