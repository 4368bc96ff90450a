"""``graph.runtime_state_dict()`` / ``load_runtime_state_dict()``: a compiled graph as plain data.

The runtime state holds, for each cached input signature, the optimised IR: its inputs, variables (by the name
they are bound by: ``model.0.weight``, ``model.0.weight-exp_avg``, ``optimizer0.group0.lr``), constants (their
values), nodes (registry op name, attributes, the values they read, define and write) and the returned
structure; plus the graph's state (:meth:`Graph.state_dict`) and the values of tensors the graph captured from
outside its modules. Everything is ints, floats, strings, dtypes, devices, tensors and plain containers, so
``flow.save`` writes it without pickling and ``flow.load`` reads it without running code from the file.

Loading checks the whole file (format, graph class, every op, attribute, name and shape) before it changes
anything; then it loads the state, binds the variables by name to the graph's tensors and lowers each IR to a
plan: the next call with a saved signature runs without tracing or compiling.
"""
import collections

import oneflow as flow
from oneflow import _C

from . import state as _state
from .effects import EXTERNAL_STATE
from .ir import CONSTANT, INPUT, NODE, VARIABLE, GraphIR, Node, Value
from .passes.hoist_variables import flat_parts, hoist_variables

FORMAT = "oneflow_graph.runtime_state"
VERSION = 1


class RuntimeStateError(RuntimeError):
    """A runtime state that this graph cannot load (another graph's, another version's, or a corrupted one)."""


# ---- plain-data checks ------------------------------------------------------------------------------------
def _plain(obj, where):
    """Raises TypeError unless ``obj`` is plain data flow.save stores without pickling."""
    if obj is None or type(obj) in (bool, int, float, str):
        return
    if isinstance(obj, (_C.dtype, _C.device)):
        return
    if type(obj) in (list, tuple):
        for i, x in enumerate(obj):
            _plain(x, f"{where}[{i}]")
        return
    if type(obj) is dict:
        for k, v in obj.items():
            _plain(k, f"{where} key")
            _plain(v, f"{where}[{k!r}]")
        return
    raise TypeError(f"runtime_state_dict(): {where} is a {type(obj).__module__}.{type(obj).__qualname__}, which a "
                    f"runtime state cannot hold as plain data")


def _is_wrapped_number(t):
    """Whether ``t`` is a Python number the binding wrapped into a 0-dim tensor: such a tensor is weaker than a
    0-dim tensor in type promotion, a flag the tensor format does not keep. Told by promotion itself: a wrapped
    number leaves a small dtype of the same kind as it was."""
    if t.dim() != 0:
        return False
    if t.dtype == flow.float64 or t.dtype == flow.float32:
        return (flow.zeros((), dtype=flow.float16) + t).dtype == flow.float16
    if t.dtype == flow.int64:
        return (flow.zeros((), dtype=flow.int8) + t).dtype == flow.int8
    return False


def _saved_value(t):
    return {"tensor": t.detach().clone(), "wrapped": _is_wrapped_number(t)}


def _restored_value(rec, shape, dtype, what):
    t = rec["tensor"]
    if not isinstance(t, flow.Tensor) or tuple(t.shape) != tuple(shape) or t.dtype != dtype:
        raise ValueError(f"{what}: the saved tensor does not match its shape and dtype")
    if rec["wrapped"]:
        t = _C._wrapped_scalar(t.item())
        if t.dtype != dtype:
            raise ValueError(f"{what}: a wrapped number of dtype {dtype}")
    return t


def _class_name(graph):
    return f"{type(graph).__module__}.{type(graph).__qualname__}"


# ---- saving -------------------------------------------------------------------------------------------------
def _value_record(v):
    return {"id": v.id, "shape": list(v.shape), "dtype": v.dtype, "device": str(v.device),
            "alias_of": None if v.alias_of is None else v.alias_of.id, "contiguous": bool(v.contiguous)}


def _encode_structure(obj, where, remap=None):
    remap = remap or {}
    if isinstance(obj, Value):
        return {"v": remap.get(id(obj), obj).id}
    if isinstance(obj, tuple) and hasattr(type(obj), "_fields"):
        return {"namedtuple": type(obj).__name__, "fields": list(type(obj)._fields),
                "items": [_encode_structure(x, where, remap) for x in obj]}
    if isinstance(obj, tuple):
        return {"tuple": [_encode_structure(x, where, remap) for x in obj]}
    if isinstance(obj, list):
        return {"list": [_encode_structure(x, where, remap) for x in obj]}
    if isinstance(obj, dict):
        _plain(list(obj), f"{where} (dict keys)")
        return {"dict": [[k, _encode_structure(v, where, remap)] for k, v in obj.items()]}
    _plain(obj, where)
    return {"py": obj}


def encode_ir(ir, names, where):
    """The IR as plain data; ``names`` maps ``id(tensor)`` to the name its variable is bound by."""
    if ir.escaped:
        raise RuntimeError(f"{where}: this plan hands new optimizer state to the optimizer (a first step); only "
                           f"steady plans are saved")
    # a hoisted IR is saved as it was before hoisting (its prologue in front): the loading graph hoists again
    all_variables, all_constants, all_nodes, remap = flat_parts(ir)

    def ref(v):
        return None if v is None else remap.get(id(v), v).id

    variables = []
    for v in all_variables:
        rec = dict(_value_record(v), stride=list(v.tensor.stride()))
        name = names.get(id(v.tensor))
        if name is None:  # captured from outside the modules: saved by value
            rec["captured"] = _saved_value(v.tensor)
        rec["name"] = name or v.name
        variables.append(rec)
    nodes = []
    for n in all_nodes:
        if n.name in EXTERNAL_STATE:
            raise RuntimeError(f"{where}: op {n.name} reads a store that lives in this process (OneEmbedding); its "
                               f"runtime state cannot be saved: save the embedding with save_snapshot() and the "
                               f"graph with state_dict(), and let the graph compile again after loading")
        for k, a in n.attrs.items():
            _plain(a, f"{where}: attribute {k!r} of op {n.name}")
        nodes.append({
            "op": n.name, "inputs": [ref(v) for v in n.inputs], "attrs": dict(n.attrs),
            "outputs": [ref(v) for v in n.outputs],
            "new": [_value_record(v) for v in n.new_outputs()], "multi": bool(n.multi),
            "mutates": list(n.mutates), "location": n.location,
        })
    return {
        "name": ir.name,
        "inputs": [_value_record(v) for v in ir.inputs],
        "variables": variables,
        "constants": [dict(_value_record(v), **_saved_value(v.tensor)) for v in all_constants],
        "nodes": nodes,
        "outputs": _encode_structure(ir.outputs, f"{where}: an output", remap),
        "hoisted": ir.prologue is not None,
    }


def runtime_state_dict(graph):
    entries = list(graph._cache.items())
    if not entries:
        raise RuntimeError(f"{graph.name}.runtime_state_dict(): the graph has no compiled plan to save yet; call "
                           f"it first (a training graph whose optimizers make their state on the first call needs "
                           f"a second call for its steady plan)")
    names = {id(t): n for n, t in _state.named_tensors(graph).items()}
    signatures = []
    for i, (key, entry) in enumerate(entries):
        where = f"{graph.name}.runtime_state_dict() signature {i}"
        _plain(key, f"{where}: the input signature")
        signatures.append({"signature": key, "ir": encode_ir(entry.ir, names, where),
                           "example": [str(d) for d in entry.example[0]]})
    return {
        "format": FORMAT, "version": VERSION, "graph_class": _class_name(graph), "graph_name": graph.name,
        "training": bool(graph.training), "num_optimizers": len(graph._opts),
        "grad_scaler": graph.__dict__.get("_grad_scaler") is not None,
        "oneflow_version": getattr(flow, "__version__", ""),
        "states": graph.state_dict(), "signatures": signatures,
    }


# ---- loading ------------------------------------------------------------------------------------------------
def _freeze_key(obj):
    # flow.load gives tuples back as tuples; lists (from other writers) are normalised so the key is hashable
    if isinstance(obj, list):
        return tuple(_freeze_key(x) for x in obj)
    if isinstance(obj, tuple):
        return tuple(_freeze_key(x) for x in obj)
    return obj


def _new_value(ir, rec, kind, **kw):
    v = Value(int(rec["id"]), kind, tuple(int(s) for s in rec["shape"]), rec["dtype"], flow.device(rec["device"]),
              contiguous=bool(rec["contiguous"]), **kw)
    if not isinstance(v.dtype, _C.dtype):
        raise TypeError(f"value {v.id}: dtype {rec['dtype']!r} is not a dtype")
    return v


class _Decoded:
    """An IR read from a runtime state, with its variables still to be bound (``bindings``: Value -> name or a
    captured tensor)."""

    def __init__(self, key, ir, bindings, example, hoisted=False):
        self.key, self.ir, self.bindings, self.example = key, ir, bindings, example
        self.hoisted = hoisted  # saved from a hoisted IR: hoisted again once its variables are bound


def decode_ir(rec, where):
    ir = GraphIR(str(rec["name"]))
    by_id = {}

    def get(i):
        if i is None:
            return None
        v = by_id.get(int(i))
        if v is None:
            raise ValueError(f"value {i} is used before it is defined")
        return v

    def define(v):
        if v.id in by_id:
            raise ValueError(f"value {v.id} is defined twice")
        by_id[v.id] = v
        return v

    for k, r in enumerate(rec["inputs"]):
        v = define(_new_value(ir, r, INPUT, index=k))
        v.name = f"in{k}"
        ir.inputs.append(v)
    bindings = {}
    for r in rec["variables"]:
        v = define(_new_value(ir, r, VARIABLE, name=str(r["name"])))
        captured = r.get("captured")
        if captured is not None:
            captured = _restored_value(captured, v.shape, v.dtype, f"captured variable {v.name}")
        bindings[v] = (captured, [int(s) for s in r["stride"]])
        ir.variables.append(v)
    for r in rec["constants"]:
        v = define(_new_value(ir, r, CONSTANT))
        v.tensor = _restored_value(r, v.shape, v.dtype, f"constant {v.id}")
        v.name = f"c{len(ir.constants)}"
        ir.constants.append(v)
    for r in rec["nodes"]:
        name = r["op"]
        op = getattr(_C.ops, name, None) if isinstance(name, str) else None
        if op is None:
            raise ValueError(f"op {name!r} is not in this build's op registry")
        attrs = r["attrs"]
        if not isinstance(attrs, dict):
            raise ValueError(f"op {name}: attributes are not a dict")
        node = Node(op, [get(i) for i in r["inputs"]], attrs, [], [int(i) for i in r["mutates"]],
                    r.get("location"), bool(r["multi"]))
        for i in node.mutates:
            if not 0 <= i < len(node.inputs) or node.inputs[i] is None:
                raise ValueError(f"op {name}: writes input {i}, which it does not have")
        new = {}
        for nr in r["new"]:
            alias = get(nr["alias_of"])
            new[int(nr["id"])] = define(_new_value(ir, nr, NODE, producer=node, alias_of=alias))
        node.outputs = [None if i is None else (new.get(int(i)) or get(i)) for i in r["outputs"]]
        if not node.multi and len(node.outputs) != 1:
            raise ValueError(f"op {name}: a single-output op with {len(node.outputs)} outputs")
        ir.nodes.append(node)
    ir._next = max(by_id, default=-1) + 1

    def structure(s):
        if not isinstance(s, dict) or len(s) not in (1, 3):
            raise ValueError("the output structure is malformed")
        if "v" in s:
            return get(s["v"])
        if "tuple" in s:
            return tuple(structure(x) for x in s["tuple"])
        if "list" in s:
            return [structure(x) for x in s["list"]]
        if "dict" in s:
            return {k: structure(v) for k, v in s["dict"]}
        if "namedtuple" in s:
            cls = collections.namedtuple(str(s["namedtuple"]), [str(f) for f in s["fields"]])
            return cls(*(structure(x) for x in s["items"]))
        if "py" in s:
            return s["py"]
        raise ValueError("the output structure is malformed")

    ir.outputs = structure(rec["outputs"])
    hoisted = rec.get("hoisted", False)
    if not isinstance(hoisted, bool):
        raise ValueError("the 'hoisted' flag is not a bool")
    return ir, bindings, hoisted


def check_header(graph, sd):
    where = f"{graph.name}.load_runtime_state_dict()"
    if not isinstance(sd, dict) or sd.get("format") != FORMAT:
        raise RuntimeStateError(f"{where}: this is not a graph runtime state (as written by "
                                f"graph.runtime_state_dict()); nothing was loaded")
    if sd.get("version") != VERSION:
        raise RuntimeStateError(f"{where}: runtime state version {sd.get('version')!r}, this flow-graph reads "
                                f"version {VERSION}; nothing was loaded")
    if sd.get("graph_class") != _class_name(graph):
        raise RuntimeStateError(f"{where}: the runtime state was saved from a graph of class "
                                f"{sd.get('graph_class')}, not {_class_name(graph)}; nothing was loaded")
    for key, mine in (("training", bool(graph.training)), ("num_optimizers", len(graph._opts)),
                      ("grad_scaler", graph.__dict__.get("_grad_scaler") is not None)):
        if sd.get(key) != mine:
            raise RuntimeStateError(f"{where}: the saved graph had {key}={sd.get(key)!r}, this one has {mine!r} "
                                    f"(the graph must be set up as the saved one was); nothing was loaded")


def plan_runtime_load(graph, sd):
    """Checks and decodes ``sd`` without changing the graph; returns what :func:`apply_runtime_load` needs."""
    check_header(graph, sd)
    where = f"{graph.name}.load_runtime_state_dict()"
    try:
        actions = _state.plan_load(graph, sd["states"], strict=True)
    except (RuntimeError, TypeError) as e:
        raise RuntimeStateError(f"{where}: the saved state does not fit this graph's modules and optimizers: "
                                f"{e}") from None
    # what each variable name will be bound to: the graph's own tensors, or optimizer state the load makes
    known = {n: (tuple(t.shape), t.dtype) for n, t in _state.named_tensors(graph).items()}
    for key, value in sd["states"].items():
        if isinstance(value, flow.Tensor):
            known.setdefault(key, (tuple(value.shape), None))
    decoded = []
    try:
        for i, s in enumerate(sd["signatures"]):
            ir, bindings, hoisted = decode_ir(s["ir"], f"signature {i}")
            for v, (captured, _) in bindings.items():
                if captured is not None:
                    continue
                if v.name not in known:
                    raise ValueError(f"variable {v.name!r} names no parameter, buffer or optimizer state of "
                                     f"this graph")
                shape, dtype = known[v.name]
                if shape != v.shape or (dtype is not None and dtype != v.dtype):
                    raise ValueError(f"variable {v.name!r} is {v.dtype}{list(v.shape)} in the runtime state, "
                                     f"{dtype}{list(shape)} in this graph")
            decoded.append(_Decoded(_freeze_key(s["signature"]), ir, bindings, [str(d) for d in s["example"]],
                                    hoisted))
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise RuntimeStateError(f"{where}: the runtime state is corrupted or from another graph ({type(e).__name__}: "
                                f"{e}); nothing was loaded") from None
    return actions, decoded


def apply_runtime_load(graph, actions, decoded):
    """Loads the state, binds each IR's variables and returns ``[(signature, ir, example)]``."""
    _state.apply_load(graph, actions, strict=True)
    tensors = _state.named_tensors(graph)
    out = []
    for d in decoded:
        for v, (captured, stride) in d.bindings.items():
            t = captured if captured is not None else tensors[v.name]
            if t.dtype != v.dtype or tuple(t.shape) != v.shape:
                raise RuntimeStateError(f"{graph.name}.load_runtime_state_dict(): variable {v.name!r} is "
                                        f"{t.dtype}{list(t.shape)} after loading, {v.dtype}{list(v.shape)} in the "
                                        f"saved plan")
            v.tensor = t
        if d.hoisted:  # its prologue runs (and fills the cache) on the first call
            hoist_variables(d.ir)
        out.append((d.key, d.ir, d.example))
    return out
