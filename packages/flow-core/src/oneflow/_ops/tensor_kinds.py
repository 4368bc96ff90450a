"""Layouts and kind queries of PyTorch's tensor API: ``oneflow.layout`` (only ``strided`` tensors exist; the
sparse layouts are names to compare against), the ``is_sparse``/``is_quantized``/... properties, and
``Tensor.output_nr``."""
from .. import _C

ops = _C.ops

__all__ = ["layout", "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"]


class layout:
    """The memory layout of a tensor. Only ``oneflow.strided`` tensors exist; the sparse layouts are names that
    code written for PyTorch compares against."""

    _sealed = False

    def __new__(cls, name=None):
        if cls._sealed:
            raise TypeError("cannot create 'oneflow.layout' instances")
        obj = super().__new__(cls)
        obj._name = name
        return obj

    def __repr__(self):
        return f"oneflow.{self._name}"

    def __reduce__(self):
        return self._name  # pickles as the module attribute, so identity survives


strided, sparse_coo, sparse_csr, sparse_csc, sparse_bsr, sparse_bsc = (
    layout(n) for n in ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc"))
layout._sealed = True
layout.__module__ = "oneflow"


def _output_nr(self):
    """The index of this tensor among the outputs of its ``grad_fn`` (0 for leaves)."""
    if self.grad_fn is None:
        return 0
    # a view's backward edge records which output of the producing node it reads
    prev = _C.is_grad_enabled()
    _C._set_grad_enabled(True)
    try:
        probe = ops.as_strided(self, list(self.shape), list(self.stride()), self.storage_offset())
    except RuntimeError:  # e.g. inference tensors, which record no edges
        return 0
    finally:
        _C._set_grad_enabled(prev)
    edges = probe.grad_fn.next_functions if probe.grad_fn is not None else ()
    return edges[0][1] if edges and edges[0][0] is not None else 0


def _false(self):
    return False


TENSOR_METHODS = {
    "layout": property(lambda self: strided, doc="The memory layout: always ``oneflow.strided``."),
    **{name: property(_false) for name in ("is_sparse", "is_sparse_csr", "is_quantized", "is_mkldnn", "is_nested",
                                            "is_xpu", "is_mps", "is_ipu", "is_xla", "is_vulkan", "is_mtia",
                                            "is_maia")},
    "output_nr": property(_output_nr),
}
