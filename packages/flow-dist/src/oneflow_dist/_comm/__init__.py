"""Communicators: the one small interface that every collective of flow-dist goes through.

A :class:`Communicator` is a fixed set of ranks (the world, or a sub-group) with collectives that work in place on
the memory of contiguous local tensors. The engine behind it depends on the tensors' device: MPI (``mpi.py``,
mpi4py over MPICH) for CPU tensors; a CUDA build adds NCCL behind the same interface (not in this build).

Ranks inside a communicator are its own (0 .. size-1); the front ends (``oneflow.comm``,
``oneflow.distributed``) translate global ranks.
"""
from enum import Enum


class ReduceOp(Enum):
    """Reductions of the collectives (``torch.distributed.ReduceOp``'s names)."""
    SUM = "sum"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    AVG = "avg"

    def __repr__(self):
        return f"<ReduceOp.{self.name}>"


class Work:
    """A collective in flight (``async_op=True``): :meth:`wait` completes it; ``finish`` runs after completion
    (copying a result back into a non-contiguous tensor, dividing for an average)."""

    def __init__(self, requests=(), finish=None):
        self._requests = list(requests)
        self._finish = finish
        self._done = False

    def is_completed(self):
        if self._done:
            return True
        if all(r.Test() for r in self._requests):
            self.wait()
        return self._done

    def wait(self, timeout=None):
        if not self._done:
            for r in self._requests:
                r.Wait()
            self._done = True
            if self._finish is not None:
                self._finish()
        return True

    def result(self):
        return []


class Communicator:
    """The interface. Every method takes contiguous tensors of one device; ``out`` tensors are written in place.

    Methods: ``all_reduce(t, op)``, ``iall_reduce(t, op) -> Work``, ``broadcast(t, root)``,
    ``reduce(t, root, op)``, ``all_gather(out, t)`` (``out``: size x t, concatenated along dim 0),
    ``reduce_scatter(out, t, op)`` (``t``: size x out), ``all_to_all(out, t)`` (equal blocks along dim 0),
    ``gather(out_or_None, t, root)``, ``scatter(out, t_or_None, root)``, ``send(t, dst, tag)``,
    ``recv(t, src, tag) -> source``, ``barrier()``, ``sub(ranks) -> Communicator or None`` (cached; None on a
    rank outside ``ranks``) and the object collectives ``all_gather_object``/``broadcast_object``.
    """

    rank = 0
    size = 1
