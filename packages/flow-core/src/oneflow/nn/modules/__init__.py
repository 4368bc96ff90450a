"""nn modules. Each ``modules/<family>.py`` lists its classes in ``__all__``; all are exported as ``oneflow.nn.<Name>``.

As in PyTorch, every module class is also reachable as ``oneflow.nn.modules.<Name>`` (``from torch.nn.modules
import Module`` is common in real programs) and at PyTorch's file paths (``oneflow.nn.modules.linear.Linear``).
"""


def __getattr__(name):
    # looked up in oneflow.nn, which imports every family file; they can't be imported from here, as oneflow.nn
    # imports this package first
    import sys

    nn = sys.modules.get("oneflow.nn")
    obj = getattr(nn, name, None) if nn is not None and not name.startswith("_") else None
    if isinstance(obj, type):
        families = [m for n, m in list(sys.modules.items()) if n.startswith(__name__ + ".")]
        if obj.__module__.startswith(__name__ + ".") or any(name in getattr(m, "__all__", ()) for m in families):
            return obj
    raise AttributeError(f"module '{__name__}' has no attribute '{name}'")
