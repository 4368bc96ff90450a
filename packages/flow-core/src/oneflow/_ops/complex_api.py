"""The complex-number API on real tensors (PyTorch code calls it on any tensor): real/imag, conj and its
variants, is_conj/is_neg, isreal, adjoint and ``Tensor.H``. Complex dtypes do not exist, so each is the
identity, a zero or the real-valued answer. ``angle`` is a registry op (ops/unary.cpp)."""
import warnings

from .. import _C

ops = _C.ops

__all__ = ["real", "imag", "conj", "conj_physical", "resolve_conj", "resolve_neg", "is_conj", "is_neg", "isreal",
           "adjoint"]




def real(input):
    """The real part of ``input``: ``input`` itself, as all oneflow tensors are real."""
    return input


def imag(input):
    """The imaginary part of a complex tensor; raises RuntimeError, as oneflow tensors are real."""
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def conj(input):
    """The complex conjugate; for a real tensor, ``input`` itself (as PyTorch returns it)."""
    return input


conj_physical = resolve_conj = resolve_neg = conj


def is_conj(input):
    """Whether ``input`` has its conjugate bit set (never, for real tensors)."""
    return False


def is_neg(input):
    """Whether ``input`` has its negative bit set (never, for real tensors)."""
    return False


def isreal(input):
    """Whether each element is real-valued: all True for real dtypes."""
    return ops.fill_(_C._empty(list(input.shape), _C.bool, None), True)


def adjoint(input):
    """The conjugate transpose of the last two dimensions (a view)."""
    if input.dim() == 0:
        warnings.warn("adjoint() is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=2)
        return input
    if input.dim() < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.dim()}-D tensor.")
    return ops.transpose(input, -2, -1)


def _H(self):
    """The conjugate transpose of a matrix (2-D only; 0-D tensors are returned with a deprecation warning)."""
    if self.dim() == 0:
        warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=3)
        return self
    if self.dim() != 2:
        extra = " For batches of matrices, consider using tensor.mH" if self.dim() > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.dim()}-D tensor.{extra}")
    return ops.transpose(self, 0, 1)


TENSOR_METHODS = {
    "is_conj": is_conj, "is_neg": is_neg, "conj": conj, "conj_physical": conj_physical,
    "resolve_conj": resolve_conj, "resolve_neg": resolve_neg,
    "real": property(real, doc="The real part: the tensor itself."),
    "imag": property(imag, doc="The imaginary part: raises RuntimeError for real dtypes."),
    "isreal": isreal, "adjoint": adjoint, "H": property(_H),
}
