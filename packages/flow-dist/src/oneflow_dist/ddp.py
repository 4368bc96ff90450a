"""``oneflow.nn.parallel.DistributedDataParallel``: data parallelism for a module of local tensors.

At wrap time rank 0's parameters and buffers are broadcast to every rank. During ``backward`` each gradient, as
soon as the autograd engine has accumulated it (a post-accumulate-grad hook), is scaled by 1/world into its
bucket's flat buffer and from then on ``param.grad`` is a view of that buffer (PyTorch's gradient_as_bucket_view,
always on: no copy back after the all-reduce, and a gradient zeroed in place accumulates into the bucket); a full
bucket starts a non-blocking MPI all-reduce at once, so communication overlaps the rest of
backward; the hook of the last gradient waits for the buckets. Buckets are
started in the same order on every rank (MPI requires it), whatever order their gradients arrive in.
"""
import contextlib
import time

import oneflow as flow

from . import _world
from ._comm import ReduceOp

__all__ = ["DistributedDataParallel"]


class _Bucket:
    def __init__(self, params):
        self.params = params
        self.dtype = params[0].dtype
        self.offsets = []
        n = 0
        for p in params:
            self.offsets.append(n)
            n += p.numel()
        self.flat = flow.zeros(n, dtype=self.dtype)
        self.views = [self.flat[o:o + p.numel()].view(tuple(p.shape)) for o, p in zip(self.offsets, params)]
        self.reset()

    def reset(self):
        self.ready = 0
        self.work = None

    def holds(self, i, grad):
        """Whether ``grad`` already is slot ``i`` (the engine accumulated into the bucket in place)."""
        v = self.views[i]
        return grad.data_ptr() == v.data_ptr() and tuple(grad.shape) == tuple(v.shape) and \
            grad.stride() == v.stride()


class DistributedDataParallel(flow.nn.Module):
    r"""Wraps ``module`` for data-parallel training: each rank runs it on its own batch, and ``backward``
    leaves every rank with the gradients averaged over the ranks.

    Args:
        module (Module): the module to replicate; its parameters and buffers are broadcast from rank 0.
        broadcast_buffers (bool): also broadcast the buffers (e.g. BatchNorm statistics) from rank 0 before each
            forward. Default: ``True``.
        bucket_size (int): parameters per bucket (OneFlow's meaning). Default: ``10``.
        bucket_cap_mb (float, optional): PyTorch's bucket bound in megabytes; when given it replaces
            ``bucket_size``.
        process_group (ProcessGroup, optional): the ranks to average over (default: all).
        use_bucket (bool): if False, each gradient is reduced on its own (one all-reduce per parameter).

    ``device_ids``, ``output_device``, ``dim``, ``find_unused_parameters``, ``gradient_as_bucket_view`` (gradients
    always are bucket views) and
    ``static_graph`` are accepted for PyTorch compatibility; every parameter that requires grad must receive a
    gradient in each backward (else the next forward raises).

    Example::

        >>> model = flow.nn.parallel.DistributedDataParallel(net)
        >>> loss = loss_fn(model(x_local), y_local); loss.backward(); opt.step()
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, find_unused_parameters=False, check_reduction=False,
                 gradient_as_bucket_view=False, static_graph=False, *, bucket_size=10, use_bucket=True):
        super().__init__()
        if not isinstance(module, flow.nn.Module):
            raise TypeError(f"DistributedDataParallel: module must be a oneflow.nn.Module, got "
                            f"{type(module).__name__}")
        if bucket_cap_mb is None and (not isinstance(bucket_size, int) or bucket_size < 1):
            raise ValueError(f"DistributedDataParallel: bucket_size must be a positive int, got {bucket_size!r}")
        if bucket_cap_mb is not None and not bucket_cap_mb > 0:
            raise ValueError(f"DistributedDataParallel: bucket_cap_mb must be positive, got {bucket_cap_mb!r}")
        for name, p in module.named_parameters():
            if p.device.type != "cpu":
                raise RuntimeError(f"DistributedDataParallel: parameter {name} is on {p.device}; this build "
                                   f"averages CPU tensors (MPI)")
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self._comm = process_group._comm if process_group is not None else _world.world()
        if self._comm is None:
            raise RuntimeError("DistributedDataParallel: this rank is not a member of process_group")
        self._sync = True
        self._scale = 1.0 / self._comm.size
        self._sync_broadcast([p.detach() for p in module.parameters()] + self._buffers_list())
        params = [p for p in module.parameters() if p.requires_grad]
        self._buckets = self._make_buckets(params[::-1], bucket_size if use_bucket else 1,
                                           None if bucket_cap_mb is None or not use_bucket
                                           else int(bucket_cap_mb * 2**20))
        self._next = 0  # the first bucket not started yet
        # seconds backward spent waiting for all-reduces after its last gradient (what overlap did not hide)
        self.comm_wait_s = 0.0
        self._launched = []
        self._handles = []
        for b_index, b in enumerate(self._buckets):
            for i, p in enumerate(b.params):
                self._handles.append(p.register_post_accumulate_grad_hook(self._hook(b_index, i)))

    def _buffers_list(self):
        return [b for b in self.module.buffers() if b is not None]

    def _sync_broadcast(self, tensors):
        """Broadcasts ``tensors`` from rank 0, one flat buffer per dtype."""
        if self._comm.size == 1:
            return
        by_dtype = {}
        for t in tensors:
            by_dtype.setdefault(t.dtype, []).append(t)
        for dtype, ts in by_dtype.items():
            flat = flow.cat([t.detach().reshape(-1) for t in ts]) if self._comm.rank == 0 else \
                flow.empty(sum(t.numel() for t in ts), dtype=dtype)
            self._comm.broadcast(flat, 0)
            off = 0
            for t in ts:
                n = t.numel()
                t.detach().copy_(flat[off:off + n].view(tuple(t.shape)))
                off += n

    @staticmethod
    def _make_buckets(params, per_bucket, cap_bytes):
        buckets, cur, cur_bytes = [], [], 0
        for p in params:
            if cur and (p.dtype != cur[0].dtype or (cap_bytes is None and len(cur) >= per_bucket)
                        or (cap_bytes is not None and cur_bytes + p.numel() * p.element_size() > cap_bytes)):
                buckets.append(_Bucket(cur))
                cur, cur_bytes = [], 0
            cur.append(p)
            cur_bytes += p.numel() * p.element_size()
        if cur:
            buckets.append(_Bucket(cur))
        return buckets

    def _hook(self, b_index, i):
        def hook(param):
            if not self._sync:
                return
            b = self._buckets[b_index]
            g, slot = param.grad.detach(), b.views[i]
            # the average's 1/world is folded into the one pass that fills the bucket, and the gradient then
            # lives in the bucket: the all-reduce result needs no copy back, and a gradient zeroed in place
            # accumulates straight into the bucket next time
            if b.holds(i, g):
                slot.mul_(self._scale)
            else:
                flow.mul(g, self._scale, out=slot)
                param.grad = slot
            b.ready += 1
            self._launch_ready()
            if self._next == len(self._buckets):
                self._finish()
        return hook

    def _launch_ready(self):
        # start every full bucket whose predecessors have started: the same order on every rank
        while self._next < len(self._buckets):
            b = self._buckets[self._next]
            if b.ready < len(b.params):
                break
            b.work = self._comm.iall_reduce(b.flat, ReduceOp.SUM) if self._comm.size > 1 else None
            self._next += 1
        for b in self._buckets[:self._next]:  # MPI progresses non-blocking collectives inside MPI calls
            if b.work is not None:
                b.work.is_completed()

    def _finish(self):
        t0 = time.perf_counter()
        for b in self._buckets:
            if b.work is not None:
                b.work.wait()
        self.comm_wait_s += time.perf_counter() - t0
        for b in self._buckets:
            for i, p in enumerate(b.params):
                if not b.holds(i, p.grad):  # a later hook of the user's replaced the gradient
                    p.grad = b.views[i]
            b.reset()
        self._next = 0

    def forward(self, *inputs, **kwargs):
        if self._next or any(b.ready for b in self._buckets):
            pending = [p for b in self._buckets for i, p in enumerate(b.params) if b.ready <= i]
            raise RuntimeError(f"DistributedDataParallel: the previous backward did not produce gradients for "
                               f"{len(pending)} parameter(s) that require grad, so their reduction never "
                               f"finished; every parameter must take part in the loss")
        if self.broadcast_buffers and self._sync:
            bufs = self._buffers_list()
            if bufs:
                self._sync_broadcast(bufs)
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self):
        """Within this context backward only accumulates local gradients; the first backward after it averages
        the accumulated ones."""
        old = self._sync
        self._sync = False
        try:
            yield
        finally:
            self._sync = old
