# `import torch` while `eval $(python3 -m oneflow.mock_torch)` is in effect: this shim, first on PYTHONPATH,
# turns the mock on and hands over to it; the module the import then returns is the mock's `torch`.
import os as _os
import sys as _sys

from oneflow_torchcompat import mock_torch as _mock

del _sys.modules[__name__]  # not a torch the mock should set aside and restore
_mock.enable(lazy=_os.environ.get("ONEFLOW_MOCK_TORCH_LAZY", "0") == "1",
             verbose=_os.environ.get("ONEFLOW_MOCK_TORCH_VERBOSE", "0") == "1")
import torch as _torch  # noqa: E402  (the mock's)

_sys.modules[__name__] = _torch
