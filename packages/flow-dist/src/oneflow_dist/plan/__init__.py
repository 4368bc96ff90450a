"""Planning past the ranks at hand: per-rank memory, communication and pipeline bubble of a GPT trained with a
data x tensor x pipeline layout (and ZeRO), without running a kernel (``python -m oneflow_dist.plan``).

Activation and parameter sizes are measured, not assumed: one rank's tensor-parallel share of a layer (and of the
LM head with its loss) runs forward and backward on the meta device through the real autograd, and the tensors it
saves for backward are counted (:mod:`.trace`). The pipeline schedule is the 1F1B order a stage would run,
simulated step by step (:mod:`.schedule`), which gives the bubble and how many micro-batches' activations each
stage holds at once. Communication is counted per collective at the ring algorithm's minimum bytes per rank.
"""
from dataclasses import dataclass

import oneflow as flow

from . import schedule, trace

__all__ = ["Config", "simulate", "megatron_activation_bytes"]

_DTYPES = {"bf16": flow.bfloat16, "fp16": flow.float16, "fp32": flow.float32}


@dataclass
class Config:
    """A model and a layout. ``global_batch`` sequences per step, split into ``micro_batch``-sized pieces per
    data-parallel rank (so ``global_batch / (dp * micro_batch)`` micro-batches run through the pipeline)."""
    layers: int = 24
    hidden: int = 1024
    heads: int = 16
    seq: int = 1024
    vocab: int = 51200
    micro_batch: int = 1
    global_batch: int = 64
    ranks: int = 1
    dp: int = 1
    tp: int = 1
    pp: int = 1
    zero: int = 0
    dtype: str = "bf16"
    recompute: str = "none"  # "none" or "full" (only each layer's input is kept; the layer reruns in backward)
    dropout: float = 0.1

    def check(self):
        if self.dp * self.tp * self.pp != self.ranks:
            raise ValueError(f"plan: dp*tp*pp = {self.dp}*{self.tp}*{self.pp} = {self.dp * self.tp * self.pp}, "
                             f"but ranks = {self.ranks}")
        if self.layers % self.pp:
            raise ValueError(f"plan: pp={self.pp} must divide layers={self.layers}")
        if self.global_batch % (self.dp * self.micro_batch):
            raise ValueError(f"plan: global_batch={self.global_batch} must be a multiple of dp*micro_batch = "
                             f"{self.dp * self.micro_batch}")
        if self.vocab % self.tp:
            raise ValueError(f"plan: tp={self.tp} must divide vocab={self.vocab}")
        if self.zero not in (0, 1, 2, 3):
            raise ValueError(f"plan: zero must be 0, 1, 2 or 3, got {self.zero}")
        if self.dtype not in _DTYPES:
            raise ValueError(f"plan: dtype must be one of {sorted(_DTYPES)}, got {self.dtype!r}")
        if self.recompute not in ("none", "full"):
            raise ValueError(f"plan: recompute must be 'none' or 'full', got {self.recompute!r}")

    @property
    def micro_batches(self):
        return self.global_batch // (self.dp * self.micro_batch)


def _ring_all_reduce(nbytes, n):
    return 2 * (n - 1) / n * nbytes


def _ring_gather(nbytes, n):  # all-gather or reduce-scatter of a whole of nbytes
    return (n - 1) / n * nbytes


def simulate(cfg):
    """The plan of ``cfg`` (a :class:`Config`): a dict with per-stage memory, per-rank bytes per collective kind
    per step, and the pipeline's bubble and in-flight micro-batches. Sizes in bytes."""
    cfg.check()
    dtype = _DTYPES[cfg.dtype]
    elt = flow.empty(0, dtype=dtype).element_size()
    layer_params, layer_act = trace.layer_memory(cfg.hidden, cfg.heads, cfg.seq, cfg.micro_batch, cfg.tp,
                                                 cfg.dropout, dtype)
    head_params, head_act = trace.head_memory(cfg.hidden, cfg.vocab, cfg.seq, cfg.micro_batch, cfg.tp, dtype)
    emb_params = trace.embedding_params(cfg.hidden, cfg.vocab, cfg.seq, cfg.tp)
    boundary = cfg.seq * cfg.micro_batch * cfg.hidden * elt  # one micro-batch's hidden states
    if cfg.recompute == "full":  # keep each layer's input; one layer's activations live while it reruns
        kept_per_layer, transient = boundary, layer_act
    else:
        kept_per_layer, transient = layer_act, 0
    m = cfg.micro_batches
    sim = schedule.simulate(schedule.one_f_one_b(cfg.pp, m))
    # ZB-H1 with the backward's two halves (input and weight gradients) each as long as the forward
    zb = schedule.simulate(schedule.zero_bubble_h1(cfg.pp, m), 1.0, 1.0, 1.0)
    per_stage_layers = cfg.layers // cfg.pp
    # bytes per parameter: weights, gradients, optimizer state (Adam; with 16-bit training fp32 master weights too)
    p_b, g_b, o_b = (elt, elt, 12) if elt == 2 else (4, 4, 8)
    d = cfg.dp
    shard = {"params": d if cfg.zero >= 3 else 1, "grads": d if cfg.zero >= 2 else 1,
             "optimizer": d if cfg.zero >= 1 else 1}
    stages = []
    for i in range(cfg.pp):
        n_params = per_stage_layers * layer_params + (emb_params if i == 0 else 0) + \
            (head_params if i == cfg.pp - 1 else 0)
        in_flight = sim["max_in_flight"][i]
        act = in_flight * (per_stage_layers * kept_per_layer + (head_act if i == cfg.pp - 1 else 0)) + transient
        mem = {"params": n_params * p_b / shard["params"], "grads": n_params * g_b / shard["grads"],
               "optimizer": n_params * o_b / shard["optimizer"], "activations": act}
        mem["total"] = sum(mem.values())
        stages.append({"stage": i, "parameters": n_params, "in_flight": in_flight, "memory": mem})
    worst = max(stages, key=lambda s: s["memory"]["total"])
    n_params = worst["parameters"]
    comm = {}
    if cfg.tp > 1:  # two all-reduces of the hidden states per layer forward (attention, MLP), two in backward
        count = 4 * per_stage_layers * m
        comm["tp all_reduce"] = {"count": count, "bytes": count * _ring_all_reduce(boundary, cfg.tp)}
    if d > 1:
        grads, weights = n_params * g_b, n_params * p_b
        if cfg.zero >= 2:
            comm["dp reduce_scatter"] = {"count": 1, "bytes": _ring_gather(grads, d)}
            gathers = 3 if cfg.zero == 3 else 1  # ZeRO-3 gathers the weights for forward and for backward too
            comm["dp all_gather"] = {"count": gathers, "bytes": gathers * _ring_gather(weights, d)}
        else:
            comm["dp all_reduce"] = {"count": 1, "bytes": _ring_all_reduce(grads, d)}
    if cfg.pp > 1:  # an interior stage sends each micro-batch's activations forward and its gradient back
        comm["pp send"] = {"count": 2 * m, "bytes": 2 * m * boundary}
    total_params = cfg.layers * layer_params * cfg.tp + (emb_params + head_params) * cfg.tp
    return {"config": cfg, "micro_batches": m, "layer": {"parameters": layer_params, "activation_bytes": layer_act},
            "stages": stages, "worst_stage": worst["stage"], "comm_per_step": comm,
            "bubble_fraction": sim["bubble_fraction"], "bubble_formula": (cfg.pp - 1) / (m + cfg.pp - 1),
            "zero_bubble_fraction": zb["bubble_fraction"],
            "zero_bubble_formula": schedule.zero_bubble_h1_bubble(cfg.pp, m),
            "model_parameters_approx": total_params}


def megatron_activation_bytes(cfg, mask_bytes=1):
    """Activation bytes per layer per micro-batch by Korthikanti et al. (2022), tensor parallel without sequence
    parallelism: ``sbh(10 + 24/t + 5as/(ht))`` for 16-bit activations and 1-byte dropout masks; ``mask_bytes``
    generalises the three dropout masks (2 for masks kept in the activations' dtype, as here)."""
    s, b, h, a, t = cfg.seq, cfg.micro_batch, cfg.hidden, cfg.heads, cfg.tp
    extra = mask_bytes - 1
    return s * b * h * (10 + 2 * extra + 24 / t) + a * s * s * b * (5 + extra) / t
