"""Softmax cross-entropy fusion: the ``log_softmax`` + ``nll_loss`` pair that ``F.cross_entropy`` (and
``nn.CrossEntropyLoss``) traces over class indices becomes one ``_softmax_cross_entropy`` node, and, in a graph
with its backward, the ``nll_loss_backward`` + ``_log_softmax_backward_data`` pair of that loss becomes one
``_softmax_cross_entropy_backward`` node. The fused forward keeps two numbers per row instead of the (N, C, ...)
log-probabilities; the fused backward computes ``scale * (softmax(x) * sum(q) - q)`` in one pass over the logits.
Class weights, ``ignore_index``, label smoothing and every reduction are the op's own attributes, computed with
the unfused kernels' roundings.

The pair is left alone when the log-probabilities are used by anything else (returned, read by another op), when
``log_softmax`` is not over the class dim or casts (``dtype=``), when the backward does not have exactly the
two-node shape above, and when memory that the fused nodes read (logits, target, weights) is written between the
forward and the backward. ``softmax`` followed by ``log`` and ``nll_loss`` stays as it is: fused it would not
underflow where the eager ops do, so its results would differ.
"""
from oneflow import _C

from ..ir import NODE, Node

_LOSSES = ("nll_loss", "_nll_loss_smoothed")


def fuse_softmax_cross_entropy(ir):
    uses = ir.uses(positions=True)  # id(value) -> [(node, input position)]
    external = ir.external_ids()
    pos = {id(n): i for i, n in enumerate(ir.nodes)}
    replace, drop = {}, set()
    stats = {"fused": 0, "fused_backward": 0}
    for n in ir.nodes:
        if n.op.name != "log_softmax" or id(n) in drop:
            continue
        match = _match(n, uses, external)
        if match is None:
            continue
        loss_node, bwd, bwd_data = match
        last = bwd_data if bwd_data is not None else loss_node
        if ir.written_between(pos[id(n)], pos[id(last)], loss_node.inputs[1:3] + [n.inputs[0]]):
            continue
        fwd, shift, logsum = _fused_forward(ir, n.inputs[0], loss_node)
        replace[id(loss_node)] = fwd
        drop.update((id(n), id(loss_node)))
        stats["fused"] += 1
        if bwd is not None:
            replace[id(bwd_data)] = _fused_backward(bwd, bwd_data, n.inputs[0], loss_node, shift, logsum)
            drop.update((id(bwd), id(bwd_data)))
            stats["fused_backward"] += 1
    if not replace:
        return dict(stats, removed=0)
    before = len(ir.nodes)
    ir.nodes = [replace.get(id(n), n) for n in ir.nodes if id(n) not in drop or id(n) in replace]
    backward = ir.__dict__.get("backward_nodes")
    if backward is not None:  # the Graph's record of its backward nodes (activation checkpointing reads it)
        kept = [m for m in backward if id(m) not in drop]
        kept += [replace[id(m)] for m in backward if id(m) in replace]
        backward[:] = kept
    return dict(stats, removed=before - len(ir.nodes))


def _match(n, uses, external):
    """(loss node, nll_loss_backward node or None, _log_softmax_backward_data node or None) when ``n`` (a
    log_softmax) and its users have the shape that fuses; else None."""
    x, lp = n.inputs[0], n.outputs[0]
    if (x is None or lp is None or lp.producer is not n or n.multi or n.attrs.get("dtype") is not None
            or id(lp) in external or not x.dtype.is_floating_point or lp.dtype != x.dtype):
        return None
    class_dim = 0 if len(x.shape) == 1 else 1
    if _wrap(n.attrs.get("dim"), len(x.shape)) != class_dim:
        return None
    users = uses.get(id(lp), [])
    losses = [(u, k) for u, k in users if u.op.name in _LOSSES and k == 0]
    if len(losses) != 1:
        return None
    loss_node = losses[0][0]
    out = loss_node.outputs[0]
    if out is None or out.producer is not loss_node or loss_node.mutates:
        return None
    rest = [(u, k) for u, k in users if u is not loss_node]
    if not rest:
        return loss_node, None, None
    bwds = [u for u, k in rest if u.op.name == "nll_loss_backward" and k == 1]
    datas = [u for u, k in rest if u.op.name == "_log_softmax_backward_data" and k == 1]
    if len(bwds) != 1 or len(datas) != 1 or len(rest) != 2:
        return None
    bwd, data = bwds[0], datas[0]
    glp = bwd.outputs[0]
    if (glp is None or id(glp) in external or [u for u, _ in uses.get(id(glp), [])] != [data]
            or data.inputs[0] is not glp or _wrap(data.attrs.get("dim"), len(x.shape)) != class_dim):
        return None
    # the backward of this very loss: the same target, weights and options
    if bwd.inputs[2] is not loss_node.inputs[1] or bwd.inputs[3] is not loss_node.inputs[2]:
        return None
    if any(bwd.attrs.get(k) != v for k, v in _loss_attrs(loss_node).items()):
        return None
    gx = data.outputs[0]
    if gx is None or gx.producer is not data or gx.shape != x.shape or gx.dtype != x.dtype:
        return None
    return loss_node, bwd, data


def _wrap(dim, ndim):
    if not isinstance(dim, int):
        return None
    return dim + max(ndim, 1) if dim < 0 else dim


def _loss_attrs(loss_node):
    a = loss_node.attrs
    return {"reduction": a["reduction"], "ignore_index": a["ignore_index"],
            "label_smoothing": float(a.get("label_smoothing", 0.0))}


def _fused_forward(ir, x, loss_node):
    """The ``_softmax_cross_entropy`` node computing ``loss_node``'s output (its value, now produced there), and
    its per-row shift and log-normaliser values."""
    row_shape = tuple(loss_node.inputs[1].shape)
    row_dtype = x.dtype if x.dtype in (_C.float32, _C.float64) else _C.float32
    node = Node(_C.ops._softmax_cross_entropy, [x, loss_node.inputs[1], loss_node.inputs[2]],
                _loss_attrs(loss_node), [], location=loss_node.location, multi=True)
    loss = loss_node.outputs[0]
    loss.producer = node
    shift = ir.new_value(NODE, row_shape, row_dtype, x.device, producer=node)
    logsum = ir.new_value(NODE, row_shape, row_dtype, x.device, producer=node)
    node.outputs = [loss, shift, logsum]
    return node, shift, logsum


def _fused_backward(bwd, data, x, loss_node, shift, logsum):
    node = Node(_C.ops._softmax_cross_entropy_backward,
                [bwd.inputs[0], x, loss_node.inputs[1], loss_node.inputs[2], shift, logsum],
                _loss_attrs(loss_node), [], location=data.location)
    gx = data.outputs[0]
    gx.producer = node
    node.outputs = [gx]
    return node


__all__ = ["fuse_softmax_cross_entropy"]
