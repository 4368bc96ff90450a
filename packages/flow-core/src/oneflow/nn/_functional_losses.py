"""The less common losses of ``oneflow.nn.functional`` (margin, embedding, Poisson/Gaussian NLL, multi-label)
and ``pairwise_distance`` / ``cosine_similarity``, composed from registered ops exactly as PyTorch defines them."""
import math

import numpy as _np

from .. import _C
from .._ops._names import torch_dtype_name
from ._functional_nn import _check_reduction, _legacy_reduction

ops = _C.ops

__all__ = [
    "pairwise_distance", "cosine_similarity", "soft_margin_loss", "margin_ranking_loss", "hinge_embedding_loss",
    "cosine_embedding_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss", "poisson_nll_loss",
    "gaussian_nll_loss", "multilabel_soft_margin_loss", "multi_margin_loss", "multilabel_margin_loss",
    "pdist", "ctc_loss",
]


def _flow():
    import oneflow

    return oneflow


def _reduce(loss, reduction):
    _check_reduction(reduction)
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """p-norm of ``x1 - x2 + eps`` over the last dimension."""
    d = max(x1.dim(), x2.dim())
    diff = x1 - x2 + eps
    if d == 0:  # the norm of one value: |v| for p > 0, the count of non-zeros (0 or 1) for p = 0
        return diff.norm(p)
    return diff.norm(p, d - 1, keepdim=keepdim)


def pdist(input, p=2):
    """p-norm distances between every pair of rows of an (N, M) input: the N (N - 1) / 2 entries of the
    strict upper triangle of the distance matrix, row by row."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    from .._ops.creation import tensor

    i, j = _np.triu_indices(input.shape[0], k=1)
    rows = lambda k: ops.index_select(input, 0, tensor(k, dtype=_C.int64, device=input.device))  # noqa: E731
    return ops.linalg_vector_norm(rows(i) - rows(j), float(p), [1])


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))`` along ``dim`` (inputs broadcast)."""
    # broadcast first: the norms are taken over the common shape, as in PyTorch
    shape = _flow().broadcast_shapes(tuple(x1.shape), tuple(x2.shape))
    x1, x2 = x1.expand(shape), x2.expand(shape)
    n1 = x1.norm(2, dim, keepdim=True)
    n2 = x2.norm(2, dim, keepdim=True)
    # PyTorch clamps the norms under no_grad: the gradient flows as through the unclamped norm.
    n1 = n1 + (n1.clamp_min(eps) - n1).detach()
    n2 = n2 + (n2.clamp_min(eps) - n2).detach()
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def _cast_error(result, output):
    return RuntimeError(f"result type {torch_dtype_name(result)} can't be cast to the desired output type "
                        f"{torch_dtype_name(output)}")


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    # torch computes the loss in place in a tensor like ``input``: its dtype and shape are the result's, so an
    # integer input cannot take the floating result, and the target may only broadcast to the input's shape
    if input.dtype != _C.bool and not input.dtype.is_floating_point:
        result = _C.promote_types(input.dtype, target.dtype)
        raise _cast_error(result if result.is_floating_point else _C.float32, input.dtype)
    shape = _flow().broadcast_shapes(tuple(input.shape), tuple(target.shape))
    if tuple(shape) != tuple(input.shape):
        raise RuntimeError(f"output with shape {list(input.shape)} doesn't match the broadcast shape {list(shape)}")
    loss = ops.log1p(ops.exp(ops.neg(input) * target))  # negating first refuses a bool input, as torch does
    return _reduce(loss if loss.dtype == input.dtype else loss.to(input.dtype), reduction)


def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``max(0, -target * (input1 - input2) + margin)``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension but got sizes: "
                           f"input1: {list(input1.shape)}, input2: {list(input2.shape)}, "
                           f"target: {list(target.shape)} ")
    return _reduce((ops.neg(target) * (input1 - input2) + margin).clamp_min(0), reduction)


def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """``input`` where ``target == 1``, ``max(0, margin - input)`` where ``target == -1`` (both elsewhere)."""
    flow = _flow()
    reduction = _legacy_reduction(size_average, reduce, reduction)
    zeros = flow.zeros_like(input)
    # ``margin`` takes the input's dtype first, as in torch (an integer input gives an integer loss)
    margin_clamp = (flow.full_like(input, margin) - input).clamp_min(0)
    out = flow.where(target != 1, margin_clamp, zeros) + flow.where(target != -1, input, zeros)
    return _reduce(out, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where ``target == -1``."""
    flow = _flow()
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if not input1.dim() == input2.dim() == target.dim() + 1:
        raise RuntimeError(f"{target.dim()}D target tensor expects {target.dim() + 1}D input tensors, but found "
                           f"inputs with sizes {list(input1.shape)} and {list(input2.shape)}.")
    d = target.dim()
    eps = 1e-12
    prod = (input1 * input2).sum(d)
    m1 = (input1 * input1).sum(d) + eps
    m2 = (input2 * input2).sum(d) + eps
    cos = prod / (m1 * m2).sqrt()
    zeros = flow.zeros_like(cos)
    out = flow.where(target == 1, ops.neg(cos) + 1, zeros) + flow.where(target == -1, (cos - margin).clamp_min(0),
                                                                         zeros)
    return _reduce(out, reduction)


def _check_triplet(margin, anchor, positive, negative):
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, pd, nd = anchor.dim(), positive.dim(), negative.dim()
    if not (a == pd == nd):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {pd}D, and negative {nd}D inputs")


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with the p-norm ``pairwise_distance``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_triplet(margin, anchor, positive, negative)
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = ops.minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((dist_pos - dist_neg + margin).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """Triplet margin loss with a custom ``distance_function`` (default ``pairwise_distance``)."""
    _check_reduction(reduction)
    _check_triplet(margin, anchor, positive, negative)
    dist = distance_function if distance_function is not None else pairwise_distance
    dist_pos = dist(anchor, positive)
    dist_neg = dist(anchor, negative)
    if swap:
        dist_neg = ops.minimum(dist_neg, dist(positive, negative))
    return _reduce((dist_pos - dist_neg + margin).clamp_min(0), reduction)


def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """``exp(input) - target * input`` (``log_input``) or ``input - target * log(input + eps)``, plus the Stirling
    term when ``full``."""
    flow = _flow()
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _check_reduction(reduction)
    if log_input:
        loss = ops.exp(input) - target * input
    else:
        loss = input - target * ops.log(input + eps)
    if full:
        stirling = target * ops.log(target) - target + ops.log(target * (2 * math.pi)) * 0.5
        loss = loss + flow.where(target <= 1, flow.zeros_like(stirling), stirling)
    return _reduce(loss, reduction)


# C++'s names of the integer types, which torch's in-place clamp of an integer ``var`` prints
_CPP_NAMES = {_C.bool: "bool", _C.uint8: "unsigned char", _C.int8: "signed char", _C.int16: "short int",
              _C.int32: "int", _C.int64: "long int"}


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """``0.5 * (log(max(var, eps)) + (input - target)^2 / max(var, eps))`` (+ ``0.5 log(2 pi)`` when ``full``).

    ``var`` is a tensor of the input's shape, of that shape with one dimension of size 1 (or without its last
    dimension), or a float (the same variance everywhere)."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = var * _flow().ones_like(input)
    elif bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        # homoscedastic: var is the input's shape but for mismatched dims whose sizes sum to 1 (a single 1)
        elif input.dim() != var.dim() or sum(v for i, v in zip(input.shape, var.shape) if i != v) != 1:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if not var.dtype.is_floating_point:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_CPP_NAMES.get(var.dtype, torch_dtype_name(var.dtype))}")
    # PyTorch clamps a clone under no_grad: the value is clamped but the gradient flows as through identity.
    var = var + (var.clamp_min(eps) - var).detach()
    loss = (ops.log(var) + (input - target) ** 2 / var) * 0.5
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Per-class logistic loss averaged over the classes (last dim)."""
    from ._functional_activation import logsigmoid

    reduction = _legacy_reduction(size_average, reduce, reduction)
    loss = ops.neg(target * logsigmoid(input) + (ops.neg(target) + 1) * logsigmoid(ops.neg(input)))
    if weight is not None:
        loss = loss * weight
    if input.dim() == 0:
        raise IndexError("Dimension specified as -1 but tensor has no dimensions")
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")  # torch's own wording for this loss
    return _reduce(loss, reduction)


def _margin_input_2d(input, name):
    """``input`` as (N, C) (a 0-D or 1-D input is one sample), after torch's shape check of the multi-class
    margin losses; and whether it had no batch dimension."""
    if not (input.dim() == 0 or (input.dim() in (1, 2) and input.shape[-1] != 0)):
        raise RuntimeError(f"{name}: Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    unbatched = input.dim() <= 1
    return (input.reshape(1, -1) if unbatched else input), unbatched


def _margin_dtypes(kernel, input, target, weight=None):
    """torch's dtype errors of the multi-class margin kernels: floating inputs, int64 targets, weights of the
    input's dtype."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_dtype_name(input.dtype)}'")
    if target.dtype != _C.int64:
        raise RuntimeError(f"expected scalar type Long but found {torch_dtype_name(target.dtype)}")
    if weight is not None and weight.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {torch_dtype_name(input.dtype)} but found "
                           f"{torch_dtype_name(weight.dtype)}")


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """``sum_{j != y} max(0, margin - x[y] + x[j])^p * w[y] / C`` per sample."""
    flow = _flow()
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.dim() != 1:
        raise ValueError("weight must be one-dimensional")
    x, _ = _margin_input_2d(input, "multi_margin_loss")
    n, c = x.shape
    if target.dim() > 1 or target.numel() != n:
        raise RuntimeError(f"multi_margin_loss: target tensor should be 1-D with size equal to the number of input "
                           f"samples (batch size). Expected target size [{n}], but got {list(target.shape)}. Input "
                           f"has shape {list(input.shape)}.")
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got {list(weight.shape)}")
    _margin_dtypes("multi_margin_loss_cpu_kernel", input, target, weight)
    t = target.reshape(-1)
    tn = t.numpy()
    if n and (tn.min() < 0 or tn.max() >= c):
        raise RuntimeError("target out of range")
    idx = t.reshape(n, 1)
    xy = flow.gather(x, 1, idx)
    z = (x - xy + margin).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * flow.gather(weight, 0, t).reshape(n, 1)
    not_target = flow.tensor(_np.arange(c)[None, :] != tn[:, None], dtype=z.dtype, device=z.device)
    # torch's unreduced loss has the target's shape: (N,), or () for a 0-D target (of a single sample)
    loss = ((z * not_target).sum(1) / c).reshape(target.shape)
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``sum_{j in targets} sum_{k not in targets} max(0, 1 - (x[j] - x[k])) / C`` per sample, the targets being
    the class indices of ``target`` before its first -1."""
    flow = _flow()
    reduction = _legacy_reduction(size_average, reduce, reduction)
    x, unbatched = _margin_input_2d(input, "multilabel_margin_loss")
    n, c = x.shape
    if (target.dim() > 1 or target.numel() != c) if unbatched else tuple(target.shape) != (n, c):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    _margin_dtypes("multilabel_margin_loss_forward_out_frame", input, target)
    tn = target.numpy().reshape(n, c)
    # as in torch, every entry must be a class or -1, even those after the first -1 (which ends the list)
    if tn.size and (tn.min() < -1 or tn.max() >= c):
        raise RuntimeError("argument #2 'target' is out of range")
    counts = _np.zeros((n, c))
    is_target = _np.zeros((n, c), dtype=bool)
    for i in range(n):
        for j in tn[i]:
            if j < 0:
                break
            counts[i, j] += 1
            is_target[i, j] = True
    # z[n, j, k] = max(0, 1 - x[n, j] + x[n, k]), weighted by how often j is listed and by k not being a target.
    z = (x.unsqueeze(1) - x.unsqueeze(2) + 1).clamp_min(0)
    w = flow.tensor(counts[:, :, None] * (~is_target)[:, None, :], dtype=z.dtype, device=z.device)
    loss = (z * w).sum([1, 2]) / c
    if unbatched:
        loss = loss.reshape([])
    return _reduce(loss, reduction)


def _lengths(x, name):
    if isinstance(x, _C.TensorBase):
        if x.dtype.is_floating_point:
            raise RuntimeError(f"ctc_loss: {name} must be integral")
        return [int(v) for v in x.reshape(-1).tolist()]
    if isinstance(x, int):
        return [x]
    return [int(v) for v in x]


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """Connectionist Temporal Classification loss of ``log_probs`` (T, N, C), log-softmaxed over C (or (T, C)
    unbatched), against ``targets`` (N, S) padded or concatenated 1-D (sum of ``target_lengths``);
    ``blank`` is the blank label. ``reduction="mean"`` divides each sample's loss by its target length
    (at least 1), then averages; ``zero_infinity`` turns impossible alignments' infinite losses (and their
    gradients) into zeros."""
    _check_reduction(reduction)
    unbatched = log_probs.dim() == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.unsqueeze(0) if targets.dim() == 1 else targets
    il, tl = _lengths(input_lengths, "input_lengths"), _lengths(target_lengths, "target_lengths")
    loss, _ = ops._ctc_loss(log_probs, targets, il, tl, blank, zero_infinity)
    if zero_infinity:
        loss = ops.where(loss == math.inf, _flow().zeros_like(loss), loss)
    if reduction == "mean":
        denom = _flow().tensor(tl, dtype=loss.dtype).clamp(min=1)
        return (loss / denom).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss
