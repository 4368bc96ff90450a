"""Communicators: the one small interface that every collective of flow-dist goes through.

A :class:`Communicator` is a fixed set of ranks (the world, or a sub-group) with collectives that work in place on
the memory of contiguous local tensors. The engine behind it depends on the tensors' device: MPI (``mpi.py``,
mpi4py over MPICH) for CPU tensors; a CUDA build adds NCCL behind the same interface (not in this build).

Ranks inside a communicator are its own (0 .. size-1); the front ends (``oneflow.comm``,
``oneflow.distributed``) translate global ranks.
"""
import abc
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


class Communicator(abc.ABC):
    """The interface. Every method takes contiguous tensors of one device; ``out`` tensors are written in place;
    ranks (``root``, ``dst``, ``src``) are the communicator's own.

    ``all_gather(out, t)``: ``out`` holds size x ``t``, in rank order; ``reduce_scatter(out, t, op)``: ``t``
    holds size x ``out``; ``all_to_all_v``: counts of elements per member along the flattened tensors;
    ``sub(ranks)``: the communicator of those members (in that order), cached; None on a rank outside them.
    """

    rank = 0
    size = 1
    global_ranks = (0,)  # the global rank of each member

    @abc.abstractmethod
    def all_reduce(self, t, op=ReduceOp.SUM): ...

    @abc.abstractmethod
    def iall_reduce(self, t, op=ReduceOp.SUM) -> Work: ...

    @abc.abstractmethod
    def reduce(self, t, root, op=ReduceOp.SUM): ...

    @abc.abstractmethod
    def reduce_scatter(self, out, t, op=ReduceOp.SUM): ...

    @abc.abstractmethod
    def broadcast(self, t, root): ...

    @abc.abstractmethod
    def all_gather(self, out, t): ...

    @abc.abstractmethod
    def all_to_all(self, out, t): ...

    @abc.abstractmethod
    def all_to_all_v(self, out, out_counts, t, in_counts): ...

    @abc.abstractmethod
    def gather(self, out, t, root): ...

    @abc.abstractmethod
    def scatter(self, out, t, root): ...

    @abc.abstractmethod
    def send(self, t, dst, tag=0): ...

    @abc.abstractmethod
    def recv(self, t, src=None, tag=0) -> int: ...

    @abc.abstractmethod
    def isend(self, t, dst, tag=0) -> Work: ...

    @abc.abstractmethod
    def irecv(self, t, src, tag=0) -> Work: ...

    @abc.abstractmethod
    def barrier(self): ...

    @abc.abstractmethod
    def all_gather_object(self, obj) -> list: ...

    @abc.abstractmethod
    def broadcast_object(self, obj, root): ...

    @abc.abstractmethod
    def send_object(self, obj, dst, tag=0): ...

    @abc.abstractmethod
    def recv_object(self, src, tag=0): ...

    @abc.abstractmethod
    def sub(self, ranks) -> "Communicator | None": ...
