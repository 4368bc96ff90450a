"""Ops on global tensors: the ``__flow_dispatch__`` of :class:`GlobalTensor`.

For an op on global inputs: the candidate 1-D SBP signatures come from the op's registry traits
(``op.sbp_signatures``, plus the few linear rules traits cannot say, ``_EXTRA``); each hierarchy dimension
takes the cheapest by the boxing cost of getting the inputs there; a choice is kept only if the op, run on
every rank's shards, gives exactly that rank's shard of the logical result (checked by meta inference, so
uneven splits that a view cannot follow are refused). The decision is cached per (op, input metadata and sbps,
attributes). Then the inputs are boxed and the op runs on the shards. A partial input reduced on the way keeps
the reduced shard, and its gradient is reduced where it arrives partial (``_keep_reduced``).
"""
import itertools
import sys

import oneflow as flow
from oneflow import _C

from . import _layout, boxing, comm_debug
from .global_tensor import GLOBAL_TYPES, _full_value, _Global, make
from .sbp import broadcast, partial_max, partial_sum, split

_PARTIAL = {"sum": partial_sum, "max": partial_max, "mean": partial_sum}

# Linear rules the traits do not carry: partial values pass through sums and through products with a broadcast
_EXTRA = {
    "add": ["P(sum), P(sum) -> P(sum)"], "sub": ["P(sum), P(sum) -> P(sum)"],
    "mul": ["P(sum), B -> P(sum)", "B, P(sum) -> P(sum)"], "div": ["P(sum), B -> P(sum)"],
    "neg": ["P(sum) -> P(sum)"], "clone": ["P(sum) -> P(sum)", "P(max) -> P(max)"],
    "contiguous": ["P(sum) -> P(sum)"], "to_dtype": ["P(sum) -> P(sum)", "P(max) -> P(max)"],
    "add_": ["P(sum), P(sum) -> P(sum)"], "mul_": ["P(sum), B -> P(sum)"], "div_": ["P(sum), B -> P(sum)"],
    # convolutions treat each sample on its own: a split batch is data parallelism (the weight's gradient sums
    # over the batch, so it comes out partial)
    "convolution": ["S(0), B, B -> S(0)", "S(0), B -> S(0)"], "convolution_backward_input": ["S(0), B -> S(0)"],
    "convolution_backward_weight": ["S(0), S(0) -> P(sum)"],
    "max_pool": ["S(0) -> S(0), S(0)"], "max_pool_backward": ["S(0), S(0) -> S(0)"],
    "max_pool_gather": ["S(0), S(0) -> S(0)"], "avg_pool": ["S(0) -> S(0)"], "avg_pool_backward": ["S(0) -> S(0)"],
    "adaptive_avg_pool": ["S(0) -> S(0)"], "adaptive_avg_pool_backward": ["S(0) -> S(0)"],
    "adaptive_max_pool": ["S(0) -> S(0), S(0)"],
    # a lookup keeps the layout of its indices (batch or sequence split); the table's gradient sums over them,
    # unless scaled by the frequencies of the whole batch
    "embedding": ["B, S(0) -> S(0)", "B, S(1) -> S(1)"],
    # a linear layer's weight and bias gradients (grad^T @ input, grad's column sums) from one pass: a split
    # batch sums both (data parallelism), split output features split both, split input features the weight's
    "_mm_t_colsum": ["S(0), S(0) -> P(sum), P(sum)", "S(1), B -> S(0), S(0)", "B, S(1) -> S(1), B",
                     "P(sum), B -> P(sum), P(sum)", "B, P(sum) -> P(sum), B"],
    "embedding_dense_backward": lambda inputs, attrs: [] if attrs.get("scale_grad_by_freq") else
    ["S(0), S(0) -> P(sum)", "S(1), S(1) -> P(sum)"],
}



def _layer_norm_rules(inputs, attrs):
    """LayerNorm normalises each row of its trailing ``normalized_shape`` dims on its own: a split of a leading
    dim (batch or sequence: data parallelism) stays split in the output and the row statistics, and the
    weight's and bias's gradients, sums over the rows, come out partial."""
    x = inputs[1] if len(inputs) == 5 else inputs[0]  # the backward's first input is the output's gradient
    lead = x.dim() - len(attrs.get("normalized_shape", ()))
    # only splits an input already has: splitting a partial or broadcast input here (a reduce-scatter instead of
    # the all-reduce tensor parallelism wants) would send the activations back and forth around the norm
    had = {a.dim for t in inputs[:2] if isinstance(t, _Global) for a in t.sbp if a.is_split()}
    dims = [d for d in range(lead) if d in had]
    if len(inputs) == 5:
        return [f"S({d}), S({d}), S({d}), S({d}), B -> S({d}), P(sum), P(sum)" for d in dims]
    return [f"S({d}), B, B -> S({d}), S({d}), S({d})" for d in dims]


_EXTRA["native_layer_norm"] = _layer_norm_rules
_EXTRA["native_layer_norm_backward"] = _layer_norm_rules



def _nll_rules(inputs, attrs):
    """A split batch of log-probabilities and targets (data parallelism): per-sample losses stay split and
    their sum comes out partial. The mean is left to the gathered path: its divisor (the weight of the targets
    not ignored) belongs to the whole batch."""
    red = attrs.get("reduction", "mean")
    if red not in ("none", "sum"):
        return []
    if len(inputs) == 4:  # nll_loss_backward(grad_output, self, target, weight)
        return [f"{'S(0)' if red == 'none' else 'B'}, S(0), S(0), B -> S(0)"]
    return [f"S(0), S(0), B -> {'S(0)' if red == 'none' else 'P(sum)'}"]


_EXTRA["nll_loss"] = _nll_rules
_EXTRA["nll_loss_backward"] = _nll_rules



def _rnn_rules(inputs, attrs):
    """A recurrent layer's batch rows run independently: a split batch (dim 1 of the step-major input
    projection, outputs and workspace, dim 0 of the states) with broadcast weights is data parallelism. Packed
    sequences (``active``, counted over the whole batch) and batches smaller than the rank count (the kernels
    take no empty batch) are left to the gathered path."""
    if attrs.get("active") or not _rnn_batch_fits(inputs[1]):
        return []
    return ["S(1), S(0), S(0), B, B, B -> S(1), S(0), S(0), S(1)"]


def _rnn_batch_fits(h0):
    return isinstance(h0, _Global) and h0.shape[0] >= h0.placement.ranks.size


_EXTRA["_rnn_layer"] = _rnn_rules

_cache = {}
_CACHE_MAX = 4096


def _parse_axis(s):
    s = s.strip()
    if s == "B":
        return broadcast
    if s.startswith("S("):
        return split(int(s[2:-1]))
    if s.startswith("P("):
        return _PARTIAL.get(s[2:-1], s)  # an unknown combiner stays a string: no sbp of ours holds it
    raise ValueError(f"unknown sbp axis {s!r}")


def _parse(sig):
    lhs, rhs = sig.split("->")
    ins = [_parse_axis(a) for a in lhs.split(",")] if lhs.strip() else []
    return ins, [_parse_axis(a) for a in rhs.split(",")]


def _mean_partial(sig):
    return "P(mean)" in sig.split("->")[1]


def _cost(src, dst, nbytes, k):
    """Bytes one rank sends to take one hierarchy dimension from ``src`` to ``dst`` (ring algorithms). Making
    a partial value sends nothing but owes a reduction later and grows a shard to the whole: it costs as much
    as a gather."""
    if src == dst:
        return 0.0
    if dst.is_partial():
        return nbytes * (k - 1) / k if not src.is_partial() else 3.0 * nbytes * (k - 1) / k
    if src.is_broadcast():
        return nbytes * 1e-6  # a free slice, but a broadcast input keeps its layout when nothing else differs
    if src.is_split():
        return nbytes * (k - 1) / k if dst.is_broadcast() else nbytes * (k - 1) / (k * k)
    return 2.0 * nbytes * (k - 1) / k if dst.is_broadcast() else nbytes * (k - 1) / k


def _hashable(v):
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _hashable(x)) for k, x in v.items()))
    hash(v)
    return v


def _local_attrs(op, attrs, out_shape, local_out):
    """Shape-like list attributes (view's size, expand's size) given for the logical output, made local."""
    if out_shape is None or tuple(out_shape) == tuple(local_out):
        return attrs
    new = None
    for name, v in attrs.items():
        if isinstance(v, (list, tuple)) and len(v) == len(out_shape) and all(isinstance(e, int) for e in v) and \
                all(e == -1 or e == s for e, s in zip(v, out_shape)):
            new = dict(attrs) if new is None else new
            new[name] = [e if e == -1 else ls for e, ls in zip(v, local_out)]
    return attrs if new is None else new


def _meta(shape, dtype):
    return _C._empty(list(shape), dtype, "meta")


class _Plan:
    __slots__ = ("in_sbp", "out_sbp", "out_metas", "mean_count", "attrs_for")


def _valid(op, inputs, attrs, placement, in_nd, out_nd, out_metas):
    """Whether the op on every rank's shards gives that rank's shard of the logical outputs; returns the
    per-coordinate local attrs (or None when not valid)."""
    attrs_for = {}
    coords = [tuple(int(i) for i in c) for c in itertools.product(*[range(n) for n in placement.ranks.shape])]
    for at in coords:
        locs = []
        for t, nd in zip(inputs, in_nd):
            if t is None:
                locs.append(None)
                continue
            shape = tuple(t.shape)
            if nd is None:
                locs.append(_meta(shape, t.dtype))
                continue
            locs.append(_meta(_layout.local_shape(shape, placement, nd, at), t.dtype))
        want = [_layout.local_shape(m[0], placement, o, at) for m, o in zip(out_metas, out_nd)]
        la = _local_attrs(op, attrs, out_metas[0][0] if len(out_metas) == 1 else None, want[0]) \
            if out_metas else attrs
        try:
            got = op.meta(locs, la)
        except Exception:
            return None
        if [tuple(g[0]) for g in got] != want:
            return None
        attrs_for[at] = la
    return attrs_for


def _infer(op, inputs, attrs, placement):
    nh = placement.ranks.ndim
    hier = placement.ranks.shape
    try:
        out_metas = [(tuple(m[0]), m[1]) for m in op.meta(inputs, attrs)]
    except NotImplementedError:  # an output shape that depends on the data, or no meta inference: run it whole
        return None
    extra = _EXTRA.get(op.name, [])
    sigs = list(op.sbp_signatures(inputs, attrs)) + (extra(inputs, attrs) if callable(extra) else extra)
    cands = []
    for s in sigs:
        ins, outs = _parse(s)
        if len(outs) == 1 and len(out_metas) > 1 and op.num_outputs < 0:  # Tensor[] results: one rule for all
            outs = outs * len(out_metas)
        if len(outs) != len(out_metas) or len(ins) != len(inputs) or any(isinstance(a, str) for a in ins + outs):
            continue
        cands.append((ins, outs, _mean_partial(s)))
    nbytes = [t.numel() * t.element_size() if isinstance(t, _Global) else 0 for t in inputs]

    def score(c, h):
        ins, outs, _ = c
        cost = 0.0
        for t, a, nb in zip(inputs, ins, nbytes):
            if isinstance(t, _Global):
                cost += _cost(t.sbp[h], a, nb, hier[h])
        return cost + (1e-4 if outs[0].is_partial() else 0)  # ties: a partial result owes a reduction

    if op.is_inplace:
        self_sbp = inputs[0].sbp
        per_dim = [[c for c in cands if c[0][0] == self_sbp[h] and c[1][0] == self_sbp[h] and not c[2]]
                   for h in range(nh)]
    else:
        per_dim = [sorted(cands, key=lambda c, h=h: score(c, h)) for h in range(nh)]
    tried = 0
    for combo in sorted(itertools.product(*per_dim), key=lambda cs: sum(score(c, h) for h, c in enumerate(cs))):
        tried += 1
        if tried > 64:
            break
        in_nd = [None if not isinstance(t, _Global) else tuple(c[0][i] for c in combo)
                 for i, t in enumerate(inputs)]
        out_nd = [tuple(c[1][j] for c in combo) for j in range(len(out_metas))]
        if any(c[2] for c in combo) and len(out_metas) != 1:
            continue
        attrs_for = _valid(op, inputs, attrs, placement, in_nd, out_nd, out_metas)
        if attrs_for is None:
            continue
        p = _Plan()
        p.in_sbp, p.out_sbp, p.out_metas, p.attrs_for = in_nd, out_nd, out_metas, attrs_for
        p.mean_count = None
        if any(c[2] for c in combo):
            dims = op.dims(inputs, attrs) or list(range(inputs[0].dim()))
            p.mean_count = _numel([inputs[0].shape[d] for d in dims])
        return p
    if op.is_inplace:  # no signature keeps the target's layout (an index_put_ on a split tensor): run it whole
        return None
    raise RuntimeError(f"{op.name}(): found no sbp signature for inputs of shapes "
                       f"{[tuple(t.shape) if t is not None else None for t in inputs]} on {placement!r}")


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _placement_of(op, inputs):
    placement = None
    for t in inputs:
        if isinstance(t, _Global):
            if placement is None:
                placement = t.placement
            elif t.placement != placement:
                raise RuntimeError(f"{op.name}(): expected all global tensors on the same placement, got "
                                   f"{placement!r} and {t.placement!r}; convert one with to_global(placement=...)")
    return placement


def _check_local(op, inputs):
    for i, t in enumerate(inputs):
        if t is not None and not isinstance(t, _Global):
            raise RuntimeError(f"{op.name}(): input {i} is a local tensor mixed with global ones")


def _is_scalar(t):
    """A Python number wrapped as a tensor, or a 0-dim CPU tensor: taken as the same value on every rank (as
    DTensor takes scalars)."""
    return t.dim() == 0 and t.device.type == "cpu"


_DISPATCH_MODULES = (__name__, "oneflow._dispatch")


def _library_frame(f):
    """Whether frame ``f`` runs the framework's own Python code (flow-core or a plugin: modules ``oneflow*``)."""
    return f.f_globals.get("__name__", "").startswith("oneflow")


def _entry_frame():
    """The outermost frame of the framework's Python code that the user's code called (the API entry point of
    the op being dispatched), or None when user code issued the op itself (a Tensor operator, ``_C.ops``)."""
    f = sys._getframe(2)
    while f is not None and f.f_globals.get("__name__") in _DISPATCH_MODULES:  # the interception machinery
        f = f.f_back
    entry = None
    while f is not None and _library_frame(f):
        entry, f = f, f.f_back
    return entry


def _handed_in(entry):
    """The local tensors the user handed to the API entry point ``entry``, by storage: ``{key: argument name}``
    for its arguments (one level into lists, tuples and dicts) and, for a module, its parameters and buffers (a
    local module applied to a global input is the user's mixing). Scalars (0-dim CPU tensors) are left out."""
    code = entry.f_code
    n = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & 4) + bool(code.co_flags & 8)
    keys = {}

    def add(v, name):
        if isinstance(v, flow.Tensor) and not isinstance(v, _Global) and not _is_scalar(v):
            keys.setdefault(_storage_key(v), name)

    for name in code.co_varnames[:n]:
        v = entry.f_locals.get(name)
        if isinstance(v, (list, tuple)):
            for e in v:
                add(e, name)
        elif isinstance(v, dict):
            for k, e in v.items():
                add(e, k if isinstance(k, str) else name)
        elif isinstance(v, flow.nn.Module):
            for pname, t in itertools.chain(v.named_parameters(), v.named_buffers()):
                add(t, f"{name}.{pname}")
        else:
            add(v, name)
    return keys


def _storage_key(t):
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # a tensor without storage of its own: itself
        return id(t)


def check_mixing(op, inputs):
    """Raises where a user's op gets a local tensor (other than a scalar) among global ones. Issued by user code,
    any local input is the user's. Issued by a framework function the user called (the API entry point: the
    outermost frame of ``oneflow*`` code), a local input is the user's when it is one the user handed in (an
    argument, a module's parameter or buffer, or a view of one), and it is taken to be computed from one when
    the user handed any local tensor in at all (SDPA turning a local bool ``attn_mask`` into an additive bias):
    nothing tells a tensor computed from the user's apart from one the framework makes on its own, and a value
    computed from a local tensor may differ between ranks, so that is refused too, naming the argument. Local
    tensors a framework function makes from nothing local (an RNN's zero state, a causal mask) mix as broadcast,
    as the core's composites' and backward formulas' do. Also the ``__flow_composite__`` of global tensors (a
    composite's inputs as the user gave them)."""
    if not any(isinstance(t, _Global) for t in inputs):
        return
    bad = [(i, t) for i, t in enumerate(inputs) if t is not None and not isinstance(t, _Global) and not _is_scalar(t)]
    if not bad:
        return
    entry = _entry_frame()
    if entry is not None:
        handed = _handed_in(entry)
        if not handed:
            return
        own = [(i, t) for i, t in bad if _storage_key(t) in handed]
        if not own:
            name = next(iter(handed.values()))
            i, t = bad[0]
            raise RuntimeError(
                f"{op.name}(): input {i} is a local tensor (shape {tuple(t.shape)}) mixed with global tensors, "
                f"computed from the local argument {name!r} handed to the framework function; convert that one with "
                f".to_global(placement, sbp) first (OneFlow does not mix local and global tensors in one "
                f"op)")
        bad = own
    for i, t in bad:
        raise RuntimeError(
                f"{op.name}(): input {i} is a local tensor (shape {tuple(t.shape)}, on {t.device}) mixed with "
                f"global tensors; convert it with .to_global(placement, sbp) first (OneFlow does not mix local "
                f"and global tensors in one op)")


def _with_local_inputs(op, inputs, attrs):
    """Local tensors among global inputs are taken as broadcast: the same value on every rank. That is what
    the core's composites and backward formulas make when they create tensors (feature dropout's mask, index's
    zeros: made alike on every rank from the same generator state), and what a scalar is. A user's op mixing
    any other local tensor with global ones raises, as in OneFlow: the core runs its own computations under
    an internal depth (``_C._internal_depth()``), which tells the two apart."""
    if _C._internal_depth() == 0:
        check_mixing(op, inputs)
    placement = _placement_of(op, inputs)
    nd = (broadcast,) * placement.ranks.ndim
    wrapped = [t if t is None or isinstance(t, _Global) else make(t, tuple(t.shape), placement, nd)
               for t in inputs]
    out = dispatch(None, op, wrapped, attrs)
    if op.is_inplace and not isinstance(inputs[0], _Global):
        return inputs[0]
    return out


def _attrs_key(attrs):
    k = tuple((n, tuple(v) if type(v) is list else v) for n, v in attrs.items())
    try:
        hash(k)
        return k
    except TypeError:
        try:
            return _hashable(attrs)
        except TypeError:
            return None


class _Step:
    """A cached decision: how to get each input's shard and what to make of the op's result."""
    __slots__ = ("plan", "box", "local_attrs", "placement", "wrap", "outside", "whole", "view")


def _decide(op, inputs, attrs):
    placement = _placement_of(op, inputs)
    _check_local(op, inputs)
    plan = _infer(op, inputs, attrs, placement)
    st = _Step()
    st.plan, st.placement = plan, placement
    st.whole = plan is None
    if st.whole:
        return st
    # a view of one tensor: writes through it must reach its base (``_note_view``)
    st.view = "view" in op.traits and not op.is_inplace and all(t is None for t in inputs[1:])
    st.box = [None if not isinstance(t, _Global) or t.sbp == nd else nd for t, nd in zip(inputs, plan.in_sbp)]
    at = _layout.coord(placement)
    st.local_attrs = plan.attrs_for.get(at, attrs) if at is not None else attrs
    st.outside = at is None
    st.wrap = None if op.is_inplace else [(m[0], placement, s) for m, s in zip(plan.out_metas, plan.out_sbp)]
    return st


def dispatch(cls, op, inputs, attrs):
    """``GlobalTensor.__flow_dispatch__``."""
    special = _SPECIAL.get(op.name)
    if special is not None:
        return special(op, inputs, attrs)
    return _planned(op, inputs, attrs)


def _planned(op, inputs, attrs):
    """An op placed by its sbp signatures (the cached decision of ``_decide``)."""
    metas = []
    for t in inputs:
        if type(t) in GLOBAL_TYPES:
            metas.append(t.__dict__["_mk"])
        elif t is None:
            metas.append(None)
        else:
            return _with_local_inputs(op, inputs, attrs)
    ak = _attrs_key(attrs)
    key = (op, tuple(metas), ak) if ak is not None else None
    st = _cache.get(key) if key is not None else None
    if st is None:
        if "random" in op.traits:
            return _random_inplace(op, inputs, attrs) if op.is_inplace else _random_op(op, inputs, attrs)
        st = _decide(op, inputs, attrs)
        if key is not None:
            if len(_cache) >= _CACHE_MAX:
                _cache.clear()
            _cache[key] = st
    if st.whole:
        return _whole_op(op, inputs, attrs, st.placement)
    if st.outside:  # this rank holds no shard of the placement: nothing to compute
        if st.wrap is None:
            return inputs[0]
        outs = [make(_C._empty([0], m[1], None), *w) for m, w in zip(st.plan.out_metas, st.wrap)]
        return tuple(outs) if len(outs) > 1 or op.num_outputs != 1 else outs[0]
    locs = []
    for t, nd in zip(inputs, st.box):
        if type(t) not in GLOBAL_TYPES:
            locs.append(t)
        elif nd is None:
            locs.append(t.__dict__["_local"])
        else:
            with comm_debug.cause(op.name):
                d = t.__dict__
                src = d["_nd_sbp"]
                loc = boxing.box(d["_local"], tuple(t.shape), st.placement, src, nd)
                locs.append(loc)
            if _reduces_only(src, nd) and (t.grad_fn is not None or not t.requires_grad):
                _keep_reduced(t, loc, nd)  # (a leaf that trains keeps the layout it was given: its grad's)
    plan = st.plan
    if plan.mean_count is not None:  # a mean over a split dim: local sums over the whole count, partial sums
        out = _C.ops.div(_C.ops.sum.redispatch(locs, st.local_attrs), plan.mean_count)
    else:
        out = op.redispatch(locs, st.local_attrs)
    if st.wrap is None:
        _written(inputs[0])
        return inputs[0]
    if isinstance(out, (tuple, list)):
        out = type(out)(make(o, *w) for o, w in zip(out, st.wrap))
    else:
        out = make(out, *st.wrap[0])
    if st.view:
        _mark_views(op, inputs[0], attrs, out)
        _note_view(op, inputs[0], attrs, out, st.box[0] is not None)
    return out


_geometry = {}


def _mark_views(op, base, attrs, out):
    """Gives the global views ``out`` of ``base`` the logical strides and offset the view op gives (on a meta
    tensor of ``base``'s logical geometry) and ``base`` as their base, as local views have: autograd then
    rebases an in-place write to a view onto its base (``x[1:3] = v`` gives ``x`` and ``v`` their gradients)."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    stride, offset = base.stride(), base.storage_offset()
    ak = _attrs_key(attrs)
    shape, dtype = base.__dict__["_mk"][:2]
    key = (op, shape, stride, offset, dtype, ak) if ak is not None else None
    geo = _geometry.get(key) if key is not None else None
    if geo is None:
        extent = offset + 1 + sum((n - 1) * s for n, s in zip(shape, stride) if n > 0)
        m = _C.ops.as_strided(_C._empty([extent], dtype, "meta"), list(shape), list(stride), offset)
        views = op.redispatch([m], attrs)
        views = views if isinstance(views, (tuple, list)) else (views,)
        geo = [(list(v.stride()), v.storage_offset()) for v in views]
        if key is not None:
            if len(_geometry) >= _CACHE_MAX:
                _geometry.clear()
            _geometry[key] = geo
    for o, (st, off) in zip(outs, geo):
        _C._mark_view(o, base, st, off)


# ---- writes through views --------------------------------------------------------------------------------
def _note_view(op, base, attrs, out, boxed):
    """Remembers how the view ``out`` came from ``base``. Unboxed, each shard of ``out`` is a view of ``base``'s
    shard, so a write reaches it by itself, but ``base`` may in turn be a view whose shard was boxed. Boxed (a
    slice of a split dim gathers it), ``out``'s shard is memory of its own: a write to ``out`` is replayed on
    ``base``'s whole value (``_written``). So is a write to a view of a partial tensor: a write to a partial
    shard (a fill) changes its layout, and a use that reduces the base gives it a new shard (``_keep_reduced``)."""
    boxed = boxed or any(s.is_partial() for s in base.__dict__["_nd_sbp"])
    link = base.__dict__.get("_view_of")
    if not boxed and link is None:
        return
    outs = out if isinstance(out, (tuple, list)) else (out,)
    for j, o in enumerate(outs):
        o.__dict__["_view_of"] = (base, op if boxed else None, attrs, j)


def _written(t):
    """After an in-place change of ``t``: where ``t`` is a view whose shard is not memory of its base's (see
    ``_note_view``), the base's whole value gets the change through the same view on it and is laid out again
    in the base's own sbp; then the same for the base's base. (Other such views of the base taken before do not
    see the change: they hold copies.)"""
    link = t.__dict__.get("_view_of")
    while link is not None:
        base, op, attrs, j = link
        if op is not None and _layout.coord(base.placement) is not None:
            with comm_debug.cause("write_through_view"):
                def through_view(whole, op=op, attrs=attrs, j=j, t=t):
                    region = op.redispatch([whole], attrs)
                    if isinstance(region, (tuple, list)):
                        region = region[j]
                    region.copy_(_full_value(t))

                _change_whole(base, _full_value(base), through_view)
        t, link = base, base.__dict__.get("_view_of")


def _change_whole(x, full, change):
    """Runs ``change(whole)`` on ``full``, the whole value of global ``x``, and lays the result out again as
    ``x``'s shard. A broadcast ``x``'s shard is its whole value: changed in place; otherwise on a copy."""
    d = x.__dict__
    own = full is d["_local"]
    if not own:
        full = full.clone()
    change(full)
    if not own and _layout.coord(x.placement) is not None:
        d["_local"].copy_(boxing.from_broadcast(full, x.placement, d["_nd_sbp"]))


def _reduces_only(src, dst):
    """Whether boxing ``src`` to ``dst`` only reduces partial dims (to broadcast or split), changing no other."""
    return any(a.is_partial() and not b.is_partial() for a, b in zip(src, dst)) and \
        all(a == b or (a.is_partial() and not b.is_partial()) for a, b in zip(src, dst))


def _keep_reduced(t, local, nd):
    """A partial tensor reduced for one use keeps the reduced shard (its logical value is the same), so later
    uses, the backward's reading of it as a saved tensor included, do not reduce it again. Its gradient is
    reduced where it arrives partial, as the gradient of a reduction (Megatron's f/g pair of the row- and
    column-parallel linears): the gradient of the tensor, not each op's piece of it, is reduced once."""
    d = t.__dict__
    d["_local"], d["_nd_sbp"] = local, nd
    d["_mk"] = (d["_mk"][0], d["_mk"][1], nd, d["_mk"][3])
    if t.requires_grad and not d.get("_reduce_grad"):
        d["_reduce_grad"] = True
        t.register_hook(_reduce_partial_grad(t.placement, nd))


def _reduce_partial_grad(placement, nd):
    def hook(grad):
        if not isinstance(grad, _Global) or grad.placement != placement or \
                not any(s.is_partial() for s in grad.sbp):
            return grad
        target = tuple(b if a.is_partial() else a for a, b in zip(grad.sbp, nd))
        with comm_debug.cause("grad_of_reduced"):
            shape = tuple(grad.shape)
            return make(boxing.box(grad.__dict__["_local"], shape, placement, grad.sbp, target), shape, placement,
                        target)

    return hook


# ---- ops with rules of their own ---------------------------------------------------------------------------
def _whole_op(op, inputs, attrs, placement):
    """An op the sbp rules cannot place: one whose output shape depends on the data (``masked_select``,
    ``nonzero``, a bool-mask index), one without meta inference (the RNN layers' backward), or an in-place one
    no signature keeps the target's layout for (``index_put_``, ``index_add_`` on a split tensor). Every rank
    runs it on the whole values of its inputs, as a single process would, so its results are the single-process
    ones: broadcast, or for an in-place op written back in the target's own layout. It costs a gather per
    input that is not broadcast."""
    with comm_debug.cause(op.name):
        full = [_full_value(t) if isinstance(t, _Global) else t for t in inputs]
    if op.is_inplace:
        x = inputs[0]
        _change_whole(x, full[0], lambda whole: op.redispatch([whole, *full[1:]], attrs))
        _written(x)
        return x
    out = op.redispatch(full, attrs)
    nd = (broadcast,) * placement.ranks.ndim

    def lay(o):
        return None if o is None else make(o, tuple(o.shape), placement, nd)

    return type(out)(lay(o) for o in out) if isinstance(out, (tuple, list)) else lay(out)


def _materialize(op, inputs, attrs):
    with comm_debug.cause("_materialize"):
        return _full_value(inputs[0])


def _fill(op, inputs, attrs):
    """A fill ignores the values: the result keeps the input's split layout (a partial input gives a
    broadcast result, whose value is the filled one)."""
    x = inputs[0]
    nd = tuple(broadcast if s.is_partial() else s for s in x.sbp)
    if op.is_inplace:
        if nd != x.sbp:
            x.__dict__["_local"] = _C._empty(list(_layout.local_shape(tuple(x.shape), x.placement, nd)), x.dtype,
                                             None)
            x.__dict__["_nd_sbp"] = nd
        op.redispatch([x.__dict__["_local"]], attrs)
        _written(x)
        return x
    local = _C._empty(list(_layout.local_shape(tuple(x.shape), x.placement, nd)), x.dtype, None)
    return make(op.redispatch([local], attrs), tuple(x.shape), x.placement, nd)


def _copy_(op, inputs, attrs):
    dst, src = inputs[0], inputs[1]
    if not isinstance(dst, _Global):  # out= a local tensor: the whole value
        _C.ops.copy_.redispatch([dst, _full_value(src)], attrs)
        return dst
    with comm_debug.cause("copy_"):
        if isinstance(src, _Global):
            if src.placement != dst.placement:
                raise RuntimeError(f"copy_(): the source is on {src.placement!r}, the destination on "
                                   f"{dst.placement!r}; convert it with to_global(placement=...) first")
            val = boxing.box(src.__dict__["_local"], tuple(src.shape), src.placement, src.sbp, dst.sbp)
            if tuple(src.shape) != tuple(dst.shape):
                val = boxing.from_broadcast(_C.ops.expand(_full_value(src), list(dst.shape)), dst.placement,
                                            dst.sbp)
        else:  # a local source is the whole value (the same on every rank)
            full = _C.ops.expand(src, list(dst.shape)) if tuple(src.shape) != tuple(dst.shape) else src
            val = boxing.from_broadcast(full, dst.placement, dst.sbp)
    _C.ops.copy_.redispatch([dst.__dict__["_local"], val], attrs)
    _written(dst)
    return dst


def _random_inplace(op, inputs, attrs):
    """Random fills give the values of a single process with the same seed, and advance the generator by the
    whole logical tensor on every rank. The fills with a ``shard`` attribute (uniform_, normal_, exponential_,
    random_) draw only this rank's block; the others draw the whole tensor and keep this rank's shard."""
    x = inputs[0]
    if len(inputs) == 1 and attrs.get("shard", False) is None and not any(s.is_partial() for s in x.sbp):
        at = _layout.coord(x.placement)
        if at is not None:
            shape = tuple(x.shape)
            lo = [a for a, _ in _layout.ranges(shape, x.placement, x.sbp, at)]
            op.redispatch([x.__dict__["_local"]], dict(attrs, shard=[*shape, *lo]))
            _written(x)
            return x
    full = _C._empty(list(x.shape), x.dtype, None)
    rest = [_full_value(t) if isinstance(t, _Global) else t for t in inputs[1:]]
    op.redispatch([full, *rest], attrs)
    x.__dict__["_local"].copy_(boxing.from_broadcast(full, x.placement, x.sbp))
    _written(x)
    return x


def _random_op(op, inputs, attrs):
    """A random op (bernoulli, poisson, normal with tensor mean/std, ...) gives the values of a single process
    with the same seed, laid out as its first global input (partial: broadcast). The ops with a ``shard``
    attribute draw only this rank's block (``_random_block``); the others run on the whole inputs, as a single
    process would, and keep this rank's shard. A rank outside the placement draws the whole result too and keeps
    nothing."""
    placement = _placement_of(op, inputs)
    _check_local(op, inputs)
    first = next(t for t in inputs if isinstance(t, _Global))
    nd = tuple(broadcast if s.is_partial() else s for s in first.sbp)
    if "shard" in attrs and attrs["shard"] is None:
        out = _random_block(op, inputs, attrs, placement, first, nd)
        if out is not None:
            return out
    outside = _layout.coord(placement) is None
    if outside:
        # this rank holds nothing of the result, but draws it whole as the placement's ranks do, so that its
        # generator stays where theirs (and a single process's) is; its inputs' values are not here: ones
        full = [flow.ones(*t.shape, dtype=t.dtype) if isinstance(t, _Global) else t for t in inputs]
    else:
        with comm_debug.cause(op.name):
            full = [_full_value(t) if isinstance(t, _Global) else t for t in inputs]
    out = op.redispatch(full, attrs)

    def lay(o):
        on = nd if o.dim() == first.dim() else (broadcast,) * len(nd)
        local = _C._empty([0], o.dtype, None) if outside else boxing.from_broadcast(o, placement, on)
        return make(local, tuple(o.shape), placement, on)

    return type(out)(lay(o) for o in out) if isinstance(out, (tuple, list)) else lay(out)


def _random_block(op, inputs, attrs, placement, first, nd):
    """This rank's block of a random op's result: its inputs of the result's shape are boxed to ``nd`` (0-dim
    ones taken whole) and the kernel draws, with the ``shard`` attribute, the values the whole result has at
    the block's positions, advancing the generator by the whole. None where that does not apply (a rank
    outside the placement, inputs broadcast from other shapes): the caller takes the whole path."""
    at = _layout.coord(placement)
    metas = op.meta(inputs, attrs)
    if at is None or len(metas) != 1 or tuple(metas[0][0]) != tuple(first.shape):
        return None
    shape = tuple(first.shape)
    local_shape = list(_layout.local_shape(shape, placement, nd, at))
    # bernoulli(x, p) only takes x's shape (dropout's mask): x's values are not needed, so never moved
    unread = op.name in ("bernoulli", "bernoulli_") and attrs.get("p") is not None
    locs = []
    with comm_debug.cause(op.name):
        for t in inputs:
            if t is None:
                locs.append(None)
            elif tuple(t.shape) == shape:
                d = t.__dict__
                if unread:
                    locs.append(_C._empty(local_shape, t.dtype, None))
                else:
                    locs.append(d["_local"] if d["_nd_sbp"] == nd else
                                boxing.box(d["_local"], shape, placement, d["_nd_sbp"], nd))
            elif t.dim() == 0:
                locs.append(_full_value(t))
            else:
                return None
    lo = [a for a, _ in _layout.ranges(shape, placement, nd, at)]
    out = op.redispatch(locs, dict(attrs, shard=[*shape, *lo]))
    return make(out, shape, placement, nd)


# updates that read more than one element of a parameter at a time (norms, orthogonalisation)
_NON_ELEMENTWISE_UPDATES = ("lamb_update_", "muon_update_", "adafactor_update_")


def _whole_update(op, names, groups, attrs):
    """An update that reads whole parameters (norms, factored statistics) on split ones: every rank gathers
    each list entry whole, runs the update on the whole values (identical on every rank, so the norms are the
    single-process ones) and keeps its shard of the results. It costs an all_gather per tensor and step."""
    flat, back = [], []
    with comm_debug.cause(op.name):
        for name in names:
            group = groups[name]
            for t in (group if isinstance(group, list) else [group]):
                if isinstance(t, _Global):
                    full = _C.ops.clone(_full_value(t))
                    flat.append(full)
                    if isinstance(group, list):
                        back.append((t, full))
                else:
                    flat.append(t)
    out = op.redispatch(flat, attrs)
    for t, full in back:
        if _layout.coord(t.placement) is not None:
            t.__dict__["_local"].copy_(boxing.from_broadcast(full, t.placement, t.sbp))
    return out


def _optimizer_update(op, inputs, attrs):
    """A fused optimizer update (lists of parameters, gradients, states) runs on the shards: each list
    entry takes the layout of its parameter, and tensors outside the lists (lr, step) their whole value."""
    from oneflow._dispatch import split_inputs

    groups = split_inputs(op, inputs, attrs)
    names = [a["name"] for a in op.arguments if a["is_tensor"]]
    params = groups[names[0]]
    if any(isinstance(q, _Global) and "_zero_layout" in q.__dict__ for q in params):
        from .zero import update_on_shards

        with comm_debug.cause(op.name):
            return update_on_shards(op, names, groups, params, attrs)
    if op.name in _NON_ELEMENTWISE_UPDATES and any(
            isinstance(q, _Global) and not all(s.is_broadcast() for s in q.sbp) for q in params):
        return _whole_update(op, names, groups, attrs)
    with comm_debug.cause(op.name):
        flat = []
        for name in names:
            group = groups[name]
            if not isinstance(group, list):
                flat.append(_place_for_update(None, group, op))
                continue
            flat.extend(_place_for_update(q, t, op) for q, t in zip(params, group))
    return op.redispatch(flat, attrs)


def _place_for_update(q, t, op=None):
    """The local value a fused update reads for ``t``, a list entry of parameter ``q`` (in ``q``'s layout) or,
    with ``q`` None, a tensor outside the lists (its whole value)."""
    if not isinstance(t, _Global):
        return t
    if q is None:
        return _full_value(t)
    if t is q or t.sbp == q.sbp:
        return t.__dict__["_local"]
    if t.placement != q.placement:
        name = op.name if op is not None else "optimizer update"
        raise RuntimeError(f"{name}(): a state or gradient lies on {t.placement!r}, its parameter on "
                           f"{q.placement!r}")
    return boxing.box(t.__dict__["_local"], tuple(t.shape), t.placement, t.sbp, q.sbp)


def _index_put_(op, inputs, attrs):
    """``index_put_`` on a split tensor, where each rank can write the elements it holds from what it has, with no
    communication: one integer index (over dim 0, broadcast) with broadcast values (``x[idx] = v``; on a split
    of dim 0 each rank takes the indices in its rows, on another split dim its columns of the values), or a
    bool mask laid out as the target with one value (``x[x > 0] = 0``). Anything else (and an index out of
    range, for its error) goes the general way, which runs it whole."""
    x, v, idx = inputs[0], inputs[1], inputs[2:]
    if type(x) in GLOBAL_TYPES and type(v) in GLOBAL_TYPES and len(idx) == 1 and type(idx[0]) in GLOBAL_TYPES \
            and x.placement.ranks.ndim == 1 and x.sbp[0].is_split() and v.placement == x.placement \
            and idx[0].placement == x.placement and _layout.coord(x.placement) is not None:
        done = _index_put_shard(op, x, v, idx[0], attrs)
        if done:
            _written(x)
            return x
    return _planned(op, inputs, attrs)


def _index_put_shard(op, x, v, index, attrs):
    d = x.__dict__
    local, at = d["_local"], _layout.coord(x.placement)
    vl, il = v.__dict__["_local"], index.__dict__["_local"]
    if index.dtype in (flow.bool, flow.uint8):
        if index.sbp != x.sbp or tuple(index.shape) != tuple(x.shape) or v.numel() != 1 or v.sbp != (broadcast,):
            return False
        op.redispatch([local, vl, il], attrs)
        return True
    if index.dim() != 1 or index.sbp != (broadcast,) or v.sbp != (broadcast,) or x.dim() == 0:
        return False
    n = x.shape[0]
    if n == 0 or bool(((il < -n) | (il >= n)).any()):
        return False
    rest = list(x.shape[1:])
    try:
        vals = _C.ops.expand(vl, [il.numel(), *rest])
    except RuntimeError:  # the general way reports the shapes
        return False
    i = flow.where(il < 0, il + n, il)
    (lo, hi), dim = _layout.ranges(tuple(x.shape), x.placement, x.sbp, at)[x.sbp[0].dim], x.sbp[0].dim
    if dim == 0:
        keep = (i >= lo) & (i < hi)
        i, vals = i[keep] - lo, vals[keep]
    else:
        vals = flow.narrow(vals, dim, lo, hi - lo)
    op.redispatch([local, vals.contiguous(), i], attrs)
    return True


# _rnn_layer_backward's inputs: the batch dim of each (None: not batched), and the layouts of its outputs
_RNN_BACKWARD_BATCH = (1, 0, 0, 0, 0, None, None, None, 1, 1)
_RNN_BACKWARD_OUT = (1, 0, 0, None, None, None)  # the weights' gradients sum over the batch: partial


def _rnn_layer_backward(op, inputs, attrs):
    """The backward of a recurrent layer (no meta inference) on a split batch, as data parallelism: each rank
    runs it on its batch rows (the forward's layout, ``_rnn_rules``) and the weights' gradients come out
    partial. Packed sequences, n-D placements and mixed placements run whole."""
    if attrs.get("active") or any(t is not None and type(t) not in GLOBAL_TYPES for t in inputs):
        return _planned(op, inputs, attrs)
    placement = _placement_of(op, inputs)
    out, h0 = inputs[8], inputs[3]
    if placement.ranks.ndim != 1 or _layout.coord(placement) is None or out.sbp != (split(1),) or \
            not _rnn_batch_fits(h0):
        return _planned(op, inputs, attrs)
    locs = []
    with comm_debug.cause(op.name):
        for t, d in zip(inputs, _RNN_BACKWARD_BATCH):
            if t is None:
                locs.append(None)
                continue
            nd = (broadcast,) if d is None or t.numel() == 0 else (split(d),)
            locs.append(boxing.box(t.__dict__["_local"], tuple(t.shape), placement, t.__dict__["_nd_sbp"], nd))
    outs = []
    # the forward inputs the gradients are for: xg (always there), h0, c0, w_hh, b_hn, w_hr
    given = (out, h0, inputs[4], inputs[5], inputs[6], inputs[7])
    for o, d, t in zip(op.redispatch(locs, attrs), _RNN_BACKWARD_OUT, given):
        if o is None:
            outs.append(None)
        elif t is None or t.numel() == 0:  # an input without a gradient (an empty one on every rank)
            outs.append(make(o, tuple(o.shape), placement, (broadcast,)))
        elif d is None:
            outs.append(make(o, tuple(o.shape), placement, (partial_sum,)))
        else:
            shape = list(o.shape)
            shape[d] = t.shape[d]
            outs.append(make(o, tuple(shape), placement, (split(d),)))
    return tuple(outs)


def _detach(op, inputs, attrs):
    x = inputs[0]
    return make(x.__dict__["_local"], tuple(x.shape), x.placement, x.sbp)


_SPECIAL = {"_materialize": _materialize, "fill": _fill, "fill_": _fill, "copy_": _copy_, "detach": _detach,
            "alias": _detach, "index_put_": _index_put_, "_rnn_layer_backward": _rnn_layer_backward}
_SPECIAL.update({o["name"]: _optimizer_update for o in _C.list_ops() if "optimizer" in o["traits"]})
