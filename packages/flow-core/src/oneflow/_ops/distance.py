"""Norm-based ops: pairwise distances (``cdist``) and sub-tensor norm clipping (``renorm``), composed from
``linalg_vector_norm`` so they are differentiable."""

from .. import _C
from ._names import torch_dtype_name
from ..amp._policy import autocast_policy

ops = _C.ops

__all__ = ["cdist", "renorm"]

_COMPUTE_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


@autocast_policy("fp32")
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each pair of row vectors of ``x1`` (``[B..., P, M]``) and ``x2``
    (``[B..., R, M]``), as a ``[B..., P, R]`` tensor; batch dims broadcast. ``p`` is any value >= 0
    (``p=0`` counts differing coordinates, ``p=inf`` takes the largest).

    Distances are always computed directly from the differences (``compute_mode`` is validated but the
    matrix-multiplication shortcut PyTorch may take for ``p=2`` is never used, so results can differ from
    PyTorch's in the last bits, in the direction of being more accurate).
    """
    if compute_mode not in _COMPUTE_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    for name, x in (("X1", x1), ("X2", x2)):
        if x.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {x.dim()}D")
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {torch_dtype_name(x.dtype)}")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if not p >= 0:
        raise RuntimeError("cdist only supports non-negative p values")
    from .misc import broadcast_shapes

    batch = list(broadcast_shapes(x1.shape[:-2], x2.shape[:-2]))
    p_rows, r_rows, m = x1.shape[-2], x2.shape[-2], x1.shape[-1]
    a = ops.expand(ops.unsqueeze(x1, -2), batch + [p_rows, r_rows, m])
    b = ops.expand(ops.unsqueeze(x2, -3), batch + [p_rows, r_rows, m])
    # with no columns every distance is 0; the inf norm has no identity, so take any other norm
    return ops.linalg_vector_norm(ops.sub(a, b), float(p) if m else 1.0, [-1])


def renorm(input, p, dim, maxnorm):
    """``input`` with each sub-tensor along ``dim`` (``input.select(dim, i)``) whose ``p``-norm exceeds
    ``maxnorm`` scaled to have norm ``maxnorm`` (scale ``maxnorm / (norm + 1e-7)``, as PyTorch's)."""
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    nd = input.dim()
    if not -max(nd, 1) <= dim < max(nd, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-max(nd, 1)}, {max(nd, 1) - 1}], "
                         f"but got {dim})")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {torch_dtype_name(input.dtype)}")
    d = dim % max(nd, 1)
    reduce_dims = [i for i in range(nd) if i != d]
    norm = ops.linalg_vector_norm(input, float(p), reduce_dims, True) if reduce_dims else ops.abs(input)
    scale = ops.where(ops.gt(norm, maxnorm), ops.div(maxnorm, ops.add(norm, 1e-7)), 1.0)
    return ops.mul(input, scale)


def renorm_(self, p, dim, maxnorm):
    """In-place ``renorm``."""
    return ops.copy_(self, renorm(self, p, dim, maxnorm))


TENSOR_METHODS = {"renorm": renorm, "renorm_": renorm_}
