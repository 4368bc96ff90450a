"""Global tensors: a logical tensor laid over the ranks of a placement by an nd-sbp.

A :class:`GlobalTensor` is a storage-less subclass of ``oneflow.Tensor`` (``oneflow._C._make_wrapper``): its
shape and dtype are the logical ones, and it holds this rank's shard (``to_local()``), the placement and the
nd-sbp (one sbp per hierarchy dimension). Every op on it reaches :meth:`GlobalTensor.__flow_dispatch__`
(``_global_ops``), below autograd, so backward formulas run on global tensors too.

``Tensor.to_global``, ``Tensor.to_local``, ``Tensor.placement``, ``Tensor.sbp`` and ``Tensor.is_global`` are
attached to ``oneflow.Tensor`` through flow-core's plugin entry points.
"""
import itertools

import oneflow as flow
from oneflow import _C
from oneflow._dispatch import current_modes

from . import _collective_ops, _layout, _world, boxing, comm_debug
from ._groups import communicator
from .placement import placement as _Placement
from .sbp import broadcast

_make_wrapper = _C._make_wrapper
_REQUIRES_GRAD = _C.TensorBase.__dict__["requires_grad"]  # the core's property (the setter also watches leaves)

__all__ = ["GlobalTensor", "GlobalParameter", "to_global", "to_local", "is_global", "placement", "sbp", "make"]


class _Global:
    """What global tensors and global parameters share. A plain mixin: nanobind allows one nanobind base per
    class, so ``GlobalParameter`` cannot derive from both ``GlobalTensor`` and ``nn.Parameter``."""

    # __flow_dispatch__ is _global_ops.dispatch, set below (a classmethod: one call per op, no wrapper)

    @property
    def placement(self):
        """The placement (``oneflow.placement``) of this global tensor."""
        return self.__dict__["_placement"]

    @property
    def sbp(self):
        """The nd-sbp: a tuple with one ``oneflow.sbp`` per hierarchy dimension of the placement."""
        return self.__dict__["_nd_sbp"]

    @property
    def is_global(self):
        return True

    @property
    def is_local(self):
        return False

    def to_local(self):
        """This rank's shard, a local tensor (differentiable: its gradient comes back with this tensor's sbp)."""
        if self.requires_grad and flow.is_grad_enabled():
            return _ToLocal.apply(self)
        return self.__dict__["_local"]

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        # inside nn.Graph.build() the graph's trace runs the backward (it may seed a transformed loss: gradient
        # accumulation's loss / n), as it does for a local loss
        mode = _trace_mode()
        if mode is not None and hasattr(mode, "backward"):
            return mode.backward(self, gradient, retain_graph, create_graph, inputs)
        return flow.Tensor.backward(self, gradient, retain_graph, create_graph, inputs)

    def detach(self):
        return make(self.__dict__["_local"], tuple(self.shape), self.placement, self.sbp)

    @property
    def data(self):
        """The tensor without its history (a global tensor sharing this one's shard)."""
        return self.detach()

    @data.setter
    def data(self, value):
        if not isinstance(value, _Global):
            raise TypeError(f"Tensor.data: a global tensor's data must be a global tensor, got a "
                            f"{type(value).__name__}; convert it with to_global()")
        if tuple(value.shape) != tuple(self.shape) or value.dtype != self.dtype:
            raise RuntimeError(f"Tensor.data: expected a global tensor of shape {tuple(self.shape)} and dtype "
                               f"{self.dtype}, got {tuple(value.shape)} and {value.dtype}")
        d, v = self.__dict__, value.__dict__
        d["_local"], d["_placement"], d["_nd_sbp"], d["_mk"] = v["_local"], v["_placement"], v["_nd_sbp"], v["_mk"]

    def requires_grad_(self, requires_grad=True):
        flow.Tensor.requires_grad_(self, requires_grad)
        _watch_leaf(self)
        return self

    @property
    def requires_grad(self):
        return _REQUIRES_GRAD.__get__(self)

    @requires_grad.setter
    def requires_grad(self, value):
        _REQUIRES_GRAD.__set__(self, value)
        _watch_leaf(self)

    def __repr__(self):
        full = _full_value(self)
        text = repr(full)
        extra = f", placement={self.placement!r}, sbp={self.sbp!r}"
        if self.grad_fn is not None:
            extra += f", grad_fn=<{type(self.grad_fn).__name__}>"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return text[:-1] + extra + ")"

    __str__ = __repr__

    # PyTorch's traceable-subclass protocol: a global tensor is its shard plus (placement, nd-sbp); nn.Graph
    # traces and runs it as its shard
    def __tensor_flatten__(self):
        return ["_local"], (self.placement, self.sbp)

    @classmethod
    def __tensor_unflatten__(cls, inner, ctx, outer_size, outer_stride):
        return make(inner["_local"], tuple(outer_size), ctx[0], ctx[1], cls=GlobalTensor)

    def __reduce_ex__(self, proto):
        raise TypeError("a global tensor cannot be pickled; save its to_local() shard or numpy()")

    # plain form in a graph's runtime state (flow-graph's oneflow_graph.plain_types): this rank's shard and the
    # layout, so each rank's file rebuilds the tensor on the same placement and sbp without communication
    def __flow_plain__(self):
        return {"local": self.__dict__["_local"].detach().clone(), "shape": list(self.shape),
                "placement": self.placement, "sbp": list(self.sbp), "requires_grad": bool(self.requires_grad)}

    @classmethod
    def __flow_from_plain__(cls, data):
        return _from_plain(cls, data)


class GlobalTensor(_Global, flow.Tensor):
    """A global tensor (see the module docstring). Made by ``Tensor.to_global`` or a creation function with
    ``placement=`` and ``sbp=``; not constructed directly."""


class GlobalParameter(_Global, flow.nn.Parameter):
    """A module parameter that is a global tensor: what ``nn.Parameter(x)`` makes of a global ``x`` (the
    ``__flow_parameter__`` protocol of flow-core's ``Parameter``) and what ``Module.to_global`` leaves. It
    shares ``x``'s shard; ``isinstance(p, nn.Parameter)`` holds, so modules register it."""

    def __repr__(self):
        return "Parameter containing:\n" + _Global.__repr__(self)

    __str__ = __repr__

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        r = _parameter(self.detach().clone(), self.requires_grad)
        memo[id(self)] = r
        return r


GLOBAL_TYPES = (GlobalTensor, GlobalParameter)  # ``type(t) in GLOBAL_TYPES``: the dispatcher's fast check


def _parameter(data, requires_grad=True):
    """``nn.Parameter(data)`` of a global ``data``: a :class:`GlobalParameter` sharing its shard."""
    d = data.__dict__
    return make(d["_local"], tuple(data.shape), d["_placement"], d["_nd_sbp"], requires_grad, GlobalParameter)


def make(local, shape, placement, nd_sbp, requires_grad=False, cls=GlobalTensor):
    """The global tensor whose shard on this rank is ``local`` (a local tensor, not checked)."""
    if local.requires_grad:
        local = local.detach()
    g = _make_wrapper(cls, list(shape), local.dtype, None, requires_grad)
    d = g.__dict__
    nd_sbp = tuple(nd_sbp)
    d["_local"], d["_placement"], d["_nd_sbp"] = local, placement, nd_sbp
    d["_mk"] = (tuple(shape), local.dtype, nd_sbp, placement)  # the key of ops' cached sbp decisions
    if requires_grad:
        _watch_leaf(g)
    return g


def _from_plain(cls, data):
    if type(data) is not dict or set(data) != {"local", "shape", "placement", "sbp", "requires_grad"}:
        raise ValueError(f"{cls.__name__}: a malformed plain form (keys {sorted(map(str, data))})"
                         if type(data) is dict else f"{cls.__name__}: a malformed plain form")
    local, shape, placement, nd_sbp = data["local"], tuple(data["shape"]), data["placement"], tuple(data["sbp"])
    if type(local) not in (flow.Tensor, flow.nn.Parameter) or not isinstance(placement, _Placement):
        raise ValueError(f"{cls.__name__}: a malformed plain form (shard or placement)")
    if len(nd_sbp) != placement.ranks.ndim:
        raise ValueError(f"{cls.__name__}: {len(nd_sbp)} sbp(s) for a placement of {placement.ranks.ndim} dim(s)")
    at = _layout.coord(placement)
    want = (0,) if at is None else _layout.local_shape(shape, placement, nd_sbp, at)
    if tuple(local.shape) != want:
        raise ValueError(f"{cls.__name__}: rank {_world.rank()}'s saved shard is {tuple(local.shape)}, its shard "
                         f"of a {shape} tensor on {placement!r} with sbp {nd_sbp} is {want} (a file of another "
                         f"rank?)")
    return make(local, shape, placement, nd_sbp, bool(data["requires_grad"]),
                GlobalParameter if cls is GlobalParameter else GlobalTensor)


def _watch_leaf(g):
    """A leaf that requires grad gets its gradient in its own sbp: a gradient arriving partial (a broadcast
    parameter used with split data) is reduced, which makes S(0) data with B parameters data parallelism."""
    if not g.requires_grad or g.grad_fn is not None or g.__dict__.get("_watched"):
        return
    g.__dict__["_watched"] = True

    def to_own_layout(grad):
        # ZeRO stage 2 (zero.py) keeps gradients in the parameter's shard layout: partial ones reduce-scatter
        sbp = g.__dict__.get("_zero_grad_sbp") or g.sbp
        if isinstance(grad, _Global) and (grad.sbp != sbp or grad.placement != g.placement):
            with comm_debug.cause("grad_to_param_sbp"):
                return _to_global_nograd(grad, g.placement, sbp)
        return grad

    g.register_hook(to_own_layout)


def _full_value(t):
    """The whole logical value, on every rank (a local tensor)."""
    return boxing.box(t.__dict__["_local"], tuple(t.shape), t.placement, t.sbp,
                      (broadcast,) * len(t.sbp))


# ---- conversions ------------------------------------------------------------------------------------------------
def _check_placement(placement, op):
    if not isinstance(placement, _Placement):
        raise TypeError(f"{op}(): placement must be a oneflow.placement, got {type(placement).__name__}")


def _grad_layout(nd_sbp):
    """The layout a gradient takes back to an input of ``nd_sbp``: a partial input's gradient is the whole one."""
    return tuple(broadcast if s.is_partial() else s for s in nd_sbp)


def _logical_shape(local, placement, nd_sbp, check_meta):
    """The logical shape of the global tensor whose shards are every rank's ``local`` (OneFlow's local-to-
    global: each rank's tensor is its shard), checked against every rank's shape and dtype."""
    shape = tuple(local.shape)
    split_dims = {s.dim for s in nd_sbp if s.is_split()}
    if not split_dims and not check_meta:
        return shape
    metas = _world.world().all_gather_object((shape, str(local.dtype)))
    ranks = placement.ranks
    members = [int(r) for r in ranks.reshape(-1)]
    dtypes = {metas[r][1] for r in members}
    if len(dtypes) > 1:
        raise RuntimeError(f"to_global(): the local tensors of the ranks of {placement!r} have different dtypes "
                           f"{sorted(dtypes)}")
    logical = list(metas[members[0]][0])
    for d in split_dims:
        hs = [h for h, s in enumerate(nd_sbp) if s.is_split() and s.dim == d]
        total = 0
        for r in members:
            at = _layout.coord(placement, r)
            if all(at[h] == 0 for h in range(ranks.ndim) if h not in hs):
                total += metas[r][0][d] if len(metas[r][0]) > d else 0
        logical[d] = total
    logical = tuple(logical)
    for r in members:
        want = _layout.local_shape(logical, placement, nd_sbp, _layout.coord(placement, r))
        if tuple(metas[r][0]) != want:
            got = {q: metas[q][0] for q in members}
            raise RuntimeError(f"to_global(): the local tensors' shapes {got} (by rank) do not form a global "
                               f"tensor with sbp {nd_sbp!r} on {placement!r} (rank {r} would need {want} for a "
                               f"logical shape {logical})")
    return logical


def _local_to_global(x, placement, nd_sbp, check_meta=True):
    local = x.detach()
    if local.device.type != placement.type:
        raise RuntimeError(f"to_global(): the tensor is on {local.device} but the placement is on "
                           f"{placement.type!r}")
    shape = _logical_shape(local, placement, nd_sbp, check_meta)
    at = _layout.coord(placement)
    if at is None:  # a rank outside the placement holds nothing (OneFlow's rule)
        local = flow.empty(0, dtype=local.dtype)
    else:
        for h, s in enumerate(nd_sbp):
            if s.is_broadcast() and placement.ranks.shape[h] > 1:  # rank 0's value, as OneFlow
                # (the broadcast op: a graph records it as a plan step; the shapes were checked at trace time,
                # which suffices as a graph's input shapes are fixed)
                local = _collective_ops.broadcast(local, list(communicator(placement, h).global_ranks), 0)
    return make(local.contiguous(), shape, placement, nd_sbp)


_P2P_TAG = 7200  # eager placement changes: matched in program order, which every rank shares
_P2P_TRACED_TAGS = 20000  # traced ones: one tag each (7201 ..), see _p2p_tag


def _trace_mode():
    """The innermost active nn.Graph trace (a dispatch mode recording an IR), or None."""
    return next((m for m in reversed(current_modes()) if getattr(m, "ir", None) is not None), None)


def _p2p_tag():
    """The tag of a placement change's transfers. Under nn.Graph tracing every rank traces the same program, so
    the n-th placement change of the trace (backward ones included) is the same transfer on every rank: it gets
    its own tag, and the plan may run the transfers in another order on each rank (a pipeline's 1F1B order)
    with every message still matched to its receive."""
    mode = _trace_mode()
    if mode is None:
        return _P2P_TAG
    counter = mode.__dict__.setdefault("_p2p_tags", itertools.count())
    return _P2P_TAG + 1 + next(counter) % _P2P_TRACED_TAGS


def _change_placement(x, placement, nd_sbp):
    """``x`` moved to another placement: gathered on its own, then sent point to point from its first rank to
    each rank of the new placement that lacks it (ranks in neither placement take no part), and laid out there.
    The transfers are the ``dist_send`` / ``dist_recv`` ops, so a graph records them as plan steps."""
    tag = _p2p_tag()
    src = int(x.placement.ranks.reshape(-1)[0])
    me = _world.rank()
    shape = tuple(x.shape)
    here = x.__dict__["_local"]
    full = _full_value(x) if _layout.coord(x.placement) is not None else None
    have = {int(q) for q in x.placement.ranks.reshape(-1)}
    # ranks of the source placement have the whole value once it is gathered there (for free from broadcast):
    # only the others are sent it
    dsts = [int(q) for q in placement.ranks.reshape(-1) if int(q) not in have]
    if me == src:
        for q in dsts:
            token = _collective_ops.send(full, q, tag)
        mode = _trace_mode()
        if dsts and hasattr(mode, "at_end") and not mode.__dict__.get("_flushes_sends"):
            # the plan's last step waits for its sends (their buffers are kept until then)
            mode.__dict__["_flushes_sends"] = True
            mode.at_end.append(lambda: _collective_ops.flush(token))
    elif me in dsts:
        full = _collective_ops.recv(here, list(shape), x.dtype, src, tag)
    if _layout.coord(placement) is None:
        return make(_C._empty([0], x.dtype, None), shape, placement, nd_sbp)
    return make(boxing.from_broadcast(full, placement, nd_sbp), shape, placement, nd_sbp)


def _to_global_nograd(x, placement, nd_sbp):
    if x.placement != placement:
        return _change_placement(x, placement, nd_sbp)
    shape = tuple(x.shape)
    return make(boxing.box(x.__dict__["_local"], shape, placement, x.sbp, nd_sbp), shape, placement, nd_sbp)


class _LocalToGlobal(flow.autograd.Function):
    @staticmethod
    def forward(ctx, x, placement, nd_sbp, check_meta):
        ctx.layout = (placement, nd_sbp)
        return _local_to_global(x, placement, nd_sbp, check_meta)

    @staticmethod
    def backward(ctx, grad):
        placement, nd_sbp = ctx.layout
        return _to_global_nograd(grad, placement, nd_sbp).__dict__["_local"], None, None, None


class _GlobalToGlobal(flow.autograd.Function):
    @staticmethod
    def forward(ctx, x, placement, nd_sbp, grad_sbp):
        ctx.layout = (x.placement, grad_sbp if grad_sbp is not None else _grad_layout(x.sbp))
        return _to_global_nograd(x, placement, nd_sbp)

    @staticmethod
    def backward(ctx, grad):
        placement, nd_sbp = ctx.layout
        return _to_global_nograd(grad, placement, nd_sbp), None, None, None


class _ToLocal(flow.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.layout = (tuple(x.shape), x.placement, x.sbp)
        return x.__dict__["_local"]

    @staticmethod
    def backward(ctx, grad):
        shape, placement, nd_sbp = ctx.layout
        return make(grad, shape, placement, nd_sbp)


def to_global(self, placement=None, sbp=None, *, grad_sbp=None, check_meta=True, copy=False):
    """``x.to_global(placement, sbp)``: a global tensor.

    From a local tensor, every rank's tensor is its shard (OneFlow's rule): with ``split(d)`` the logical
    tensor is the ranks' tensors concatenated along ``d`` (shapes checked across ranks); with ``broadcast``
    the value of the placement's first rank is taken (sent to the others); with ``partial_sum`` the value is
    the sum of the ranks' tensors. From a global tensor it changes the sbp (boxing) and/or the placement;
    ``None`` keeps the tensor's own. Differentiable.

    Args:
        placement (oneflow.placement): the ranks (required from a local tensor).
        sbp (oneflow.sbp or tuple): one sbp per hierarchy dimension of the placement.
        grad_sbp: the sbp the gradient is converted to on its way back (default: the input's, with partial
            replaced by broadcast).
        check_meta (bool): from a local tensor, check shapes and dtypes across ranks (one small exchange).
    """
    if isinstance(self, _Global):
        placement = self.placement if placement is None else placement
        _check_placement(placement, "to_global")
        nd_sbp = self.sbp if sbp is None else _layout.normalize_sbp(sbp, placement, self.dim())
        if grad_sbp is not None:
            grad_sbp = _layout.normalize_sbp(grad_sbp, self.placement, self.dim())
        if placement == self.placement and nd_sbp == self.sbp and not copy:
            return self
        with comm_debug.cause("to_global"):
            if self.requires_grad and flow.is_grad_enabled():
                return _GlobalToGlobal.apply(self, placement, nd_sbp, grad_sbp)
            return _to_global_nograd(self, placement, nd_sbp)
    if not isinstance(self, flow.Tensor):
        raise TypeError(f"to_global(): expected a oneflow.Tensor, got {type(self).__name__}")
    if placement is None or sbp is None:
        raise ValueError("to_global(): a local tensor needs both placement and sbp")
    _check_placement(placement, "to_global")
    nd_sbp = _layout.normalize_sbp(sbp, placement, self.dim())
    with comm_debug.cause("to_global"):
        if self.requires_grad and flow.is_grad_enabled():
            return _LocalToGlobal.apply(self, placement, nd_sbp, check_meta)
        return _local_to_global(self, placement, nd_sbp, check_meta)


def to_local(self):
    """The local shard of a global tensor (see ``GlobalTensor.to_local``); a local tensor has none."""
    if isinstance(self, _Global):
        return _Global.to_local(self)
    raise RuntimeError("to_local(): expected a global tensor, got a local one (make one with to_global())")


def _not_global(name):
    def get(self):
        raise RuntimeError(f"Tensor.{name}: a local tensor has no {name} (only global tensors do; see "
                           f"to_global())")
    return property(get)


placement = _not_global("placement")
sbp = _not_global("sbp")
is_global = property(lambda self: False, doc="Whether the tensor is global (False for local tensors).")


def from_full(full, placement, sbp, requires_grad=False):
    """The global tensor whose whole value is ``full`` (the same on every rank): the creation functions'
    ``placement=``/``sbp=`` (flow-core's ``_global_from_full`` entry point)."""
    _check_placement(placement, "creation")
    nd_sbp = _layout.normalize_sbp(sbp, placement, full.dim(), "creation")
    if full.device.type != placement.type:
        raise RuntimeError(f"creation: the placement is on {placement.type!r}, the tensor was made on {full.device}")
    return make(boxing.from_broadcast(full.detach(), placement, nd_sbp), tuple(full.shape), placement, nd_sbp,
                requires_grad)


def from_shard(shape, placement, sbp, make_local, requires_grad=False):
    """The global tensor of logical ``shape`` whose shard on this rank is ``make_local(ranges)`` (``ranges``: the
    ``(start, stop)`` per dim of the block this rank holds), so that no rank makes the whole tensor: the
    creation functions' ``placement=``/``sbp=`` (flow-core's ``_global_from_shard`` entry point). A partial sbp
    or a rank outside the placement takes the whole value, ``make_local(None)``, laid out as ``from_full``
    does."""
    _check_placement(placement, "creation")
    shape = tuple(shape)
    nd_sbp = _layout.normalize_sbp(sbp, placement, len(shape), "creation")
    at = _layout.coord(placement)
    if at is None or any(s.is_partial() for s in nd_sbp):
        return from_full(make_local(None), placement, nd_sbp, requires_grad)
    local = make_local(_layout.ranges(shape, placement, nd_sbp, at))
    if local.device.type != placement.type:
        raise RuntimeError(f"creation: the placement is on {placement.type!r}, the tensor was made on "
                           f"{local.device}")
    return make(local, shape, placement, nd_sbp, requires_grad)


from . import _global_ops  # noqa: E402  (it needs GlobalTensor)

GlobalTensor.__flow_dispatch__ = GlobalParameter.__flow_dispatch__ = classmethod(_global_ops.dispatch)
GlobalTensor.__flow_composite__ = GlobalParameter.__flow_composite__ = staticmethod(_global_ops.check_mixing)
GlobalTensor.__flow_parameter__ = GlobalParameter.__flow_parameter__ = staticmethod(_parameter)
