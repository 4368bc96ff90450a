"""Autocast op lists (PyTorch's CPU lists) and the wrapper that gives Python-level composites the same policy.

The C++ dispatcher applies the policy of a registered op by name (``_C._set_autocast_policy``). Functions of
``oneflow.nn.functional`` that are written in Python over several ops (``linear``, ``cross_entropy``,
``scaled_dot_product_attention``, losses) get the policy of the PyTorch op of the same name through
:func:`wrap_functional`: their tensor arguments are cast once, then their body runs with autocast off, as
PyTorch runs the body of an autocast-listed op.
"""
import functools

from .. import _C

# Ops that run in the lower-precision autocast dtype (torch's CPU ``lower_precision_fp`` list).
LOWER_PRECISION = (
    "conv1d", "conv2d", "conv3d", "bmm", "mm", "linalg_vecdot", "baddbmm", "addmm", "addbmm", "linear",
    "_convolution", "convolution", "matmul", "conv_tbc", "mkldnn_rnn_layer", "conv_transpose1d",
    "conv_transpose2d", "conv_transpose3d", "prelu", "scaled_dot_product_attention",
    "_native_multi_head_attention",
)

# Ops that run in float32 (torch's CPU ``fp32`` list).
FP32 = (
    "avg_pool3d", "binary_cross_entropy", "grid_sampler", "polar", "prod", "quantile", "nanquantile", "stft",
    "cdist", "grid_sampler_2d", "grid_sampler_3d", "trace", "view_as_complex", "cholesky", "cholesky_inverse",
    "cholesky_solve", "inverse", "lu_solve", "orgqr", "ormqr", "pinverse", "max_pool3d", "max_unpool2d",
    "max_unpool3d", "adaptive_avg_pool3d", "reflection_pad1d", "reflection_pad2d", "replication_pad1d",
    "replication_pad2d", "replication_pad3d", "mse_loss", "cosine_embedding_loss", "nll_loss", "nll_loss2d",
    "hinge_embedding_loss", "poisson_nll_loss", "smooth_l1_loss", "cross_entropy_loss", "l1_loss",
    "huber_loss", "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
    "ctc_loss", "kl_div", "multilabel_margin_loss", "binary_cross_entropy_with_logits", "fft_fft", "fft_ifft",
    "fft_fft2", "fft_ifft2", "fft_fftn", "fft_ifftn", "fft_rfft", "fft_irfft", "fft_rfft2", "fft_irfft2",
    "fft_rfftn", "fft_irfftn", "fft_hfft", "fft_ihfft", "linalg_cond", "linalg_matrix_rank", "linalg_solve",
    "linalg_cholesky", "linalg_svdvals", "linalg_eigvals", "linalg_eigvalsh", "linalg_inv",
    "linalg_householder_product", "linalg_tensorinv", "linalg_tensorsolve", "fake_quantize_per_tensor_affine",
    "geqrf", "_lu_with_info", "qr", "svd", "triangular_solve", "fractional_max_pool2d", "fractional_max_pool3d",
    "adaptive_max_pool3d", "multilabel_margin_loss_forward", "linalg_qr", "linalg_cholesky_ex", "linalg_svd",
    "linalg_eig", "linalg_eigh", "linalg_lstsq", "linalg_inv_ex",
)

# Ops that run in the widest floating type of their inputs.
PROMOTE = ("stack", "cat", "index_copy")

# The registry's ops that stand for several torch ops: float32 only in the forms torch lists.
_CONDITIONAL = {
    "avg_pool": "fp32_3d", "max_pool": "fp32_3d", "adaptive_avg_pool": "fp32_3d", "adaptive_max_pool": "fp32_3d",
    "pad": "fp32_pad",  # reflect (1-d, 2-d) and replicate run in float32, constant/circular as given
    "_nll_loss_smoothed": "fp32",  # cross_entropy with label smoothing
}


def op_policies():
    """{name: policy} for the dispatcher (names absent from the registry are ignored there)."""
    table = {n: "lower" for n in LOWER_PRECISION}
    table.update({n: "fp32" for n in FP32})
    table.update({n: "promote" for n in PROMOTE})
    table.update(_CONDITIONAL)
    return table


# Python-level functions of oneflow.nn.functional that compose several registry ops: wrapped with the policy
# of torch's op of that name. (Functions that are a single registry op get the dispatcher's policy already.)
FUNCTIONAL = {
    "linear": "lower", "prelu": "lower", "scaled_dot_product_attention": "lower",
    "cross_entropy": "fp32", "nll_loss": "fp32", "mse_loss": "fp32", "l1_loss": "fp32", "smooth_l1_loss": "fp32",
    "huber_loss": "fp32", "binary_cross_entropy": "fp32", "binary_cross_entropy_with_logits": "fp32",
    "kl_div": "fp32", "cosine_embedding_loss": "fp32", "hinge_embedding_loss": "fp32",
    "poisson_nll_loss": "fp32", "margin_ranking_loss": "fp32", "soft_margin_loss": "fp32",
    "triplet_margin_loss": "fp32", "multi_margin_loss": "fp32", "multilabel_margin_loss": "fp32",
    "ctc_loss": "fp32", "avg_pool3d": "fp32", "max_pool3d": "fp32", "adaptive_avg_pool3d": "fp32",
    "adaptive_max_pool3d": "fp32", "grid_sample": "fp32", "max_unpool2d": "fp32", "max_unpool3d": "fp32",
    "fractional_max_pool2d": "fp32", "fractional_max_pool3d": "fp32",
    # "given": PyTorch's kernel (bilinear is _trilinear) is unlisted: its inner products are autocast, but it
    # accumulates into an output of the dtype it was given
    "bilinear": "given",
}


def install():
    _C._set_autocast_policy(op_policies())


def _is_tensor(x):
    return isinstance(x, _C.TensorBase)


def _cast_args(policy, args, kwargs):
    """Cast the tensors among args/kwargs (and inside list/tuple args) in one call, so that 'promote' sees
    them all."""
    slots, tensors = [], []

    def collect(container, key, value):
        if _is_tensor(value):
            slots.append((container, key, None))
            tensors.append(value)
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                if _is_tensor(v):
                    slots.append((container, key, i))
                    tensors.append(v)

    args = list(args)
    for i, a in enumerate(args):
        collect(args, i, a)
    for k, v in kwargs.items():
        collect(kwargs, k, v)
    if not tensors:
        return args, kwargs
    cast = _C._autocast_cast(policy, tensors)
    for (container, key, i), t in zip(slots, cast):
        if i is None:
            container[key] = t
        else:
            seq = list(container[key])
            seq[i] = t
            container[key] = type(container[key])(seq) if isinstance(container[key], tuple) else seq
    return args, kwargs


def _given_dtype_result(fn):
    """``fn`` whose floating result is cast back to the widest floating dtype of its tensor arguments (its body
    still autocast): an unlisted PyTorch kernel that accumulates into an output of the dtypes it is given."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        if not _C._autocast_enabled() or not _is_tensor(out) or not out.is_floating_point():
            return out
        dtypes = [t.dtype for t in list(args) + list(kwargs.values()) if _is_tensor(t) and t.is_floating_point()]
        if not dtypes:
            return out
        widest = functools.reduce(_C.promote_types, dtypes)
        return out if out.dtype == widest else out.to(widest)

    wrapper.__autocast_policy__ = "given"
    return wrapper


def autocast_function(fn, policy):
    """``fn`` with autocast policy ``policy`` ('lower', 'fp32' or 'promote') applied to its tensor arguments
    when autocast is enabled; its body runs with autocast off. Policy 'given' leaves the body autocast and
    gives the result in the dtype of the arguments."""
    if policy == "given":
        return _given_dtype_result(fn)
    enabled, set_enabled = _C._autocast_enabled, _C._set_autocast_enabled

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not enabled():
            return fn(*args, **kwargs)
        args, kwargs = _cast_args(policy, args, dict(kwargs))
        set_enabled(False)
        try:
            return fn(*args, **kwargs)
        finally:
            set_enabled(True)

    wrapper.__autocast_policy__ = policy
    return wrapper


def autocast_policy(policy):
    """Decorator form of :func:`autocast_function`, for Python-level functions that compose several registry
    ops where they are defined (``@autocast_policy("fp32")``)."""
    return lambda fn: autocast_function(fn, policy)


def wrap_functional(names):
    """Return ``names`` (a namespace dict) with the functions listed in FUNCTIONAL wrapped."""
    out = dict(names)
    for n, policy in FUNCTIONAL.items():
        f = out.get(n)
        if callable(f) and not hasattr(f, "__autocast_policy__"):
            out[n] = autocast_function(f, policy)
    return out
