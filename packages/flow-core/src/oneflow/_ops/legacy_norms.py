"""``frobenius_norm`` and ``nuclear_norm``: norms PyTorch keeps at its top level for TorchScript
compatibility (deprecated there in favour of ``linalg.vector_norm`` / ``linalg.matrix_norm``, which compute
them here)."""
import builtins
import warnings

from ._names import torch_dtype_name

__all__ = ["frobenius_norm", "nuclear_norm"]


def _into(out, result):
    """PyTorch's ``out=`` contract: ``out`` is resized to the result's shape and receives its values."""
    if out is None:
        return result
    if list(out.shape) != list(result.shape):
        out.resize_(list(result.shape))
    return out.copy_(result)


def frobenius_norm(input, dim, keepdim=False, *, out=None):
    """frobenius_norm(input, dim, keepdim=False) -> Tensor

    The square root of the sum of squares of ``input`` over ``dim`` (an int or up to two ints; an empty list
    reduces every dim). Deprecated: use ``linalg.vector_norm(input, 2, dim, keepdim)``."""
    from ..linalg import vector_norm

    warnings.warn("at::frobenius_norm is deprecated and it is just left for JIT compatibility. It will be removed "
                  "in a future PyTorch release. Please use `linalg.vector_norm(A, 2., dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    dims = [dim] if isinstance(dim, builtins.int) else [builtins.int(d) for d in dim]
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions instead.")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{torch_dtype_name(input.dtype)} instead.")
    return _into(out, vector_norm(input, 2, dims or None, keepdim))


def nuclear_norm(input, dim=None, keepdim=False, *, out=None):
    """nuclear_norm(input, keepdim=False) -> Tensor
    nuclear_norm(input, dim, keepdim=False) -> Tensor

    The sum of the singular values of the matrices over the two dims ``dim`` (default the last two; an int
    ``d`` means ``(d, d)``, which is rejected as PyTorch does). Deprecated: use
    ``linalg.matrix_norm(input, "nuc", dim, keepdim)``."""
    from ..linalg import matrix_norm

    warnings.warn("at::nuclear_norm is deprecated and it is just left for JIT compatibility. It will be removed in "
                  "a future PyTorch release. Please use `linalg.matrix_norm(A, 'nuc', dim, keepdim)` instead",
                  UserWarning, stacklevel=2)
    if isinstance(dim, builtins.bool):
        # the ``nuclear_norm(input, keepdim)`` overload
        dim, keepdim = None, dim
    if dim is None:
        dim = (-2, -1)
    elif isinstance(dim, builtins.int):
        dim = (dim, dim)
    return _into(out, matrix_norm(input, "nuc", tuple(builtins.int(d) for d in dim), keepdim))
