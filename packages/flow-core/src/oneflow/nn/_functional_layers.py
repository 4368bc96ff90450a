"""The functional forms of the less common layer modules (torch.nn.functional signatures), written on top of
registered ops: ``embedding_bag``, ``pixel_shuffle``/``pixel_unshuffle``, ``alpha_dropout``/
``feature_alpha_dropout``, ``local_response_norm``, ``rms_norm``, ``lp_pool1d/2d/3d`` and
``max_unpool1d/2d/3d``."""
import numpy as _np

from .. import _C
from .._ops._names import torch_dtype_name

ops = _C.ops

__all__ = ["embedding_bag", "pixel_shuffle", "pixel_unshuffle", "alpha_dropout", "feature_alpha_dropout",
           "local_response_norm", "rms_norm",
           "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _flow():
    import oneflow

    return oneflow


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, averages or maxes the embeddings of each bag of indices (bags are the rows of a 2-D ``input`` or
    the ``offsets``-delimited runs of a 1-D one); entries equal to ``padding_idx`` are left out."""
    flow = _flow()
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "the Pytorch GitHub.")
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != tuple(input.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not None, "
                         f"then it must have the same shape as the input ({tuple(input.shape)})")
    if sparse:
        raise NotImplementedError("embedding_bag: sparse gradients are not supported")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    for name, t in (("indices", input), ("offsets", offsets)):
        if t is not None and t.dtype not in (flow.int64, flow.int32):
            raise RuntimeError(f"Expected tensor for argument #1 '{name}' to have one of the following scalar types: "
                               f"Long, Int; but got {t.dtype} instead (while checking arguments for embedding_bag)")
    n_emb = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < n_emb, "padding_idx must be within the number of embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -n_emb, "padding_idx must be within the number of embeddings"
            padding_idx = n_emb + padding_idx
    ids = input.numpy()
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets).__name__}")
        B, L = ids.shape
        if L == 0:
            # PyTorch derives the offsets as a range with step L, which it refuses for L == 0
            raise RuntimeError("embedding_bag: a 2-D input needs at least one index per bag (step must be nonzero)")
        pos = _np.arange(B * L).reshape(B, L)
        valid = _np.ones((B, L), dtype=bool)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        offs = offsets.numpy().astype(_np.int64)
        n = ids.shape[0]
        if include_last_offset:
            starts, ends = offs[:-1], offs[1:]
        else:
            starts, ends = offs, _np.append(offs[1:], n)
        if len(offs) and offs[0] != 0:
            raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                               f"from position 0. However, got {offs[0]}")
        if len(offs) and offs[-1] > n:
            raise RuntimeError(f"offsets[-1] can not be greater than input's length {n} but got offsets[-1] of "
                               f"{offs[-1]}")
        if _np.any(_np.diff(offs) < 0):
            raise RuntimeError("embedding_bag: offsets must be non-decreasing")
        counts = ends - starts
        B = len(starts)
        L = max(int(counts.max()) if B else 0, 1)
        col = _np.arange(L)
        valid = col[None, :] < counts[:, None]
        pos = _np.where(valid, starts[:, None] + col[None, :], 0)
        if n == 0:
            pos = _np.zeros_like(pos)
            ids = _np.zeros(1, dtype=_np.int64)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    flat = ids.reshape(-1)
    idx = flat[pos]
    bad = valid & ((idx < 0) | (idx >= n_emb))
    if _np.any(bad):
        k = int(_np.argmax(bad.reshape(-1)))
        raise RuntimeError(f"Index {int(pos.reshape(-1)[k])} of input takes value {int(idx.reshape(-1)[k])} which is "
                           f"not in the valid range [0, {n_emb})")
    if padding_idx is not None:
        valid = valid & (idx != padding_idx)
    if max_norm is not None:
        with flow.no_grad():
            ops.embedding_renorm_(weight, input, float(max_norm), float(norm_type))
    # Only the bags' real entries are looked up (so scale_grad_by_freq counts only them); the padded slots of
    # short bags, and padding_idx entries, read a zero row placed in front of them.
    looked_up = ops.embedding(weight, flow.tensor(idx[valid], dtype=flow.int64), -1, bool(scale_grad_by_freq), False)
    slot = _np.zeros(valid.shape, dtype=_np.int64)
    slot[valid] = _np.arange(1, int(valid.sum()) + 1)
    rows = flow.cat([flow.zeros(1, weight.shape[1], dtype=weight.dtype), looked_up])
    emb = ops.reshape(ops.index_select(rows, 0, flow.tensor(slot.reshape(-1))), list(valid.shape) + [weight.shape[1]])
    maskf = flow.tensor(valid[..., None], dtype=weight.dtype)
    if mode == "max":
        neg = flow.tensor(_np.where(valid[..., None], 0.0, -_np.inf), dtype=weight.dtype)
        out = (emb + neg).max(dim=1)[0]
        nonempty = flow.tensor(valid.any(axis=1)[:, None], dtype=weight.dtype)
        return flow.where(nonempty > 0, out, flow.zeros_like(out))
    if per_sample_weights is not None:
        psw = ops.reshape(per_sample_weights, [-1])[flow.tensor(pos, dtype=flow.int64)]
        maskf = maskf * ops.unsqueeze(psw, -1)
    out = (emb * maskf).sum(1)
    if mode == "mean":
        cnt = _np.maximum(valid.sum(axis=1), 1)[:, None]
        out = out / flow.tensor(cnt, dtype=weight.dtype)
    return out


def _int_arg(op, name, v):
    """``v`` as an int, refusing floats and other types as torch's argument parser does."""
    import operator

    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(f"{op}(): argument '{name}' (position 2) must be int, not {type(v).__name__}") from None


def pixel_shuffle(input, upscale_factor):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    r = _int_arg("pixel_shuffle", "upscale_factor", upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if c % (r * r) != 0:
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    oc = c // (r * r)
    nb = len(batch)
    x = ops.reshape(input, list(batch) + [oc, r, r, h, w])
    perm = list(range(nb)) + [nb, nb + 3, nb + 1, nb + 4, nb + 2]
    return ops.reshape(ops.permute(x, perm), list(batch) + [oc, h * r, w * r])


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    r = _int_arg("pixel_unshuffle", "downscale_factor", downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *batch, c, h, w = input.shape
    if h % r != 0:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} is not divisible by {r}")
    if w % r != 0:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                           f"input.size(-1)={w} is not divisible by {r}")
    nb = len(batch)
    x = ops.reshape(input, list(batch) + [c, h // r, r, w // r, r])
    perm = list(range(nb)) + [nb, nb + 2, nb + 4, nb + 1, nb + 3]
    return ops.reshape(ops.permute(x, perm), list(batch) + [c * r * r, h // r, w // r])


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _alpha_dropout(input, p, training, inplace, feature):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0 or input.numel() == 0:
        return input
    flow = _flow()
    # PyTorch zeroes the input for p == 1 before it looks at the input's rank or dtype
    if p == 1:
        out = input * 0
    else:
        if feature and input.dim() < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        if not input.dtype.is_floating_point:
            raise RuntimeError(f"result type Float can't be cast to the desired output type "
                               f"{torch_dtype_name(input.dtype)}")
        alpha = _SELU_ALPHA * _SELU_SCALE
        a = ((1 - p) * (1 + p * alpha * alpha)) ** -0.5
        # one draw per element, or per (sample, channel) broadcast over the spatial dims
        shape = list(input.shape[:2]) + [1] * (input.dim() - 2) if feature else list(input.shape)
        keep = flow.empty(shape, dtype=input.dtype, device=input.device).bernoulli_(1 - p)
        b = (keep - 1.0) * (alpha * a) + alpha * a * p
        out = input * (keep * a) + b
    if inplace:
        input.copy_(out)
        return input
    return out


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU's self-normalising mean and variance: dropped units are set to SELU's negative
    saturation value and the result is affinely corrected."""
    return _alpha_dropout(input, p, training, inplace, False)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels: each (sample, channel) of an (N, C, *) input is kept or set to SELU's
    negative saturation value as a unit, then affinely corrected to keep zero mean and unit variance."""
    return _alpha_dropout(input, p, training, inplace, True)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Normalises each channel by the (squared) activity of its ``size`` neighbouring channels."""
    from . import functional as F

    dim = input.dim()
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input * input
    if dim == 3:
        div = ops.unsqueeze(div, 1)
        div = F.pad(div, (0, 0, size // 2, (size - 1) // 2))
        div = ops.squeeze_dim(F.avg_pool2d(div, (size, 1), stride=1), 1)
    else:
        sizes = list(input.shape)
        div = ops.reshape(div, [sizes[0], 1, sizes[1], sizes[2], -1])
        div = F.pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = ops.squeeze_dim(F.avg_pool3d(div, (size, 1, 1), stride=1), 1)
        div = ops.reshape(div, sizes)
    div = (div * alpha + k) ** beta
    return input / div


_EPS = {"float32": 1.1920928955078125e-07, "float64": 2.220446049250313e-16, "float16": 0.0009765625,
        "bfloat16": 0.0078125}


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` dims (eps defaults to the
    dtype's machine epsilon)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = [int(s) for s in normalized_shape]
    k = len(normalized_shape)
    if k == 0 or input.dim() < k or list(input.shape[input.dim() - k:]) != normalized_shape:
        raise RuntimeError(f"Given normalized_shape={normalized_shape}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in normalized_shape)}], but got input of size"
                           f"{list(input.shape)}")
    if eps is None:
        eps = _EPS.get(str(input.dtype).split(".")[-1], 1.1920928955078125e-07)
    dims = list(range(input.dim() - k, input.dim()))
    out = input * ops.rsqrt(ops.mean(input * input, dims, True) + eps)
    return out * weight if weight is not None else out


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nd):
    from . import functional as F

    ks = kernel_size if isinstance(kernel_size, (list, tuple)) else [kernel_size] * nd
    if len(ks) == 1:
        ks = list(ks) * nd
    maxp = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nd - 1]
    avgp = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[nd - 1]
    if norm_type == float("inf"):
        return maxp(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -maxp(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avgp(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    n = 1
    for k in ks:
        n *= int(k)
    flow = _flow()
    return (flow.sign(out) * flow.relu(flow.abs(out))).mul(n).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling: ``(sum x^p)^(1/p)`` over each window."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """2-D power-average pooling."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """3-D power-average pooling."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)


def _nt(v, n):
    if isinstance(v, (list, tuple)):
        return [int(x) for x in v] if len(v) != 1 else [int(v[0])] * n
    return [int(v)] * n


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd):
    k = _nt(kernel_size, nd)
    s = _nt(stride if stride is not None else kernel_size, nd)
    p = _nt(padding, nd)
    default = [(input.shape[input.dim() - nd + d] - 1) * s[d] + k[d] - 2 * p[d] for d in range(nd)]
    if output_size is None:
        size = default
    else:
        size = [int(v) for v in output_size]
        if len(size) == nd + 2:
            size = size[2:]
        if len(size) != nd:
            raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} elements, but it has a "
                             f"length of '{len(size)}'")
        for d in range(nd):
            lo, hi = default[d] - s[d], default[d] + s[d]
            if not (lo < size[d] < hi):
                raise ValueError(f'invalid output_size "{size}" (dim {d} must be between {lo} and {hi})')
    if input.dim() not in (nd + 1, nd + 2):
        raise RuntimeError(f"max_unpool{nd}d: expected a {nd + 1}D or {nd + 2}D input, got {input.dim()}D")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    lead = list(input.shape[:input.dim() - nd])
    plane = 1
    for v in size:
        plane *= v
    flow = _flow()
    if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= plane):
        raise RuntimeError(f"Found an invalid max index: {int(indices.max())} (output volumes are of size "
                           f"{'x'.join(str(v) for v in size)})")
    x = ops.reshape(input, lead + [-1])
    idx = ops.reshape(indices, lead + [-1])
    out = ops.scatter(flow.zeros(lead + [plane], dtype=input.dtype), len(lead), idx, x)
    return ops.reshape(out, lead + size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Inverse of ``max_pool1d``: puts each value back at its argmax position, zeros elsewhere."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Inverse of ``max_pool2d`` (indices flat within each plane)."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Inverse of ``max_pool3d``."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)
