"""Testing helpers with PyTorch's semantics: :func:`assert_close` (and the deprecated
:func:`assert_allclose`) to compare tensors, numbers and nested containers of them, and :func:`make_tensor` to
create random test tensors."""
from ._comparison import assert_allclose, assert_close  # noqa: F401
from ._creation import make_tensor  # noqa: F401

__all__ = ["assert_close", "assert_allclose", "make_tensor"]
