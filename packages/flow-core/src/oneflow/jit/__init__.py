"""``oneflow.jit``: the TorchScript queries and decorators that model code calls with ``torch.jit``'s names.

oneflow has no TorchScript: code is never being scripted or traced, the decorators that mark functions for the
script compiler return them unchanged, and :func:`script` / :func:`trace` raise (static graphs are
``oneflow.nn.Graph`` and ``oneflow.compile``).
"""

__all__ = ["is_scripting", "is_tracing", "ignore", "unused", "export", "interface", "script", "trace",
           "Final"]

try:
    from typing import Final  # noqa: F401  (torch.jit.Final is typing's)
except ImportError:  # pragma: no cover
    Final = None


def is_scripting():
    """False: oneflow code never runs under the TorchScript compiler."""
    return False


def is_tracing():
    """False: oneflow has no TorchScript tracer."""
    return False


def _identity_decorator(fn=None, **kwargs):
    if fn is None:  # used as @ignore(drop=True)
        return lambda f: f
    return fn


def ignore(drop=False, **kwargs):
    """Marks a function for the script compiler to leave alone; returns it unchanged (no TorchScript here)."""
    return drop if callable(drop) else _identity_decorator()


def unused(fn):
    """Marks a method the script compiler should not compile; returns it unchanged."""
    return fn


def export(fn):
    """Marks a method for the script compiler to compile; returns it unchanged."""
    return fn


def interface(obj):
    """Marks a class as a TorchScript interface; returns it unchanged."""
    return obj


def _no_torchscript(what):
    raise NotImplementedError(f"oneflow.jit.{what}: oneflow has no TorchScript; run the module eagerly, or compile "
                              "it with oneflow.compile / oneflow.nn.Graph")


def script(obj=None, *args, **kwargs):
    """Not supported: oneflow has no TorchScript (raises NotImplementedError)."""
    _no_torchscript("script")


def trace(func=None, *args, **kwargs):
    """Not supported: oneflow has no TorchScript (raises NotImplementedError)."""
    _no_torchscript("trace")
