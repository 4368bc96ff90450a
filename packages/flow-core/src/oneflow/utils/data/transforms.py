"""Alias of ``oneflow.utils.vision.transforms``."""
from ..vision.transforms import *  # noqa: F401,F403
from ..vision.transforms import __all__  # noqa: F401
