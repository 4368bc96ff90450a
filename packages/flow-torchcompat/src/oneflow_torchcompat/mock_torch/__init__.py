"""``oneflow.mock_torch``: make ``import torch`` (and ``torch.nn``, ``torch.optim``, ...) give oneflow, so that
programs written for PyTorch run on oneflow's kernels unchanged.

    import oneflow.mock_torch as mock
    mock.enable()            # or: with mock.enable(): ...
    import torch             # oneflow, under torch's names
    mock.disable()           # `torch` is whatever it was before (real PyTorch may be installed side by side)

From a shell, ``eval $(python3 -m oneflow.mock_torch)`` enables it for every Python started afterwards and
``eval $(python3 -m oneflow.mock_torch disable)`` turns it off again.
"""
import sys

from ._finder import TorchFinder, is_torch_name
from ._modules import TORCH_VERSION, NotProvidedError, Placeholder, TorchModule

__all__ = ["enable", "disable", "is_enabled", "real_torch", "NotProvidedError", "TORCH_VERSION"]


class _Settings:
    def __init__(self):
        self.lazy = False
        self.verbose = False
        self.active = False  # enabled: the modules made go into sys.modules


class _State:
    def __init__(self):
        self.settings = _Settings()
        self.finder = None
        self.saved = {}  # the torch* entries of sys.modules from before enable(), put back by disable()


_state = _State()


class _Enabled:
    """What :func:`enable` returns: as a context manager, leaving the block restores the state before it."""

    def __init__(self, previous):
        self._previous = previous  # None when the mock was off, else the (lazy, verbose) it had

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._previous is None:
            disable()
        else:
            enable(*self._previous)
        return False


def _take_torch_modules():
    return {name: sys.modules.pop(name) for name in [n for n in sys.modules if is_torch_name(n)]}


def enable(lazy=False, verbose=False):
    r"""Makes ``import torch`` and ``import torch.<x>`` give oneflow (``oneflow.<x>``) until :func:`disable`.

    Args:
        lazy (bool): names oneflow lacks (``torch.foo``, ``import torch.bar``) give placeholders that raise
            :class:`NotProvidedError` naming the torch API only when used. When False (the default) the access
            or import itself raises ``AttributeError`` / ``ModuleNotFoundError`` saying that oneflow does not
            provide that torch name.
        verbose (bool): report each torch name oneflow lacks on stderr.

    Whatever ``torch`` modules were imported before (real PyTorch included) are set aside and put back by
    :func:`disable`; modules imported while the mock is on keep the oneflow objects they were given.

    Returns:
        an object that, used in a ``with`` statement, restores the previous state on exit.
    """
    s = _state.settings
    previous = None if _state.finder is None else (s.lazy, s.verbose)
    if _state.finder is not None and s.lazy != bool(lazy):
        # modules made under the other mode hold placeholders (or lack them): start over
        for name in [n for n in sys.modules if is_torch_name(n)]:
            del sys.modules[name]
    s.lazy, s.verbose = bool(lazy), bool(verbose)
    if _state.finder is None:
        _state.saved = _take_torch_modules()
        s.active = True
        _state.finder = TorchFinder(s)
        sys.meta_path.insert(0, _state.finder)
    return _Enabled(previous)


def disable():
    """Undoes :func:`enable`: ``import torch`` gives what it gave before (nothing to do when not enabled)."""
    if _state.finder is None:
        return
    try:
        sys.meta_path.remove(_state.finder)
    except ValueError:
        pass
    _state.finder = None
    _state.settings.active = False
    _take_torch_modules()
    sys.modules.update(_state.saved)
    _state.saved = {}


def is_enabled():
    """Whether the mock is on."""
    return _state.finder is not None


def real_torch():
    """The real PyTorch module while the mock is on (imported aside, without disturbing the mock), else None.

    Raises ModuleNotFoundError when PyTorch is not installed.
    """
    if _state.finder is None:
        return None
    if "torch" not in _state.saved:
        mocked = _take_torch_modules()
        sys.meta_path.remove(_state.finder)
        _state.settings.active = False
        try:
            import torch  # noqa: F401  (the real one: the finder is out of the way)
        finally:
            _state.saved.update(_take_torch_modules())
            sys.modules.update(mocked)
            sys.meta_path.insert(0, _state.finder)
            _state.settings.active = True
    return _state.saved["torch"]


def is_mock_module(obj):
    """Whether ``obj`` is a module or placeholder the mock made (``torch`` under the mock)."""
    return isinstance(obj, (TorchModule, Placeholder)) or getattr(obj, "_is_oneflow_mock", False) is True
