"""Flatten and Unflatten."""
import operator

from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flattens dims ``start_dim``..``end_dim`` into one (default: everything but the batch dim)."""

    __constants__ = ["start_dim", "end_dim"]

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Expands dim ``dim`` into ``unflattened_size`` (a tuple/list of ints, one of which may be -1)."""

    __constants__ = ["dim", "unflattened_size"]

    def __init__(self, dim, unflattened_size):
        super().__init__()
        # like PyTorch, ``dim`` is only checked when the module runs
        self._require_tuple_int(unflattened_size)
        self.dim = dim
        self.unflattened_size = unflattened_size

    def _require_tuple_int(self, input_size):
        if isinstance(input_size, (tuple, list)):
            for idx, elem in enumerate(input_size):
                if not isinstance(elem, int):
                    raise TypeError("unflattened_size must be tuple of ints, "
                                    + f"but found element of type {type(elem).__name__} at pos {idx}")
            return
        raise TypeError(f"unflattened_size must be a tuple of ints, but found type {type(input_size).__name__}")

    def forward(self, input):
        if isinstance(self.dim, bool) or not hasattr(self.dim, "__index__"):
            raise TypeError(f"unflatten(): argument 'dim' (position 1) must be int, not {type(self.dim).__name__}")
        return input.unflatten(operator.index(self.dim), self.unflattened_size)

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
