"""``oneflow.nn.functional`` for the nnops family: softmax, normalisation, dropout, embedding, losses,
interpolation, padding and scaled dot-product attention, with ``torch.nn.functional``'s signatures."""
import math
import warnings

import numpy as _np

from . import _interp_weights as _iw

from .. import _C
from .._ops._names import torch_dtype_name

ops = _C.ops

__all__ = [
    "softmax", "log_softmax", "softmin", "gumbel_softmax", "batch_norm", "layer_norm", "group_norm",
    "instance_norm", "dropout",
    "dropout1d", "dropout2d", "dropout3d", "embedding", "cross_entropy", "nll_loss", "mse_loss", "l1_loss",
    "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "interpolate", "upsample", "pad", "scaled_dot_product_attention", "normalize",
]


def _flow():
    import oneflow

    return oneflow


# ---- softmax ------------------------------------------------------------------------------------------
def _implicit_dim(ndim):
    warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Softmax along ``dim``: ``exp(x) / sum(exp(x))``, optionally computed in ``dtype``."""
    if dim is None:
        dim = _implicit_dim(input.dim())
    return ops.softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Log of softmax along ``dim``, computed stably in one pass."""
    if dim is None:
        dim = _implicit_dim(input.dim())
    return ops.log_softmax(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """Softmax of ``-input`` along ``dim``."""
    if dim is None:
        dim = _implicit_dim(input.dim())
    # negated in the input's own dtype, as in torch: a bool input is refused, an unsigned one wraps around
    return ops.softmax(ops.neg(input), dim, dtype)


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """Samples from the Gumbel-softmax distribution: ``softmax((logits + g) / tau)`` with ``g`` i.i.d.
    Gumbel(0, 1) noise. With ``hard=True`` the result is the one-hot of its argmax in the forward pass but keeps
    the soft sample's gradient (straight-through estimator)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    flow = _flow()
    # the noise is sampled in the logits' dtype: integer logits raise exponential_'s error, as in PyTorch
    gumbels = ops.neg(ops.log(flow.empty_like(logits).exponential_()))
    y_soft = ops.softmax((logits + gumbels) / tau, dim, None)
    if not hard:
        return y_soft
    index = ops.max_dim(y_soft, dim, True)[1]
    y_hard = ops.scatter(flow.zeros_like(logits), dim, index, flow.ones_like(y_soft))
    return y_hard - y_soft.detach() + y_soft


# ---- normalisation ------------------------------------------------------------------------------------
def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    """Batch normalisation over (N, *spatial) per channel; in training mode updates running stats in place."""
    if training:
        size = list(input.shape)
        n = size[0]
        for s in size[2:]:
            n *= s
        if n == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
    if momentum is None:
        momentum = 0.0
    if input.numel() == 0:
        # PyTorch's empty-batch rule: no statistics to take, so the running stats stay as they are (not NaN), and
        # the output stays connected to weight and bias so that they get (zero) gradients
        out = input.clone()
        if weight is not None and weight.numel() > 0:
            out = out * weight[0]
        if bias is not None and bias.numel() > 0:
            out = out + bias[0]
        return out
    return ops.native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)[0]


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Normalises over the trailing ``normalized_shape`` dims, then applies the elementwise affine."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return ops.native_layer_norm(input, list(normalized_shape), weight, bias, eps)[0]


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):
    """Normalises each of ``num_groups`` channel groups per sample, then applies a per-channel affine."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    return ops.native_group_norm(input, weight, bias, num_groups, eps)[0]


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-05):
    """Normalises each (sample, channel) over its spatial dims; running stats (if given) track their mean."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or more input (N, C, *), got {input.dim()}D input")
    if use_input_stats:
        size = list(input.shape)
        n = 1
        for s in size[2:]:
            n *= s
        if n == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size {size}")
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when use_input_stats is false")
        return ops.native_batch_norm(input, weight, bias, running_mean, running_var, False, momentum, eps)[0]
    if input.numel() == 0:
        # no instance to take statistics of: an empty result, and running stats left as they are (PyTorch turns
        # them into NaN for an empty batch, or raises with an affine; keeping them is the safe choice)
        return input.clone()
    if running_mean is None and running_var is None:
        return ops.native_group_norm(input, weight, bias, input.shape[1], eps)[0]
    # batch norm over (1, N*C, *): per-instance statistics, running stats updated per instance then averaged
    flow = _flow()
    N, C = input.shape[0], input.shape[1]
    x = ops.reshape(input, [1, N * C] + list(input.shape[2:]))
    w = None if weight is None else ops.reshape(ops.expand(ops.unsqueeze(weight, 0), [N, C]), [N * C])
    b = None if bias is None else ops.reshape(ops.expand(ops.unsqueeze(bias, 0), [N, C]), [N * C])
    def per_instance(stat):  # the running statistic repeated for each of the N instances
        return ops.clone(ops.reshape(ops.expand(ops.unsqueeze(stat, 0), [N, C]), [N * C]))

    with flow.no_grad():
        rm = None if running_mean is None else per_instance(running_mean)
        rv = None if running_var is None else per_instance(running_var)
    out = ops.native_batch_norm(x, w, b, rm, rv, True, momentum, eps)[0]
    with flow.no_grad():
        if running_mean is not None:
            running_mean.copy_(ops.mul(ops.sum(ops.view(rm, [N, C]), [0]), 1.0 / N))
        if running_var is not None:
            running_var.copy_(ops.mul(ops.sum(ops.view(rv, [N, C]), [0]), 1.0 / N))
    return ops.reshape(out, list(input.shape))


# ---- dropout ------------------------------------------------------------------------------------------
def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _maybe_inplace(input, out, inplace):
    if inplace and out is not input:
        input.copy_(out)
        return input
    return out


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes elements with probability ``p`` (during training) and scales the rest by ``1 / (1 - p)``."""
    _check_p(p)
    return _maybe_inplace(input, ops.dropout(input, p, training), inplace)


def _feature_dropout(input, p, training, inplace, batched_dim, name):
    _check_p(p)
    nd = input.dim()
    if nd not in (batched_dim - 1, batched_dim):
        raise RuntimeError(f"{name}: Expected {batched_dim - 1}D or {batched_dim}D input, but received a {nd}D input")
    return _maybe_inplace(input, ops.feature_dropout(input, p, training, nd == batched_dim), inplace)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, L) / (C, L) inputs."""
    return _feature_dropout(input, p, training, inplace, 3, "dropout1d")


def _warn_channel_dims(nd, name, spatial, expected):
    warnings.warn(f"{name}: Received a {nd}-D input to {name}, which is deprecated and will result in an error in a "
                  "future release. To retain the behavior and silence this warning, please use dropout instead. "
                  f"Note that {name} exists to provide channel-wise dropout on inputs with {spatial} spatial "
                  f"dimensions, a channel dimension, and an optional batch dimension (i.e. {expected} inputs).",
                  stacklevel=3)


def _channel_dropout(input, p, training, inplace, batched):
    """Channel-wise dropout of an (N, C, *) input, or of a (C, *) one when not ``batched``. As in PyTorch, an
    input with no channel dim is only refused when a mask is needed: with ``p == 1`` it is zeroed."""
    if input.dim() + (0 if batched else 1) < 2:
        if not training or p == 0 or input.numel() == 0:
            return input
        if p != 1:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        return _maybe_inplace(input, input * 0, inplace)
    return _maybe_inplace(input, ops.feature_dropout(input, p, training, batched), inplace)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, H, W) inputs (a 3-D input is treated as (N, C, L), like torch)."""
    _check_p(p)
    nd = input.dim()
    if nd not in (3, 4):
        _warn_channel_dims(nd, "dropout2d", 2, "3D or 4D")
    if nd == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This "
                      "behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", stacklevel=2)
    # every rank is taken as batched (N, C, *): PyTorch's historical rule for dropout2d
    return _channel_dropout(input, p, training, inplace, True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of (N, C, D, H, W) / (C, D, H, W) inputs."""
    _check_p(p)
    nd = input.dim()
    if nd not in (4, 5):
        _warn_channel_dims(nd, "dropout3d", 3, "4D or 5D")
    # only a 5-D input is batched; any other rank gets one mask per entry of its first dim, as in PyTorch
    return _channel_dropout(input, p, training, inplace, nd == 5)


# ---- embedding ----------------------------------------------------------------------------------------
def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Looks up rows of ``weight`` by the indices in ``input``; ``padding_idx``'s row gets no gradient."""
    if padding_idx is not None:
        n = weight.shape[0]
        if padding_idx > 0:
            assert padding_idx < n, "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -n, "Padding_idx must be within num_embeddings"
            padding_idx = n + padding_idx
    else:
        padding_idx = -1
    if sparse:
        raise NotImplementedError("embedding: sparse gradients are not supported")
    if max_norm is not None:
        with _flow().no_grad():
            ops.embedding_renorm_(weight, input, float(max_norm), float(norm_type))
    return ops.embedding(weight, input, padding_idx, scale_grad_by_freq, False)


# ---- losses -------------------------------------------------------------------------------------------
def _legacy_reduction(size_average, reduce, reduction):
    """``reduction`` from the deprecated ``size_average``/``reduce`` flags when either is given (with
    PyTorch's deprecation warning), else ``reduction`` itself."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
                  stacklevel=3)
    return ret


def _check_reduction(reduction):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")


def _nll_target(input, target, weight):
    """``target`` checked as torch's nll_loss checks it (the same exceptions, in the same order); a 1-element
    target of a 1-D input comes back 0-D, as torch treats it as the class of that single sample."""
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() == 1 and target.dim() == 1:
        if target.shape[0] != 1:
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {target.shape[0]}")
        target = ops.reshape(target, [])
    if input.dim() > 1 and (target.shape[0] if target.dim() else 0) != input.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0] if target.dim() else 0}).")
    if input.dim() <= 2 and target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.dtype not in (_C.int64, _C.uint8):
        raise RuntimeError(f"expected target dtype to be Long or Byte, but got {torch_dtype_name(target.dtype)}")
    if not input.dtype.is_floating_point:
        kernel = "nll_loss_out_frame" if input.dim() <= 2 else "nll_loss2d_forward_out_frame"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_dtype_name(input.dtype)}'")
    # torch's kernel reads the class weights as the input's type and refuses any other
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {torch_dtype_name(input.dtype)} but found "
                           f"{torch_dtype_name(weight.dtype)}")
    return target


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood of log-probabilities ``input`` (N, C, ...) at class indices ``target``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    target = _nll_target(input, target, weight)
    return ops.nll_loss(input, target, weight, reduction, ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax over the class dim followed by nll_loss (class indices) or the soft-target cross entropy
    (class probabilities), with optional label smoothing."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    # torch bounds it above only: a negative (or NaN) value is accepted, and smooths nothing for class indices
    if label_smoothing > 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    # as in torch, a target of the input's shape holds class probabilities; any other is checked as nll_loss's
    probs = tuple(target.shape) == tuple(input.shape)
    if probs and not target.dtype.is_floating_point:
        raise RuntimeError("Expected floating point type for target with class probabilities, got "
                           f"{torch_dtype_name(target.dtype)}")
    class_dim = 0 if input.dim() == 1 else 1
    logp = ops.log_softmax(input, class_dim, None)
    if not probs:
        target = _nll_target(logp, target, weight)
        if label_smoothing > 0.0:
            return ops._nll_loss_smoothed(logp, target, weight, reduction, ignore_index, float(label_smoothing))
        return ops.nll_loss(logp, target, weight, reduction, ignore_index)
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    n_classes = input.shape[class_dim]
    if weight is not None and (weight.dim() != 1 or weight.numel() != n_classes):
        raise RuntimeError(f"cross_entropy: weight tensor should be defined either for all {n_classes} classes or "
                           f"no classes but got weight tensor of shape: {list(weight.shape)}")
    if label_smoothing > 0.0:
        target = ops.add(ops.mul(target, 1.0 - label_smoothing), label_smoothing / n_classes)
    prod = ops.mul(logp, target)
    if weight is not None:
        shape = [1] * input.dim()
        shape[class_dim] = n_classes
        prod = ops.mul(prod, ops.reshape(weight, shape))
    loss = ops.neg(ops.sum(prod, [class_dim]))
    if reduction == "none":
        return loss
    total = ops.sum(loss)
    if reduction == "sum":
        return total
    n = input.numel() // n_classes if n_classes else 0
    return ops.mul(total, 1.0 / n) if n else ops.mul(total, float("nan"))


def _weighted(loss_none, weight, reduction, mean_by_weight=True):
    """``loss_none * weight`` reduced; 'mean' divides by the total weight (mse/l1) or by the element count
    (``mean_by_weight=False``: huber), as torch does for each."""
    out = ops.mul(loss_none, weight)
    if reduction == "none":
        return out
    if reduction == "sum":
        return ops.sum(out)
    return ops.div(ops.sum(out), ops.sum(weight)) if mean_by_weight else out.mean()


def _reduce_as(loss_none, dtype, reduction):
    """``loss_none`` stored as ``dtype`` and then reduced: torch's kernels write some losses into a tensor of
    one argument's dtype (not the promoted one) before reducing."""
    loss = loss_none.to(dtype)
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def _check_weight(weight, input):
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")


def _warn_size(input, target):
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({list(target.shape)}) that is different to the input size "
                      f"({list(input.shape)}). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error ``(input - target)^2``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _warn_size(input, target)
    if weight is not None:
        _check_weight(weight, input)
        return _weighted(ops.mse_loss(input, target, "none"), weight, reduction)
    return ops.mse_loss(input, target, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error ``|input - target|``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    _warn_size(input, target)
    if weight is not None:
        _check_weight(weight, input)
        return _weighted(_l1(input, target, "none"), weight, reduction)
    return _l1(input, target, reduction)


def _l1(input, target, reduction):
    # torch's l1_loss is |input - target| reduced, so it also takes integer tensors ('mean' then fails as
    # mean() does) and refuses bool ones as subtraction does; the fused op covers floating results
    floating = _C.promote_types(input.dtype, target.dtype).is_floating_point
    if not floating or _C.bool in (input.dtype, target.dtype):
        loss = ops.abs(input - target)
        if reduction == "none":
            return loss
        return loss.sum() if reduction == "sum" else loss.mean()
    return ops.l1_loss(input, target, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Quadratic below ``beta`` (``0.5 z^2 / beta``), linear above (``|z| - 0.5 beta``)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _warn_size(input, target)
    if beta == 0:
        return _l1(input, target, reduction)  # as in torch, which then takes integer inputs too
    return ops.smooth_l1_loss(input, target, reduction, float(beta))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Quadratic below ``delta`` (``0.5 z^2``), linear above (``delta (|z| - 0.5 delta)``)."""
    _check_reduction(reduction)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _warn_size(input, target)
    if weight is not None:
        _check_weight(weight, input)
        return _weighted(_huber(input, target, "none", delta), weight, reduction, mean_by_weight=False)
    return _huber(input, target, reduction, delta)


def _huber(input, target, reduction, delta):
    # torch's kernel writes the loss in the input's dtype, whatever the target's
    result = _C.promote_types(input.dtype, target.dtype)
    if result != input.dtype and result.is_floating_point:
        if not input.dtype.is_floating_point:
            raise RuntimeError(f"result type {torch_dtype_name(result)} can't be cast to the desired output type "
                               f"{torch_dtype_name(input.dtype)}")
        return _reduce_as(ops.huber_loss(input, target, "none", float(delta)), input.dtype, reduction)
    return ops.huber_loss(input, target, reduction, float(delta))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """``-w (t log x + (1 - t) log(1 - x))`` with the logs clamped at -100."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({list(target.shape)}) that is different to the input size "
                         f"({list(input.shape)}) is deprecated. Please ensure they have the same size.")
    if target.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {torch_dtype_name(target.dtype)} but expected "
                           f"{torch_dtype_name(input.dtype)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"binary_cross_entropy\" not implemented for '{torch_dtype_name(input.dtype)}'")
    # torch scales the loss by the weight in place: the result keeps the input's dtype
    if weight is not None and weight.dtype != input.dtype:
        weight = weight.to(input.dtype)
    return ops.binary_cross_entropy(input, target, weight, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """Sigmoid + binary cross entropy in one numerically stable expression."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({list(target.shape)}) must be the same as input size ({list(input.shape)})")
    _check_bce_logits_dtypes(input, target)
    # torch builds the loss in place on ``1 - target``, so the result has the target's dtype whatever the
    # input's, weight's and pos_weight's
    dtypes = [t.dtype for t in (input, weight, pos_weight) if t is not None]
    if any(_C.promote_types(d, target.dtype) != target.dtype for d in dtypes):
        loss = ops.binary_cross_entropy_with_logits(input, target, weight, pos_weight, "none")
        return _reduce_as(loss, target.dtype, reduction)
    return ops.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)


def _check_bce_logits_dtypes(input, target):
    """torch's errors for non-floating arguments of binary_cross_entropy_with_logits, in its order."""
    if target.dtype == _C.bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    result = _C.promote_types(input.dtype, target.dtype)
    if not target.dtype.is_floating_point and result != target.dtype:
        raise RuntimeError(f"result type {torch_dtype_name(result)} can't be cast to the desired output type "
                           f"{torch_dtype_name(target.dtype)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"log_sigmoid_cpu\" not implemented for '{torch_dtype_name(input.dtype)}'")


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Kullback-Leibler divergence ``target * (log target - input)`` (``input`` holds log-probabilities)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    if not (input.dtype.is_floating_point and target.dtype.is_floating_point):
        raise RuntimeError("kl_div: Integral inputs not supported.")
    if reduction == "batchmean":
        total = ops.kl_div(input, target, "sum", log_target=log_target)
        # an empty batch gives 0 / 0 = nan, as in torch
        return total / input.shape[0] if input.dim() != 0 else total
    _check_reduction(reduction)
    return ops.kl_div(input, target, reduction, log_target=log_target)


# ---- interpolate / pad --------------------------------------------------------------------------------
_LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3}


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resizes the spatial dims of (N, C, *spatial) ``input`` to ``size`` or by ``scale_factor``."""
    k = input.dim() - 2
    if k < 1 or k > 3:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) "
                                  f"for the modes: nearest | linear | bilinear | trilinear (got {mode})")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif mode != "bicubic" and mode not in _LINEAR_MODES:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) "
                                  f"for the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if antialias and not (mode in ("bilinear", "bicubic") and k == 2):
        raise ValueError("Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor "
                         "as input")
    if mode == "bicubic" and k != 2:
        raise NotImplementedError(f"Got {input.dim()}D input, but bicubic mode needs 4D input")
    if mode in _LINEAR_MODES and _LINEAR_MODES[mode] != k:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {_LINEAR_MODES[mode] + 2}D input")
    if size is not None and recompute_scale_factor:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if align_corners is None:
        align_corners = False
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined" if size is not None
                         else "either size or scale_factor should be defined")
    spatial = list(input.shape[2:])
    scales = None
    if size is not None:
        out = list(size) if isinstance(size, (list, tuple)) else [size] * k
        if any(isinstance(s, float) for s in out):
            raise TypeError(f"expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, int, int], "
                            f"but got size with types {[type(s) for s in out]}")
        if len(out) != k:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {spatial} and output size of {out}. Please provide input tensor "
                             "in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        out = [int(o) for o in out]
    else:
        sf = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * k
        if len(sf) != k:
            raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                             f"with spatial dimensions of {spatial} and scale_factor of shape {sf}. Please provide "
                             "input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) "
                             "format.")
        out = [int(math.floor(float(s) * float(f))) for s, f in zip(spatial, sf)]
        scales = None if recompute_scale_factor else [float(f) for f in sf]
    if mode == "nearest":
        return ops.upsample_nearest(input, out, scales)
    if mode == "area":
        from . import functional
        return getattr(functional, f"adaptive_avg_pool{k}d")(input, out)
    if mode == "nearest-exact":
        x = input
        for d in range(k):
            idx = _iw.nearest_exact_index(spatial[d], out[d], scales[d] if scales else None)
            x = x.index_select(2 + d, _flow().tensor(idx, dtype=_flow().int64))
        return x
    if not input.dtype.is_floating_point:
        if input.dtype != _flow().uint8 or mode not in ("bilinear", "bicubic"):
            kernel = ("compute_index_ranges_weights" if antialias else "compute_indices_weights_cubic"
                      if mode == "bicubic" else "compute_indices_weights_linear")
            raise NotImplementedError(f'"{kernel}" not implemented for \'{torch_dtype_name(input.dtype)}\'')
        return _resize_uint8(input, spatial, out, mode, bool(align_corners), scales, antialias)
    if mode == "bicubic" or antialias:
        # separable: H then W, each a product with a (out x in) weight matrix
        wh, ww = (_flow().tensor(m, dtype=input.dtype)
                  for m in _resize_matrices(spatial, out, mode, bool(align_corners), scales, antialias))
        return _flow().matmul(_flow().matmul(wh, input), ww.t())
    return ops.upsample_linear(input, out, bool(align_corners), scales)


def _resize_matrices(spatial, out, mode, align_corners, scales, antialias):
    """The (out x in) weight matrices of a separable 2-D resize, for H and for W."""
    def one(d):
        sf = scales[d] if scales else None
        if antialias:
            return _iw.antialias_matrix(spatial[d], out[d], align_corners, sf, mode)
        if mode == "bicubic":
            return _iw.cubic_matrix(spatial[d], out[d], align_corners, sf)
        return _iw.linear_matrix(spatial[d], out[d], align_corners, sf)
    return [one(0), one(1)]


def _resize_uint8(input, spatial, out, mode, align_corners, scales, antialias):
    """A uint8 image resized as PyTorch's uint8 kernels do (and PIL): along W, then along H, each pass rounded
    and clamped to 0..255. They use fixed-point weights, so a pixel may differ from theirs by 1."""
    flow = _flow()
    wh, ww = (flow.tensor(m, dtype=flow.float32) for m in _resize_matrices(spatial, out, mode, align_corners,
                                                                            scales, antialias))

    def to_pixels(t):
        return flow.floor(t + 0.5).clamp(0, 255)

    x = to_pixels(flow.matmul(input.float(), ww.t()))
    return to_pixels(flow.matmul(wh, x)).to(flow.uint8)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of :func:`interpolate`."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def pad(input, pad, mode="constant", value=None):
    """Pads the last ``len(pad) // 2`` dims: ``pad = (left_last, right_last, left_prev, right_prev, ...)``."""
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant" and value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument.')
    for i, p in enumerate(pad):
        if isinstance(p, float):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type "
                            f"{type(p).__name__} at pos {i}")
    return ops.pad(input, [int(p) for p in pad], mode, None if value is None else float(value))


# ---- attention / normalize ----------------------------------------------------------------------------
def _unmask_empty_rows(mask):
    """An additive attention mask with its rows that admit no key (all -inf) set to 0, and those rows'
    indicator (None when there are none). The caller zeroes those rows of the probabilities afterwards: a
    query with no key to attend to then gets zeros and zero gradients, as from PyTorch's fused attention
    kernels, instead of softmax's NaN."""
    flow = _flow()
    full = (mask == float("-inf")).all(-1, keepdim=True)
    if not bool(full.any()):
        return mask, None
    return flow.where(full, flow.zeros((), dtype=mask.dtype), mask), full


def _sdpa_checks(query, key, value, attn_mask, dropout_p):
    """PyTorch's argument checks of scaled_dot_product_attention, with its exception types."""
    if min(query.dim(), key.dim(), value.dim()) < 2:
        raise RuntimeError("Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
                           f"{query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead.")
    if not query.dtype == key.dtype == value.dtype:
        raise RuntimeError("Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{query.dtype} key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if attn_mask is not None:
        flow = _flow()
        if attn_mask.dtype != flow.bool and attn_mask.dtype != query.dtype:
            raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                               f"attn_mask.dtype: {attn_mask.dtype} and  query.dtype: {query.dtype} instead.")
        if attn_mask.dim() < 2:
            raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got -2)")


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """``softmax(q k^T * scale + mask) v`` with optional causal masking and attention dropout.

    A boolean ``attn_mask`` marks the keys a query may attend to; a float one is added to the scores. With
    ``is_causal`` as well, the two combine (a key must be allowed by both), as in PyTorch.
    """
    flow = _flow()
    _sdpa_checks(query, key, value, attn_mask, dropout_p)
    L, S = query.shape[-2], key.shape[-2]
    scale_factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if enable_gqa and query.dim() >= 3 and query.shape[-3] != key.shape[-3]:
        rep = query.shape[-3] // key.shape[-3]
        key = key.repeat_interleave(rep, dim=-3)
        value = value.repeat_interleave(rep, dim=-3)
    attn = ops.mul(flow.matmul(query, ops.transpose(key, -2, -1)), scale_factor)
    bias = None
    if is_causal:
        causal = flow.tensor(_np.tril(_np.ones((L, S), dtype=bool)))
        if attn_mask is None or attn_mask.dtype == flow.bool:
            attn_mask = causal if attn_mask is None else flow.logical_and(attn_mask, causal)
        else:
            attn_mask = attn_mask.masked_fill(flow.logical_not(causal), float("-inf"))
    if attn_mask is not None:
        if attn_mask.dtype == flow.bool:
            inf = flow.full((), float("-inf"), dtype=attn.dtype)
            bias = flow.where(attn_mask, flow.zeros((), dtype=attn.dtype), inf)
        else:
            bias = attn_mask
        shape = flow.broadcast_shapes(tuple(attn.shape), tuple(bias.shape))
        if shape != tuple(attn.shape):
            raise RuntimeError(f"output with shape {list(attn.shape)} doesn't match the broadcast shape {list(shape)}")
    full = None
    if bias is not None:
        bias, full = _unmask_empty_rows(bias)
        attn = ops.add(attn, bias)
    attn = ops.softmax(attn, -1, None)
    if full is not None:
        attn = flow.where(full, flow.zeros((), dtype=attn.dtype), attn)
    if dropout_p > 0.0:
        attn = ops.dropout(attn, dropout_p, True)
    return flow.matmul(attn, value)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """``input / max(||input||_p, eps)`` along ``dim``."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    if out is None:
        return ops.div(input, denom)
    return out.copy_(ops.div(input, denom))
