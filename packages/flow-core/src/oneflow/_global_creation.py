"""OneFlow's ``placement=`` and ``sbp=`` on the creation functions (``oneflow.randn(4, 5, placement=p,
sbp=s)``): the tensor is made whole on every rank, then laid out as a global tensor by the plugin that provides
``oneflow.placement`` (flow-dist), through its ``_global_from_full`` entry point. Random values are then those
of a single process with the same seed (every rank's generator draws the whole tensor), and broadcast values
are identical on every rank. The ``*_like`` functions given a global tensor make a global one of its
placement and sbp (a partial sbp gives broadcast), the same way.

Only the ``oneflow.<name>`` bindings are wrapped (at import): flow-core's own calls go straight to the
functions.
"""
import functools

from . import _C, _plugins

LIKE = ("zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like", "randint_like")
NAMES = ("randint", "normal", "full", "arange", "linspace", "eye", "randperm")
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
    # a global input gives a global result of its layout (a partial one's: broadcast), made whole like a
    # creation with placement=
    @functools.wraps(fn)
    def like(input, *args, **kw):
        if getattr(input, "is_global", False) is not True:
            return fn(input, *args, **kw)
        if kw.get("device") is not None:
            raise ValueError(f"{fn.__name__}(): a global input makes a global result; device= does not apply")
        requires_grad = kw.pop("requires_grad", False)
        sbp = tuple(_broadcast_if_partial(s) for s in input.sbp)
        full = fn(_C._empty(list(input.shape), input.dtype, None), *args, **kw)
        return _plugins.load("_global_from_full")(full, input.placement, sbp, requires_grad)

    like.__wrapped_creation__ = fn
    return like


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
