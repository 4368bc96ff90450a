"""Convolution, pooling and linear functions of ``oneflow.nn.functional`` (torch.nn.functional signatures)."""
import math
from .. import _C
from .._ops._names import reject_dtype, torch_dtype_name

ops = _C.ops

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "adaptive_max_pool3d", "linear", "bilinear", "unfold", "fold",
           "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
           "fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices"]


def _tuple(v, n, name="argument"):
    if isinstance(v, (list, tuple)):
        if len(v) == 1:
            return [int(v[0])] * n
        if len(v) != n:
            raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} values, got {list(v)}")
        return [int(x) for x in v]
    return [int(v)] * n


def _batchify(input, nd, fname):
    """(input with batch dim, was_unbatched); raises like torch for wrong ranks."""
    if input.dim() == nd + 1:
        return ops.unsqueeze(input, 0), True
    if input.dim() == nd + 2:
        return input, False
    raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to {fname}, but got input of "
                       f"size: {list(input.shape)}")


def _conv(input, weight, bias, stride, padding, dilation, groups, nd, fname):
    x, unbatched = _batchify(input, nd, fname)
    stride, dilation = _tuple(stride, nd, "stride"), _tuple(dilation, nd, "dilation")
    trim = None
    if isinstance(padding, str):
        if padding == "valid":
            pad = [0] * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            pad, trim = [], []
            for i in range(nd):
                total = dilation[i] * (weight.shape[2 + i] - 1)
                left = total // 2
                pad.append(total - left)  # symmetric by the larger side, then drop the extra leading outputs
                trim.append((total - left) - left)
        else:
            raise ValueError(f"Invalid padding string {padding!r}, should be one of ('valid', 'same')")
    else:
        pad = _tuple(padding, nd, "padding")
    out = ops.convolution(x, weight, bias, stride, pad, dilation, False, [0] * nd, groups)
    if trim is not None and any(trim):
        for i, t in enumerate(trim):
            if t:
                out = ops.slice(out, 2 + i, t, out.shape[2 + i], 1)
    return ops.squeeze_dim(out, 0) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over an input of shape (N, C_in, L) or (C_in, L)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution over an input of shape (N, C_in, H, W) or (C_in, H, W)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over an input of shape (N, C_in, D, H, W) or (C_in, D, H, W)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, nd, fname):
    x, unbatched = _batchify(input, nd, fname)
    out = ops.convolution(x, weight, bias, _tuple(stride, nd, "stride"), _tuple(padding, nd, "padding"),
                          _tuple(dilation, nd, "dilation"), True, _tuple(output_padding, nd, "output_padding"),
                          groups)
    return ops.squeeze_dim(out, 0) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """1-D transposed convolution ("deconvolution")."""
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 1, "conv_transpose1d")


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """2-D transposed convolution ("deconvolution")."""
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 2, "conv_transpose2d")


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """3-D transposed convolution ("deconvolution")."""
    return _conv_t(input, weight, bias, stride, padding, output_padding, groups, dilation, 3, "conv_transpose3d")


def _pool_stride(stride, kernel, nd):
    """A pooling op's stride: ``None`` or an empty sequence mean the kernel size, as in torch."""
    if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0):
        return kernel
    return _tuple(stride, nd, "stride")


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, nd):
    k = _tuple(kernel_size, nd, "kernel_size")
    s = _pool_stride(stride, k, nd)
    out, idx = ops.max_pool(input, k, s, _tuple(padding, nd, "padding"), _tuple(dilation, nd, "dilation"),
                            bool(ceil_mode))
    return (out, idx) if return_indices else out


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """1-D max pooling; with ``return_indices`` also the argmax positions."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-D max pooling; with ``return_indices`` also the argmax positions (flat within each plane)."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """3-D max pooling; with ``return_indices`` also the argmax positions."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """1-D max pooling returning ``(output, indices)`` whatever ``return_indices`` says."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 1)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """2-D max pooling returning ``(output, indices)`` whatever ``return_indices`` says."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 2)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    """3-D max pooling returning ``(output, indices)`` whatever ``return_indices`` says."""
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, True, 3)


def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, nd):
    k = _tuple(kernel_size, nd, "kernel_size")
    s = _pool_stride(stride, k, nd)
    return ops.avg_pool(input, k, s, _tuple(padding, nd, "padding"), bool(ceil_mode), bool(count_include_pad),
                        divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """1-D average pooling."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """2-D average pooling."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """3-D average pooling."""
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3)


def _out_size(input, output_size, nd, fname):
    sizes = _tuple(output_size, nd, "output_size") if not isinstance(output_size, (list, tuple)) else list(output_size)
    if len(sizes) != nd:  # PyTorch's errors: a sequence must give every spatial size
        if nd == 1:
            raise RuntimeError(f"{fname}() argument 'output_size' should contain one int (got {len(sizes)})")
        if "max" in fname:
            raise RuntimeError(f"{fname}(): internal error: output_size.size() must be {nd}")
        raise RuntimeError(f"{fname}: output_size must be {nd}")
    # None keeps the input's size
    return [input.shape[input.dim() - nd + i] if v is None else int(v) for i, v in enumerate(sizes)]


def adaptive_avg_pool1d(input, output_size):
    """1-D adaptive average pooling to ``output_size``."""
    return ops.adaptive_avg_pool(input, _out_size(input, output_size, 1, "adaptive_avg_pool1d"))


def adaptive_avg_pool2d(input, output_size):
    """2-D adaptive average pooling to ``output_size`` (None entries keep the input size)."""
    return ops.adaptive_avg_pool(input, _out_size(input, output_size, 2, "adaptive_avg_pool2d"))


def adaptive_avg_pool3d(input, output_size):
    """3-D adaptive average pooling to ``output_size``."""
    return ops.adaptive_avg_pool(input, _out_size(input, output_size, 3, "adaptive_avg_pool3d"))


def _adaptive_max(input, output_size, return_indices, nd):
    out, idx = ops.adaptive_max_pool(input, _out_size(input, output_size, nd, f"adaptive_max_pool{nd}d"))
    return (out, idx) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """1-D adaptive max pooling."""
    return _adaptive_max(input, output_size, return_indices, 1)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """2-D adaptive max pooling."""
    return _adaptive_max(input, output_size, return_indices, 2)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """3-D adaptive max pooling."""
    return _adaptive_max(input, output_size, return_indices, 3)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """1-D adaptive max pooling returning ``(output, indices)``."""
    return _adaptive_max(input, output_size, True, 1)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """2-D adaptive max pooling returning ``(output, indices)``."""
    return _adaptive_max(input, output_size, True, 2)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """3-D adaptive max pooling returning ``(output, indices)``."""
    return _adaptive_max(input, output_size, True, 3)



_FRAC_DIM_NAMES = {2: ("height", "width"), 3: ("time", "height", "width")}


def _frac_sizes(v, nd, fname, what):
    if isinstance(v, (list, tuple)):
        if len(v) not in (1, nd):
            raise RuntimeError(f"{fname}: {what} must either be a single Int or tuple of Ints")
        return [int(x) for x in v] * (nd if len(v) == 1 else 1)
    return [int(v)] * nd


def _bf16_round(a):
    """float32 values rounded to the nearest bfloat16 (ties to even), kept as float32."""
    import numpy as np

    b = np.asarray(a, dtype=np.float32).view(np.uint32)
    return ((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000).view(np.float32)


def _frac_starts(u, in_size, out_size, pool, np_dtype, rnd):
    """Window starts (N, C, out) as ATen's generate_intervals makes them, in the input's floating type (``rnd``
    rounds each step for bfloat16, which numpy lacks) so that the float truncations land where PyTorch's do."""
    import numpy as np

    seq = np.empty(u.shape + (out_size,), dtype=np.int64)
    if out_size > 1:
        alpha = rnd(rnd(np_dtype(in_size - pool)) / rnd(np_dtype(out_size - 1)))
        i = rnd(np.arange(out_size - 1).astype(np_dtype))
        seq[..., :-1] = (rnd(rnd(i + u[..., None]) * alpha).astype(np.int64)
                         - rnd(u * alpha).astype(np.int64)[..., None])
    if out_size > 0:
        seq[..., -1] = in_size - pool
    return seq


def _fractional_max_pool(input, kernel_size, output_size, output_ratio, samples, nd):
    import numpy as np
    import oneflow as flow

    fname = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{fname} requires specifying either an output_size or an output_ratio")
    if input.dim() < nd + 1:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.dim()}, {input.dim() - 1}], "
                         f"but got {-nd - 1})")
    where = f"{fname}()" if nd == 2 else f"{fname}_out()"
    if input.dim() > nd + 2:
        raise RuntimeError(f"{where}: Expected {nd + 1}D or {nd + 2}D tensor, but got: {list(input.shape)}")
    for d in range(input.dim() - nd - 1, input.dim()):
        if input.shape[d] == 0:
            raise RuntimeError(f"{where}: Expected input to have non-zero size for non-batch dimensions, but got"
                               f"{list(input.shape)} with dimension {d} being empty.")
    spatial = list(input.shape[-nd:])
    if output_size is None:
        # len() as in PyTorch, whose 2-D functional thus takes only a sequence ratio (TypeError otherwise)
        if nd == 2 and len(output_ratio) > 2:
            raise ValueError(f"{fname} requires output_ratio to either be a single Int or tuple of Ints.")
        ratio = list(output_ratio) if isinstance(output_ratio, (list, tuple)) else [output_ratio] * nd
        output_size = [int(spatial[i] * ratio[i]) for i in range(nd)]
    pool = _frac_sizes(kernel_size, nd, fname, "kernel_size")
    out = _frac_sizes(output_size, nd, fname, "output_size")
    if not input.is_floating_point():
        raise NotImplementedError(f'"check_uniform_bounds" not implemented for \'{torch_dtype_name(input.dtype)}\'')
    x, unbatched = (ops.unsqueeze(input, 0), True) if input.dim() == nd + 1 else (input, False)
    n, c = x.shape[0], x.shape[1]
    if samples is None:
        samples = flow.rand(n, c, nd, dtype=input.dtype, device=input.device)
    # PyTorch's 2-D kernel lets windows reach the last element; its 3-D one asks for one spare, checking (T, W, H)
    for i in ([0, 1] if nd == 2 else [0, 2, 1]):
        name = _FRAC_DIM_NAMES[nd][i]
        if out[i] + pool[i] - 1 > spatial[i] - (nd == 3):
            raise RuntimeError(f"{where}: pool {name} {pool[i]} too large relative to input {name} {spatial[i]}")
    if samples.dim() != 3 or samples.shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got {samples.shape[-1]}.")
    if samples.shape[0] < n:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != c:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.dtype != input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    out_shape = [n, c] + out
    if math.prod(out_shape) == 0:
        res = flow.zeros(out_shape, dtype=input.dtype, device=input.device), \
            flow.zeros(out_shape, dtype=flow.int64, device=input.device)
    else:
        np_dtype = {flow.float64: np.float64, flow.float16: np.float16}.get(input.dtype, np.float32)
        rnd = _bf16_round if input.dtype == flow.bfloat16 else (lambda a: a)
        u = samples.detach()[:n].to(flow.float64).cpu().numpy().astype(np_dtype)
        # 2-D pooling reads sample 0 for the width and 1 for the height; 3-D reads them in (T, H, W) order
        which = [1, 0] if nd == 2 else [0, 1, 2]
        starts = [_frac_starts(u[..., which[d]], spatial[d], out[d], pool[d], np_dtype, rnd) for d in range(nd)]
        strides = [math.prod(spatial[d + 1:]) for d in range(nd)]
        # flat in-plane index of every window element: (N, C, *out, *pool)
        flat = np.zeros((n, c) + (1,) * (2 * nd), dtype=np.int64)
        for d in range(nd):
            shp = [n, c] + [1] * (2 * nd)
            shp[2 + d] = out[d]
            off = [1] * (2 * nd + 2)
            off[2 + nd + d] = pool[d]
            flat = flat + (starts[d].reshape(shp) + np.arange(pool[d]).reshape(off)) * strides[d]
        k = math.prod(pool)
        idx = flow.tensor(flat.reshape(n, c, -1), dtype=flow.int64, device=input.device)
        win = ops.reshape(ops.gather(ops.reshape(x, [n, c, -1]), 2, idx), [n, c, -1, k])
        with flow.no_grad():
            # PyTorch scans each window with ``val > max || isnan(val)``: the first maximum, but the last NaN
            nan = win.isnan()
            pick = win.masked_fill(nan, float("-inf")).argmax(-1, keepdim=True)
            last_nan = (k - 1) - nan.flip([-1]).to(flow.int8).argmax(-1, keepdim=True)
            pick = flow.where(nan.any(-1, keepdim=True), last_nan, pick)
            plane_idx = ops.reshape(ops.gather(idx.reshape(n, c, -1, k), 3, pick), out_shape)
        res = ops.reshape(ops.gather(win, 3, pick), out_shape), plane_idx
    if unbatched:
        return ops.squeeze_dim(res[0], 0), ops.squeeze_dim(res[1], 0)
    return res


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """2-D fractional max pooling (Graham, 2014) over (N, C, H, W) or (C, H, W) inputs, returning
    ``(output, indices)``; windows of ``kernel_size`` start at pseudo-random steps that reach ``output_size``
    (or ``output_ratio`` times the input size)."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    """3-D fractional max pooling over (N, C, T, H, W) or (C, T, H, W) inputs, returning ``(output, indices)``."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """2-D fractional max pooling; with ``return_indices`` also the argmax positions (flat within each plane)."""
    out, idx = _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return (out, idx) if return_indices else out


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """3-D fractional max pooling; with ``return_indices`` also the argmax positions (flat within each volume)."""
    out, idx = _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return (out, idx) if return_indices else out

def linear(input, weight, bias=None):
    """``input @ weight.T + bias``."""
    wt = ops.transpose(weight, 0, 1) if weight.dim() == 2 else weight
    if weight.dim() == 2 and input.dim() >= 2:
        # Fold leading dims into one GEMM and let it start from the bias (beta = 1): no separate bias pass.
        lead = input.shape[:-1]
        x2 = input if input.dim() == 2 else ops.reshape(input, (math.prod(lead), input.shape[-1]))
        out = ops.addmm(bias, x2, wt) if bias is not None else ops.mm(x2, wt)
        return out if input.dim() == 2 else ops.reshape(out, (*lead, weight.shape[0]))
    out = ops.matmul(input, wt)
    return out + bias if bias is not None else out


def bilinear(input1, input2, weight, bias=None):
    """``y = x1^T A x2 + b`` for each output feature (weight of shape (out, in1, in2))."""
    out = ops.einsum("...i,oij,...j->...o", [input1, weight, input2])
    return out + bias if bias is not None else out


def _sliding_args(kernel_size, dilation, padding, stride):
    k, d, p, s = (_tuple(v, 2, n) for v, n in ((kernel_size, "kernel_size"), (dilation, "dilation"),
                                                (padding, "padding"), (stride, "stride")))
    if min(k) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {k[0]} "
                           f"kernel_width: {k[1]}")
    if min(s) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got dH: {s[0]} dW: {s[1]}")
    if min(d) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {d[0]} "
                           f"dilation_width: {d[1]}")
    if min(p) < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {p[0]} pad_width: {p[1]}")
    return k, d, p, s


def _blocks(size, k, d, p, s):
    return [(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]


def _im2col_index(padded_w, k, d, s, blocks):
    """int64 (kh*kw*L,) positions in the flattened padded image of every kernel element of every block, in
    im2col order (kernel row, kernel col, block row, block col)."""
    import numpy as np
    from .._ops.creation import tensor

    ki = np.arange(k[0]).reshape(-1, 1, 1, 1) * d[0]
    kj = np.arange(k[1]).reshape(1, -1, 1, 1) * d[1]
    oh = np.arange(blocks[0]).reshape(1, 1, -1, 1) * s[0]
    ow = np.arange(blocks[1]).reshape(1, 1, 1, -1) * s[1]
    return tensor(((oh + ki) * padded_w + ow + kj).reshape(-1), dtype=_C.int64)


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extracts sliding local blocks (im2col): (N, C, H, W) -> (N, C * prod(kernel_size), L), L the number of
    blocks; a 3-D (C, H, W) input gives (C * prod(kernel_size), L)."""
    if input.dim() not in (3, 4) or any(x == 0 for x in input.shape[-3:]):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    k, d, p, s = _sliding_args(kernel_size, dilation, padding, stride)
    reject_dtype("im2col_out_cpu", input, bool_ok=False, integral_ok=False)
    x = ops.unsqueeze(input, 0) if input.dim() == 3 else input
    n, c, h, w = x.shape
    blocks = _blocks((h, w), k, d, p, s)
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size ({h}, {w}), kernel_size=({k[0]}, {k[1]}), "
                           f"dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), calculated shape of the array of "
                           f"sliding blocks as ({blocks[0]}, {blocks[1]}), but its components must be at least one.")
    if p[0] or p[1]:
        x = ops.pad(x, [p[1], p[1], p[0], p[0]])
    hp, wp = h + 2 * p[0], w + 2 * p[1]
    idx = _im2col_index(wp, k, d, s, blocks)
    flat = ops.reshape(x, [n, c, hp * wp])
    cols = ops.gather(flat, 2, ops.expand(ops.reshape(idx, [1, 1, -1]), [n, c, idx.shape[0]]))
    out = ops.reshape(cols, [n, c * k[0] * k[1], blocks[0] * blocks[1]])
    return ops.squeeze_dim(out, 0) if input.dim() == 3 else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Combines sliding local blocks into an image (col2im, the adjoint of ``unfold``; overlaps are summed):
    (N, C * prod(kernel_size), L) -> (N, C, *output_size); a 2-D input gives (C, *output_size)."""
    reject_dtype("col2im_out_cpu", input, bool_ok=False, integral_ok=False)
    if input.dim() not in (2, 3) or any(x == 0 for x in input.shape[-2:]):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    osz = _tuple(output_size, 2, "output_size")
    k, d, p, s = _sliding_args(kernel_size, dilation, padding, stride)
    x = ops.unsqueeze(input, 0) if input.dim() == 2 else input
    n, ck, length = x.shape
    kk = k[0] * k[1]
    if ck % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                           f"but got input.size(1)={ck} and kernel_size=({k[0]}, {k[1]}).")
    blocks = _blocks(osz, k, d, p, s)
    if min(blocks) < 1 or blocks[0] * blocks[1] != length:
        raise RuntimeError(f"Given output_size=({osz[0]}, {osz[1]}), kernel_size=({k[0]}, {k[1]}), "
                           f"dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), stride=({s[0]}, {s[1]}), expected "
                           f"size of input's dimension 2 to match the calculated number of sliding blocks "
                           f"{blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got input.size(2)={length}.")
    c = ck // kk
    hp, wp = osz[0] + 2 * p[0], osz[1] + 2 * p[1]
    idx = _im2col_index(wp, k, d, s, blocks)
    from .._ops.creation import zeros

    src = ops.reshape(x, [n, c, kk * length])
    out = ops.scatter_add(zeros([n, c, hp * wp], dtype=x.dtype), 2,
                          ops.expand(ops.reshape(idx, [1, 1, -1]), [n, c, idx.shape[0]]), src)
    out = ops.reshape(out, [n, c, hp, wp])
    if p[0] or p[1]:
        out = ops.slice(ops.slice(out, 2, p[0], p[0] + osz[0], 1), 3, p[1], p[1] + osz[1], 1)
    return ops.squeeze_dim(out, 0) if input.dim() == 2 else out
