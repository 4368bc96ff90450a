"""Display names of registry ops in profiler output.

PyTorch's profiler names operator events ``aten::<op>``. Most of oneflow's registry ops carry the name of the ATen
op they mirror (``mm``, ``addmm``, ``relu``, ``threshold_backward``, ...), so those are shown as ``aten::<name>`` and
tables read like PyTorch's. Ops with no ATen counterpart (fused optimizer updates, oneflow's own backward helpers and
internal kernels) are shown as ``oneflow::<name>`` instead, so a name never claims to be an ATen op it is not.
"""

# Registry ops whose names start with an underscore are oneflow's internal kernels, except these, which ATen has.
ATEN_PRIVATE = frozenset({"_ctc_loss", "_ctc_loss_backward", "_log_softmax_backward_data", "_masked_scale",
                          "_softmax_backward_data", "_standard_gamma", "_standard_gamma_grad"})

# Public-looking registry op names ATen has no op for (checked against torch.ops.aten). Fused optimizer updates are
# recognized by their ``optimizer`` trait instead. A new oneflow-only op with such a name belongs here; the profiler
# tests check every registry op against torch.
ONEFLOW_ONLY = frozenset({
    "adaptive_avg_pool", "adaptive_avg_pool_backward", "adaptive_max_pool", "as_strided_backward", "avg_pool",
    "avg_pool_backward", "clamp_backward", "clamp_min_for_index", "convolution_backward_input",
    "convolution_forward_packed", "convolution_pack_weight",
    "convolution_backward_weight", "hardshrink_", "max_dim", "max_pool", "max_pool_backward", "max_pool_gather",
    "min_dim", "pad_backward", "softplus_", "softshrink_", "split_backward", "squeeze_dim", "strided_view",
    "to_device", "to_dtype", "unique", "upsample_linear", "upsample_linear_backward", "upsample_nearest",
    "upsample_nearest_backward", "view_dtype", "view_scatter",
})

_cache = {}


def namespace(name, traits=()):
    """``"oneflow"`` for registry ops PyTorch has no ATen op for (custom ops included), else ``"aten"``."""
    from ..library import registered  # noqa: PLC0415  (library imports the core's binding only)

    if name in registered:
        return "oneflow"
    if name.startswith("_"):
        return "aten" if name in ATEN_PRIVATE else "oneflow"
    return "oneflow" if name in ONEFLOW_ONLY or "optimizer" in traits else "aten"


def display_name(op):
    """The event name of registry op ``op`` (an ``OpHandle``): ``aten::mm``, ``oneflow::sgd_update_``, ..."""
    name = op.name
    shown = _cache.get(name)
    if shown is None:
        shown = _cache[name] = f"{namespace(name, op.traits)}::{name}"
    return shown
