"""The MPI engine (mpi4py over MPICH): CPU tensors, in place on their memory.

Buffers are NumPy views of the tensors' own memory (``_C._to_numpy`` shares it), passed to MPI through the
buffer protocol: no copy on the way in or out. Tensors must be contiguous. NumPy has no bfloat16, so bfloat16
(and float16, which MPI cannot reduce) moves as 16-bit integers and is reduced in a float32 copy.
"""
import numpy as np
from mpi4py import MPI

import oneflow as flow
from oneflow import _C

from . import Communicator, ReduceOp, Work

_MPI_OPS = {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD, ReduceOp.MIN: MPI.MIN,
            ReduceOp.MAX: MPI.MAX}
_BOOL_OPS = {ReduceOp.SUM: MPI.LOR, ReduceOp.MAX: MPI.LOR, ReduceOp.MIN: MPI.LAND, ReduceOp.PRODUCT: MPI.LAND}
_HALF = (flow.float16, flow.bfloat16)


def _view(t):
    """A NumPy array sharing ``t``'s memory (16-bit floats as int16)."""
    if not t.is_contiguous():
        raise ValueError(f"collectives need contiguous tensors, got one of shape {tuple(t.shape)} with strides "
                         f"{t.stride()}")
    t = t.detach()
    if t.dtype in _HALF:
        t = t.view(flow.int16)
    return _C._to_numpy(t)


def _op(op, t):
    if not isinstance(op, ReduceOp):
        raise TypeError(f"op must be a ReduceOp, got {op!r}")
    if t.dtype == flow.bool:
        if op is ReduceOp.AVG:
            raise ValueError("ReduceOp.AVG is not supported for bool tensors")
        return _BOOL_OPS[op]
    if op is ReduceOp.AVG and not t.is_floating_point():
        raise ValueError(f"ReduceOp.AVG needs a floating-point tensor, got {t.dtype}")
    return _MPI_OPS[op]


class MPICommunicator(Communicator):
    """A communicator over an ``mpi4py`` intracommunicator."""

    def __init__(self, comm, global_ranks):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.global_ranks = tuple(global_ranks)  # global rank of each member, in member order
        self._subs = {}

    # ---- reductions ----------------------------------------------------------------------------------------
    def _reduced(self, t, op, run):
        """Runs ``run(buffer, mpi_op)`` on ``t``'s memory, or on a float32 copy for 16-bit floats."""
        mop = _op(op, t)
        if t.dtype in _HALF:
            tmp = t.detach().float()
            run(_C._to_numpy(tmp), mop)
            self._average(tmp, op)
            t.detach().copy_(tmp)
            return
        run(_view(t), mop)
        self._average(t, op)

    def _average(self, t, op):
        if op is ReduceOp.AVG:
            a = _C._to_numpy(t.detach())
            np.divide(a, self.size, out=a)

    def all_reduce(self, t, op=ReduceOp.SUM):
        self._reduced(t, op, lambda buf, mop: self.comm.Allreduce(MPI.IN_PLACE, buf, op=mop))

    def iall_reduce(self, t, op=ReduceOp.SUM):
        mop = _op(op, t)
        if t.dtype in _HALF:
            tmp = t.detach().float()
            req = self.comm.Iallreduce(MPI.IN_PLACE, _C._to_numpy(tmp), op=mop)

            def finish():
                self._average(tmp, op)
                t.detach().copy_(tmp)
            return Work([req], finish)
        req = self.comm.Iallreduce(MPI.IN_PLACE, _view(t), op=mop)
        return Work([req], (lambda: self._average(t, op)) if op is ReduceOp.AVG else None)

    def reduce(self, t, root, op=ReduceOp.SUM):
        if self.rank == root:
            self._reduced(t, op, lambda buf, mop: self.comm.Reduce(MPI.IN_PLACE, buf, op=mop, root=root))
            return
        # a non-root rank only sends: its tensor is left as it is
        buf = _C._to_numpy(t.detach().float()) if t.dtype in _HALF else _view(t)
        self.comm.Reduce(buf, None, op=_op(op, t), root=root)

    def reduce_scatter(self, out, t, op=ReduceOp.SUM):
        if t.numel() != out.numel() * self.size:
            raise ValueError(f"reduce_scatter: the input has {t.numel()} elements, expected {self.size} x the "
                             f"output's {out.numel()}")
        if t.dtype in _HALF:
            tmp_out = out.detach().float()
            self.comm.Reduce_scatter_block(_C._to_numpy(t.detach().float()), _C._to_numpy(tmp_out), op=_op(op, t))
            self._average(tmp_out, op)
            out.detach().copy_(tmp_out)
            return
        self.comm.Reduce_scatter_block(_view(t), _view(out), op=_op(op, t))
        self._average(out, op)

    # ---- data movement -------------------------------------------------------------------------------------
    def broadcast(self, t, root):
        self.comm.Bcast(_view(t), root=root)

    def all_gather(self, out, t):
        if out.numel() != t.numel() * self.size:
            raise ValueError(f"all_gather: the output has {out.numel()} elements, expected {self.size} x the "
                             f"input's {t.numel()}")
        self.comm.Allgather(_view(t), _view(out))

    def all_to_all(self, out, t):
        if out.numel() != t.numel() or t.numel() % self.size:
            raise ValueError(f"all_to_all: input and output need the same number of elements, divisible by "
                             f"{self.size}; got {t.numel()} and {out.numel()}")
        self.comm.Alltoall(_view(t), _view(out))

    def all_to_all_v(self, out, out_counts, t, in_counts):
        """All-to-all with ``in_counts[i]`` elements of ``t`` for member i and ``out_counts[i]`` from it (in
        order along the flattened tensors)."""
        self.comm.Alltoallv([_view(t), (list(in_counts), _displs(in_counts))],
                            [_view(out), (list(out_counts), _displs(out_counts))])

    def gather(self, out, t, root):
        if self.rank == root:
            self.comm.Gather(_view(t), _view(out), root=root)
        else:
            self.comm.Gather(_view(t), None, root=root)

    def scatter(self, out, t, root):
        self.comm.Scatter(_view(t) if self.rank == root else None, _view(out), root=root)

    def send(self, t, dst, tag=0):
        self.comm.Send(_view(t), dest=dst, tag=tag)

    def recv(self, t, src=None, tag=0):
        status = MPI.Status()
        self.comm.Recv(_view(t), source=MPI.ANY_SOURCE if src is None else src, tag=tag, status=status)
        return status.Get_source()

    def isend(self, t, dst, tag=0):
        return Work([self.comm.Isend(_view(t), dest=dst, tag=tag)])

    def irecv(self, t, src, tag=0):
        return Work([self.comm.Irecv(_view(t), source=src, tag=tag)])

    def barrier(self):
        self.comm.Barrier()

    # ---- Python objects (pickled) --------------------------------------------------------------------------
    def all_gather_object(self, obj):
        return self.comm.allgather(obj)

    def broadcast_object(self, obj, root):
        return self.comm.bcast(obj, root=root)

    def send_object(self, obj, dst, tag=0):
        self.comm.send(obj, dest=dst, tag=tag)

    def recv_object(self, src, tag=0):
        return self.comm.recv(source=src, tag=tag)

    # ---- sub-groups ----------------------------------------------------------------------------------------
    def sub(self, ranks):
        """The communicator of the members ``ranks`` (this communicator's ranks, in that order), created once
        (collective over those members only) and cached; None on a rank that is not a member."""
        key = tuple(ranks)
        if key in self._subs:
            return self._subs[key]
        if self.rank not in key:
            self._subs[key] = None
            return None
        group = self.comm.Get_group().Incl(list(key))
        comm = self.comm.Create_group(group, tag=_tag(key))
        group.Free()
        sub = MPICommunicator(comm, [self.global_ranks[r] for r in key])
        self._subs[key] = sub
        return sub


def _displs(counts):
    return [int(x) for x in np.cumsum([0, *counts[:-1]])]


def _tag(key):
    # groups created at the same time by disjoint rank sets must not mix: a tag per member list
    return hash(key) & 0x7FFF
