"""The less common losses of ``oneflow.nn.functional`` (margin, embedding, Poisson/Gaussian NLL, multi-label)
and ``pairwise_distance`` / ``cosine_similarity``, composed from registered ops exactly as PyTorch defines them."""
import math

import numpy as _np

from .. import _C
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
    if d == 0:
        return diff.abs()
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
    n1 = x1.norm(2, dim, keepdim=True)
    n2 = x2.norm(2, dim, keepdim=True)
    # PyTorch clamps the norms under no_grad: the gradient flows as through the unclamped norm.
    n1 = n1 + (n1.clamp_min(eps) - n1).detach()
    n2 = n2 + (n2.clamp_min(eps) - n2).detach()
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``log(1 + exp(-target * input))``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _reduce(ops.log1p(ops.exp(ops.neg(input * target))), reduction)


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
    margin_clamp = (ops.neg(input) + margin).clamp_min(0)
    out = flow.where(target != 1, margin_clamp, zeros) + flow.where(target != -1, input, zeros)
    return _reduce(out, reduction)


def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where ``target == -1``."""
    flow = _flow()
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim():
        raise RuntimeError(f"cosine_embedding_loss: Input1 and Input2 must have same dimensions, but got "
                           f"{input1.dim()} and {input2.dim()}")
    if target.dim() > 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if target.dim() + 1 != input1.dim():
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


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """``max(d(a, p) - d(a, n) + margin, 0)`` with the p-norm ``pairwise_distance``."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a, pd, nd = anchor.dim(), positive.dim(), negative.dim()
    if not (a == pd == nd):
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {a}D, positive {pd}D, and negative {nd}D inputs")
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = ops.minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((dist_pos - dist_neg + margin).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0,
                                      swap=False, reduction="mean"):
    """Triplet margin loss with a custom ``distance_function`` (default ``pairwise_distance``)."""
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater than 0, got {margin} "
                         "instead")
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


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """``0.5 * (log(max(var, eps)) + (input - target)^2 / max(var, eps))`` (+ ``0.5 log(2 pi)`` when ``full``)."""
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    if bool((var < 0).any()):
        raise ValueError("var has negative entry/entries")
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
    class_dim = input.dim() - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    return _reduce(loss, reduction)


def _as_2d(input, target, name):
    if input.dim() > 2:
        raise RuntimeError(f"{name}: Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if input.dim() <= 1:
        return input.reshape(1, -1), target.reshape(1, -1), True
    return input, target, False


def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None,
                      reduction="mean"):
    """``sum_{j != y} max(0, margin - x[y] + x[j])^p * w[y] / C`` per sample."""
    flow = _flow()
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    squeeze = input.dim() <= 1
    x = input.reshape(1, -1) if squeeze else input
    if x.dim() != 2:
        raise RuntimeError(f"multi_margin_loss: Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    n, c = x.shape
    t = target.reshape(-1)
    if t.numel() != n:
        raise RuntimeError(f"inconsistent target size, expected {n} but got {list(target.shape)}")
    if weight is not None and weight.dim() > 1:
        raise ValueError("weight must be one-dimensional")
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
    not_target = flow.tensor(_np.arange(c)[None, :] != tn[:, None], dtype=z.dtype)
    loss = (z * not_target).sum(1) / c
    if squeeze:
        loss = loss.reshape(target.shape) if target.dim() == 0 else loss.reshape([])
    return _reduce(loss, reduction)


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """``sum_{j in targets} sum_{k not in targets} max(0, 1 - (x[j] - x[k])) / C`` per sample, the targets being
    the class indices of ``target`` before its first -1."""
    flow = _flow()
    reduction = _legacy_reduction(size_average, reduce, reduction)
    squeeze = input.dim() <= 1
    x = input.reshape(1, -1) if squeeze else input
    if x.dim() != 2:
        raise RuntimeError(f"multilabel_margin_loss: Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    n, c = x.shape
    tn = target.numpy().reshape(n, c) if target.numel() == n * c else None
    if tn is None:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    counts = _np.zeros((n, c))
    is_target = _np.zeros((n, c), dtype=bool)
    for i in range(n):
        for j in tn[i]:
            if j < 0:
                break
            if j >= c:
                raise RuntimeError("argument #2 'target' is out of range")
            counts[i, j] += 1
            is_target[i, j] = True
    # z[n, j, k] = max(0, 1 - x[n, j] + x[n, k]), weighted by how often j is listed and by k not being a target.
    z = (x.unsqueeze(1) - x.unsqueeze(2) + 1).clamp_min(0)
    w = flow.tensor(counts[:, :, None] * (~is_target)[:, None, :], dtype=z.dtype)
    loss = (z * w).sum([1, 2]) / c
    if squeeze:
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
