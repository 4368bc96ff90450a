"""Constant folding: a pure op whose inputs are all constants runs once at compile time and its result becomes a
constant of the graph.

Creation ops (``full``, ``arange``...) start the constants; ``fill`` (a tensor like its input, filled) folds
whatever its input, as shapes are static. Nothing random, in place or fresh (``empty``) folds, nor a result
whose memory some node writes (it must be a new tensor each call), nor one larger than ``max_numel`` elements
(a constant lives as long as the graph).
"""
from .. import effects
from ..ir import CONSTANT

MAX_NUMEL = 1 << 16


def constant_folding(ir, max_numel=MAX_NUMEL):
    written = {id(n.inputs[i].root()) for n in ir.nodes for i in n.mutates}
    mapping, kept, folded = {}, [], 0
    for n in ir.nodes:
        n.inputs = [mapping.get(v, v) if v is not None else None for v in n.inputs]
        outs = n.new_outputs()
        ok = (outs and len(outs) == len(n.outputs) and effects.is_pure(n.op, n.attrs)
              and not any(id(v.root()) in written for v in outs)
              and all(v.numel() <= max_numel for v in outs))
        if ok and n.op.name not in effects.METADATA_ONLY:
            ok = all(v is None or v.kind == CONSTANT for v in n.inputs)
        if ok:
            inputs = [None if v is None else (v.tensor if v.kind == CONSTANT else _like(v)) for v in n.inputs]
            result = n.op.redispatch(inputs, n.attrs)
            results = list(result) if n.multi else [result]
            for v, t in zip(n.outputs, results):
                mapping[v] = ir.add_constant(t)
            folded += 1
            continue
        kept.append(n)
    ir.nodes = kept
    ir.replace_uses(mapping)
    ir.drop_unused_constants()
    return {"folded": folded}


def _like(v):
    import oneflow as flow

    return flow.empty(v.shape, dtype=v.dtype, device=v.device)
