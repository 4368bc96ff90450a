"""``oneflow.distributed.comm_debug()``: records the collectives that global tensors issue (like PyTorch
DTensor's ``CommDebugMode``).

Each record names the collective, the bytes this rank sends by the ring algorithm (the minimum any algorithm
moves: ``2 (n-1)/n`` of the buffer for all_reduce, ``(n-1)/n`` of the whole for all_gather, reduce_scatter and
all_to_all), the group size and the op that caused it (``"to_global"`` or the registry op's name).
"""
import threading

__all__ = ["comm_debug", "CommDebugMode"]

_state = threading.local()


def _modes():
    m = getattr(_state, "modes", None)
    if m is None:
        m = _state.modes = []
    return m


def _ops():
    s = getattr(_state, "ops", None)
    if s is None:
        s = _state.ops = []
    return s


class cause:
    """``with cause(name)``: collectives issued inside are attributed to ``name`` (the outermost one wins)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        _ops().append(self.name)

    def __exit__(self, *exc):
        _ops().pop()
        return False


def active():
    return bool(getattr(_state, "modes", None))


def record(collective, nbytes, group_size, **extra):
    """Adds one collective to every active :class:`CommDebugMode` of this thread (point-to-point transfers add
    their ``peer`` and ``tag``)."""
    modes = getattr(_state, "modes", None)
    if not modes:
        return
    ops = _ops()
    entry = {"collective": collective, "bytes": int(nbytes), "group_size": group_size,
             "op": ops[0] if ops else None, **extra}
    for m in modes:
        m.records.append(entry)


class CommDebugMode:
    """Context manager that records collectives: ``records`` is the list of them (dicts with ``collective``,
    ``bytes``, ``group_size``, ``op``); :meth:`get_comm_counts` counts them by collective and
    :meth:`get_total_bytes` sums their bytes.

    Example::

        >>> with flow.distributed.comm_debug() as comm:
        ...     y = x.to_global(sbp=flow.sbp.broadcast)
        >>> comm.get_comm_counts()
        {'all_gather': 1}
    """

    def __init__(self):
        self.records = []

    def __enter__(self):
        self.records = []
        _modes().append(self)
        return self

    def __exit__(self, *exc):
        _modes().remove(self)
        return False

    def get_comm_counts(self):
        counts = {}
        for r in self.records:
            counts[r["collective"]] = counts.get(r["collective"], 0) + 1
        return counts

    def get_total_bytes(self):
        return sum(r["bytes"] for r in self.records)

    def by_op(self):
        """``{op: [collective, ...]}``."""
        out = {}
        for r in self.records:
            out.setdefault(r["op"], []).append(r["collective"])
        return out


def comm_debug():
    """A :class:`CommDebugMode` (use it as a context manager)."""
    return CommDebugMode()
