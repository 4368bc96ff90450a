"""Gradient accumulation (``graph.config.set_gradient_accumulation_steps(n)``), as in OneFlow: one graph call
takes the whole batch, ``build`` sees one micro-batch (each tensor input split into ``n`` pieces along dim 0),
the ``n`` micro-batches' forward and backward are unrolled into the one trace, and the optimizers step once.

Each micro-batch's ``loss.backward()`` back-propagates ``loss / n`` (OneFlow scales the loss by ``1/n``), so the
accumulated gradients are those of the mean over the micro-batches, computed by the same ops, in the same order,
as eager training that calls ``(loss / n).backward()`` per micro-batch. The graph returns each output leaf of the
``n`` micro-batches packed along dim 0 (OneFlow's ``pack``): a 0-dim loss comes back with shape ``(n,)``, a
``(b, ...)`` output with shape ``(n * b, ...)``.
"""
import inspect

import oneflow as flow

from .structure import leaves, map_leaves
from .tracer import active_mode


def check_steps(n):
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"set_gradient_accumulation_steps() expects an int, but got {type(n).__name__}")
    if n < 1:
        raise ValueError(f"set_gradient_accumulation_steps({n}): the number of steps must be at least 1")
    return n


def _input_names(build, args, kwargs):
    """``(tensor, name)`` for each tensor leaf of the call, named by ``build``'s parameter (and position in it)."""
    try:
        bound = inspect.signature(build).bind(*args, **kwargs).arguments
    except (TypeError, ValueError):
        bound = {f"args[{i}]": a for i, a in enumerate(args)} | dict(kwargs)
    out = []
    for name, value in bound.items():
        ts = [x for x in leaves(value) if isinstance(x, flow.Tensor)]
        for k, t in enumerate(ts):
            out.append((t, name if isinstance(value, flow.Tensor) else f"{name} (tensor {k})"))
    return out


def check_inputs(graph_name, build, args, kwargs, n):
    """Raises ValueError naming the first tensor input whose dim 0 does not split into ``n`` micro-batches."""
    for t, name in _input_names(build, args, kwargs):
        if t.dim() == 0 or t.shape[0] % n:
            shape = tuple(t.shape)
            raise ValueError(f"{graph_name}: with gradient accumulation over {n} steps each tensor input of build() "
                             f"is split into {n} micro-batches along dim 0, but input '{name}' has shape {shape}, "
                             f"whose dim 0 is not divisible by {n}")


def unrolled(build, n):
    """``build`` over ``n`` micro-batches for the tracer: the traced inputs (whole batches) are split, ``build``
    runs once per micro-batch with its backward seeded through ``loss / n`` and the results are packed."""

    def run(*args, **kwargs):
        split = map_leaves((tuple(args), dict(kwargs)),
                           lambda x: _Pieces(x.chunk(n, 0)) if isinstance(x, flow.Tensor) else x)

        def piece(k):
            return map_leaves(split, lambda x: x.parts[k] if isinstance(x, _Pieces) else x)

        mode = active_mode()
        outer = mode.loss_transform
        mode.loss_transform = (lambda loss: loss / n) if outer is None else (lambda loss: outer(loss / n))
        results, segments, marks = [], [], []
        nodes = mode.ir.nodes
        mode.on_backward.append(marks.append)
        try:
            for k in range(n):
                a, kw = piece(k)
                del marks[:]
                start = len(nodes)
                results.append(build(*a, **kw))
                back = marks[0] if marks else len(nodes)
                segments.append((nodes[start:back], nodes[back:]))  # the micro-batch's forward, backward
        finally:
            mode.loss_transform = outer
            mode.on_backward.remove(marks.append)
        mode.ir.micro_batches = segments  # what pipelining reorders (pipeline.py)
        return _pack(results)

    return run


class _Pieces:
    """A split input: a leaf for map_leaves (a tuple would be walked into)."""

    def __init__(self, parts):
        self.parts = parts


def _pack(results):
    flat = [leaves(r) for r in results]
    it = iter(range(len(flat[0])))

    def pack(first):
        i = next(it)
        if not isinstance(first, flow.Tensor):
            return first
        parts = [f[i] for f in flat]
        return flow.stack(parts) if first.dim() == 0 else flow.cat(parts, 0)

    return map_leaves(results[0], pack)
