"""Helpers shared by the distributions (PyTorch's ``torch.distributions.utils``)."""
import numbers

import oneflow as flow

__all__ = ["broadcast_all", "probs_to_logits", "logits_to_probs", "clamp_probs", "lazy_property", "tril_matrix_to_vec",
           "vec_to_tril_matrix"]


def broadcast_all(*values):
    """Numbers become tensors of the first tensor's dtype (else the default dtype); all are broadcast."""
    if not all(isinstance(v, (flow.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number or oneflow.Tensor.")
    ref = next((v for v in values if isinstance(v, flow.Tensor)), None)
    dtype = ref.dtype if ref is not None else flow.get_default_dtype()
    tensors = [v if isinstance(v, flow.Tensor) else flow.tensor(float(v), dtype=dtype) for v in values]
    return flow.broadcast_tensors(*tensors)


def clamp_probs(probs):
    """Probabilities clamped to [eps, 1 - eps] (eps of their dtype), so that their logs stay finite."""
    eps = flow.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary=False):
    """Log-odds of binary probabilities, or the logs of categorical ones."""
    ps = clamp_probs(probs)
    return flow.log(ps) - flow.log1p(-ps) if is_binary else flow.log(ps)


def logits_to_probs(logits, is_binary=False):
    """Sigmoid of binary logits, softmax of categorical ones."""
    return flow.sigmoid(logits) if is_binary else flow.softmax(logits, dim=-1)


class lazy_property:
    """Computed on first access and then stored on the instance (``probs`` from ``logits`` and back)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with flow.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


def _sum_rightmost(value, dim):
    """``value`` summed over its rightmost ``dim`` dims (a number or ``dim == 0`` is returned as is)."""
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1) if dim > 0 else value


def _tril_mask(n, diag):
    # row-major order of the entries on or below diagonal ``diag``, the order of the vectors below
    arange = flow.arange(n)
    return arange < arange.view(-1, 1) + (diag + 1)


def vec_to_tril_matrix(vec, diag=0):
    """A (batch of) D x D lower triangular matrix filled row by row from the last dim of ``vec``: its entries on
    and below the ``diag``-th diagonal."""
    # the positive root of D^2 + (1 + 2 diag) D - |diag| (diag + 1) - 2 len = 0
    b = 1 + 2 * diag
    n = (-b + (b * b + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if abs(round(n) - n) > flow.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as the lower "
                         "triangular part of a square D x D matrix.")
    n = round(n)
    mat = flow.zeros(tuple(vec.shape[:-1]) + (n, n), dtype=vec.dtype)
    mat[..., _tril_mask(n, diag)] = vec
    return mat


def tril_matrix_to_vec(mat, diag=0):
    """The entries on and below the ``diag``-th diagonal of (a batch of) square matrices, row by row."""
    return mat[..., _tril_mask(mat.shape[-1], diag)]
