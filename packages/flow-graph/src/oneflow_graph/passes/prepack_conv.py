"""Weight prepacking: a convolution whose weight the graph never writes (inference, frozen layers) reads it
packed, once, into the layout its forward kernel keeps weights in, instead of having the kernel reorder it on
every call (oneDNN's blocked layouts, the Winograd forward's transformed weights; core ``convolution_pack_weight``
and ``convolution_forward_packed``):

    convolution(x, w, b)  ->  convolution_forward_packed(x, convolution_pack_weight(w, x.shape), b)

The pack reads only variables (or what they compute: a folded conv + batch norm's scaled weight), so nn.Graph's
``hoist_variables`` pass moves it into the cached prologue, where it runs again only when the weight changes;
the parameters stay shared with the eager modules. The packed copy is held beside the weight (the prologue's
``cached_bytes``). On ResNet-18 inference at batch 32 the reorders of the 3x3 weights were ~10 ms of a ~126 ms
call (512 -> 512 channels at 4x4: 9.0 -> 7.7 ms per convolution).

Only where the core says packing pays (``_C._conv_weight_packing_pays``: float32, and the forward runs Winograd or
on oneDNN with a weight layout other than the plain one); im2col reads the plain weight anyway.
Transposed convolutions and weights the graph writes (a training graph's parameters) are left alone.
"""
import oneflow as flow

from .hoist_variables import _hoistable
from ._traced import traced_nodes


def _spatial(attrs, name, ns):
    v = list(attrs[name]) if isinstance(attrs[name], (list, tuple)) else [attrs[name]]
    return v * ns if len(v) == 1 else v


def _geometry(conv, hoistable):
    """``(stride, padding, dilation, groups)`` of a packable convolution node (its weight among the ids
    ``hoistable``: one the plan neither computes from its inputs nor writes), else None."""
    if conv.op.name != "convolution" or conv.attrs.get("transposed") or conv.mutates or conv.multi:
        return None
    if id(conv.inputs[1]) not in hoistable:
        return None
    x, w = conv.inputs[0], conv.inputs[1]
    b = conv.inputs[2] if len(conv.inputs) > 2 else None
    y = conv.outputs[0]
    if x is None or w is None or y is None or y.producer is not conv:
        return None
    if any(v is not None and v.dtype != flow.float32 for v in (x, w, b, y)):
        return None
    ns = len(w.shape) - 2
    geo = tuple(_spatial(conv.attrs, k, ns) for k in ("stride", "padding", "dilation")) + (int(conv.attrs["groups"]),)
    if not flow._C._conv_weight_packing_pays(list(x.shape), list(w.shape), list(y.shape), *geo, b is not None):
        return None
    return geo


def prepack_conv_weights(ir):
    """Packs the weights of ``ir``'s convolutions that gain from it (see the module's docstring), in place.
    Returns ``{"packed"}``, the convolutions rewritten."""
    ok, _ = _hoistable(ir)
    ops = flow._C.ops
    replaced, mapping = {}, {}
    for conv in ir.nodes:
        geo = _geometry(conv, ok)
        if geo is None:
            continue
        stride, padding, dilation, groups = geo
        x, w = conv.inputs[0], conv.inputs[1]
        b = conv.inputs[2] if len(conv.inputs) > 2 else None

        def packed(xt, wt, *bt):
            p = ops.convolution_pack_weight(wt, list(xt.shape), stride, padding, dilation, groups, bool(bt))
            return (ops.convolution_forward_packed(xt, p, bt[0] if bt else None, list(wt.shape), stride, padding,
                                                   dilation, groups),)

        nodes, (y2,) = traced_nodes(ir, packed, [x, w] + ([b] if b is not None else []), conv.location,
                                    "weight prepacking")
        replaced[id(conv)] = nodes
        mapping[conv.outputs[0]] = y2
    if not replaced:
        return {"packed": 0}
    ir.nodes = [m for n in ir.nodes for m in replaced.get(id(n), [n])]
    ir.replace_uses(mapping)
    return {"packed": len(replaced)}


__all__ = ["prepack_conv_weights"]
