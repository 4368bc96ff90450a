"""Pipeline parallelism in eager code: each rank runs one stage of a model on micro-batches, sending activations
forward and their gradients back, in the 1F1B order (PipeDream-Flush, as Megatron-LM) or GPipe's.

The names follow ``torch.distributed.pipelining``: a :class:`PipelineStage` wraps this rank's part of the model,
a schedule (:class:`Schedule1F1B`, :class:`ScheduleGPipe`) runs one training step over ``n_microbatches``
micro-batches with ``schedule.step(...)``: the first stage passes the batch, the last stage the target (and a
list that receives the micro-batch losses), the others nothing. Gradients accumulate in the stages' parameters
(divided by the number of micro-batches with ``scale_grads=True``, so a mean loss gives the gradients of the
whole batch's mean loss); the optimizer step is the caller's, as in PyTorch.

Transfers are point-to-point on the world communicator: a small header (the tensors' dtypes and shapes) then
the data, both sent without waiting (so two stages sending to each other at once never deadlock) and received
in the schedule's order. The 1F1B order is the one :func:`oneflow_dist.plan.schedule.one_f_one_b` gives (the
plan simulator's), so a stage holds the activations of at most ``num_stages - stage_index`` micro-batches.
Pipeline x data parallelism: give each replica's stages their ranks (``ranks=``) and wrap the stage's module in
``DistributedDataParallel`` over the stage's replicas; its gradients are then reduced once per step.
"""
import contextlib

import oneflow as flow

from . import _world
from .plan.schedule import one_f_one_b

__all__ = ["PipelineStage", "Schedule1F1B", "ScheduleGPipe"]

_TAG = 7101  # the pipeline's point-to-point messages, apart from oneflow.comm's
_HEADER = 64  # int64 slots of a transfer's header
_DTYPES = [flow.float32, flow.float64, flow.float16, flow.bfloat16, flow.int64, flow.int32, flow.int8,
           flow.uint8, flow.bool]


class PipelineStage:
    r"""This rank's stage of a pipeline.

    Args:
        submodule (nn.Module): the layers this stage runs (their parameters live on this rank only).
        stage_index (int): its position, 0 .. ``num_stages - 1``.
        num_stages (int): the number of stages.
        ranks (list[int], optional): the rank of each stage. Default: stage ``i`` on rank ``i``.

    The stage's forward takes the previous stage's outputs (a tensor or a tuple of tensors), or for the first
    stage the micro-batch of the arguments given to ``schedule.step``.
    """

    def __init__(self, submodule, stage_index, num_stages, ranks=None):
        if not isinstance(num_stages, int) or num_stages < 1:
            raise ValueError(f"PipelineStage: num_stages must be a positive int, but got {num_stages!r}")
        if not isinstance(stage_index, int) or not 0 <= stage_index < num_stages:
            raise ValueError(f"PipelineStage: stage_index must be in [0, {num_stages}), but got {stage_index!r}")
        ranks = list(range(num_stages)) if ranks is None else [int(r) for r in ranks]
        world = _world.world_size()
        if len(ranks) != num_stages or len(set(ranks)) != num_stages or any(not 0 <= r < world for r in ranks):
            raise ValueError(f"PipelineStage: ranks must name {num_stages} distinct ranks of the {world} in the "
                             f"job, but got {ranks}")
        if ranks[stage_index] != _world.rank():
            raise ValueError(f"PipelineStage: stage {stage_index} belongs to rank {ranks[stage_index]}, but this "
                             f"is rank {_world.rank()}")
        self.submod = submodule
        self.stage_index, self.num_stages, self.ranks = stage_index, num_stages, ranks
        self.is_first, self.is_last = stage_index == 0, stage_index == num_stages - 1

    @property
    def prev_rank(self):
        return None if self.is_first else self.ranks[self.stage_index - 1]

    @property
    def next_rank(self):
        return None if self.is_last else self.ranks[self.stage_index + 1]


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


class _Link:
    """Point-to-point transfers of tuples of tensors: sends don't wait (their buffers are kept until
    :meth:`flush`), receives do."""

    def __init__(self):
        self.comm = _world.world()
        self.pending = []

    def send(self, tensors, dst):
        header = [len(tensors)]
        for t in tensors:
            if t.dtype not in _DTYPES:
                raise TypeError(f"pipeline: cannot send a tensor of dtype {t.dtype}")
            header += [_DTYPES.index(t.dtype), t.dim(), *t.shape]
        if len(header) > _HEADER:
            raise ValueError(f"pipeline: a stage's outputs are too many or have too many dims to send ({header})")
        head = flow.tensor(header + [0] * (_HEADER - len(header)), dtype=flow.int64)
        bufs = [head] + [t.detach().contiguous() for t in tensors]
        self.pending += [(self.comm.isend(b, dst, _TAG), b) for b in bufs]

    def recv(self, src):
        head = flow.empty(_HEADER, dtype=flow.int64)
        self.comm.irecv(head, src, _TAG).wait()
        h, out, i = head.tolist(), [], 1
        for _ in range(h[0]):
            dtype, ndim = _DTYPES[h[i]], h[i + 1]
            shape = tuple(h[i + 2:i + 2 + ndim])
            i += 2 + ndim
            t = flow.empty(shape, dtype=dtype)
            self.comm.irecv(t, src, _TAG).wait()
            out.append(t)
        return tuple(out)

    def flush(self):
        for work, _ in self.pending:
            work.wait()
        self.pending = []


class _PipelineSchedule:
    def __init__(self, stage, n_microbatches, loss_fn=None, scale_grads=True):
        if not isinstance(stage, PipelineStage):
            raise TypeError(f"{type(self).__name__}: stage must be a PipelineStage, but got {type(stage).__name__}")
        if not isinstance(n_microbatches, int) or n_microbatches < 1:
            raise ValueError(f"{type(self).__name__}: n_microbatches must be a positive int, but got "
                             f"{n_microbatches!r}")
        if stage.is_last and loss_fn is None:
            raise ValueError(f"{type(self).__name__}: the last stage needs a loss_fn")
        self.stage, self.n_microbatches = stage, n_microbatches
        self.loss_fn, self.scale_grads = loss_fn, scale_grads
        self.order = self._order()
        self.max_in_flight = 0  # the most micro-batches whose activations this stage held at once (last step)
        self.executed = []  # the last step's ("F" | "B", micro-batch) in the order they ran

    def _split(self, what, value):
        m = self.n_microbatches
        if value is None:
            return [None] * m
        if not isinstance(value, flow.Tensor):
            raise TypeError(f"{type(self).__name__}.step(): {what} must be tensors, but got {type(value).__name__}")
        rows = value.shape[0] if value.dim() else 0
        if rows < m:
            raise ValueError(f"{type(self).__name__}.step(): {what} has {rows} rows along dim 0, fewer than the "
                             f"{m} micro-batches")
        return list(flow.tensor_split(value, m, dim=0))

    def step(self, *args, target=None, losses=None):
        """Runs one pipelined forward and backward over the micro-batches. ``args``: the batch (first stage
        only), split along dim 0; ``target``: the last stage's, split the same way; ``losses``: a list the last
        stage appends the micro-batch losses to. Returns the last stage's outputs of all micro-batches,
        concatenated along dim 0 (None on the other stages)."""
        st = self.stage
        if st.is_first and not args:
            raise ValueError(f"{type(self).__name__}.step(): the first stage must be given the batch")
        if not st.is_first and args:
            raise ValueError(f"{type(self).__name__}.step(): only the first stage takes the batch (stage "
                             f"{st.stage_index} received {len(args)} argument(s))")
        if st.is_last and target is None:
            raise ValueError(f"{type(self).__name__}.step(): the last stage must be given the target")
        chunks = list(zip(*[self._split("the inputs", a) for a in args])) if args else [()] * self.n_microbatches
        targets = self._split("the target", target)
        link = _Link()
        live, outputs, self.executed, self.max_in_flight = {}, {}, [], 0
        try:
            for kind, j in self.order:
                if kind == "F":
                    live[j] = self._forward(link, chunks[j], targets[j], losses, outputs, j)
                    self.max_in_flight = max(self.max_in_flight, len(live))
                else:
                    self._backward(link, *live.pop(j), last=(kind, j) == self.order[-1])
                self.executed.append((kind, j))
        finally:
            link.flush()
        if st.is_last:
            outs = [outputs[j] for j in range(self.n_microbatches)]
            return flow.cat(outs, dim=0) if isinstance(outs[0], flow.Tensor) else outs
        return None

    def _forward(self, link, chunk, target, losses, outputs, j):
        st = self.stage
        if st.is_first:
            inputs = tuple(chunk)
        else:
            inputs = tuple(t.requires_grad_(t.dtype.is_floating_point) for t in link.recv(st.prev_rank))
        out = st.submod(*inputs)
        if st.is_last:
            outputs[j] = out.detach() if isinstance(out, flow.Tensor) else out
            loss = self.loss_fn(out, target)
            if losses is not None:
                losses.append(loss.detach())
            return inputs, (loss / self.n_microbatches if self.scale_grads else loss,)
        outs = _as_tuple(out)
        link.send(outs, st.next_rank)
        return inputs, outs

    def _backward(self, link, inputs, outs, last):
        st = self.stage
        # a DistributedDataParallel stage (pipeline x data parallelism) reduces its gradients once, in the
        # step's last backward: the ones before only accumulate
        no_sync = getattr(st.submod, "no_sync", None)
        with (contextlib.nullcontext() if last or no_sync is None else no_sync()):
            if st.is_last:
                flow.autograd.backward(outs)
            else:
                grads = link.recv(st.next_rank)
                pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad]
                if pairs:
                    flow.autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        if not st.is_first:
            link.send(tuple(x.grad if x.grad is not None else flow.zeros_like(x) for x in inputs), st.prev_rank)


class Schedule1F1B(_PipelineSchedule):
    r"""The 1F1B schedule: stage ``i`` runs ``num_stages - i - 1`` warm-up forwards, then alternates one forward
    and one backward, then drains the backwards; it holds at most ``num_stages - i`` micro-batches' activations.

    Args:
        stage (PipelineStage): this rank's stage.
        n_microbatches (int): micro-batches per step (the batch is split along dim 0).
        loss_fn (callable): ``loss_fn(output, target)`` (the last stage's).
        scale_grads (bool): divide the gradients by ``n_microbatches``. Default: ``True``.

    Example::

        >>> stage = PipelineStage(blocks[rank], rank, 2)
        >>> schedule = Schedule1F1B(stage, n_microbatches=4, loss_fn=nn.functional.cross_entropy)
        >>> schedule.step(x) if rank == 0 else schedule.step(target=y, losses=losses)
        >>> optimizer.step()
    """

    def _order(self):
        return one_f_one_b(self.stage.num_stages, self.n_microbatches)[self.stage.stage_index]


class ScheduleGPipe(_PipelineSchedule):
    r"""GPipe's schedule: every micro-batch's forward, then every backward; each stage holds all
    ``n_microbatches`` micro-batches' activations. Arguments as :class:`Schedule1F1B`."""

    def _order(self):
        m = self.n_microbatches
        return [("F", j) for j in range(m)] + [("B", j) for j in range(m)]
