"""The op registry from Python: ``oneflow.ops.<name>`` is the registered op ``name`` (the same handle as
``oneflow._C.ops.<name>``), and :func:`load_library` loads a C++ plugin that registers more.

A plugin is a shared library built against the installed core (see :mod:`oneflow.sysconfig` and
``docs/cpp_plugins.md``): its ``FLOW_OP(...)`` definitions register schema, meta function, kernels, backward and
traits into the same registry as the core's own ops, so eager calls, autograd, interception and meta tensors
treat them alike.
"""
import ctypes
import os

from . import _C

_loaded = {}


def load_library(path):
    r"""Loads the shared library at ``path`` (PyTorch's ``torch.ops.load_library``) and makes the ops it
    registers callable as ``oneflow.ops.<name>``.

    Args:
        path (str or os.PathLike): the library file (``.so``).

    Returns:
        list of str: the names of the ops the library added (empty when it was loaded before).

    Raises:
        OSError: the file cannot be loaded (missing, or not linked against this ``libflow_core.so``).
        RuntimeError: the library's ops could not be registered (a name already taken, a bad schema); the
            message lists each problem.
    """
    path = os.path.abspath(os.fspath(path))
    if path in _loaded:
        return []
    if not os.path.exists(path):
        raise OSError(f"oneflow.ops.load_library: no such file: {path}")
    handle = ctypes.CDLL(path)
    added = _C._refresh_ops()
    _loaded[path] = handle  # kept: unloading would leave the registry pointing into freed code
    from ._tensor import Tensor

    for name in added:  # plugin ops become Tensor methods too, as the core's
        if not hasattr(Tensor, name):
            setattr(Tensor, name, getattr(_C.ops, name))
    return list(added)


def __getattr__(name):
    try:
        return getattr(_C.ops, name)
    except AttributeError:
        raise AttributeError(f"module 'oneflow.ops' has no attribute '{name}': no op of that name is registered "
                             f"(load a plugin with oneflow.ops.load_library)") from None
