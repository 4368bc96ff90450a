"""OneFlow's ``placement=`` and ``sbp=`` on the creation functions (``oneflow.randn(4, 5, placement=p,
sbp=s)``): the tensor is made whole on every rank, then laid out as a global tensor by the plugin that provides
``oneflow.placement`` (flow-dist), through its ``_global_from_full`` entry point. Random values are then those
of a single process with the same seed (every rank's generator draws the whole tensor), and broadcast values
are identical on every rank.

Only the ``oneflow.<name>`` bindings are wrapped (at import): flow-core's own calls go straight to the
functions.
"""
import functools

from . import _plugins

NAMES = ("tensor", "randn", "rand", "randint", "normal", "zeros", "ones", "full", "empty", "arange", "linspace",
         "eye", "randperm")


def _wrap(fn):
    @functools.wraps(fn)
    def creation(*args, **kw):
        if "placement" not in kw and "sbp" not in kw:
            return fn(*args, **kw)
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

    creation.__wrapped_creation__ = fn
    return creation


def install(namespace):
    """Wraps the creation functions of ``namespace`` (the oneflow module's dict)."""
    for name in NAMES:
        fn = namespace.get(name)
        if fn is not None and not hasattr(fn, "__wrapped_creation__"):
            namespace[name] = _wrap(fn)
