"""``unsafe_split``, ``unsafe_split_with_sizes`` and ``unsafe_chunk`` (functions and methods): the pieces of
``split``/``chunk``, sharing the input's memory, that may be modified in place.

PyTorch's ``split`` returns the views of one multi-output op, which autograd forbids modifying in place; the
unsafe variants lift that restriction. Here each piece is its own ``narrow`` view, a single-output view that
autograd tracks through in-place changes, so the gradients stay correct."""
from .. import _C

ops = _C.ops

__all__ = ["unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk"]


def _as_narrows(input, pieces, dim):
    """One ``narrow`` of ``input`` per piece of a split along ``dim`` (the pieces only give the lengths)."""
    d = dim % input.dim()
    out, start = [], 0
    for p in pieces:
        n = p.shape[d]
        out.append(input.narrow(d, start, n))
        start += n
    return tuple(out)


def _pieces(fn, *args):
    from ..autograd import no_grad

    # the split only validates the arguments and measures the pieces: no history is needed
    with no_grad():
        return fn(*args)


def unsafe_split(tensor, split_size_or_sections, dim=0):
    """unsafe_split(tensor, split_size_or_sections, dim=0) -> List of Tensors

    Works like :func:`oneflow.split` with an int ``split_size_or_sections`` (PyTorch's schema takes no list
    here; see :func:`unsafe_split_with_sizes`), but the outputs may be modified in place (see the module's
    note)."""
    from .views import split

    if not hasattr(split_size_or_sections, "__index__"):
        raise TypeError(f"unsafe_split(): argument 'split_size' (position 2) must be int, not "
                        f"{type(split_size_or_sections).__name__}")

    return _as_narrows(tensor, _pieces(split, tensor, split_size_or_sections, dim), dim)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """unsafe_split_with_sizes(input, split_sizes, dim=0) -> List of Tensors

    Works like ``split_with_sizes`` (a list of sizes summing to the size of ``dim``), but the outputs may be
    modified in place."""
    return _as_narrows(input, _pieces(ops.split_with_sizes, input, [int(s) for s in split_sizes], dim), dim)


def unsafe_chunk(input, chunks, dim=0):
    """unsafe_chunk(input, chunks, dim=0) -> List of Tensors

    Works like :func:`oneflow.chunk`, but the outputs may be modified in place."""
    from .views import chunk

    return _as_narrows(input, _pieces(chunk, input, chunks, dim), dim)


TENSOR_METHODS = {"unsafe_split": unsafe_split, "unsafe_split_with_sizes": unsafe_split_with_sizes,
                  "unsafe_chunk": unsafe_chunk}
