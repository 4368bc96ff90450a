"""``oneflow.nn.modules.utils``: PyTorch's module path for the argument helpers layers and user code share
(``_single``/``_pair``/``_triple``/``_quadruple``, ``_ntuple``, ``_reverse_repeat_tuple``)."""
from ._layer_utils import _ntuple, _pair, _reverse_repeat_tuple, _single, _triple  # noqa: F401

_quadruple = _ntuple(4, "_quadruple")


def _list_with_default(out_size, defaults):
    """``out_size`` with its None entries taken from the trailing ``defaults`` (adaptive pooling's rule)."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


__all__ = []
