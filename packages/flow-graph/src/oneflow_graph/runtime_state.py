"""``graph.runtime_state_dict()`` / ``load_runtime_state_dict()``: a compiled graph as plain data.

The runtime state holds, for each cached input signature, the optimised IR: its inputs, variables (by the name
they are bound by: ``model.0.weight``, ``model.0.weight-exp_avg``, ``optimizer0.group0.lr``), constants (their
values), nodes (registry op name, attributes, the values they read, define and write) and the returned
structure; plus the graph's state (:meth:`Graph.state_dict`) and the values of tensors the graph captured from
outside its modules. Everything is ints, floats, strings, dtypes, devices, tensors and plain containers, so
``flow.save`` writes it without pickling and ``flow.load`` reads it without running code from the file. Values of
types that registered a plain form (flow-dist's placements, sbps and global tensors: see plain_types.py) are
saved in it, and rebuilt at load among the registered types only.

Each rank of a job saves and loads its own runtime state: a global graph's plan is that rank's (its shards, its
pipeline stage and its collectives), so the header records the rank and the job's size and loading checks them.

Loading checks the whole file (format, graph class, every op, attribute, name and shape) before it changes
anything; then it loads the state, binds the variables by name to the graph's tensors and lowers each IR to a
plan: the next call with a saved signature runs without tracing or compiling.
"""
import collections
from collections.abc import Mapping

import oneflow as flow
from oneflow import _C

from . import plain_types
from . import state as _state
from .effects import EXTERNAL_STATE
from .ir import CONSTANT, INPUT, NODE, VARIABLE, GraphIR, Node, Value
from .passes.hoist_variables import flat_parts, hoist_variables
from .tracer import Wrapped

FORMAT = "oneflow_graph.runtime_state"
VERSION = 2
READS = (1, 2)  # version 1 files (before plain types and the rank header) read as rank 0 of 1


class RuntimeStateError(RuntimeError):
    """A runtime state that this graph cannot load (another graph's, another version's, or a corrupted one)."""


# ---- plain-data checks ------------------------------------------------------------------------------------
def _plain(obj, where):
    """``obj`` as plain data flow.save stores without pickling (registered types in their plain form: see
    plain_types.py); raises TypeError for anything else."""
    return plain_types.encode(obj, where)


def _job():
    """``(rank, world size)`` of this process (0 and 1 without flow-dist)."""
    env = getattr(flow, "env", None) if _dist_loaded() else None
    if env is None:
        return 0, 1
    return int(env.get_rank()), int(env.get_world_size())


def _dist_loaded():
    import sys

    return "oneflow_dist" in sys.modules


def _wrapper_inner(t):
    """``[(attr, inner tensor)]`` of a traceable tensor subclass (a global tensor: its shard), else None."""
    flatten = getattr(type(t), "__tensor_flatten__", None)
    if flatten is None:
        return None
    names, _ = t.__tensor_flatten__()
    return [(n, getattr(t, n)) for n in names]


def _encode_states(obj, where):
    """A state dict with each tensor of a registered type (a global tensor) in its plain form; the containers
    (and a state dict's ``_metadata``) as they are."""
    if isinstance(obj, flow.Tensor):
        return plain_types.encode(obj, where) if _wrapper_inner(obj) is not None else obj
    if isinstance(obj, Mapping):
        out = type(obj)() if type(obj) is not dict else {}
        for k, v in obj.items():
            out[k] = _encode_states(v, f"{where}.{k}" if where else str(k))
        if hasattr(obj, "_metadata"):
            out._metadata = obj._metadata
        return out
    return obj


def _decode_states(obj):
    if isinstance(obj, Mapping) and plain_types.MARK not in obj:
        out = type(obj)() if type(obj) is not dict else {}
        for k, v in obj.items():
            out[k] = _decode_states(v)
        if hasattr(obj, "_metadata"):
            out._metadata = obj._metadata
        return out
    if isinstance(obj, Mapping):
        return plain_types.decode(obj)
    return obj


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
def _value_record(v, remap=None):
    base = None if v.alias_of is None else (remap or {}).get(id(v.alias_of), v.alias_of)
    return {"id": v.id, "shape": list(v.shape), "dtype": v.dtype, "device": str(v.device),
            "alias_of": None if base is None else base.id, "contiguous": bool(v.contiguous)}


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
        return {"dict": [[_plain(k, f"{where} (dict key)"), _encode_structure(v, where, remap)]
                         for k, v in obj.items()]}
    if isinstance(obj, Wrapped):  # a tensor subclass (a global tensor) rebuilt from its inner values
        cls = plain_types.name_of(obj.cls)
        if cls is None:
            _plain(obj.cls, where)  # raises: the class has no registered plain form
        return {"wrapped": cls, "names": list(obj.names), "ctx": _plain(obj.ctx, f"{where} (layout)"),
                "shape": list(obj.shape), "stride": None if obj.stride is None else list(obj.stride),
                "inner": [_encode_structure(x, where, remap) for x in obj.inner]}
    return {"py": _plain(obj, where)}


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
    defined = {v.id for v in ir.inputs} | {v.id for v in all_variables} | {v.id for v in all_constants}
    steps = ir.__dict__.get("pipeline_steps") or {}  # node -> its pipeline step ("F", j), where scheduled
    for n in all_nodes:
        if n.name in EXTERNAL_STATE:
            raise RuntimeError(f"{where}: op {n.name} reads a store that lives in this process (OneEmbedding); its "
                               f"runtime state cannot be saved: save the embedding with save_snapshot() and the "
                               f"graph with state_dict(), and let the graph compile again after loading")
        attrs = {k: _plain(a, f"{where}: attribute {k!r} of op {n.name}") for k, a in n.attrs.items()}
        new = [_value_record(v, remap) for v in n.new_outputs()]
        for r in new:  # the loader rebuilds views from their bases: a base must be a value of this plan
            if r["alias_of"] is not None and r["alias_of"] not in defined:
                raise RuntimeError(f"{where}: op {n.name} (at {n.location}) returns a view of value "
                                   f"{r['alias_of']}, which this plan does not define; the plan cannot be saved")
            defined.add(r["id"])
        nodes.append({
            "op": n.name, "inputs": [ref(v) for v in n.inputs], "attrs": attrs,
            "outputs": [ref(v) for v in n.outputs],
            "new": new, "multi": bool(n.multi),
            "mutates": list(n.mutates), "location": n.location,
            "step": _plain(steps.get(id(n)), f"{where}: the pipeline step of op {n.name}"),
        })
    return {
        "name": ir.name,
        "inputs": [_value_record(v) for v in ir.inputs],
        "variables": variables,
        "constants": [dict(_value_record(v), **_saved_value(v.tensor)) for v in all_constants],
        "nodes": nodes,
        "outputs": _encode_structure(ir.outputs, f"{where}: an output", remap),
        "hoisted": ir.prologue is not None,
        "pipeline": _plain(ir.__dict__.get("pipeline"), f"{where}: the pipeline schedule"),
    }


def runtime_state_dict(graph):
    entries = list(graph._cache.items())
    if not entries:
        raise RuntimeError(f"{graph.name}.runtime_state_dict(): the graph has no compiled plan to save yet; call "
                           f"it first (a training graph whose optimizers make their state on the first call needs "
                           f"a second call for its steady plan)")
    names = {}
    for n, t in _state.named_tensors(graph).items():
        names.setdefault(id(t), n)
        inner = _wrapper_inner(t)
        for attr, x in inner or ():  # a global tensor reaches the plan as its shard, named like the tensor
            names.setdefault(id(x), n if len(inner) == 1 else f"{n}.{attr}")
    signatures = []
    for i, (key, entry) in enumerate(entries):
        where = f"{graph.name}.runtime_state_dict() signature {i}"
        signatures.append({"signature": _plain(key, f"{where}: the input signature"),
                           "ir": encode_ir(entry.ir, names, where),
                           "example": [str(d) for d in entry.example[0]]})
    rank, world = _job()
    return {
        "format": FORMAT, "version": VERSION, "graph_class": _class_name(graph), "graph_name": graph.name,
        "rank": rank, "world_size": world,
        "training": bool(graph.training), "num_optimizers": len(graph._opts),
        "grad_scaler": graph.__dict__.get("_grad_scaler") is not None,
        "oneflow_version": getattr(flow, "__version__", ""),
        "states": _encode_states(graph.state_dict(), ""), "signatures": signatures,
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
    bindings, steps = {}, {}
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
        attrs = {k: plain_types.decode(a) for k, a in attrs.items()}
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
        if r.get("step") is not None:
            steps[id(node)] = _freeze_key(r["step"])
    if steps:
        ir.pipeline_steps = steps
    ir._next = max(by_id, default=-1) + 1

    def structure(s):
        if not isinstance(s, dict) or len(s) not in (1, 3, 6):
            raise ValueError("the output structure is malformed")
        if "wrapped" in s:
            stride = s["stride"]
            return Wrapped(plain_types.lookup(s["wrapped"]), [str(n) for n in s["names"]],
                           plain_types.decode(s["ctx"]), tuple(int(d) for d in s["shape"]),
                           None if stride is None else tuple(int(d) for d in stride),
                           [structure(x) for x in s["inner"]])
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
            return plain_types.decode(s["py"])
        raise ValueError("the output structure is malformed")

    ir.outputs = structure(rec["outputs"])
    pipeline = rec.get("pipeline")
    if pipeline is not None:  # the 1F1B schedule the nodes were ordered by (pipeline.py), for who reads it
        if not isinstance(pipeline, dict):
            raise ValueError("the pipeline schedule is not a dict")
        ir.pipeline = plain_types.decode(pipeline)
    hoisted = rec.get("hoisted", False)
    if not isinstance(hoisted, bool):
        raise ValueError("the 'hoisted' flag is not a bool")
    return ir, bindings, hoisted


def check_header(graph, sd):
    where = f"{graph.name}.load_runtime_state_dict()"
    if not isinstance(sd, dict) or sd.get("format") != FORMAT:
        raise RuntimeStateError(f"{where}: this is not a graph runtime state (as written by "
                                f"graph.runtime_state_dict()); nothing was loaded")
    if sd.get("version") not in READS:
        raise RuntimeStateError(f"{where}: runtime state version {sd.get('version')!r}, this flow-graph reads "
                                f"versions {', '.join(map(str, READS))}; nothing was loaded")
    rank, world = _job()
    saved = (sd.get("rank", 0), sd.get("world_size", 1))
    if saved[1] != world:
        raise RuntimeStateError(f"{where}: the runtime state was saved by a job of {saved[1]} rank(s), this job has "
                                f"{world}; each rank loads the file its own rank saved, in a job of the same size; "
                                f"nothing was loaded")
    if saved[0] != rank:
        raise RuntimeStateError(f"{where}: the runtime state was saved by rank {saved[0]}, this is rank {rank}; "
                                f"each rank loads its own file (its plan is its own); nothing was loaded")
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
        states = _decode_states(sd["states"])
    except plain_types.UnknownPlainType as e:
        raise RuntimeStateError(f"{where}: {e}; nothing was loaded") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise RuntimeStateError(f"{where}: the saved state cannot be rebuilt in this job ({type(e).__name__}: "
                                f"{e}); nothing was loaded") from None
    _check_layouts(graph, states, where)
    try:
        actions = _state.plan_load(graph, states, strict=True)
    except (RuntimeError, TypeError) as e:
        raise RuntimeStateError(f"{where}: the saved state does not fit this graph's modules and optimizers: "
                                f"{e}") from None
    # what each variable name will be bound to: the graph's own tensors, or optimizer state the load makes
    known = {}
    for n, t in _state.named_tensors(graph).items():
        for name, x in _bound_tensors(n, t):
            known[name] = (tuple(x.shape), x.dtype)
    for key, value in states.items():
        if isinstance(value, flow.Tensor):
            for name, x in _bound_tensors(key, value):
                known.setdefault(name, (tuple(x.shape), None))
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
            key = _freeze_key(plain_types.decode(s["signature"]))
            decoded.append(_Decoded(key, ir, bindings, [str(d) for d in s["example"]], hoisted))
    except plain_types.UnknownPlainType as e:
        raise RuntimeStateError(f"{where}: {e}; nothing was loaded") from None
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
        bound = {}
        for n, t in tensors.items():
            bound.update(_bound_tensors(n, t))
        for v, (captured, stride) in d.bindings.items():
            t = captured if captured is not None else bound[v.name]
            if t.dtype != v.dtype or tuple(t.shape) != v.shape:
                raise RuntimeStateError(f"{graph.name}.load_runtime_state_dict(): variable {v.name!r} is "
                                        f"{t.dtype}{list(t.shape)} after loading, {v.dtype}{list(v.shape)} in the "
                                        f"saved plan")
            v.tensor = t
        if d.hoisted:  # its prologue runs (and fills the cache) on the first call
            hoist_variables(d.ir)
        out.append((d.key, d.ir, d.example))
    return out


def _bound_tensors(name, t):
    """``[(variable name, tensor)]`` that a plan binds for the graph tensor ``t`` named ``name``: ``t`` itself, or
    for a global tensor its shard (the plan runs on shards)."""
    inner = _wrapper_inner(t)
    if inner is None:
        return [(name, t)]
    return [(name if len(inner) == 1 else f"{name}.{attr}", x) for attr, x in inner]


def _layout(t):
    return (t.placement, tuple(t.sbp)) if _wrapper_inner(t) is not None else None


def _check_layouts(graph, states, where):
    """Raises RuntimeStateError when a saved tensor lies on another placement or sbp than the graph's own (the
    saved plan runs on the saved shards)."""
    mine = _state.state_dict(graph)

    def walk(saved, own, key):
        if isinstance(saved, Mapping) and isinstance(own, Mapping):
            for k, v in saved.items():
                if k in own:
                    walk(v, own[k], f"{key}.{k}" if key else str(k))
        elif isinstance(saved, flow.Tensor) and isinstance(own, flow.Tensor):
            a, b = _layout(saved), _layout(own)
            if a != b:
                def say(x):
                    return "a local tensor" if x is None else f"placement {x[0]!r} with sbp {x[1]}"

                raise RuntimeStateError(f"{where}: {key!r} was saved as {say(a)}, this graph's is {say(b)}; the "
                                        f"graph must be laid out as the saved one was; nothing was loaded")

    walk(states, mine, "")
