"""Tensor printing in PyTorch's format."""
from . import _C


def tensor_repr(t):
    if t.is_meta:
        return f"{type(t).__name__}(shape={list(t.shape)}, dtype={t.dtype}, device='{t.device}')"
    import numpy as np

    a = np.asarray(t.__array__())
    body = np.array2string(a, separator=", ", prefix="tensor(")
    extras = []
    if t.dtype not in (_C.float32, _C.int64, _C.bool):
        extras.append(f"dtype={t.dtype}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t._grad_fn_name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
