"""A small GPT written once as an ordinary ``nn.Module``, and :func:`lay_out`, which makes it data, tensor or
data x tensor parallel by assigning placements and SBPs to its parameters and nothing else.

Linear weights are stored as ``(out_features, in_features)`` like PyTorch's, so Megatron's column split (the
output features) is ``S(0)`` of the weight and its row split (the input features) is ``S(1)``.
"""
import math

import oneflow as flow

nn = flow.nn
F = flow.nn.functional


class Block(nn.Module):
    """A pre-LayerNorm decoder block: causal self-attention, then a GELU MLP, each with a residual."""

    def __init__(self, d_model, n_head):
        super().__init__()
        self.n_head = n_head
        self.ln1 = nn.LayerNorm(d_model)
        # q, k and v are separate so that splitting their output features splits whole heads
        self.q = nn.Linear(d_model, d_model)
        # no key bias: it adds q.b_k to all scores of a query, which softmax ignores, so its gradient is
        # zero but for rounding, and Adam would turn that rounding into updates no two layouts share
        self.k = nn.Linear(d_model, d_model, bias=False)
        self.v = nn.Linear(d_model, d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.out = nn.Linear(4 * d_model, d_model)

    def attention(self, x, mask):
        b, t, c = x.shape
        hd = c // self.n_head
        q, k, v = (lin(x).view(b, t, self.n_head, hd).transpose(1, 2) for lin in (self.q, self.k, self.v))
        att = flow.softmax(flow.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(hd)) + mask[:t, :t], dim=-1)
        return self.proj(flow.matmul(att, v).transpose(1, 2).reshape(b, t, c))

    def forward(self, x, mask):
        x = x + self.attention(self.ln1(x), mask)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """Token and learned position embeddings, ``n_layer`` blocks, a final LayerNorm and an LM head (tied to the
    token embedding when ``tie`` is true). ``forward(idx, targets)`` returns the mean cross-entropy."""

    def __init__(self, vocab=64, d_model=32, n_head=4, n_layer=2, seq=16, tie=False):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(seq, d_model)
        self.blocks = nn.ModuleList([Block(d_model, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        if tie:
            self.head.weight = self.tok.weight
        self.register_buffer("mask", flow.triu(flow.full((seq, seq), float("-inf")), diagonal=1), persistent=False)

    def forward(self, idx, targets):
        t = idx.shape[1]
        # positions by slicing the table, so that no local index tensor meets the global model
        x = self.tok(idx) + self.pos.weight[:t]
        for block in self.blocks:
            x = block(x, self.mask)
        logits = _lm_head(self.head, self.tok, self.ln_f(x))
        # the sum over the batch then a division, which is the mean, lets a split batch add up partial sums
        # (the mean itself would need the whole batch's count of targets)
        return lm_loss(logits, targets)


def _lm_head(head, tok, h):
    """The LM head on the final hidden states ``h``. A head tied to the token embedding on another pipeline
    stage reads the embedding's weight moved to ``h``'s stage (as LiBai does), so the weight's gradient flows
    back to the first stage, where its single copy is updated."""
    w = head.weight
    if w is tok.weight and getattr(w, "is_global", False) and getattr(h, "is_global", False) \
            and w.placement != h.placement:
        w = w.to_global(placement=h.placement, sbp=[flow.sbp.broadcast] * h.placement.ranks.ndim)
        return F.linear(h, w)
    return head(h)


# Megatron's splits of one block's parameters, by name: column-parallel (output features) then row-parallel
# (input features, whose bias is added once, after the partial sums meet)
_TP = {"q.weight": 0, "q.bias": 0, "k.weight": 0, "v.weight": 0, "v.bias": 0, "proj.weight": 1,
       "fc.weight": 0, "fc.bias": 0, "out.weight": 1}

LAYOUTS = ("single", "dp", "tp", "dpxtp", "zero2", "pp", "ppxdp")
# layouts of global tensors (lay_out); pp and ppxdp cut the model into pipeline stages instead (stage_of)
GLOBAL_LAYOUTS = ("dp", "tp", "dpxtp", "zero2")


def lm_loss(logits, targets):
    """GPT.forward's loss on logits: the summed cross-entropy over the number of targets (the mean)."""
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1), reduction="sum")
    return loss / targets.numel()


class _Stage(nn.Module):
    """Blocks ``[lo, hi)`` of a GPT, with its embeddings when first and its final norm and head when last."""

    def __init__(self, model, lo, hi, first, last):
        super().__init__()
        self.first, self.last = first, last
        if first:
            self.tok, self.pos = model.tok, model.pos
        self.blocks = nn.ModuleList(list(model.blocks)[lo:hi])
        if last:
            self.ln_f, self.head = model.ln_f, model.head
        self.register_buffer("mask", model.mask, persistent=False)

    def forward(self, x):
        if self.first:
            x = self.tok(x) + self.pos.weight[:x.shape[1]]
        for block in self.blocks:
            x = block(x, self.mask)
        return self.head(self.ln_f(x)) if self.last else x


def stage_of(model, index, stages):
    """Pipeline stage ``index`` of ``stages`` of ``model`` (its blocks split as evenly as possible); a tied head
    cannot be cut from its embedding (inside an nn.Graph it can: :func:`set_stages`)."""
    if model.head.weight is model.tok.weight and stages > 1:
        raise ValueError("a GPT whose head is tied to its token embedding cannot be cut into eager pipeline "
                         "stages (its weight would live on two stages); set_stages in an nn.Graph can")
    _check_blocks(model, stages)
    n = len(model.blocks)
    lo, hi = index * n // stages, (index + 1) * n // stages
    return _Stage(model, lo, hi, index == 0, index == stages - 1)


def _check_blocks(model, stages):
    n = len(model.blocks)
    if stages > n:
        raise ValueError(f"{stages} pipeline stages need at least as many blocks, the model has {n}")


def set_stages(model, placements):
    """Makes ``model`` a pipeline of ``len(placements)`` stages inside ``nn.Graph``: its modules given stages
    with ``set_stage`` (the blocks split as :func:`stage_of` splits them, the embeddings on the first stage, the
    final norm and head on the last), which puts their parameters on the stage's placement. The causal mask,
    which every block reads, is broadcast to all the stages' ranks (each stage then finds it at hand). A head
    tied to the token embedding stays with the embedding on the first stage; the last stage reads its weight
    moved there (each micro-batch's forward sends it, its backward sends the gradient back)."""
    from oneflow.nn.graph import GraphModule

    stages = len(placements)
    _check_blocks(model, stages)
    tied = model.head.weight is model.tok.weight  # before set_stage replaces the embedding's weight
    n = len(model.blocks)
    model.tok.to(GraphModule).set_stage(0, placements[0])
    model.pos.to(GraphModule).set_stage(0, placements[0])
    for i in range(stages):
        for block in list(model.blocks)[i * n // stages:(i + 1) * n // stages]:
            block.to(GraphModule).set_stage(i, placements[i])
    model.ln_f.to(GraphModule).set_stage(stages - 1, placements[-1])
    if not tied:  # a tied head gets the embedding's new weight when the graph compiles
        model.head.to(GraphModule).set_stage(stages - 1, placements[-1])
    everyone = flow.placement("cpu", ranks=sorted(int(r) for p in placements for r in p.ranks.reshape(-1)))
    model._buffers["mask"] = model.mask.to_global(everyone, flow.sbp.broadcast)
    return model


def placement_of(layout, world):
    """The placement a layout runs on: all ranks in one dimension, or for ``dpxtp`` a 2-D mesh whose first
    dimension is data parallel and whose second is tensor parallel (``ranks=[[0, 1], [2, 3]]`` on 4 ranks)."""
    if layout == "dpxtp":
        if world % 2:
            raise ValueError(f"layout 'dpxtp' needs an even number of ranks, got {world}")
        return flow.placement("cpu", ranks=[list(range(i, i + 2)) for i in range(0, world, 2)])
    return flow.placement("cpu", ranks=list(range(world)))


def param_sbp(layout, name):
    """The nd-sbp of the parameter ``name`` under ``layout``."""
    B, S = flow.sbp.broadcast, flow.sbp.split
    split = _TP.get(".".join(name.split(".")[-2:])) if name.startswith("blocks.") else None
    tp = B if split is None else S(split)
    if layout == "dp":
        return (B,)
    if layout == "tp":
        return (tp,)
    return (B, tp)


def data_sbp(layout):
    """The nd-sbp of a batch of token ids: split by samples on the data-parallel dimension."""
    B, S = flow.sbp.broadcast, flow.sbp.split
    return {"dp": (S(0),), "tp": (B,), "dpxtp": (S(0), B)}[layout]


def lay_out(model, layout, world=None):
    """Makes ``model``'s parameters and buffers global for ``layout`` (``dp``, ``tp`` or ``dpxtp``) in place;
    tied parameters stay tied. Every rank must hold the same values (the same seed) beforehand. Returns the
    placement."""
    if layout not in GLOBAL_LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}: expected one of {GLOBAL_LAYOUTS}")
    layout = "dp" if layout == "zero2" else layout
    placement = placement_of(layout, world or flow.env.get_world_size())
    B = flow.sbp.broadcast
    made = {}
    for mod_name, mod in model.named_modules():
        for key, q in list(mod._parameters.items()):
            if q is None:
                continue
            if id(q) not in made:
                name = f"{mod_name}.{key}" if mod_name else key
                g = q.detach().to_global(placement, [B] * len(placement.hierarchy))
                made[id(q)] = nn.Parameter(g.to_global(sbp=param_sbp(layout, name)), q.requires_grad)
            mod._parameters[key] = made[id(q)]
        for key, buf in list(mod._buffers.items()):
            if buf is not None:
                mod._buffers[key] = buf.to_global(placement, [B] * len(placement.hierarchy))
    return placement


def to_batch(ids, layout, placement):
    """A global batch of token ids from the full batch ``ids`` (a NumPy array every rank holds)."""
    B = flow.sbp.broadcast
    t = flow.tensor(ids).to_global(placement, [B] * len(placement.hierarchy))
    return t.to_global(sbp=data_sbp("dp" if layout == "zero2" else layout))
