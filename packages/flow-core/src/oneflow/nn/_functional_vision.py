"""Spatial-transformer and channel-reordering functions of ``oneflow.nn.functional``: affine_grid, grid_sample,
channel_shuffle and the deprecated upsample_* aliases, with ``torch.nn.functional``'s signatures."""
import itertools
import math
import warnings

import numpy as _np

from .. import _C
from . import _interp_weights as _iw
from .._ops._names import reject_dtype, torch_dtype_name

ops = _C.ops

__all__ = ["affine_grid", "grid_sample", "channel_shuffle", "native_channel_shuffle", "upsample_nearest",
           "upsample_bilinear"]

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


def _flow():
    import oneflow

    return oneflow


# ---- affine_grid --------------------------------------------------------------------------------------
def _base_coords(n, align_corners):
    """The ``n`` normalised sample positions along one axis (pixel corners or pixel centres)."""
    if n <= 1:
        return _np.zeros(max(n, 0))
    i = _np.arange(n, dtype=_np.float64)
    return 2 * i / (n - 1) - 1 if align_corners else (2 * i + 1) / n - 1


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of an affine transform: ``theta`` (N, 2, 3) with ``size`` (N, C, H, W) gives an
    (N, H, W, 2) grid of (x, y) positions in [-1, 1]; ``theta`` (N, 3, 4) with ``size`` (N, C, D, H, W) gives
    (N, D, H, W, 3). Differentiable in ``theta``; pair it with :func:`grid_sample`."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) in (4, 5):
        d = len(size) - 2
        if theta.dim() != 3 or theta.shape[-2] != d or theta.shape[-1] != d + 1:
            raise ValueError(f"Expected a batch of {d}D affine matrices of shape Nx{d}x{d + 1} for size {size}. "
                             f"Got {theta.shape}.")
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    # homogeneous base grid (*spatial, d + 1) whose last axis is (x, y[, z], 1): x runs along the last dim
    axes = _np.meshgrid(*[_base_coords(n, align_corners) for n in spatial], indexing="ij")
    base = _np.stack(list(axes[::-1]) + [_np.ones(spatial)], axis=-1).reshape(1, -1, d + 1)
    from .._ops.creation import tensor

    n = size[0]
    base = ops.expand(tensor(base, dtype=theta.dtype, device=theta.device), [n, base.shape[1], d + 1])
    grid = ops.bmm(base, ops.transpose(theta, 1, 2))
    return ops.reshape(grid, [n] + spatial + [d])


# ---- grid_sample --------------------------------------------------------------------------------------
def _unnormalize(coord, size, align_corners):
    """[-1, 1] -> pixel index space (corner or centre convention)."""
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, twice_low, twice_high):
    """Reflects ``coord`` at the bounds ``twice_low / 2`` and ``twice_high / 2`` until it lies between them."""
    if twice_low == twice_high:
        return coord * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    coord = (coord - low).abs()
    extra = coord.fmod(span)
    flips = (coord / span).floor()
    even = ops.eq(flips.fmod(2), 0)
    return ops.where(even, extra + low, (span + low) - extra)


def _source_index(coord, size, padding_mode, align_corners):
    return _pad_coord(_unnormalize(coord, size, align_corners), size, padding_mode, align_corners)


def _pad_coord(coord, size, padding_mode, align_corners):
    """A pixel-space coordinate moved inside the input by ``padding_mode`` ('zeros' leaves it to be masked)."""
    if padding_mode == "border":
        coord = coord.clamp(0, size - 1)
    elif padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
        coord = coord.clamp(0, size - 1)
    if padding_mode != "zeros":  # as torch: a NaN (or a reflected infinity) samples index 0
        coord = ops.where(ops.isnan(coord), 0.0, coord)
    return coord


def _gather_nd(flat, pos, sizes):
    """Values of ``flat`` (N, C, prod(sizes)) at the integer-valued float positions ``pos`` (one (N, P) tensor
    per spatial dim), zero where a position falls outside the input."""
    n, c, p = flat.shape[0], flat.shape[1], pos[0].shape[1]
    inside, lin = None, None
    stride = 1
    for q, size in reversed(list(zip(pos, sizes))):
        ok = ops.logical_and(ops.ge(q, 0), ops.le(q, size - 1))  # False for NaN
        inside = ok if inside is None else ops.logical_and(inside, ok)
        # read a valid index where the position is outside (or NaN, which no clamp removes); masked below
        term = ops.to_dtype(ops.where(ok, q, 0.0).clamp(0, size - 1), _C.int64) * stride
        lin = term if lin is None else lin + term
        stride *= size
    vals = ops.gather(flat, 2, ops.expand(ops.unsqueeze(lin, 1), [n, c, p]))
    return vals * ops.unsqueeze(ops.to_dtype(inside, flat.dtype), 1)


def _bicubic_sample(flat, g, sizes, padding_mode, align_corners):
    """PyTorch's bicubic grid sampling: the 4 x 4 integer taps around each unpadded position, each tap moved
    inside the input by ``padding_mode`` (or read as zero), weighted by cubic convolution in x and y. Only the
    weights depend on the grid, which is where its gradient comes from."""
    h, w = sizes
    ix, iy = _unnormalize(ops.select(g, 2, 0), w, align_corners), _unnormalize(ops.select(g, 2, 1), h, align_corners)
    x0, y0 = ix.floor(), iy.floor()
    # interpolate's cubic-convolution weights, evaluated on tensors of fractions
    wx, wy = _iw.cubic_weights(ix - x0), _iw.cubic_weights(iy - y0)
    out = None
    for i in range(4):
        yi = _pad_coord(y0 + (i - 1), h, padding_mode, align_corners)
        for j in range(4):
            xj = _pad_coord(x0 + (j - 1), w, padding_mode, align_corners)
            term = _gather_nd(flat, [yi, xj], sizes) * ops.unsqueeze(wy[i] * wx[j], 1)
            out = term if out is None else out + term
    return out


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Samples ``input`` (N, C, H, W) at the (x, y) positions of ``grid`` (N, H_out, W_out, 2), given in
    [-1, 1] (-1 is the left/top edge), giving (N, C, H_out, W_out); 5-D inputs take (x, y, z) grids
    (N, D_out, H_out, W_out, 3). ``mode`` is 'bilinear' (trilinear for 5-D), 'nearest' or 'bicubic' (4-D);
    ``padding_mode`` 'zeros', 'border' or 'reflection' decides the values outside the input. Bilinear and
    bicubic sampling are differentiable in both ``input`` and ``grid``."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if input.dim() not in (4, 5) or grid.dim() != input.dim():
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    reject_dtype("grid_sampler_2d_cpu_kernel_impl" if input.dim() == 4 else "grid_sampler3d_cpu", input,
                 bool_ok=False, integral_ok=False)
    if grid.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {torch_dtype_name(input.dtype)} but found "
                           f"{torch_dtype_name(grid.dtype)}")
    d = input.dim() - 2
    if grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != d:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {d} in last dimension, but got grid with "
                           f"sizes {list(grid.shape)}")
    if mode == "bicubic" and d != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    n, c, sizes, out_sizes = input.shape[0], input.shape[1], list(input.shape[2:]), list(grid.shape[1:-1])
    g = ops.reshape(grid, [n, math.prod(out_sizes), d])
    # grid[..., 0] indexes the last spatial dim (x), grid[..., 1] the one before (y), ...
    coords = [_source_index(ops.select(g, 2, d - 1 - i), sizes[i], padding_mode, align_corners) for i in range(d)]
    flat = ops.reshape(input, [n, c, math.prod(sizes)])
    if mode == "bicubic":
        out = _bicubic_sample(flat, g, sizes, padding_mode, align_corners)
    elif mode == "nearest":
        nearest = [q.round() for q in coords]
        out = _gather_nd(flat, nearest, sizes)
        if grid.requires_grad:
            # a weight of exactly 1 with zero derivative: grid gets a zero gradient (not None), as in torch
            out = out * ops.unsqueeze(nearest[0] * 0 + 1, 1)
    else:
        low = [q.floor() for q in coords]
        frac = [q - f for q, f in zip(coords, low)]
        out = None
        for corner in itertools.product((0, 1), repeat=d):
            w = None
            for bit, f in zip(corner, frac):
                wi = f if bit else 1 - f
                w = wi if w is None else w * wi
            term = _gather_nd(flat, [f + bit for f, bit in zip(low, corner)], sizes) * ops.unsqueeze(w, 1)
            out = term if out is None else out + term
    return ops.reshape(out, [n, c] + out_sizes)


# ---- channel shuffle ----------------------------------------------------------------------------------
def native_channel_shuffle(input, groups):
    """Splits the channels (dim 1) of (N, C, *) into ``groups`` groups and interleaves them:
    (N, g * k, *) -> channel order (0, k, 2k, ..., 1, k + 1, ...)."""
    if input.dim() <= 2:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    c = input.shape[1]
    if c % groups != 0:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    shape = list(input.shape)
    x = ops.reshape(input, [shape[0], groups, c // groups] + shape[2:])
    return ops.reshape(ops.contiguous(ops.transpose(x, 1, 2)), shape)


def channel_shuffle(input, groups):
    """Divides the channels of (N, C, *) into ``groups`` groups and rearranges them as (C / g, g), i.e.
    interleaves the groups (ShuffleNet)."""
    return native_channel_shuffle(input, groups)


# ---- deprecated upsampling aliases --------------------------------------------------------------------
def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(input, size, scale_factor, mode='nearest')``."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    from ._functional_nn import interpolate

    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: ``interpolate(input, size, scale_factor, mode='bilinear', align_corners=True)``."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    from ._functional_nn import interpolate

    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
