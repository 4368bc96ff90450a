"""``oneflow.nn.utils``: gradient clipping and parameter/vector conversion (and any other submodule found here,
e.g. ``rnn``, imported so that ``oneflow.nn.utils.<name>`` resolves like torch's)."""
import importlib as _importlib
import os as _os

from .clip_grad import clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm",
           "parameters_to_vector", "vector_to_parameters"]

for _f in sorted(_os.listdir(_os.path.dirname(__file__))):
    if _f.endswith(".py") and not _f.startswith("_") and _f[:-3] not in globals():
        globals()[_f[:-3]] = _importlib.import_module(f"{__name__}.{_f[:-3]}")
