"""``repr(graph)`` in OneFlow's format: the graph, its config, inputs, module tree and outputs."""
from .structure import leaves


def _tensor(t):
    grad = ", requires_grad=True" if t.requires_grad else ""
    return f"tensor(..., size={tuple(t.shape)}, dtype={t.dtype}{grad})"


def _module(name, m, indent, lines):
    pad = "  " * indent
    extra = m.extra_repr() if hasattr(m, "extra_repr") else ""
    lines.append(f"{pad}(MODULE:{name}:{type(m).__name__}({extra})): (")
    for pn, p in m.named_parameters(recurse=False):
        lines.append(f"{pad}  (PARAMETER:{name}.{pn}:{_tensor(p)}): ()")
    for bn, b in m.named_buffers(recurse=False):
        lines.append(f"{pad}  (BUFFER:{name}.{bn}:{_tensor(b)}): ()")
    for cn, c in m.named_children():
        _module(f"{name}.{cn}", c, indent + 1, lines)
    lines.append(f"{pad})")


def graph_repr(graph):
    lines = [f"(GRAPH:{graph.name}:{type(graph).__name__}): ("]
    lines.append(f"  (CONFIG:config:{graph.config!r})")
    last = graph._last
    if last is not None:
        for i, d in enumerate(last.example[0]):
            lines.append(f"  (INPUT:_{graph.name}_input.{i}:{d})")
    for name, m in graph._modules.items():
        _module(name, m, 1, lines)
    if last is not None:
        from .ir import Value

        outs = [v for v in leaves(last.example[1]) if isinstance(v, Value)]
        for i, v in enumerate(outs):
            lines.append(f"  (OUTPUT:_{graph.name}_output.{i}:tensor(..., size={v.shape}, dtype={v.dtype}))")
    lines.append(")")
    return "\n".join(lines)
