"""PyTorch's top-level numeric constants: ``pi``, ``e``, ``inf``, ``nan`` (plain Python floats, as
``math``'s) and ``newaxis`` (``None``, so ``x[:, oneflow.newaxis]`` inserts a dim as NumPy's does)."""
import math

__all__ = ["pi", "e", "inf", "nan", "newaxis"]

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None
