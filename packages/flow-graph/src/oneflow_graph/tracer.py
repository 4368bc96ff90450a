"""Tracing: run a Python function once on symbolic tensors and record every registry op it issues as IR nodes.

The tracer is a dispatch mode, so it sees every op below autograd: the forward ops of ``build``, the backward
ops the autograd engine issues for ``loss.backward()`` and the optimizers' update ops. No kernel runs: each op
runs its meta function on meta-device shadows of its inputs (views compute their real strides there), and the
result is handed back as a :class:`Proxy`, a storage-less tensor carrying the op's output metadata and its IR
value. Real tensors reaching an op (parameters, buffers, optimizer state, anything captured) become graph
variables bound to those very tensors.
"""
import sys

import oneflow as flow
from oneflow._dispatch import DispatchMode, current_modes
from oneflow.utils.checkpoint import recomputing

from . import effects
from .errors import GraphTraceError, user_location, value_read_error
from .ir import NODE, GraphIR, Node
from .structure import map_leaves

_META = flow.device("meta")
# References to an input tensor while value_of looks at it from __flow_dispatch__: the dispatcher's input list,
# __flow_dispatch__'s loop variable, value_of's argument and getrefcount's own. A tensor with no more is held by
# no Python code (a Python scalar the binding wrapped): the graph may treat it as a constant.
_UNSHARED_REFS = 4


class Proxy(flow.Tensor):
    """A tensor of a graph being traced: shape, dtype, device and strides, but no values yet. Reading its values
    (``item``, ``numpy``, ``tolist``, ``print``, ``bool``) raises :class:`GraphTraceError` naming the user's line."""

    @classmethod
    def __flow_dispatch__(cls, op, inputs, attrs):
        raise GraphTraceError(
            f"{op.name} at {user_location()} got a tensor traced inside nn.Graph.build(), outside the traced "
            f"build: such tensors stand for values of one graph call and exist only while it is traced; use the "
            f"tensors the graph call returns instead")

    def item(self):
        raise value_read_error(".item()", self._graph_name)

    def numpy(self, *args, **kwargs):
        raise value_read_error(".numpy()", self._graph_name)

    def tolist(self):
        raise value_read_error(".tolist()", self._graph_name)

    def __array__(self, *args, **kwargs):
        raise value_read_error("numpy conversion", self._graph_name)

    def __bool__(self):
        raise value_read_error("a Python branch (bool())", self._graph_name)

    def __float__(self):
        raise value_read_error("float()", self._graph_name)

    def __int__(self):
        raise value_read_error("int()", self._graph_name)

    def __index__(self):
        raise value_read_error("use as an index (__index__)", self._graph_name)

    def __str__(self):
        raise value_read_error("print/str()", self._graph_name)

    def __format__(self, spec):
        raise value_read_error("formatting", self._graph_name)

    def __repr__(self):
        return f"tensor(..., size={tuple(self.shape)}, dtype={self.dtype}, is_lazy=True)"

    def storage_offset(self):  # the proxy's own memory starts at its first element; a run's may not
        return self._shadow.storage_offset()

    def detach(self):
        # detach makes a new tensor object without dispatching an op: it stands for the same value
        q = flow._C._make_subclass(Proxy, self, False)
        q._value, q._shadow, q._graph_name = self._value, self._shadow, self._graph_name
        return q

    @property
    def data(self):
        return self.detach()

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        mode = active_mode()
        if mode is None:
            return flow.Tensor.backward(self, gradient, retain_graph, create_graph, inputs)
        return mode.backward(self, gradient, retain_graph, create_graph, inputs)

    @property
    def is_lazy(self):
        return True


def _proxy(value, shadow, device, graph_name):
    # A proxy has real, never written memory with the strides the meta function computed: the core's own
    # decisions on layout (which product a backward formula computes, whether .grad may take a gradient without
    # a copy) see what they see in eager mode, and the proxy keeps an identity that survives the tensor copies
    # the core makes without dispatching an op (autograd's saved outputs are new tensor objects sharing the
    # original's memory), found again by the memory's address.
    # On CPU that memory is reserved address space (no resident pages, outside the caching allocator and its
    # counts), so tracing a model costs no memory however large its activations.
    shape, stride = list(shadow.shape), list(shadow.stride())
    if device.type == "cpu":
        base = flow._C._empty_reserved(shape, stride, shadow.dtype)
    elif shadow.numel() > 0:
        base = flow.empty_strided(shape, stride, dtype=shadow.dtype, device=device)
    else:  # no memory at all would leave no address: one element, viewed as the empty shape
        base = flow.empty(1, dtype=shadow.dtype, device=device).as_strided(shape, stride)
    p = flow._C._make_subclass(Proxy, base, False)
    p._value, p._shadow, p._graph_name = value, shadow, graph_name
    return p


def is_wrapper(t):
    """Whether ``t`` is a tensor subclass made of inner tensors (PyTorch's ``__tensor_flatten__`` protocol:
    global tensors), which a graph takes and returns as its inner tensors."""
    return isinstance(t, flow.Tensor) and not isinstance(t, Proxy) and hasattr(type(t), "__tensor_flatten__")


def is_traced(t):
    """Whether ``t`` is a value of the graph being traced: a proxy, or a wrapper holding one."""
    if isinstance(t, Proxy):
        return True
    if is_wrapper(t):
        names, _ = t.__tensor_flatten__()
        return any(is_traced(getattr(t, n)) for n in names)
    return False


def _on_meta(inputs, attrs):
    d = attrs.get("device")
    if d is not None and "device" in attrs:
        return str(d) == "meta"
    return any(t is not None and t.is_meta for t in inputs)


def _subclass_handler(t):
    if t is None or isinstance(t, Proxy):
        return None
    return getattr(type(t), "__flow_dispatch__", None)


class Wrapped:
    """An output of the IR that is a tensor subclass: its class, inner tensor names, context, outer shape and
    stride, and the inner values (Values or nested Wrapped). The plan rebuilds it from the inner results."""

    __slots__ = ("cls", "names", "ctx", "shape", "stride", "inner")

    def __init__(self, cls, names, ctx, shape, stride, inner):
        self.cls, self.names, self.ctx, self.shape, self.stride = cls, list(names), ctx, shape, stride
        self.inner = list(inner)

    def values(self):
        out = []
        for x in self.inner:
            out.extend(x.values() if isinstance(x, Wrapped) else [x])
        return out

    def rebuild(self, take):
        """The subclass tensor, its inner tensors taken from ``take()`` in :meth:`values` order."""
        inner = {n: x.rebuild(take) if isinstance(x, Wrapped) else take() for n, x in zip(self.names, self.inner)}
        return self.cls.__tensor_unflatten__(inner, self.ctx, self.shape, self.stride)

    def __repr__(self):
        return f"{self.cls.__name__}({', '.join(map(repr, self.inner))}, {self.ctx!r})"


def _meta_like(t):
    m = flow.empty_strided(tuple(t.shape), t.stride(), dtype=t.dtype, device=_META)
    if t._is_wrapped_number:  # a Python number promotes as the weakest operand: its stand-in must too
        m._is_wrapped_number = True
    return m


def active_mode():
    """The innermost :class:`TraceMode` on the dispatch mode stack (None outside a trace)."""
    return next((m for m in reversed(current_modes()) if isinstance(m, TraceMode)), None)


class TraceMode(DispatchMode):
    """The dispatch mode recording ops into ``ir``. ``names`` maps ``id(tensor)`` of known real tensors
    (parameters, buffers, optimizer state) to their variable names."""

    def __init__(self, ir, names=None, graph_name=None):
        self.ir, self.names, self.graph_name = ir, dict(names or {}), graph_name
        self._vars = {}  # id(tensor) -> (Value, shadow, tensor); the tensor is kept so that its id stays unique
        self.loss_transform = None  # applied to a traced loss before its backward (see Proxy.backward)
        self._proxies = {}  # address of a proxy's memory -> (Value, shadow, proxy); proxies are kept alive
        self.on_backward = []  # callables told the node index where a traced backward begins
        self.at_end = []  # callables run inside the trace after everything else (a plugin's closing steps)

    def backward(self, loss, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """``loss.backward()`` of a traced loss (a proxy, or a tensor subclass holding one: a global loss). The
        trace may back-propagate a transformed loss (gradient accumulation's ``loss / n``, a grad scaler's
        ``loss * scale``), as eager code would write it, while build() keeps the loss it computed; the nodes
        the backward traces are remembered (activation checkpointing recomputes before them, pipelining
        schedules them apart from the forward)."""
        transform = self.loss_transform
        seed = loss if transform is None else transform(loss)  # a linear map: a given gradient keeps its meaning
        start = len(self.ir.nodes)
        for fn in self.on_backward:
            fn(start)
        try:
            return flow.Tensor.backward(seed, gradient, retain_graph, create_graph, inputs)
        finally:
            self.ir.__dict__.setdefault("backward_nodes", []).extend(self.ir.nodes[start:])

    def _new_proxy(self, value, shadow, device):
        p = _proxy(value, shadow, device, self.graph_name)
        self._proxies[p.data_ptr()] = (value, shadow, p)
        return p

    def input(self, t):
        if is_wrapper(t):  # a tensor subclass made of inner tensors: each inner one is a graph input
            names, ctx = t.__tensor_flatten__()
            inner = {n: self.input(getattr(t, n)) for n in names}
            return type(t).__tensor_unflatten__(inner, ctx, tuple(t.shape), t.stride())
        v = self.ir.add_input(tuple(t.shape), t.dtype, t.device)
        return self._new_proxy(v, _meta_like(t), t.device)

    def value_of(self, t):
        """The IR value and meta shadow of tensor ``t`` (a new variable for a real tensor seen first)."""
        if isinstance(t, Proxy):
            return t._value, t._shadow
        if not t.is_meta:
            found = self._proxies.get(t.untyped_storage().data_ptr())
            if found is not None:  # a copy of a proxy the core made without an op (same memory, same value)
                if tuple(t.shape) != found[0].shape:
                    raise GraphTraceError(
                        f"a tensor at {user_location()} is a view of a traced tensor made without an op of the "
                        f"registry; the graph cannot follow it")
                return found[0], found[1]
        entry = self._vars.get(id(t))
        if entry is None:
            name = self.names.get(id(t))
            if name is None and (t._is_wrapped_number or (t.dim() == 0 and not t.requires_grad
                                                          and sys.getrefcount(t) <= _UNSHARED_REFS)):
                # a Python number the binding turned into a tensor for this op: nobody else can change it
                v = self.ir.add_constant(t)
            else:
                v = self.ir.add_variable(t, name or f"captured{len(self._vars)}")
            entry = self._vars[id(t)] = (v, _meta_like(t), t)
        return entry[0], entry[1]

    def __flow_dispatch__(self, op, inputs, attrs):
        handler = next((h for h in map(_subclass_handler, inputs) if h is not None), None)
        if handler is not None:
            # a tensor subclass (a global tensor) decides what its op means on its inner tensors: it runs with
            # this mode active again, so the ops it issues on them (kernels, collectives) are what gets recorded
            with self:
                return handler(op, inputs, attrs)
        if _on_meta(inputs, attrs):  # a subclass handler's own reasoning on metadata (sbp inference): no value
            return op.redispatch(inputs, attrs)
        values, shadows = [], []
        for t in inputs:
            if t is None:
                values.append(None)
                shadows.append(None)
            else:
                v, s = self.value_of(t)
                values.append(v)
                shadows.append(s)
        meta_attrs = attrs
        device = attrs.get("device")
        if "device" in attrs:  # a creation op: made on the meta device (None would mean the default device)
            meta_attrs = dict(attrs, device=_META)
        try:
            out = op.redispatch(shadows, meta_attrs)
        except NotImplementedError as e:  # no meta function: the output depends on input values
            raise GraphTraceError(f"{op.name} at {user_location()} cannot be traced into a graph: {e}") from e
        if device is None:
            first = next((t for t in inputs if t is not None and t.dim() > 0), None)
            if first is None:
                first = next((t for t in inputs if t is not None), None)
            device = first.device if first is not None else flow.get_default_device()
        node = Node(op, values, attrs, [], effects.mutated_inputs(op, values, attrs), user_location())
        multi = node.multi = isinstance(out, (tuple, list))
        results = []
        alias = values[0] if effects.is_view(op) and values and values[0] is not None else None
        for o in (out if multi else [out]):
            if not isinstance(o, flow.Tensor):
                node.outputs.append(None)
                results.append(o)
                continue
            k = next((i for i, s in enumerate(shadows) if s is o), None)
            if k is not None:  # an in-place op (or a no-op like contiguous) returned its input
                node.outputs.append(values[k])
                results.append(inputs[k])
                continue
            v = self.ir.new_value(NODE, tuple(o.shape), o.dtype, device, producer=node, alias_of=alias,
                                  contiguous=o.is_contiguous())
            node.outputs.append(v)
            results.append(self._new_proxy(v, o, device))
        self.ir.nodes.append(node)
        region = recomputing()
        if region is not None:  # flow.utils.checkpoint recomputing a region for the backward: see passes/recompute.py
            self.ir.__dict__.setdefault("recomputed", {}).setdefault(region, []).append(node)
        return type(out)(results) if multi else results[0]

    def result_value(self, x):
        """An output leaf of the traced function as it goes into the IR (tensors as values; a tensor subclass
        made of inner tensors as a :class:`Wrapped` of their values)."""
        if is_wrapper(x):
            names, ctx = x.__tensor_flatten__()
            inner = [self.result_value(getattr(x, n)) for n in names]
            return Wrapped(type(x), names, ctx, tuple(x.shape), x.stride(), inner)
        if isinstance(x, flow.Tensor):
            return self.value_of(x)[0]
        return x


def trace(fn, args=(), kwargs=None, *, name="graph", names=None, grad=False, after=None):
    """Traces ``fn(*args, **kwargs)`` into a :class:`GraphIR`: the tensors among ``args``/``kwargs`` become
    graph inputs (in flattened order), ``names`` names known real tensors. ``grad`` traces with grad mode on
    (training: ``backward`` inside ``fn`` records its ops); ``after()`` runs inside the trace after ``fn`` (the
    optimizer steps). Returns the IR, whose ``outputs`` is ``fn``'s result with values at its tensor leaves."""
    ir = GraphIR(name)
    mode = TraceMode(ir, names, name)
    # (inputs are made with the mode off, as a subclass's unflatten may issue ops)
    pargs = map_leaves(tuple(args), lambda x: mode.input(x) if isinstance(x, flow.Tensor) else x)
    pkwargs = map_leaves(dict(kwargs or {}), lambda x: mode.input(x) if isinstance(x, flow.Tensor) else x)
    grad_ctx = flow.enable_grad() if grad else flow.no_grad()
    with grad_ctx, mode:
        out = fn(*pargs, **pkwargs)
        if after is not None:
            after()
        for fn in mode.at_end:
            fn()
    ir.outputs = map_leaves(out, mode.result_value)
    return ir
