"""Parameter initialisation (``oneflow.nn.init``), with ``torch.nn.init``'s names, fan rules and gains.

Every function fills its tensor in place under ``no_grad`` and returns it.
"""
import math
import warnings

import numpy as _np

from .. import _C

ops = _C.ops

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
           "sparse_", "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal",
           "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"]


class _NoGrad:
    """Cheap ``no_grad`` (the init functions are called once per parameter at construction)."""

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for ``nonlinearity`` (``'relu'``: sqrt(2), ``'leaky_relu'``: sqrt(2 / (1 + slope^2)),
    ``'tanh'``: 5/3, ``'selu'``: 3/4, linear/conv/sigmoid: 1)."""
    linear_fns = ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
    if nonlinearity in linear_fns or nonlinearity == "sigmoid":
        return 1
    elif nonlinearity == "tanh":
        return 5.0 / 3
    elif nonlinearity == "relu":
        return math.sqrt(2.0)
    elif nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, int) or isinstance(param, float):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope ** 2))
    elif nonlinearity == "selu":
        return 3.0 / 4
    else:
        raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    dimensions = tensor.dim()
    if dimensions < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    shape = tensor.shape
    num_input_fmaps = shape[1]
    num_output_fmaps = shape[0]
    receptive_field_size = 1
    for s in shape[2:]:
        receptive_field_size *= s
    return num_input_fmaps * receptive_field_size, num_output_fmaps * receptive_field_size


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    valid_modes = ["fan_in", "fan_out"]
    if mode not in valid_modes:
        raise ValueError(f"Mode {mode} not supported, please use one of {valid_modes}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """Fills ``tensor`` from U(a, b)."""
    with _NoGrad():
        return ops.uniform_(tensor, float(a), float(b), generator=_gen(generator))


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """Fills ``tensor`` from N(mean, std^2)."""
    with _NoGrad():
        return ops.normal_(tensor, float(mean), float(std), generator=_gen(generator))


def _gen(generator):
    if generator is None:
        return None
    if not isinstance(generator, _C.Generator):
        raise TypeError(f"generator must be oneflow.Generator, not {type(generator).__name__}")
    return generator._handle


def _norm_cdf(x):
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def _resample_outside(tensor, mean, std, a, b, gen):
    """Truncated normal by redrawing from N(mean, std^2) every entry outside [a, b] until none is left: cheap
    when [a, b] holds a good share of the mass. The bounds are rounded to the tensor's dtype first, so that a
    sample equal to a rounded bound counts as inside."""
    import oneflow

    lo = oneflow.tensor(float(a), dtype=tensor.dtype).item()
    hi = oneflow.tensor(float(b), dtype=tensor.dtype).item()
    ops.normal_(tensor, float(mean), float(std), generator=gen)
    while True:
        outside = (tensor < lo) | (tensor > hi)
        if not bool(outside.any()):
            return tensor
        fresh = ops.normal_(oneflow.empty_like(tensor), float(mean), float(std), generator=gen)
        tensor.copy_(oneflow.where(outside, fresh, tensor))


def _log_acceptance(x, mean, std, log_peak):
    # log of the normal density at x relative to its peak on [a, b] (<= 0); in float32 at least, so that
    # squaring far-tail values of a half-precision tensor does not overflow
    import oneflow

    if x.dtype not in (oneflow.float32, oneflow.float64):
        x = x.float()
    return ((x - mean) / std).square().mul(-0.5).sub(log_peak)


def _accept_uniform_proposals(tensor, mean, std, a, b, gen):
    """Truncated normal by rejection from U(a, b), a proposal accepted with probability density / peak
    density: exact however far [a, b] lies in the tail (where inverting the CDF runs out of precision)."""
    import oneflow

    mode = max(a, min(mean, b))
    log_peak = -0.5 * ((mode - mean) / std) ** 2

    def rejected(x):
        u = oneflow.empty(tuple(x.shape), dtype=oneflow.float32, device=x.device)
        u = ops.uniform_(u, 0.0, 1.0, generator=gen)
        return u.log() > _log_acceptance(x, mean, std, log_peak)

    ops.uniform_(tensor, float(a), float(b), generator=gen)
    pending = rejected(tensor)
    while bool(pending.any()):
        proposal = ops.uniform_(oneflow.empty_like(tensor), float(a), float(b), generator=gen)
        tensor.copy_(oneflow.where(pending, proposal, tensor))
        pending = pending & rejected(proposal)
    return tensor


def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
    r"""Fills ``tensor`` from N(mean, std^2) truncated to [a, b], by rejection sampling (exact even when
    [a, b] lies far in a tail).

    Args:
        tensor (Tensor): the tensor to fill (in place).
        mean (float): the mean of the normal distribution.
        std (float): its standard deviation.
        a (float): the lower cutoff.
        b (float): the upper cutoff.
        generator (Generator, optional): the generator to sample from.

    Returns:
        ``tensor``. Warns when ``mean`` is more than 2 std outside [a, b].
    """
    if (mean < a - 2 * std) or (mean > b + 2 * std):
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values "
                      "may be incorrect.", stacklevel=2)
    gen = _gen(generator)
    mass = _norm_cdf((b - mean) / std) - _norm_cdf((a - mean) / std)
    with _NoGrad():
        # redrawing normals wastes few draws when [a, b] holds much of the mass; otherwise propose uniformly
        if mass > 0.3:
            return _resample_outside(tensor, mean, std, a, b, gen)
        return _accept_uniform_proposals(tensor, mean, std, a, b, gen)


def constant_(tensor, val):
    """Fills ``tensor`` with ``val``."""
    with _NoGrad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fills ``tensor`` with 1."""
    with _NoGrad():
        return tensor.fill_(1.0)


def zeros_(tensor):
    """Fills ``tensor`` with 0."""
    with _NoGrad():
        return tensor.zero_()


def _copy_numpy(tensor, arr):
    import oneflow

    tensor.copy_(oneflow.tensor(_np.ascontiguousarray(arr)).to(tensor.dtype))
    return tensor


def eye_(tensor):
    """Fills the 2-D ``tensor`` with the identity (ones on the diagonal)."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with _NoGrad():
        return _copy_numpy(tensor, _np.eye(tensor.shape[0], tensor.shape[1]))


def dirac_(tensor, groups=1):
    """Fills the 3/4/5-D ``tensor`` with the Dirac delta (identity convolution), per group."""
    dimensions = tensor.dim()
    if dimensions not in [3, 4, 5]:
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tensor.shape
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_chans_per_grp = sizes[0] // groups
    min_dim = min(out_chans_per_grp, sizes[1])
    arr = _np.zeros(tuple(sizes))
    for g in range(groups):
        for d in range(min_dim):
            idx = (g * out_chans_per_grp + d, d) + tuple(s // 2 for s in sizes[2:])
            arr[idx] = 1
    with _NoGrad():
        return _copy_numpy(tensor, arr)


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """Glorot uniform: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    a = math.sqrt(3.0) * std
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor, gain=1.0, generator=None):
    """Glorot normal: N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He uniform: U(-b, b) with ``b = gain * sqrt(3 / fan_mode)``."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """He normal: N(0, std^2) with ``std = gain / sqrt(fan_mode)``."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=2)
        return tensor
    fan = _calculate_correct_fan(tensor, mode)
    gain = calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor, gain=1, generator=None):
    """Fills ``tensor`` (>= 2-D, viewed as rows x rest) with a (semi-)orthogonal matrix from the QR decomposition
    of a Gaussian matrix, signs fixed by R's diagonal so the result is uniformly distributed."""
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    import oneflow

    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = oneflow.empty(rows, cols, dtype=oneflow.float64)
    ops.normal_(flat, 0.0, 1.0, generator=_gen(generator))
    m = flat.numpy()
    if rows < cols:
        m = m.T
    q, r = _np.linalg.qr(m)  # LAPACK Householder QR
    q = q * _np.sign(_np.diag(r))
    if rows < cols:
        q = q.T
    with _NoGrad():
        _copy_numpy(tensor, q.reshape(tuple(tensor.shape)))
        tensor.mul_(gain)
    return tensor


def sparse_(tensor, sparsity, std=0.01, generator=None):
    """Fills the 2-D ``tensor`` from N(0, std^2) and zeroes ``ceil(sparsity * rows)`` random rows per column."""
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    import oneflow

    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    with _NoGrad():
        ops.normal_(tensor, 0.0, float(std), generator=_gen(generator))
        for col_idx in range(cols):
            row_indices = oneflow.randperm(rows, generator=generator)
            zero_indices = row_indices[:num_zeros]
            tensor[zero_indices, col_idx] = 0
    return tensor


# deprecated non-underscore aliases, as in torch
def _deprecated(fn):
    def alias(*args, **kwargs):
        warnings.warn(f"`nn.init.{fn.__name__[:-1]}` is now deprecated in favor of `nn.init.{fn.__name__}`.",
                      FutureWarning, stacklevel=2)
        return fn(*args, **kwargs)

    alias.__name__ = fn.__name__[:-1]
    return alias


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
