"""Ahead-of-time autograd: one traced forward and backward for a compiled region (``flow.compile``).

A region whose call autograd must see is traced once per input signature as a *joint* graph: the forward on
proxies (inputs that require grad are proxies that require grad, parameters are variables), then the backward
that the autograd engine issues for ``autograd.grad(outputs, grad targets, grad_outputs)`` with the gradients
of the outputs as further graph inputs. The joint IR is optimised as one (so the backward's recomputations of
views merge with the forward's), then split in two IRs:

- the forward: the region's inputs -> its outputs and the values the backward reads (the *saved* values);
- the backward: the saved values and the outputs' gradients -> one gradient per grad target.

A forward value the backward reads is saved, except for views whose memory is an input, a variable or another
saved value: those the backward recomputes (a view costs nothing, a saved view would copy). Variables are read
by reference in both halves, so the backward reads the parameters as they are when it runs, as eager
autograd's saved parameters do.
"""
import oneflow as flow

from . import effects
from . import passes as _passes
from .errors import GraphTraceError
from .executor import Plan
from .ir import CONSTANT, INPUT, NODE, VARIABLE, GraphIR, Node, Value
from .structure import leaves, map_leaves
from .tracer import TraceMode


class CompiledRegion:
    """One compiled signature of a region.

    Attributes:
        forward (Plan): flat inputs -> ``(outputs, saved values)``.
        backward (Plan or None): ``saved inputs + saved values + output grads`` -> ``[grad per target]``;
            None when nothing requires grad (an inference region).
        differentiable (list of bool): per tensor leaf of the outputs, whether it has a gradient.
        saved_inputs (list of int): positions of the flat inputs the backward reads.
        target_inputs (list of int): positions of the flat inputs that are grad targets.
        target_variables (list of Tensor): the real tensors (parameters, captured tensors) that are targets.
        frozen (list of Tensor): variables that did not require grad when traced (a change recompiles).
        ir_joint, ir_forward, ir_backward (GraphIR): for inspection (``graph.debug``-like printing).
    """

    def __init__(self):
        self.forward = self.backward = None
        self.differentiable, self.saved_inputs, self.target_inputs = [], [], []
        self.target_variables, self.frozen = [], []
        self.ir_joint = self.ir_forward = self.ir_backward = None
        self.report = []

    def still_valid(self):
        """Whether the variables' requires_grad flags are still those the region was traced with."""
        return (all(t.requires_grad for t in self.target_variables)
                and not any(t.requires_grad for t in self.frozen))


def compile_region(fn, args, kwargs, *, name, names, grad, passes=None, ir_hooks=()):
    """Traces ``fn(*args, **kwargs)`` and compiles it (see the module's docstring). ``grad``: whether autograd
    must see the call (grad mode on); inputs that require grad are then grad targets, and so are the variables
    that require grad. ``ir_hooks`` are IR -> IR callables run on the joint IR after the default passes (the
    activation-checkpointing pass), each returning its statistics."""
    ir = GraphIR(name)
    mode = TraceMode(ir, names, name)
    flat_in = []

    def make_input(x):
        p = mode.input(x)
        if grad and x.requires_grad:
            p.requires_grad_(True)
        flat_in.append(p)
        return p

    pargs = map_leaves(tuple(args), lambda x: make_input(x) if isinstance(x, flow.Tensor) else x)
    pkwargs = map_leaves(dict(kwargs or {}), lambda x: make_input(x) if isinstance(x, flow.Tensor) else x)
    with (flow.enable_grad() if grad else flow.no_grad()), mode:
        out = fn(*pargs, **pkwargs)
    region = CompiledRegion()
    out_tensors = [x for x in leaves(out) if isinstance(x, flow.Tensor)]
    region.differentiable = [grad and bool(t.requires_grad) and (t.dtype.is_floating_point or t.dtype.is_complex)
                             for t in out_tensors]
    region.target_inputs = [i for i, p in enumerate(flat_in) if p.requires_grad]
    variables = [v.tensor for v in ir.variables]
    region.target_variables = [t for t in variables if grad and t.requires_grad]
    region.frozen = [t for t in variables if not t.requires_grad]
    num_inputs = len(ir.inputs)
    forward_nodes = {id(n) for n in ir.nodes}
    diff_outs = [t for t, d in zip(out_tensors, region.differentiable) if d]
    targets = [flat_in[i] for i in region.target_inputs] + region.target_variables
    grads = []
    if diff_outs and targets:
        grad_outputs = [mode.input(t) for t in diff_outs]  # made outside the mode: they are graph inputs
        with flow.enable_grad(), mode:
            grads = list(flow.autograd.grad(diff_outs, targets, grad_outputs, allow_unused=True))
    elif grad:
        region.differentiable = [False] * len(out_tensors)  # nothing to differentiate: an inference region
    traced = list(ir.nodes)  # keeps the traced nodes alive, so that their ids stay theirs through the passes
    backward_nodes = {id(n) for n in traced} - forward_nodes
    ir.outputs = (map_leaves(out, mode.result_value), [None if g is None else mode.value_of(g)[0] for g in grads])
    region.report = _passes.run_default(ir, passes or _passes.DEFAULT)
    for hook in ir_hooks:
        region.report.append((getattr(hook, "__name__", "hook"), hook(ir)))
    region.ir_joint = ir
    fwd, bwd = _partition(ir, forward_nodes, backward_nodes, num_inputs)
    del traced
    outputs, grad_values = ir.outputs
    needed = _backward_reads(bwd, grad_values)
    saved_inputs, saved_values, recompute = _choose_saved(needed, num_inputs)
    region.saved_inputs = [v.index for v in saved_inputs]
    region.ir_forward = _sub_ir(f"{name}_forward", fwd, ir.inputs[:num_inputs], (outputs, saved_values), ir)
    region.forward = Plan(region.ir_forward)
    if grads:
        bwd_inputs = saved_inputs + saved_values + ir.inputs[num_inputs:]
        region.ir_backward = _sub_ir(f"{name}_backward", recompute + bwd, bwd_inputs, grad_values, ir)
        region.backward = Plan(region.ir_backward)
    return region


def _depends_on(nodes, sources):
    """Ids of the values computed (transitively) from ``sources``, by ``nodes`` in order."""
    dep = {id(v) for v in sources}
    for n in nodes:
        if any(v is not None and id(v) in dep for v in n.inputs):
            dep.update(id(v) for v in n.new_outputs())
    return dep


def _partition(ir, forward_nodes, backward_nodes, num_inputs):
    """The joint IR's nodes as (forward, backward) lists in order. A node traced before the backward is forward;
    a node a pass made is forward unless it reads an output gradient; a backward node that a forward node reads
    and that reads no output gradient (a view a pass merged) moves to the forward."""
    go_dep = _depends_on(ir.nodes, ir.inputs[num_inputs:])
    is_fwd = {}
    for n in ir.nodes:
        reads_go = any(v is not None and id(v) in go_dep for v in n.inputs)
        is_fwd[id(n)] = id(n) in forward_nodes or (id(n) not in backward_nodes and not reads_go)
    changed = True
    while changed:
        changed = False
        for n in ir.nodes:
            if not is_fwd[id(n)]:
                continue
            for v in n.inputs:
                p = v.producer if v is not None and v.kind == NODE else None
                if p is not None and not is_fwd[id(p)]:
                    if any(u is not None and id(u) in go_dep for u in p.inputs):
                        raise GraphTraceError(f"{ir.name}: a forward op ({n.name}) reads the result of a backward "
                                              f"op ({p.name}) after the passes; cannot split the graph")
                    is_fwd[id(p)] = changed = True
    fwd = [n for n in ir.nodes if is_fwd[id(n)]]
    bwd = [n for n in ir.nodes if not is_fwd[id(n)]]
    return fwd, bwd


def _backward_reads(bwd, grad_values):
    """Values the backward reads but does not define (in first-use order): forward values, inputs, variables."""
    defined, seen, out = set(), set(), []

    def use(v):
        if v is not None and id(v) not in defined and id(v) not in seen:
            seen.add(id(v))
            out.append(v)

    for n in bwd:
        for v in n.inputs:
            use(v)
        defined.update(id(v) for v in n.new_outputs())
    for v in grad_values:
        use(v)
    return out


def _choose_saved(needed, num_inputs):
    """Splits what the backward reads into (saved inputs, saved forward values, forward nodes to recompute in
    the backward). Output gradients, variables and constants are not saved: the backward has them."""
    saved_inputs, saved_values, recompute, done = [], [], [], set()

    def visit(v):
        if v is None or id(v) in done:
            return
        done.add(id(v))
        if v.kind in (VARIABLE, CONSTANT):
            return
        if v.kind == INPUT:
            if v.index < num_inputs:
                saved_inputs.append(v)
            return
        n = v.producer
        if effects.is_view(n.op) and effects.is_pure(n.op, n.attrs) and len(n.new_outputs()) == 1:
            for u in n.inputs:
                visit(u)
            recompute.append(n)
        else:
            saved_values.append(v)

    for v in needed:
        visit(v)
    return saved_inputs, saved_values, recompute


def _sub_ir(name, nodes, inputs, outputs, src):
    """A new IR of ``nodes`` (copied, with new values) whose inputs are the values ``inputs`` of ``src``;
    variables and constants keep their tensors. ``outputs`` is a structure over ``src``'s values."""
    sub = GraphIR(name)
    m = {}
    for v in inputs:
        nv = sub.add_input(v.shape, v.dtype, v.device)
        nv.contiguous = v.contiguous
        m[id(v)] = nv

    def get(v):
        if v is None:
            return None
        nv = m.get(id(v))
        if nv is None:
            if v.kind == VARIABLE:
                nv = sub.add_variable(v.tensor, v.name)
            elif v.kind == CONSTANT:
                nv = sub.add_constant(v.tensor)
            else:
                raise GraphTraceError(f"{src.name}: {v!r} is read by the {name} half of the graph but defined "
                                      f"in the other (internal error of the forward/backward split)")
            m[id(v)] = nv
        return nv

    for n in nodes:
        copy = Node(n.op, [get(v) for v in n.inputs], n.attrs, [], n.mutates, n.location, n.multi)
        for o in n.outputs:
            if o is not None and o.producer is n:
                alias = None if o.alias_of is None else get(o.alias_of)
                nv = sub.new_value(NODE, o.shape, o.dtype, o.device, producer=copy, alias_of=alias,
                                   contiguous=o.contiguous)
                nv.name = o.name
                m[id(o)] = nv
                copy.outputs.append(nv)
            else:
                copy.outputs.append(get(o))
        sub.nodes.append(copy)
    sub.outputs = map_leaves(outputs, lambda x: get(x) if isinstance(x, Value) else x)
    return sub
