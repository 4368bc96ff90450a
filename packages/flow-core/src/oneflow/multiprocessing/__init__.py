"""``oneflow.multiprocessing``: Python's :mod:`multiprocessing` under ``torch.multiprocessing``'s name, with its
sharing-strategy queries. Tensors sent between processes are pickled (``Tensor.share_memory_()`` puts a CPU
tensor's storage in shared memory first, so that forked children see the same bytes)."""
import multiprocessing as _mp
from multiprocessing import *  # noqa: F401,F403

__all__ = list(getattr(_mp, "__all__", [])) + ["get_sharing_strategy", "set_sharing_strategy",
                                                "get_all_sharing_strategies"]

_STRATEGIES = {"file_descriptor", "file_system"}
_strategy = "file_descriptor"


def get_all_sharing_strategies():
    """The sharing strategies this platform supports (PyTorch's names)."""
    return set(_STRATEGIES)


def get_sharing_strategy():
    """The current sharing strategy."""
    return _strategy


def set_sharing_strategy(new_strategy):
    """Sets the sharing strategy (``"file_descriptor"`` or ``"file_system"``)."""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"Unsupported sharing strategy {new_strategy!r}; the strategies are "
                         f"{sorted(_STRATEGIES)}")
    _strategy = new_strategy
