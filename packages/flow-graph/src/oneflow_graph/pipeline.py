"""Pipeline parallelism inside ``nn.Graph``: modules made stages with ``module.to(GraphModule).set_stage(i,
placement)`` and gradient accumulation's micro-batches run as a pipeline: by default in the zero-bubble ZB-H1
order (Qi et al.), or in 1F1B's (PipeDream-Flush, as OneFlow and Megatron-LM) with
``graph.config.set_pipeline_schedule("1f1b")``.

Every rank traces the whole ``build`` on global tensors: ops on a placement that does not hold this rank compute
nothing there (flow-dist's rule), and the placement change between two stages is a ``dist_send`` on the ranks
of the one and a ``dist_recv`` on the ranks of the other, its gradient the reverse pair in the backward. So each
rank's plan holds its own stage's work and transfers. Gradient accumulation traces micro-batch ``j``'s forward
``F_j`` and backward ``B_j`` one after the other; :func:`schedule` then reorders this rank's plan into its
stage's order. 1F1B's: ``stages - i - 1`` warm-up forwards, then one forward and one backward in turn, then the
remaining backwards (:func:`oneflow_dist.plan.schedule.one_f_one_b`, the order of flow-dist's eager pipeline),
so that a stage holds the activations of at most ``stages - i`` micro-batches. ZB-H1's: each backward split
(:func:`split_backward`) into ``B``, what the gradient sent to the previous stage needs, and ``W``, the weight
gradients; the ``F`` and ``B`` steps in 1F1B's order, stage ``i`` running ``W_j`` after ``B_{j+i}``
(:func:`oneflow_dist.plan.schedule.zero_bubble_h1`), so that the gradients go back sooner and the ``W`` steps
fill the time 1F1B's stages wait (a third of 1F1B's bubble for steps of equal length); a stage holds at most
``stages - i`` micro-batches between ``F`` and ``B`` and ``stages`` between ``F`` and ``W``. Sends never wait
(their buffers are kept until the plan's last step), receives wait for their message, and every transfer of the
trace has its own tag, so the ranks' different orders always match up and never deadlock. The optimizers step
after the last micro-batch, in the plan's last steps.
"""
import contextlib

import oneflow as flow

from .ir import NODE
from .structure import map_leaves
from .tracer import active_mode


def staged_modules(modules):
    """``[(name, GraphModule)]`` of the modules (and submodules) of a graph given a stage with ``set_stage``."""
    out, seen = [], set()
    for prefix, top in modules.items():
        for name, m in top.named_modules(prefix=prefix):
            proxy = m.__dict__.get("_graph_module_proxy")
            if proxy is not None and proxy.stage_id is not None and id(m) not in seen:
                seen.add(id(m))
                out.append((name, proxy))
    return out


class Stages:
    """The stages of a graph: ``placements[i]`` is stage ``i``'s placement; ``index`` this rank's stage (None
    when no stage holds this rank)."""

    def __init__(self, placements, index):
        self.placements, self.index = placements, index

    def __len__(self):
        return len(self.placements)


def check(graph_name, staged):
    """The :class:`Stages` of ``staged`` (from :func:`staged_modules`); raises ValueError for stage ids that
    are not ``0 .. n-1``, one stage given two placements, two stages sharing a rank, or a stage without a
    placement."""
    by_id = {}
    for name, proxy in staged:
        sid, placement = proxy.stage_id, proxy.stage_placement
        if placement is None:
            raise ValueError(f"{graph_name}: module '{name}' is stage {sid} but has no placement; call "
                             f"set_stage({sid}, placement) (or make its parameters global on one placement first)")
        prev = by_id.setdefault(sid, (name, placement))
        if prev[1] != placement:
            raise ValueError(f"{graph_name}: stage {sid} is given placement {prev[1]!r} on module '{prev[0]}' and "
                             f"{placement!r} on module '{name}'; a stage has one placement")
    ids = sorted(by_id)
    if ids != list(range(len(ids))):
        raise ValueError(f"{graph_name}: pipeline stage ids must be 0 .. n-1 with none missing, but got {ids}")
    placements = [by_id[i][1] for i in ids]
    world = flow.env.get_world_size()
    owner = {}
    for i, p in enumerate(placements):
        for r in (int(q) for q in p.ranks.reshape(-1)):
            if r >= world:
                raise ValueError(f"{graph_name}: stage {i}'s placement {p!r} names rank {r}, but the job has "
                                 f"{world} rank(s)")
            if owner.setdefault(r, i) != i:
                raise ValueError(f"{graph_name}: rank {r} is in the placements of stages {owner[r]} and {i}; each "
                                 f"rank runs one stage of a pipeline")
    return Stages(placements, owner.get(flow.env.get_rank()))


def _to_stage(x, placement):
    if not isinstance(x, flow.Tensor) or not getattr(x, "is_global", False) or x.placement == placement:
        return x
    nd = x.sbp if len(x.sbp) == placement.ranks.ndim else (flow.sbp.broadcast,) * placement.ranks.ndim
    return x.to_global(placement=placement, sbp=nd)


@contextlib.contextmanager
def stage_inputs(graph_name, staged, pipelined):
    """While tracing: the global tensors passed to a staged module move to its stage's placement first (as
    OneFlow moves a stage's inputs). When ``pipelined``, a forward calling a staged module after one of a later
    stage raises ValueError: the stages' 1F1B orders assume data flows from stage i to stage i + 1 (stage i's
    forward waits for stage i - 1's) and would otherwise wait on each other for ever. Yields a callable to
    register with the trace's ``on_backward`` (a backward ends a micro-batch's forward)."""
    handles, last = [], [None]
    for name, proxy in staged:
        placement = proxy.stage_placement

        def pre(module, args, placement=placement, sid=proxy.stage_id, name=name):
            prev = last[0]
            if pipelined and prev is not None and sid < prev[0]:
                raise ValueError(f"{graph_name}: module '{name}' (stage {sid}) runs after module '{prev[1]}' (stage "
                                 f"{prev[0]}) in the forward; pipeline stage ids must follow the order the modules "
                                 f"run in (each stage's input comes from the stage before)")
            last[0] = (sid, name)
            return map_leaves(tuple(args), lambda x: _to_stage(x, placement))

        handles.append(proxy.origin.register_forward_pre_hook(pre))

    def backward_began(start):
        last[0] = None

    try:
        yield backward_began
    finally:
        for h in handles:
            h.remove()


def marking_backwards(fn, mark):
    """``fn`` for the tracer, with ``mark`` told where each traced backward begins."""
    def run(*args, **kwargs):
        active_mode().on_backward.append(mark)
        return fn(*args, **kwargs)

    return run


def adopt_moved_parameters(graph_name, staged, optimizers, modules=()):
    """The optimizers of the graph, and the modules of ``modules`` still holding a parameter that ``set_stage``
    replaced (a weight tied to a staged module's, such as an LM head sharing the token embedding), take the
    global parameters it was replaced by, so ties survive. Raises ValueError for a parameter that two stages
    moved (a tie across stages: it would silently become two parameters)."""
    moved, by = {}, {}
    for name, proxy in staged:
        for key, entry in proxy.__dict__.get("_moved", {}).items():
            prev = moved.get(key)
            if prev is not None and prev[1] is not entry[1] and entry[0] is prev[0]:
                raise ValueError(f"{graph_name}: a parameter of module '{name}' (stage {proxy.stage_id}) is also "
                                 f"a parameter of module '{by[key]}', which set_stage put on another stage; a "
                                 f"tied parameter lives on one stage: leave the other module without a stage and "
                                 f"move the weight where it is read (weight.to_global(placement=...))")
            moved[key], by[key] = entry, name
    if not moved:
        return
    for top in modules:
        for m in top.modules():
            for key, p in list(m._parameters.items()):
                entry = moved.get(id(p)) if p is not None else None
                if entry is not None and entry[0] is p:
                    m._parameters[key] = entry[1]

    def replaced(p):
        entry = moved.get(id(p))
        return entry[1] if entry is not None and entry[0] is p else None

    for opt in optimizers:
        for group in opt.param_groups:
            if all(replaced(p) is None for p in group["params"]):
                continue
            if any(replaced(p) is not None and p in opt.state for p in group["params"]):
                raise RuntimeError(f"{graph_name}: {type(opt).__name__} has stepped parameters that set_stage then "
                                   f"moved to their stage's placement; make the optimizer after set_stage")
            params, seen = [], set()
            for p in group["params"]:
                q = replaced(p)
                q = p if q is None else q
                if id(q) not in seen:  # a tied parameter given as both its old and its new self: once
                    seen.add(id(q))
                    params.append(q)
            group["params"] = params


SCHEDULES = ("1f1b", "zero_bubble")


def schedule(ir, micro_batches, stage, stages, kind="zero_bubble"):
    """Reorders ``ir.nodes`` into stage ``stage``'s pipeline order over ``micro_batches`` (``[(forward nodes,
    backward nodes)]`` per micro-batch, as gradient accumulation traced them): the nodes before the first
    micro-batch (the inputs' split) stay first, those after the last (outputs' packing, optimizer steps) last.
    ``kind`` "1f1b" runs each backward as one step (:func:`oneflow_dist.plan.schedule.one_f_one_b`);
    "zero_bubble" splits it (:func:`split_backward`) and runs ZB-H1's order
    (:func:`oneflow_dist.plan.schedule.zero_bubble_h1`). Records ``ir.pipeline``. Raises RuntimeError when the
    order would read a value before it is made (a forward reading another micro-batch's backward) or move a
    write to a tensor across another micro-batch's use of it."""
    from oneflow_dist.plan.schedule import one_f_one_b, zero_bubble_h1

    if kind not in SCHEDULES:
        raise ValueError(f"pipeline: unknown schedule {kind!r}; the schedules are {list(SCHEDULES)}")
    m = len(micro_batches)
    segment = {("F", j): f for j, (f, _) in enumerate(micro_batches)}
    if kind == "1f1b":
        order = one_f_one_b(stages, m)[stage]
        segment.update({("B", j): b for j, (_, b) in enumerate(micro_batches)})
    else:
        order = zero_bubble_h1(stages, m)[stage]
        live = _live_values(ir)
        for j, (_, b) in enumerate(micro_batches):
            segment[("B", j)], segment[("W", j)] = split_backward(b, lambda v: id(v) in live)
    inside = {id(n) for part in segment.values() for n in part}
    pos = {id(n): i for i, n in enumerate(ir.nodes)}
    at = [pos[id(n)] for part in segment.values() for n in part if id(n) in pos]
    lo, hi = min(at), max(at)
    between = [n for n in ir.nodes[lo:hi + 1] if id(n) not in inside]
    if between:
        raise RuntimeError(f"pipeline: {between[0].name} was traced between micro-batches, outside any")
    new = ir.nodes[:lo] + [n for key in order for n in segment[key] if id(n) in pos] + ir.nodes[hi + 1:]
    try:
        _check_order(ir.nodes, new)
    except RuntimeError as e:
        if kind == "1f1b":
            raise
        raise RuntimeError(f"{e} (in the zero-bubble schedule, which runs each micro-batch's weight gradients "
                           f"later; graph.config.set_pipeline_schedule('1f1b') runs each backward whole)") from None
    ir.nodes = new
    ir.pipeline = {"stage": stage, "stages": stages, "micro_batches": m, "schedule": kind, "order": order}
    ir.pipeline_steps = {id(n): key for key in order for n in segment[key]}
    return ir.pipeline


def run_order(ir):
    """The steps of ``ir``'s pipeline in the order its nodes run (the plan runs them in list order), after the
    passes: a step is listed where one of its nodes follows another step's; nodes the passes made (fusions)
    belong to none. A step all of whose nodes the passes removed is not listed."""
    steps = getattr(ir, "pipeline_steps", {})
    out = []
    for n in ir.nodes:
        key = steps.get(id(n))
        if key is not None and (not out or out[-1] != key):
            out.append(key)
    return out


def _live_values(ir):
    """The ids of the values whose contents matter: read outside the graph, or (transitively) by a node that
    must run (one with effects: collectives, writes, random numbers)."""
    live = set(ir.external_ids())
    for n in reversed(ir.nodes):
        if n.is_effectful() or any(id(v) in live for v in n.new_outputs()):
            live.update(id(v) for v in n.inputs if v is not None)
    return live


def split_backward(nodes, read=lambda v: True):
    """A micro-batch's backward ``nodes`` (in trace order) as ``(B, W)``, each in trace order: ``B`` the nodes
    that this stage's sends (``dist_send``: the gradients for the previous stage) depend on, through the values
    they read and the earlier writes to the tensors they touch; ``W`` the rest (weight gradients and their
    reduction and accumulation), which no other stage waits for. On the first stage nothing is sent back, so all
    of its backward is ``W``.

    The ranks of one stage must run their collectives in one order, but only the first rank of a stage sends:
    the others gather the gradient with it and then drop the result. So a collective none of whose results
    matter on this rank (``read(value)`` is False for each: nothing that must run reads it, even through other
    ops) is counted as a send: it and what it depends on are ``B`` on every rank of the stage."""
    from oneflow_dist._collective_ops import COLLECTIVES

    def sends(n):
        return n.name == "dist_send" or (n.name in COLLECTIVES and not any(read(v) for v in n.new_outputs()))

    deps, last_write, reads = [], {}, {}
    for k, n in enumerate(nodes):
        d = set()
        for i, v in enumerate(n.inputs):
            if v is None:
                continue
            root = id(v.root())
            if v.producer is not None:
                d.add(id(v.producer))
            if root in last_write:  # reads and writes after a write
                d.add(last_write[root])
            if i in n.mutates:  # a write after the reads since the last write
                d.update(reads.pop(root, ()))
                last_write[root] = id(n)
            else:
                reads.setdefault(root, []).append(id(n))
        deps.append(d)
    index = {id(n): k for k, n in enumerate(nodes)}
    need = set()
    for k in reversed(range(len(nodes))):
        if id(nodes[k]) in need or sends(nodes[k]):
            need.add(id(nodes[k]))
            need.update(x for x in deps[k] if x in index)
    return [n for n in nodes if id(n) in need], [n for n in nodes if id(n) not in need]


def _check_order(old, new):
    """Every value is made before it is read, and every write to a tensor keeps its place among the reads and
    writes of that tensor."""
    where = {id(n): i for i, n in enumerate(new)}
    touches = {}
    for k, n in enumerate(old):
        for i, v in enumerate(n.inputs):
            if v is None:
                continue
            if v.kind == NODE and v.producer is not None and where[id(v.producer)] >= where[id(n)]:
                raise RuntimeError(f"pipeline: {n.name} (at {n.location}) reads the result of {v.producer.name}, "
                                   f"which the schedule's order runs after it; a micro-batch's forward must not "
                                   f"read another micro-batch's backward")
            touches.setdefault(id(v.root()), []).append((k, where[id(n)], i in n.mutates))
    for seq in touches.values():
        if not any(w for _, _, w in seq):
            continue
        for a in range(len(seq)):
            for b in range(a + 1, len(seq)):
                (ka, na, wa), (kb, nb, wb) = seq[a], seq[b]
                if (wa or wb) and ka != kb and na > nb:
                    raise RuntimeError("pipeline: the schedule's order would move a write to a tensor across a read "
                                       "or write of it in another micro-batch")
