"""Lowering an IR to a plan: a flat list of prepared kernel calls over numbered slots.

Each step is one ``op.redispatch(inputs, attrs)`` with grad mode off: meta inference, allocation and the
kernel, with no autograd recording, no dispatch mode and none of the Python op layer (argument parsing,
defaults, type promotion wrappers); the binding still converts the recorded attribute dict at each call. Slots
hold the graph's inputs, variables (the eager tensors themselves, so in-place updates reach them), constants
and intermediate values; an intermediate's slot is cleared after its last use, so its memory is released as
early as in eager mode.
"""
import oneflow as flow
from oneflow import _C

from .ir import CONSTANT, INPUT, NODE, VARIABLE
from .structure import leaves, map_leaves


class Plan:
    """The executable form of a :class:`GraphIR`. ``run(flat_inputs)`` returns the IR's output structure with
    tensors at its leaves; values the traced program stored outside the graph (``ir.escaped``) are handed to
    their setters."""

    def __init__(self, ir, use_native=True, prologue_caches=None, compress_memory=False):
        self.ir = ir
        slot = {}
        template = [None]  # slot 0 stays None: absent optional inputs read it
        prologue = ir.prologue
        cached = prologue.cached if prologue is not None else []
        # the prologue's cached results (see passes/hoist_variables.py) are inputs after the call's own
        for v in ir.inputs + cached + ir.variables + ir.constants:
            slot[v] = len(template)
            template.append(v.tensor if v.kind in (VARIABLE, CONSTANT) else None)
        for n in ir.nodes:
            for v in n.new_outputs():
                slot[v] = len(template)
                template.append(None)
        self._input_slots = [slot[v] for v in ir.inputs + cached]
        out_values = ir.output_values()
        keep = {slot[v] for v in out_values} | {slot[v] for v, _ in ir.escaped}
        last_use = {}
        for i, n in enumerate(ir.nodes):
            for v in n.inputs:
                if v is not None and v.kind == NODE:
                    last_use[slot[v]] = i
        frees = [[] for _ in ir.nodes]
        for s, i in last_use.items():
            if s not in keep:
                frees[i].append(s)
        steps = []
        for i, n in enumerate(ir.nodes):
            ins = tuple(0 if v is None else slot[v] for v in n.inputs)
            # outputs the node defines get its results; an in-place op's returned input is already in its slot
            outs = tuple(slot[v] if v is not None and v.producer is n else -1 for v in n.outputs)
            steps.append((n.op.redispatch, ins, n.attrs, outs if n.multi else outs[0], tuple(frees[i])))
        self._steps = steps
        self._template = template
        self._output_slots = [slot[v] for v in out_values]
        # the same steps as the core's plan executor where the core has one (one call per run, no Python,
        # dispatcher or autograd per step, intermediates in one planned arena); the Python loop otherwise, or
        # where the core's plan does not take this IR (native_error says why)
        self._native, self.native_error = None, None
        # A run the core's plan cannot finish is redone by the loop only when it wrote no state: a training
        # step that failed part-way (a kernel refusing its values) must not update the parameters twice.
        self._writes_state = any(n.inputs[i].root().kind != NODE for n in ir.nodes for i in n.mutates)
        if use_native and hasattr(_C, "Plan"):
            try:
                self._native = _core_plan(ir, compress_memory)
            except Exception as e:  # noqa: BLE001 - any refusal of the core leaves the Python loop working
                self.native_error = f"{type(e).__name__}: {e}"
        # outputs that are not a fresh result of this call (an input, a variable, a constant or a view of one)
        # are copied, so that what one call returns is never changed by the next
        self._copy_out = [v.root().kind != NODE for v in out_values]
        self._escaped = [(slot[v], setter) for v, setter in ir.escaped]
        self.num_inputs = len(ir.inputs)
        # a PrologueCache when the IR has hoisted computations; ``prologue_caches`` (prologue.new_registry())
        # shares one between the plans of a graph's signatures that hoisted the same work
        self.prologue = self.local_prologue = None
        if prologue is not None:
            from .prologue import LocalPrologueCache, shared_cache

            self.prologue = shared_cache(prologue, prologue_caches, use_native)
            self._shared_read = prologue.shared_read
            if prologue.local is not None:  # this signature's own part (weights packed for its shapes)
                self.local_prologue = LocalPrologueCache(prologue.local, use_native)

    def hoisted_values(self):
        """The cached prologue results the plan takes after the call's inputs (computed where stale)."""
        if self.prologue is None:
            return []
        out = self.prologue.values()[:self._shared_read]
        if self.local_prologue is not None:
            out = out + self.local_prologue.values(self.prologue)
        return out

    def run(self, flat_inputs):
        # grad mode off: redispatch enters the dispatcher at the autograd layer, which must record nothing
        prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)
        try:
            return self._run(flat_inputs)
        finally:
            _C._set_grad_enabled(prev)

    def _run(self, flat_inputs):
        if self.prologue is not None:
            flat_inputs = list(flat_inputs) + self.hoisted_values()
        env = list(self._template)
        for s, t in zip(self._input_slots, flat_inputs):
            env[s] = t
        if self._native is not None:
            try:
                got = self._native.run(list(flat_inputs))
            except RuntimeError as e:  # a kernel the core's plan cannot call: redo below if nothing was written
                if self._writes_state:
                    raise
                self._native, self.native_error = None, f"{type(e).__name__}: {e}"
            else:
                wanted = self._output_slots + [s for s, _ in self._escaped]
                return self._finish(dict(zip(wanted, got)))
        for fn, ins, attrs, outs, frees in self._steps:
            r = fn([env[i] for i in ins], attrs)
            if outs.__class__ is int:
                if outs > 0:
                    env[outs] = r
            else:
                for s, t in zip(outs, r):
                    if s > 0:
                        env[s] = t
            for s in frees:
                env[s] = None
        return self._finish(env)

    def _finish(self, env):
        for s, setter in self._escaped:
            setter(env[s])
        results = iter([env[s].clone() if copy else env[s] for s, copy in zip(self._output_slots, self._copy_out)])
        take = results.__next__
        return map_leaves(self.ir.outputs, lambda x: take() if _is_value(x) else x.rebuild(take)
                          if hasattr(x, "rebuild") and not isinstance(x, flow.Tensor) else x)

    @property
    def native(self):
        """Whether the steps run as the core's ``_C.Plan`` (else as a Python loop)."""
        return self._native is not None

    def memory_stats(self):
        """The core plan's arena: ``planned_bytes`` (its size: the planned peak of the intermediates placed in
        it), ``naive_bytes`` (what they would take with no reuse), ``live_bytes`` (the most of them alive at one
        step: no arena can be smaller), ``arena_values`` and ``unplanned_values``
        (intermediates allocated as they are made: views, unknown layouts); None when the steps run as the
        Python loop, which allocates each value as it is made. A plan with a hoisted prologue adds
        ``prologue_bytes``: what its cache holds between calls (the cached results and the prologue's arena)."""
        if self._native is None:
            return None
        m = self._native.memory
        out = {"planned_bytes": m["arena_bytes"], "naive_bytes": m["naive_bytes"], "live_bytes": m["live_bytes"],
               "arena_values": m["arena_values"], "unplanned_values": m["unplanned_values"]}
        if self.prologue is not None:
            ps = self.prologue.stats()
            out["prologue_bytes"] = ps["cached_bytes"] + ps["arena_bytes"]
            if self.local_prologue is not None:
                ls = self.local_prologue.stats()
                out["prologue_bytes"] += ls["cached_bytes"] + ls["arena_bytes"]
        return out

    def __len__(self):
        return len(self._steps)


def _core_plan(ir, compress_memory=False):
    """The IR as a finalized ``oneflow._C.Plan``: inputs, variables and constants (bound, shared), one step per
    node; its outputs are the IR's output values, then the escaped ones."""
    plan = _C.Plan()
    slot = {}
    prologue = ir.prologue
    for v in ir.inputs + (prologue.cached if prologue is not None else []):
        slot[v] = plan.add_input(list(v.shape), v.dtype, v.device)
    for v in ir.variables + ir.constants:
        slot[v] = plan.add_constant(v.tensor)
    for n in ir.nodes:
        ins = [None if v is None else slot[v] for v in n.inputs]
        outs = plan.add_step(n.op, ins, n.attrs, len(n.outputs) if n.multi else None)
        for v, s in zip(n.outputs, outs):
            if v is not None and v.producer is n:
                slot[v] = s
    plan.set_outputs([slot[v] for v in ir.output_values()] + [slot[v] for v, _ in ir.escaped])
    plan.finalize(compress_memory=compress_memory)
    return plan

def _is_value(x):
    from .ir import Value

    return isinstance(x, Value)


def flat_tensors(args, kwargs):
    """The tensor leaves of a call's arguments, in the order the tracer numbered the graph inputs."""
    out = []
    for x in leaves((tuple(args), dict(kwargs))):
        if isinstance(x, flow.Tensor):
            _flatten_tensor(x, out)
    return out


def _flatten_tensor(t, out):
    # a tensor subclass made of inner tensors (a global tensor) is its inner tensors, as the tracer made inputs
    flatten = getattr(type(t), "__tensor_flatten__", None)
    if flatten is None:
        out.append(t)
        return
    names, _ = t.__tensor_flatten__()
    for n in names:
        _flatten_tensor(getattr(t, n), out)


__all__ = ["Plan", "flat_tensors", "INPUT"]
