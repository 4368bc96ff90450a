"""``oneflow.backends.cuda``: CUDA matmul and attention switches with PyTorch's names and defaults, so lines
such as ``flow.backends.cuda.matmul.allow_tf32 = True`` run unchanged. This build has no CUDA: ``is_built()``
is False and the switches are stored but select nothing."""
from .. import _C


def is_built():
    """Whether oneflow was built with CUDA support."""
    return bool(_C.cuda_is_built())


class _MatmulFlags:
    """``matmul.allow_tf32`` and the reduced-precision-reduction flags; other names raise AttributeError, as
    in PyTorch, so a misspelt flag is not silently ignored."""

    _defaults = {"allow_tf32": False, "allow_fp16_reduced_precision_reduction": True,
                 "allow_bf16_reduced_precision_reduction": True}

    def __init__(self):
        object.__setattr__(self, "_values", dict(self._defaults))

    def __getattr__(self, name):
        values = object.__getattribute__(self, "_values")
        if name not in values:
            raise AttributeError(f"Unknown attribute {name}")
        return values[name]

    def __setattr__(self, name, value):
        if name not in self._values:
            raise AttributeError(f"Unknown attribute {name}")
        self._values[name] = bool(value)


matmul = _MatmulFlags()


def _sdp_switch(kind):
    """The (query, setter) pair of one scaled-dot-product-attention backend switch."""
    state = {"on": True}

    def enabled():
        return state["on"]

    def enable(on):
        state["on"] = bool(on)

    enabled.__name__, enable.__name__ = f"{kind}_sdp_enabled", f"enable_{kind}_sdp"
    enabled.__doc__ = f"Whether the {kind} scaled-dot-product-attention backend may be used (stored only)."
    enable.__doc__ = f"Allows or forbids the {kind} scaled-dot-product-attention backend (stored only)."
    return enabled, enable


flash_sdp_enabled, enable_flash_sdp = _sdp_switch("flash")
mem_efficient_sdp_enabled, enable_mem_efficient_sdp = _sdp_switch("mem_efficient")
math_sdp_enabled, enable_math_sdp = _sdp_switch("math")
