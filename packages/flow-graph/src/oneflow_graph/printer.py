"""The IR as readable text (``graph.debug(0)``, ``print(ir)``)."""
from .structure import map_leaves


def _attr(v):
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_attr(x) for x in v) + "]"
    return str(v)


def _ref(v):
    return "None" if v is None else repr(v)


def format_node(n, show_location=False):
    args = [_ref(v) for v in n.inputs]
    args += [f"{k}={_attr(v)}" for k, v in n.attrs.items() if k != "_list_lengths"]
    if "_list_lengths" in n.attrs:
        args.append(f"lists={_attr(n.attrs['_list_lengths'])}")
    call = f"{n.name}({', '.join(args)})"
    outs = n.new_outputs()
    if outs:
        line = ", ".join(f"{v!r}: {v.type_str()}" for v in outs) + f" = {call}"
    else:
        line = call
    if n.mutates:
        line += "  # writes " + ", ".join(_ref(n.inputs[i]) for i in n.mutates)
    if show_location and n.location:
        line += ("  # " if not n.mutates else "; ") + n.location
    return line


def format_ir(ir, show_locations=False):
    ins = ", ".join(f"{v!r}: {v.type_str()}" for v in ir.inputs)
    lines = [f"graph {ir.name}({ins}) {{"]
    lines += [f"  var {v!r}: {v.type_str()}" for v in ir.variables]
    lines += [f"  const {v!r}: {v.type_str()}" for v in ir.constants]
    pro = ir.prologue
    if pro is not None:
        lines.append("  prologue (cached while the variables it reads are unchanged) {")
        lines += [f"    var {v!r}: {v.type_str()}" for v in pro.ir.variables]
        lines += ["    " + format_node(n, show_locations) for n in pro.ir.nodes]
        shared = list(pro.ir.outputs[:pro.shared_read])
        if pro.local is not None:  # this signature's own part, on results of the shared one
            lines.append("    local (this input signature's) {")
            lines += [f"      {i!r} = {pro.ir.outputs[k]!r}" for i, k in zip(pro.local.ir.inputs, pro.local.bridge)]
            lines += [f"      var {v!r}: {v.type_str()}" for v in pro.local.ir.variables]
            lines += ["      " + format_node(n, show_locations) for n in pro.local.ir.nodes]
            lines.append("    }")
            shared += list(pro.local.ir.outputs)
        lines += [f"    {c!r} = {r!r}" for c, r in zip(pro.cached, shared)]
        lines.append("  }")
    lines += ["  " + format_node(n, show_locations) for n in ir.nodes]
    out = map_leaves(ir.outputs, lambda v: v)
    lines.append(f"  return {out!r}")
    lines.append("}")
    return "\n".join(lines)
