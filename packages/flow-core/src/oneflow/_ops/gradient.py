"""``gradient``: NumPy-style finite-difference estimates of a function's derivatives from its samples, with
PyTorch's signature (``spacing`` a scalar, one scalar per dim, or one coordinate tensor per dim; ``dim``;
``edge_order`` 1 or 2). Built from differentiable ops, so the result carries gradients to ``input`` (and to
coordinate tensors that require them)."""
import builtins
import numbers

from .. import _C

ops = _C.ops

__all__ = ["gradient"]


def _dims(input, dim):
    nd = input.dim()
    dims = list(builtins.range(nd)) if dim is None else [dim] if isinstance(dim, numbers.Integral) else list(dim)
    out = []
    for d in dims:
        d = builtins.int(d)
        if not -builtins.max(nd, 1) <= d < builtins.max(nd, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-builtins.max(nd, 1)}, "
                             f"{builtins.max(nd, 1) - 1}], but got {d})")
        d %= builtins.max(nd, 1)
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    return out


def _is_scalar(value):
    # PyTorch's Number arguments also take 0-dim tensors
    return isinstance(value, numbers.Number) or (isinstance(value, _C.TensorBase) and value.dim() == 0)


def _spacings(input, spacing, dims, dim_given):
    """One entry per dim of ``dims``: a Python number (uniform step) or a 1-D coordinate tensor."""
    if spacing is None:
        return [1.0] * len(dims)
    if _is_scalar(spacing):
        step = spacing.item() if isinstance(spacing, _C.TensorBase) else spacing
        return [step] * len(dims)
    if isinstance(spacing, _C.TensorBase):
        raise TypeError("gradient(): argument 'spacing' must be a Number or a tuple of Numbers or of Tensors, not "
                        "Tensor")
    spacing = list(spacing)
    if len(spacing) != len(dims):
        if not dim_given:
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                               f"equal to 'self.dim() = {input.dim()}', since dim argument was not given, but got a "
                               f"list of length {len(spacing)}")
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and dim "
                           f"arguments to have the same length, but got a spacing argument of length "
                           f"{len(spacing)} and a dim argument of length {len(dims)}.")
    if builtins.any(isinstance(s, _C.TensorBase) for s in spacing):
        for i, s in enumerate(spacing):
            if not isinstance(s, _C.TensorBase):
                raise TypeError(f"expected Tensor as element {i} in argument 1, but got {type(s).__name__}")
            if s.dim() != 1:
                raise RuntimeError(f"torch.gradient expected each element of spacing to have one dimension, but got "
                                   f"an element with {s.dim()} dimensions!")
        return spacing
    for i, s in enumerate(spacing):
        if not _is_scalar(s):
            raise TypeError(f"gradient(): argument 'spacing' must be a tuple of Numbers, but found element {i} of "
                            f"type {type(s).__name__}")
    return [s.item() if isinstance(s, _C.TensorBase) else s for s in spacing]


def _part(t, d, start, stop):
    """``t`` sliced to ``[start, stop)`` along ``d`` (negative bounds count from the end)."""
    n = t.shape[d]
    start, stop = start % n if start < 0 else start, stop % n if stop < 0 else stop
    return ops.slice(t, d, start, stop, 1)


def _along(v, d, nd):
    """A 1-D tensor shaped to broadcast along dim ``d`` of an ``nd``-dim tensor."""
    shape = [1] * nd
    shape[d] = v.shape[0]
    return ops.reshape(v, shape)


def _uniform(f, d, h, edge_order):
    n = f.shape[d]
    inner = ops.div(ops.sub(_part(f, d, 2, n), _part(f, d, 0, n - 2)), 2.0 * h)
    f0, f1, f2 = (_part(f, d, i, i + 1) for i in (0, 1, 2 if n > 2 else 1))
    l0, l1, l2 = (_part(f, d, n - i, n - i + 1) for i in (1, 2, 3 if n > 2 else 2))
    if edge_order == 1:
        first, last = ops.div(ops.sub(f1, f0), h), ops.div(ops.sub(l0, l1), h)
    else:
        first = ops.div(ops.add(ops.add(ops.mul(f0, -1.5), ops.mul(f1, 2.0)), ops.mul(f2, -0.5)), h)
        last = ops.div(ops.add(ops.add(ops.mul(l2, 0.5), ops.mul(l1, -2.0)), ops.mul(l0, 1.5)), h)
    return ops.cat([first, inner, last], d)


def _coordinates(f, d, x, edge_order):
    n, nd = f.shape[d], f.dim()
    if x.shape[0] != n:
        raise RuntimeError(f"torch.gradient expected each tensor in spacing to have as many elements as the input "
                           f"along its dimension, but got {x.shape[0]} coordinates for dimension {d} of size {n}")
    dx = ops.sub(ops.slice(x, 0, 1, n, 1), ops.slice(x, 0, 0, n - 1, 1))
    hl, hr = _along(ops.slice(dx, 0, 0, n - 2, 1), d, nd), _along(ops.slice(dx, 0, 1, n - 1, 1), d, nd)
    # second-order accurate interior on an uneven grid: a f[i-1] + b f[i] + c f[i+1]
    a = ops.div(ops.neg(hr), ops.mul(hl, ops.add(hl, hr)))
    b = ops.div(ops.sub(hr, hl), ops.mul(hl, hr))
    c = ops.div(hl, ops.mul(hr, ops.add(hl, hr)))
    inner = ops.add(ops.add(ops.mul(a, _part(f, d, 0, n - 2)), ops.mul(b, _part(f, d, 1, n - 1))),
                    ops.mul(c, _part(f, d, 2, n)))
    f0, f1 = _part(f, d, 0, 1), _part(f, d, 1, 2)
    l0, l1 = _part(f, d, n - 1, n), _part(f, d, n - 2, n - 1)
    if edge_order == 1:
        first = ops.div(ops.sub(f1, f0), _along(ops.slice(dx, 0, 0, 1, 1), d, nd))
        last = ops.div(ops.sub(l0, l1), _along(ops.slice(dx, 0, n - 2, n - 1, 1), d, nd))
    else:
        f2, l2 = _part(f, d, 2, 3), _part(f, d, n - 3, n - 2)
        h1, h2 = (_along(ops.slice(dx, 0, i, i + 1, 1), d, nd) for i in (0, 1))
        s = ops.add(h1, h2)
        first = ops.add(ops.add(
            ops.mul(ops.div(ops.neg(ops.add(ops.mul(h1, 2.0), h2)), ops.mul(h1, s)), f0),
            ops.mul(ops.div(s, ops.mul(h1, h2)), f1)),
            ops.mul(ops.div(ops.neg(h1), ops.mul(h2, s)), f2))
        h1, h2 = (_along(ops.slice(dx, 0, i, i + 1, 1), d, nd) for i in (n - 3, n - 2))
        s = ops.add(h1, h2)
        last = ops.add(ops.add(
            ops.mul(ops.div(h2, ops.mul(h1, s)), l2),
            ops.mul(ops.div(ops.neg(s), ops.mul(h1, h2)), l1)),
            ops.mul(ops.div(ops.add(ops.mul(h2, 2.0), h1), ops.mul(h2, s)), l0))
    return ops.cat([first, inner, last], d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    r"""gradient(input, *, spacing=1, dim=None, edge_order=1) -> List of Tensors

    Estimates the gradient of a function :math:`g` from its samples ``input`` along one or more dims, with
    second-order accurate central differences in the interior and first- or second-order one-sided
    differences at the boundaries (``edge_order``), as :func:`numpy.gradient` does.

    Args:
        input (Tensor): the sampled values.

    Keyword args:
        spacing (scalar, list of scalar, list of Tensor, optional): the sample spacing: one step for every
            dim, one step per dim, or one 1-D tensor of coordinates per dim. Default: 1.
        dim (int, list of int, optional): the dims to differentiate along. Default: every dim.
        edge_order (int, optional): 1 or 2, the accuracy at the boundaries. Default: 1.

    Returns:
        A tuple with one tensor of ``input``'s shape per dim. Integer inputs give floating point results.
    """
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if input.dtype == _C.bool:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    dims = _dims(input, dim)
    steps = _spacings(input, spacing, dims, dim is not None)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    default = _C.get_default_dtype()
    base = input.dtype if input.dtype.is_floating_point else default
    out = []
    for d, step in zip(dims, steps):
        if isinstance(step, _C.TensorBase):
            coords = step if step.dtype.is_floating_point else ops.to_dtype(step, default)
            dtype = _C.promote_types(base, coords.dtype)
            f = input if input.dtype == dtype else ops.to_dtype(input, dtype)
            x = coords if coords.dtype == dtype else ops.to_dtype(coords, dtype)
            out.append(_coordinates(f, d, x, edge_order))
        else:
            f = input if input.dtype == base else ops.to_dtype(input, base)
            out.append(_uniform(f, d, step, edge_order))
    return tuple(out)
