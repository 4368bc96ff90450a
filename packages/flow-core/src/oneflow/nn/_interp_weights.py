"""Resampling weights for the interpolate modes computed as matrices (PyTorch's formulas): bicubic, and the
antialiased bilinear/bicubic. Resizing a spatial dim from n to m is then ``W (m x n) @ x`` along that dim,
which autograd differentiates like any product."""
import math

import numpy as _np

__all__ = ["source_scale", "cubic_weights", "linear_matrix", "cubic_matrix", "antialias_matrix",
           "nearest_exact_index"]


def source_scale(in_size, out_size, align_corners, scale_factor):
    """PyTorch's area_pixel_compute_scale: input pixels per output pixel."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1.0 / scale_factor if scale_factor is not None and scale_factor > 0 else in_size / out_size


def cubic_weights(t, a=-0.75):
    """The four cubic-convolution weights of the neighbours at offsets -1, 0, 1, 2 for a fraction t (a number,
    or a tensor of fractions: grid_sample's bicubic mode evaluates them elementwise)."""
    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def linear_matrix(in_size, out_size, align_corners, scale_factor):
    """Linear resampling along one dim, as the upsample_linear kernel computes it (a dim that keeps its size is
    copied whatever the scale factor)."""
    scale = 1.0 if out_size == in_size else source_scale(in_size, out_size, align_corners, scale_factor)
    w = _np.zeros((out_size, in_size))
    for o in range(out_size):
        real = scale * o if align_corners else max(scale * (o + 0.5) - 0.5, 0.0)
        i0 = min(int(real), in_size - 1)
        frac = real - i0
        w[o, i0] += 1.0 - frac
        w[o, min(i0 + 1, in_size - 1)] += frac
    return w


def cubic_matrix(in_size, out_size, align_corners, scale_factor):
    """Bicubic (a = -0.75, edge pixels repeated) resampling along one dim."""
    scale = source_scale(in_size, out_size, align_corners, scale_factor)
    w = _np.zeros((out_size, in_size))
    for o in range(out_size):
        real = scale * o if align_corners else scale * (o + 0.5) - 0.5
        i0 = math.floor(real)
        for k, c in enumerate(cubic_weights(real - i0)):
            w[o, min(max(i0 - 1 + k, 0), in_size - 1)] += c
    return w


def _aa_filter(mode):
    if mode == "bilinear":
        return 1.0, lambda x: max(0.0, 1.0 - abs(x))
    a = -0.5

    def cubic(x):
        x = abs(x)
        if x < 1:
            return ((a + 2) * x - (a + 3)) * x * x + 1
        if x < 2:
            return (((x - 5) * x + 8) * x - 4) * a
        return 0.0
    return 2.0, cubic


def antialias_matrix(in_size, out_size, align_corners, scale_factor, mode):
    """Antialiased resampling along one dim: when shrinking, the filter widens by the scale (a triangle for
    bilinear, a = -0.5 cubic for bicubic), each output's weights normalised to sum to one. A dim that keeps its
    size is copied whatever the scale factor, as in PyTorch."""
    scale = 1.0 if out_size == in_size else source_scale(in_size, out_size, align_corners, scale_factor)
    half, fn = _aa_filter(mode)
    support = half * scale if scale >= 1.0 else half
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    w = _np.zeros((out_size, in_size))
    for o in range(out_size):
        center = scale * (o + 0.5)
        xmin = max(int(center - support + 0.5), 0)
        xmax = min(int(center + support + 0.5), in_size)
        ws = [fn((j - center + 0.5) * invscale) for j in range(xmin, xmax)]
        total = sum(ws)
        if total != 0:
            w[o, xmin:xmax] = _np.array(ws) / total
    return w


def nearest_exact_index(in_size, out_size, scale_factor):
    """Source index of each output for 'nearest-exact': floor((o + 0.5) * scale), clamped."""
    scale = source_scale(in_size, out_size, False, scale_factor)
    return [min(int(math.floor((o + 0.5) * scale)), in_size - 1) for o in range(out_size)]
