"""Binds the store module to the core that ``oneflow`` loaded: ``_store`` is built without linking
``libflow_core.so`` (so an isolated ``pip install`` needs no core), and its core symbols resolve at import against
the global scope. Python loads ``oneflow._C`` (and with it the core) privately, so the core library is opened again
with ``RTLD_GLOBAL``, which makes the already-loaded copy global; it is not loaded twice."""
import ctypes
import os

import oneflow.sysconfig

_CORE = ctypes.CDLL(os.path.join(oneflow.sysconfig.get_lib(), "libflow_core.so"), mode=ctypes.RTLD_GLOBAL)
