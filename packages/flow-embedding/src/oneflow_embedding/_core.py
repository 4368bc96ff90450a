"""Binds the store module to the core that ``oneflow`` loaded: ``_store`` is built without linking
``libflow_core.so`` (so an isolated ``pip install`` needs no core), and its core symbols resolve at import against
the global scope. Python loads ``oneflow._C`` (and with it the core) privately, so the core library is opened again
with ``RTLD_GLOBAL``, which makes the already-loaded copy global; it is not loaded twice."""
import ctypes
import os

import oneflow
import oneflow.sysconfig

_CORE = ctypes.CDLL(os.path.join(oneflow.sysconfig.get_lib(), "libflow_core.so"), mode=ctypes.RTLD_GLOBAL)


def explain(err):
    """The ImportError to raise for ``err``, raised importing the store module: a core symbol it does not find
    means it was built against another flow-core than the one installed (a version mismatch, not a broken
    install)."""
    if "undefined symbol" not in str(err):
        return err
    return ImportError(f"flow-embedding's store module was built against another flow-core than the installed "
                       f"oneflow {getattr(oneflow, '__version__', '?')} ({err}); reinstall flow-embedding after "
                       f"flow-core, e.g. pip install --force-reinstall --no-deps packages/flow-embedding")


try:
    from . import _store  # noqa: F401  (first import here, so every later `from . import _store` finds it)
except ImportError as e:
    raise explain(e) from e
