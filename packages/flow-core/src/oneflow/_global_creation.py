"""OneFlow's ``placement=`` and ``sbp=`` on the creation functions (``oneflow.randn(4, 5, placement=p,
sbp=s)``), laid out as a global tensor by the plugin that provides ``oneflow.placement`` (flow-dist). The
creators with a shard maker (``_global_shards``: empty, zeros, ones, full, rand, randn, randint, normal, arange,
linspace, logspace, eye, randperm, tensor, as_tensor) make only this rank's block, through the plugin's
``_global_from_shard`` entry point (randperm computes the whole permutation and keeps the block); the others
are made whole on every rank and sliced (``_global_from_full``). Either way random values are those of a single
process with the same seed (every rank's generator advances by the whole tensor), and broadcast values are
identical on every rank. The ``*_like`` functions given a global tensor make a global one of its placement and
sbp (a partial sbp gives broadcast), shard by shard.

Only the ``oneflow.<name>`` bindings are wrapped (at import): flow-core's own calls go straight to the
functions.
"""
import functools

from . import _C, _global_shards, _plugins

LIKE = ("zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like")
# the *_like functions whose values do not depend on the position: each rank makes its block from a template
_SHARDED_LIKE = ("zeros_like", "ones_like", "empty_like", "full_like")
NAMES = ("randint", "normal", "full", "arange", "linspace", "logspace", "eye", "randperm", "as_tensor")
# The hottest creators call make_global themselves when given placement/sbp, so that a local call pays no
# wrapper: empty, zeros, ones, rand, randn (from their **kw) and tensor (keyword parameters).


def requested(kw):
    """Whether a creation call's extra keywords ask for a global tensor."""
    return "placement" in kw or "sbp" in kw


def make_global(fn, args, kw):
    """``fn(*args, **kw)`` made whole on every rank, then laid out by ``kw``'s ``placement`` and ``sbp``."""
    placement, sbp = kw.pop("placement", None), kw.pop("sbp", None)
    if placement is None or sbp is None:
        raise ValueError(f"{fn.__name__}(): placement and sbp go together (a global tensor needs both)")
    if kw.get("device") is not None:
        raise ValueError(f"{fn.__name__}(): give either device (a local tensor) or placement and sbp (a "
                         f"global one), not both")
    requires_grad = kw.pop("requires_grad", False)
    maker = _global_shards.MAKERS.get(fn.__name__)
    shard_hook = _plugins.load("_global_from_shard") if maker is not None else None
    if shard_hook is not None:
        plan = maker(fn, args, kw)
        if plan is not None:
            return shard_hook(plan[0], placement, sbp, plan[1], requires_grad)
    hook = _plugins.load("_global_from_full")
    if hook is None:
        raise _plugins.missing("placement")
    return hook(fn(*args, **kw), placement, sbp, requires_grad)


def _wrap(fn):
    @functools.wraps(fn)
    def creation(*args, **kw):
        if not kw or not requested(kw):
            return fn(*args, **kw)
        return make_global(fn, args, kw)

    creation.__wrapped_creation__ = fn
    return creation


def _wrap_like(fn):
    # a global input gives a global result of its layout (a partial one's: broadcast), each rank making its block
    @functools.wraps(fn)
    def like(input, *args, **kw):
        if getattr(input, "is_global", False) is not True:
            return fn(input, *args, **kw)
        if kw.get("device") is not None:
            raise ValueError(f"{fn.__name__}(): a global input makes a global result; device= does not apply")
        requires_grad = kw.pop("requires_grad", False)
        sbp = tuple(_broadcast_if_partial(s) for s in input.sbp)
        shape = list(input.shape)
        shard_hook = _plugins.load("_global_from_shard") if fn.__name__ in _SHARDED_LIKE else None
        if shard_hook is not None:  # the values do not depend on the position: each rank makes its block
            def make_local(ranges):
                local = shape if ranges is None else [b - a for a, b in ranges]
                # the template only gives the shape and dtype: one element expanded, so only the result is made
                return fn(_C._empty([1] * len(local), input.dtype, None).expand(local), *args, **kw)

            return shard_hook(shape, input.placement, sbp, make_local, requires_grad)
        random = _random_like(fn, input, args, kw)
        if random is not None:  # each rank draws its block, with the random fills' shard attribute
            return _plugins.load("_global_from_shard")(shape, input.placement, sbp, random, requires_grad)
        full = fn(_C._empty(shape, input.dtype, None), *args, **kw)
        return _plugins.load("_global_from_full")(full, input.placement, sbp, requires_grad)

    like.__wrapped_creation__ = fn
    return like


def _random_like(fn, input, args, kw):
    """For rand_like, randn_like and randint_like: a function of the block's ranges drawing it as the random
    creations do (the whole tensor's values at the block's positions, the generator advanced by the whole), or
    None for the other functions or an argument the block path does not take."""
    import inspect

    from ._global_shards import _drawn

    fill = {"rand_like": "uniform_", "randn_like": "normal_", "randint_like": "random_"}.get(fn.__name__)
    if fill is None:
        return None
    try:
        a = inspect.signature(fn).bind(input, *args, **kw).arguments
    except TypeError:
        return None  # the whole path raises the function's own error
    if a.get("memory_format") is not None:
        return None
    dtype, gen, shape = a.get("dtype") or input.dtype, a.get("generator"), list(input.shape)
    if fill == "random_":
        low, high = a.get("low", 0), a.get("high")
        low, high = (0, low) if high is None else (low, high)
        attrs = (low, high)
    else:
        attrs = (0.0, 1.0)
    return lambda ranges: _drawn(fn.__name__, fill, shape, ranges, dtype, None, gen, *attrs)


def _broadcast_if_partial(s):
    if s.is_partial():
        import oneflow  # its sbp is the plugin's (a global tensor exists, so flow-dist is installed)

        return oneflow.sbp.broadcast
    return s


def install(namespace):
    """Wraps the creation functions of ``namespace`` (the oneflow module's dict)."""
    for names, wrap in ((NAMES, _wrap), (LIKE, _wrap_like)):
        for name in names:
            fn = namespace.get(name)
            if fn is not None and not hasattr(fn, "__wrapped_creation__"):
                namespace[name] = wrap(fn)
