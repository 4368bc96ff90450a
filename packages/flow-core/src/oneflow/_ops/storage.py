"""Storages (PyTorch's ``UntypedStorage`` / deprecated ``TypedStorage``): the memory block behind a tensor and
its views, as ``tensor.untyped_storage()`` / ``tensor.storage()`` return it, for code that identifies shared
memory (``data_ptr``), sizes it (``nbytes``) or reads it as bytes."""
import warnings

from .. import _C

ops = _C.ops

__all__ = ["UntypedStorage", "TypedStorage"]


class UntypedStorage:
    """The bytes of a tensor's memory block (all of it, not only the tensor's view)."""

    def __init__(self, tensor):
        self._tensor = tensor  # keeps the block alive

    def data_ptr(self):
        """Address of the block's first byte (shared by every view of it)."""
        return self._tensor._storage_ptr()

    def nbytes(self):
        """Size of the block in bytes."""
        return self._tensor._storage_nbytes()

    size = nbytes
    __len__ = nbytes

    def element_size(self):
        return 1

    @property
    def device(self):
        return self._tensor.device

    @property
    def is_cuda(self):
        return self._tensor.device.type == "cuda"

    def is_shared(self):
        return _C._is_shared(self._tensor)

    def share_memory_(self):
        """Moves the block into shared memory (for worker processes), in place."""
        _C._share_memory_(self._tensor)
        return self

    def _bytes(self):
        """The whole block as a 1-D uint8 tensor sharing it."""
        t = self._tensor
        n = self.nbytes() // t.element_size()
        return t.detach().as_strided([n], [1], 0).view(_C.uint8)

    def tolist(self):
        return self._bytes().tolist()

    def __getitem__(self, i):
        return self._bytes()[i].item() if isinstance(i, int) else self._bytes()[i]

    def fill_(self, value):
        self._bytes().fill_(value)
        return self

    def copy_(self, src, non_blocking=False):
        if src.nbytes() != self.nbytes():
            raise RuntimeError(f"size mismatch, {self.nbytes()} vs {src.nbytes()}")
        self._bytes().copy_(src._bytes())
        return self

    def clone(self):
        return UntypedStorage(self._bytes().clone())

    def cpu(self):
        return self

    def untyped(self):
        return self

    def __repr__(self):
        return f"oneflow.UntypedStorage(nbytes={self.nbytes()}, device={self.device})"


class TypedStorage(UntypedStorage):
    """The deprecated typed view of a storage: the block counted in elements of the tensor's dtype."""

    @property
    def dtype(self):
        return self._tensor.dtype

    def size(self):
        return self.nbytes() // self._tensor.element_size()

    __len__ = size

    def element_size(self):
        return self._tensor.element_size()

    def _elements(self):
        return self._tensor.detach().as_strided([self.size()], [1], 0)

    def tolist(self):
        return self._elements().tolist()

    def __getitem__(self, i):
        return self._elements()[i].item() if isinstance(i, int) else self._elements()[i]

    def untyped(self):
        return UntypedStorage(self._tensor)

    def __repr__(self):
        return f"oneflow.TypedStorage(dtype={self.dtype}, size={self.size()})"


def _storage(self):
    """storage() -> TypedStorage

    The (deprecated, as in PyTorch) typed view of this tensor's storage; prefer :meth:`Tensor.untyped_storage`."""
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
                  "storage class. This should only matter to you if you are using storages directly.  To access "
                  "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()", stacklevel=2)
    return TypedStorage(self)


def _untyped_storage(self):
    """untyped_storage() -> UntypedStorage

    The storage this tensor (and its views) lives in, as bytes."""
    return UntypedStorage(self)


TENSOR_METHODS = {"untyped_storage": _untyped_storage, "storage": _storage}
