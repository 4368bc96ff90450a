"""OneFlow, rebuilt: a PyTorch-shaped deep-learning framework over a C++ core.

``import oneflow as flow`` gives tensors, autograd and (in companion packages) static graphs, global
tensors and sharded embeddings. Every op is defined once in the C++ registry; ``oneflow.list_ops()`` lists
them with their traits.
"""
import builtins as _builtins

from ._editable import load_core as _load_core

_C = _load_core()  # an editable install's rebuild announces itself; a named dev build wins (_editable.py)
del _load_core
from ._C import (  # noqa: E402,F401
    dtype,
    device,
    bool,
    uint8,
    int8,
    int16,
    int32,
    int64,
    float16,
    bfloat16,
    float32,
    float64,
    get_default_dtype,
    set_default_dtype,
    promote_types,
    is_grad_enabled,
    is_inference_mode_enabled,
    is_anomaly_enabled,
    is_anomaly_check_nan_enabled,
    get_num_threads,
    set_num_threads,
)

# PyTorch's aliases
float = float32
double = float64
half = float16
long = int64
int = int32
short = int16

from ._tensor import Tensor, Size, is_tensor  # noqa: E402,F401
from . import _plugins  # noqa: E402

_plugins.install_tensor_descriptors(Tensor)
from ._tensor import (  # noqa: E402,F401  (PyTorch's legacy tensor types)
    FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, LongTensor, IntTensor, ShortTensor, CharTensor,
    ByteTensor, BoolTensor,
)
from . import _dispatch  # noqa: E402,F401
from .autograd import no_grad, enable_grad, set_grad_enabled, inference_mode  # noqa: E402,F401


# This module's namespace rebinds builtins that PyTorch names (bool, int, float are dtypes; abs, max, sum ... are
# ops), so code here reaches the builtins through _builtins.
def set_anomaly_enabled(enabled, check_nan=True):
    """Turns autograd's anomaly detection on or off, as ``torch.set_anomaly_enabled``.

    Args:
        enabled (bool): whether backward passes check for anomalies (and name the forward op that produced one).
        check_nan (bool): with ``enabled``, also raise when a backward function returns NaN. Default: ``True``.

    Raises:
        TypeError: for arguments that are not ``bool`` (as PyTorch, which takes no other truthy values).

    See also ``oneflow.autograd.set_detect_anomaly`` and ``oneflow.autograd.detect_anomaly``.
    """
    for position, (arg, value) in enumerate((("enabled", enabled), ("check_nan", check_nan)), 1):
        if type(value) is not _builtins.bool:
            from ._ops.dtype_info import typename

            raise TypeError(f"set_anomaly_enabled(): argument '{arg}' (position {position}) must be bool, not "
                            f"{typename(type(value))}")
    _C._set_anomaly_enabled(enabled, check_nan)
from ._registry_api import export_ops as _export_ops  # noqa: E402

_export_ops(globals())
del _export_ops
from . import linalg  # noqa: E402,F401

from . import nn  # noqa: E402,F401
from . import autograd  # noqa: E402,F401
from . import utils  # noqa: E402,F401
from .utils import checkpoint as _ckpt, data as _data, dlpack as _dlpack  # noqa: E402  (loaded eagerly, as in torch)
del _ckpt, _data, _dlpack
from .serialization import save, load  # noqa: E402,F401
from .amp.autocast_mode import *  # noqa: E402,F401,F403  (autocast, is_autocast_enabled, get_autocast_dtype, ...)


def list_ops():
    """Every op in the registry: a list of dicts with ``name``, ``schema``, ``traits``, ``differentiable``."""
    return _C.list_ops()


def _dtype_from_name(name):
    return getattr(_C, name)


__version__ = "0.1.0"
from . import cuda  # noqa: E402,F401
from . import accelerator  # noqa: E402,F401
from . import cpu  # noqa: E402,F401
from . import backends  # noqa: E402,F401
from . import special  # noqa: E402,F401
from . import func  # noqa: E402,F401
from .func import vmap  # noqa: E402,F401
from . import profiler  # noqa: E402,F401
from .autograd import profiler as _autograd_profiler  # noqa: E402  (PyTorch's torch.autograd.profiler)
del _autograd_profiler
from . import compiler, jit, library, multiprocessing, ops, return_types, signal, sysconfig, testing  # noqa: E402,F401
from . import __config__  # noqa: E402,F401  (torch.__config__: show() says how this core was built)
from .compiler import compile  # noqa: E402,F401  (runs eagerly: there is no graph compiler yet)


# submodules imported on first use: hub pulls in urllib, distributed reads the plugin entry points, few programs
# use onnx; optim and distributions are written against the finished `oneflow` namespace (as torch's are), and
# importing them on first use means none of them runs while `oneflow` is half-initialised (no import cycle)
_LAZY_SUBMODULES = ("hub", "distributed", "onnx", "optim", "distributions")


# Defined last: while this module runs, `from . import x` asks hasattr(oneflow, "x") first, which would read the
# plugin entry points (slow) for each submodule.
def __getattr__(name):
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    return _plugins.resolve("", name)
