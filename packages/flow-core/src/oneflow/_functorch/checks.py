"""Validation of what the user's function returns, with torch.func's error types and messages, and small result
helpers shared by the transforms."""
from .. import _C
from ..utils._pytree import tree_leaves


def split_aux(output, has_aux, api):
    """(output, aux): with ``has_aux`` the function must return a pair."""
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def check_aux(aux):
    """aux leaves the transform like the outputs do, so it must be a pytree of tensors."""
    for leaf in tree_leaves(aux):
        if not isinstance(leaf, _C.TensorBase):
            raise RuntimeError(f"Expected tensors, got unsupported type {type(leaf)}")


def check_tensor_outputs(flat_output, api):
    """The flattened outputs must be a non-empty list of tensors."""
    if len(flat_output) == 0 or (len(flat_output) == 1 and flat_output[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = "
                           f"{flat_output})")
    for o in flat_output:
        if not isinstance(o, _C.TensorBase):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")


def check_floating_outputs(flat_output):
    """Reverse-mode transforms pull cotangents back through the outputs: integer outputs have none."""
    for o in flat_output:
        if not (o.is_floating_point() or o.is_complex()):
            raise RuntimeError("vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got "
                               f"Tensor with dtype {o.dtype}")


def zeros_like(t):
    """Zeros shaped like ``t``, outside any graph (the derivative of something ``t`` does not depend on)."""
    return t.detach().new_zeros(t.shape)


def materialize(grads, refs):
    """None (no dependence) becomes zeros shaped like the matching reference tensor."""
    return [zeros_like(r) if g is None else g for g, r in zip(grads, refs)]
