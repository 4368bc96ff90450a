"""Padding layers: Constant/Zero/Reflection/Replication/Circular Pad1d/2d/3d (torch's reprs and checks)."""
from .. import functional as F
from .module import Module
from ._layer_utils import _ntuple

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]

_SIZES = {1: _ntuple(2), 2: _ntuple(4), 3: _ntuple(6)}


class _PadNd(Module):
    __constants__ = ["padding"]
    _nd = 1
    _mode = "reflect"

    def __init__(self, padding):
        super().__init__()
        self.padding = _SIZES[self._nd](padding)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(Module):
    __constants__ = ["padding", "value"]
    _nd = 1

    def __init__(self, padding, value):
        super().__init__()
        self.value = value
        self.padding = _SIZES[self._nd](padding)

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with ``value``; ``padding`` is an int or (left, right)."""

    _nd = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dims with ``value``; ``padding`` is an int or (left, right, top, bottom)."""

    _nd = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dims with ``value``; ``padding`` is an int or a 6-tuple."""

    _nd = 3


class ZeroPad1d(ConstantPad1d):
    """Pads the last dim with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last 2 dims with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pads the last 3 dims with zeros."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pads the last dim with its reflection (edge not repeated)."""

    _nd, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Pads the last 2 dims with their reflection."""

    _nd, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Pads the last 3 dims with their reflection."""

    _nd, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Pads the last dim by repeating its edge value."""

    _nd, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Pads the last 2 dims by repeating edge values."""

    _nd, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Pads the last 3 dims by repeating edge values."""

    _nd, _mode = 3, "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"

    def forward(self, input):
        d = self._nd + 1
        if input.dim() != d and input.dim() != d + 1:
            raise ValueError(f"expected {d}D or {d + 1}D input (got {input.dim()}D input)")
        return F.pad(input, self.padding, "circular")


class CircularPad1d(_CircularPadNd):
    """Pads the last dim periodically (wrap-around)."""

    _nd = 1


class CircularPad2d(_CircularPadNd):
    """Pads the last 2 dims periodically."""

    _nd = 2


class CircularPad3d(_CircularPadNd):
    """Pads the last 3 dims periodically."""

    _nd = 3
