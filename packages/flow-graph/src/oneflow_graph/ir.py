"""The graph IR: an SSA list of registry-op nodes over values.

A :class:`Value` is defined once: as a graph input, a variable (a tensor the graph reads and may update in
place, bound by reference to an eager tensor: parameters, buffers, optimizer state, captured tensors), a constant
(a tensor the compiler made, e.g. by folding) or an output of a :class:`Node`. A node applies one registry op
(its ``OpHandle``) to input values with attributes, exactly the ``(inputs, attrs)`` the dispatcher handed the
tracer, so running it is ``op.redispatch(inputs, attrs)``. An in-place op returns one of its inputs: that output
is the input's value again (not a new one), and the node lists what it mutates in ``mutates``.
"""
from . import effects

INPUT, VARIABLE, CONSTANT, NODE = "input", "var", "const", "node"


class Value:
    """One tensor of the IR: ``kind`` is INPUT, VARIABLE, CONSTANT or NODE; ``tensor`` binds a variable or a
    constant; ``alias_of`` is the value whose memory a view output shares (None: its own memory)."""

    __slots__ = ("id", "kind", "shape", "dtype", "device", "name", "tensor", "producer", "alias_of", "index",
                 "contiguous")

    def __init__(self, id, kind, shape, dtype, device, name=None, tensor=None, producer=None, alias_of=None,
                 index=None, contiguous=True):
        self.id, self.kind, self.shape, self.dtype, self.device = id, kind, tuple(shape), dtype, device
        self.name, self.tensor, self.producer, self.alias_of, self.index = name, tensor, producer, alias_of, index
        self.contiguous = contiguous  # the layout the op's meta function gave (as the kernel will)

    def root(self):
        """The value owning this value's memory (following views)."""
        v = self
        while v.alias_of is not None:
            v = v.alias_of
        return v

    def numel(self):
        """Number of elements of the value's shape (as ``Tensor.numel``)."""
        n = 1
        for d in self.shape:
            n *= d
        return n

    def nbytes(self):
        """Bytes the value's elements take (as ``Tensor.nbytes``)."""
        return self.numel() * self.dtype.itemsize

    def type_str(self):
        dt = str(self.dtype).replace("oneflow.", "")
        return f"{dt}[{', '.join(str(s) for s in self.shape)}]"

    def __repr__(self):
        return f"%{self.name or self.id}"


class Node:
    """One registry op applied to ``inputs`` (Values, None for an absent optional input) with ``attrs``."""

    __slots__ = ("op", "inputs", "attrs", "outputs", "mutates", "location", "multi")

    def __init__(self, op, inputs, attrs, outputs, mutates=(), location=None, multi=False):
        self.op, self.inputs, self.attrs, self.outputs = op, list(inputs), dict(attrs), list(outputs)
        self.multi = multi  # the op returns a sequence (even of one tensor)
        self.mutates = tuple(mutates)  # positions in inputs whose memory the op writes
        self.location = location  # "file:line" of the user code that issued the op

    @property
    def name(self):
        return self.op.name

    def new_outputs(self):
        """Outputs this node defines (an in-place op's returned input is not one)."""
        return [v for v in self.outputs if v is not None and v.producer is self]

    def is_effectful(self):
        return effects.is_effectful(self.op, self.attrs)


class GraphIR:
    """A traced graph: ``inputs`` (Values, in flattened argument order), ``variables`` and ``constants``
    (Values bound to tensors), ``nodes`` in execution order, and ``outputs``: the returned structure with Values
    at its tensor leaves (see :mod:`oneflow_graph.structure`). ``escaped`` maps values that the traced program
    stored outside the graph (new optimizer state) to a callback receiving their run-time tensors."""

    def __init__(self, name="graph"):
        self.name = name
        self.inputs, self.variables, self.constants, self.nodes = [], [], [], []
        self.outputs = None
        self.escaped = []  # (Value, setter)
        self.prologue = None  # the hoisted variable-only computations (passes/hoist_variables.py)
        self._next = 0

    def new_value(self, kind, shape, dtype, device, **kw):
        v = Value(self._next, kind, shape, dtype, device, **kw)
        self._next += 1
        return v

    def add_input(self, shape, dtype, device):
        v = self.new_value(INPUT, shape, dtype, device, index=len(self.inputs))
        v.name = f"in{len(self.inputs)}"
        self.inputs.append(v)
        return v

    def add_variable(self, tensor, name):
        v = self.new_value(VARIABLE, tuple(tensor.shape), tensor.dtype, tensor.device, name=name, tensor=tensor)
        self.variables.append(v)
        return v

    def add_constant(self, tensor):
        v = self.new_value(CONSTANT, tuple(tensor.shape), tensor.dtype, tensor.device, tensor=tensor)
        v.name = f"c{len(self.constants)}"
        self.constants.append(v)
        return v

    def output_values(self):
        from .structure import leaves

        out = []
        for v in leaves(self.outputs):
            if isinstance(v, Value):
                out.append(v)
            elif hasattr(v, "rebuild"):  # a tensor subclass output (tracer.Wrapped): its inner values
                out.extend(x for x in v.values() if isinstance(x, Value))
        return out

    def uses(self, positions=False):
        """``id(value)`` -> the nodes reading it, in node order (with ``positions``: (node, input index) pairs)."""
        out = {}
        for n in self.nodes:
            for k, v in enumerate(n.inputs):
                if v is not None:
                    out.setdefault(id(v), []).append((n, k) if positions else n)
        return out

    def written_between(self, lo, hi, values):
        """Whether a node strictly between positions ``lo`` and ``hi`` writes the memory of any of ``values``
        (through views too)."""
        roots = {id(v.root()) for v in values if v is not None}
        return any(id(n.inputs[i].root()) in roots for n in self.nodes[lo + 1:hi] for i in n.mutates)

    def external_ids(self):
        """The ids of the values read outside the graph: its outputs and the escaped values."""
        return {id(v) for v in self.output_values()} | {id(v) for v, _ in self.escaped}

    def external_roots(self):
        """The ids of the memory (root values) read outside the graph: its outputs' and the escaped values'."""
        return {id(v.root()) for v in self.output_values()} | {id(v.root()) for v, _ in self.escaped}

    def values(self):
        """Every value defined in the graph, in definition order."""
        out = list(self.inputs) + list(self.variables) + list(self.constants)
        for n in self.nodes:
            out.extend(n.new_outputs())
        return out

    def replace_uses(self, mapping):
        """Rewrites node inputs, the bases of views and graph outputs through ``mapping`` (Value -> Value)."""
        from .structure import map_leaves

        if not mapping:
            return
        mapping = _resolved(mapping)
        for n in self.nodes:
            n.inputs = [mapping.get(v, v) if v is not None else None for v in n.inputs]
            for o in n.new_outputs():  # a view of a replaced value views what replaced it (its memory's owner)
                if o.alias_of is not None:
                    o.alias_of = mapping.get(o.alias_of, o.alias_of)
            n.outputs = [mapping.get(v, v) if v is not None and v.producer is not n else v for v in n.outputs]
        self.outputs = map_leaves(self.outputs, lambda v: _remap(v, mapping))
        self.escaped = [(mapping.get(v, v), setter) for v, setter in self.escaped]

    def drop_unused_constants(self):
        used = {id(v) for n in self.nodes for v in n.inputs if v is not None}
        used |= {id(v) for v in self.output_values()} | {id(v) for v, _ in self.escaped}
        self.constants = [c for c in self.constants if id(c) in used]

    def stats(self):
        return {"nodes": len(self.nodes), "variables": len(self.variables), "constants": len(self.constants)}

    def format(self, show_locations=False):
        """The IR as text: one line per variable, constant and node, then the returned values."""
        from .printer import format_ir

        return format_ir(self, show_locations)

    def __str__(self):
        return self.format()


def _remap(v, mapping):
    """An output leaf through ``mapping``; a tensor subclass output (tracer.Wrapped) has its inner values
    rewritten."""
    if isinstance(v, Value):
        return mapping.get(v, v)
    if hasattr(v, "rebuild") and hasattr(v, "inner"):
        v.inner = [_remap(x, mapping) for x in v.inner]
    return v


def _resolved(mapping):
    """``mapping`` with chains followed to their end: a pass replacing ``b`` by ``a`` and ``c`` by ``b`` (the
    copy elision of ``clone(clone(a))``) must send ``c``'s readers to ``a``, not to the removed ``b``."""
    out = {}
    for k in mapping:
        v, seen = mapping[k], {id(k)}
        while v in mapping and id(v) not in seen:
            seen.add(id(v))
            v = mapping[v]
        out[k] = v
    return out
