"""The Megatron-style GPT block the tensor-parallel rank scripts (tp_block, graph_global_tp) check: its sizes, its
weights (drawn from the caller's generator, so each script keeps its own random stream), the tensor-parallel
layout of each weight (QKV and the first MLP weight column-split, the output weights row-split) and its math, as
functions of a dict of weights so that plain tensors, global tensors and module parameters all run it."""
import math

import oneflow as flow

F = flow.nn.functional
B, S = flow.sbp.broadcast, flow.sbp.split
b, t, c, heads = 2, 6, 16, 4
shapes = {"wq": (c, c), "wk": (c, c), "wv": (c, c), "wo": (c, c), "w1": (c, 4 * c), "w2": (4 * c, c)}
layout = {"wq": S(1), "wk": S(1), "wv": S(1), "wo": S(0), "w1": S(1), "w2": S(0)}


def make_values(rng):
    """NumPy values of the weights, drawn from ``rng`` in ``shapes``' order."""
    return {k: rng.standard_normal(s).astype("float32") * 0.1 for k, s in shapes.items()}


def attention(x, w):
    """``x`` plus multi-head self-attention (``heads`` split across ranks when wq/wk/wv are S(1))."""
    hd = c // heads
    q, k, v = (flow.matmul(x, w[name]).view(b, t, heads, hd).transpose(1, 2) for name in ("wq", "wk", "wv"))
    att = flow.softmax(flow.matmul(q, k.transpose(-2, -1)) / math.sqrt(hd), -1)
    y = flow.matmul(att, v).transpose(1, 2).reshape(b, t, c)
    return x + flow.matmul(y, w["wo"])


def mlp(x, w):
    """``x`` plus the two-layer GELU MLP."""
    return x + flow.matmul(F.gelu(flow.matmul(x, w["w1"])), w["w2"])


def block(x, w):
    return mlp(attention(x, w), w)
