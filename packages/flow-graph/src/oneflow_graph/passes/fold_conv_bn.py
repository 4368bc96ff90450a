"""Conv + batch-norm folding for inference: a convolution whose only reader is a batch norm in inference mode
(running statistics, ``training=False``) becomes one convolution with per-output-channel scaled weights and a
shifted bias:

    scale = gamma / sqrt(running_var + eps)
    conv(x, w, b) -> bn  ==  conv(x, w * scale, (b - running_mean) * scale + beta)

The scaled weight and bias are computed by ops from the graph's variables: the parameters and buffers stay
shared with the eager modules, so a change made to them after compiling (an eager update, ``load_state_dict``,
a training graph's step) is what the next call folds. nn.Graph's ``hoist_variables`` pass, which runs after this
one, moves those ops into the graph's cached prologue, where they run only when the variables change; without
it they run at each call. A pair whose weight has more elements than the activation (deep layers at batch 1) is
kept as it is either way: run per call its fold costs more than the batch norm's pass it saves, and cached it
saves that small pass at the price of a scaled copy of the weight held beside the original (measured on
ResNet-18 at batch 1: no faster, 43 MiB more).

A pair is left alone when anything else reads the convolution's result or the batch norm's saved statistics (a
training graph's backward reads them: there the batch norm is kept), for batch norm in training mode or without
running statistics, for transposed convolutions, when the dtypes differ (mixed precision) and when memory the
fold reads is written between the convolution and the batch norm.
"""
import oneflow as flow

from ..ir import NODE
from ._traced import traced_nodes


def fold_conv_bn(ir):
    """Folds the pairs of ``ir`` in place. Returns ``{"folded", "fold_ops", "kept_costlier"}``."""
    uses, external = ir.uses(), ir.external_ids()
    pos = {id(n): i for i, n in enumerate(ir.nodes)}
    folds, costlier = [], 0  # (conv node, bn node)
    for bn in ir.nodes:
        conv = _match(bn, uses, external)
        if conv is None:
            continue
        if conv.inputs[1].numel() > conv.outputs[0].numel():
            costlier += 1
            continue
        roots = {id(v.root()) for v in bn.inputs[1:] + conv.inputs[1:] if v is not None}
        if any(id(n.inputs[i].root()) in roots for n in ir.nodes[pos[id(conv)] + 1:pos[id(bn)]] for i in n.mutates):
            continue
        folds.append((conv, bn))
    if not folds:
        return {"folded": 0, "fold_ops": 0, "kept_costlier": costlier}
    inserted, mapping, dropped, fold_ops = {}, {}, set(), 0
    for conv, bn in folds:
        nodes, w2, b2 = _fold_nodes(ir, conv, bn)
        conv.inputs = [conv.inputs[0], w2, b2]
        inserted[id(conv)] = nodes
        mapping[bn.outputs[0]] = conv.outputs[0]
        dropped.add(id(bn))
        fold_ops += len(nodes)
    out = []
    for n in ir.nodes:
        if id(n) in dropped:
            continue
        out.extend(inserted.get(id(n), ()))
        out.append(n)
    ir.nodes = out
    ir.replace_uses(mapping)
    return {"folded": len(folds), "fold_ops": fold_ops, "kept_costlier": costlier}


def _match(bn, uses, external):
    """The convolution node ``bn`` folds into, or None."""
    if bn.op.name != "native_batch_norm" or bn.attrs.get("training") or len(bn.inputs) < 5:
        return None
    y, w, b, mean, var = bn.inputs[:5]
    if y is None or mean is None or var is None or y.kind != NODE:
        return None
    conv = y.producer
    if conv.op.name != "convolution" or conv.attrs.get("transposed") or conv.mutates or conv.multi:
        return None
    if id(y) in external or [u for u in uses.get(id(y), [])] != [bn] or y.producer is not conv:
        return None
    out = bn.outputs[0]
    if out is None or out.producer is not bn or out.shape != y.shape:
        return None
    for extra in bn.outputs[1:]:  # the saved mean and inverse std: only a backward reads them
        if extra is not None and (uses.get(id(extra)) or id(extra) in external):
            return None
    weight = conv.inputs[1]
    channels = weight.shape[0] if weight is not None and weight.shape else None
    dtypes = {v.dtype for v in [y, out, weight] + bn.inputs[1:5] + conv.inputs[2:3] if v is not None}
    if len(dtypes) != 1 or not next(iter(dtypes)).is_floating_point:
        return None
    if any(v is not None and tuple(v.shape) != (channels,) for v in bn.inputs[1:5] + conv.inputs[2:3]):
        return None
    if len(y.shape) < 2 or y.shape[1] != channels:
        return None
    return conv


def _fold_nodes(ir, conv, bn):
    """Nodes computing the folded weight and bias from the conv's and the batch norm's values (traced from
    eager code, so the ops and attributes are the registry's), and their two result values."""
    weight, bias = conv.inputs[1], conv.inputs[2] if len(conv.inputs) > 2 else None
    gamma, beta, mean, var = bn.inputs[1:5]
    eps = float(bn.attrs["eps"])
    ndim = len(weight.shape)
    given = [v for v in (weight, bias, gamma, beta, mean, var) if v is not None]
    present = [v is not None for v in (weight, bias, gamma, beta, mean, var)]

    def fold(*args):
        it = iter(args)
        w, b, g, be, m, v = (next(it) if p else None for p in present)
        scale = flow.rsqrt(v + eps)
        if g is not None:
            scale = scale * g
        w2 = w * scale.reshape([-1] + [1] * (ndim - 1))
        shift = -m if b is None else b - m
        b2 = shift * scale
        if be is not None:
            b2 = b2 + be
        return w2, b2

    nodes, (w2, b2) = traced_nodes(ir, fold, given, bn.location, "conv-bn folding")
    return nodes, w2, b2


__all__ = ["fold_conv_bn"]
