"""What one rank's share of a GPT model saves for backward, measured by running it on the meta device (shapes
and dtypes, no storage, no kernels) through the real autograd with saved-tensor hooks, and what it holds in
parameters. The layer is Megatron-LM's tensor-parallel one: the QKV and first MLP linears column-split (``S(1)``
weights: ``3h/t`` and ``4h/t`` outputs, ``a/t`` heads), the attention output and second MLP linears row-split
(their partial outputs all-reduced), LayerNorms and biases after the reductions replicated; dropout after the
attention probabilities, the attention output and the MLP, as in the papers' activation-memory accounting."""
import math

import oneflow as flow

F = flow.nn.functional


class _Layer(flow.nn.Module):
    def __init__(self, hidden, heads, tp, dropout, dtype):
        super().__init__()
        kw = {"device": "meta", "dtype": dtype}
        self.heads, self.head_dim, self.dropout = heads // tp, hidden // heads, dropout
        self.ln1 = flow.nn.LayerNorm(hidden, **kw)
        self.qkv = flow.nn.Linear(hidden, 3 * hidden // tp, **kw)
        self.proj = flow.nn.Linear(hidden // tp, hidden, **kw)
        self.ln2 = flow.nn.LayerNorm(hidden, **kw)
        self.fc = flow.nn.Linear(hidden, 4 * hidden // tp, **kw)
        self.out = flow.nn.Linear(4 * hidden // tp, hidden, **kw)

    def forward(self, x):  # x: (seq, batch, hidden), Megatron's layout
        s, b, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(self.heads * self.head_dim, dim=-1)
        q, k, v = (t.reshape(s, b * self.heads, self.head_dim).transpose(0, 1) for t in (q, k, v))
        att = flow.bmm(q, k.transpose(1, 2)) * (1.0 / math.sqrt(self.head_dim))
        att = F.dropout(att.softmax(-1), self.dropout, training=True)
        y = flow.bmm(att, v).transpose(0, 1).reshape(s, b, self.heads * self.head_dim)
        x = x + F.dropout(self.proj(y), self.dropout, training=True)  # proj's partial output: all-reduced here
        h = self.out(F.gelu(self.fc(self.ln2(x))))  # out's partial output: all-reduced here
        return x + F.dropout(h, self.dropout, training=True)


def _saved_bytes(run, params):
    """Bytes of the distinct tensors autograd saves while ``run()`` builds its graph, less the parameters and
    views of them (a linear saves its weight transposed)."""
    seen, total = {id(p) for p in params}, [0]

    def pack(t):
        base = getattr(t, "_base", None)
        if id(t) not in seen and (base is None or id(base) not in seen):
            seen.add(id(t))
            total[0] += t.numel() * t.element_size()
        return t
    with flow.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = run()
    return total[0], out


def layer_memory(hidden, heads, seq, micro_batch, tp=1, dropout=0.1, dtype=flow.bfloat16):
    """``(parameters of one rank's layer, bytes one micro-batch's activations take in it until backward)``;
    ``tp`` must divide ``heads`` and ``hidden``. Backward also runs on meta, so the traced step is complete."""
    if heads % tp or hidden % heads:
        raise ValueError(f"plan: tp={tp} must divide heads={heads}, and heads must divide hidden={hidden}")
    layer = _Layer(hidden, heads, tp, dropout, dtype)
    params = list(layer.parameters())
    x = flow.empty(seq, micro_batch, hidden, device="meta", dtype=dtype, requires_grad=True)
    act, out = _saved_bytes(lambda: layer(x), params)
    out.sum().backward()
    return sum(p.numel() for p in params), act


def head_memory(hidden, vocab, seq, micro_batch, tp=1, dtype=flow.bfloat16):
    """The last stage's extra: final LayerNorm, the vocabulary-split LM head and the cross-entropy:
    ``(parameters, activation bytes)`` of one micro-batch."""
    kw = {"device": "meta", "dtype": dtype}
    ln, head = flow.nn.LayerNorm(hidden, **kw), flow.nn.Linear(hidden, vocab // tp, bias=False, **kw)
    params = list(ln.parameters()) + list(head.parameters())
    x = flow.empty(seq * micro_batch, hidden, device="meta", dtype=dtype, requires_grad=True)
    y = flow.zeros(seq * micro_batch, dtype=flow.int64, device="meta")
    act, loss = _saved_bytes(lambda: F.cross_entropy(head(ln(x)).float(), y), params)
    loss.backward()
    return sum(p.numel() for p in params), act


def embedding_params(hidden, vocab, seq, tp=1):
    """The first stage's extra: the vocabulary-split token embedding and the learned positions."""
    return vocab // tp * hidden + seq * hidden
