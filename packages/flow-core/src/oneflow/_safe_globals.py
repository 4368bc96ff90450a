"""The allowlist of globals that :func:`oneflow.load` admits with ``weights_only=True`` (PyTorch's
``torch.serialization.add_safe_globals`` and friends), and the weights-only error message.

A pickle names every class or function it needs as a global (``module.qualname``); a weights-only load refuses
any global beyond tensors and plain containers unless the user allowlisted it here. Allowlisting a class lets a
file create instances of it and set their state; allowlisting a function lets a file call it with arguments of its
choosing, so only allowlist what is safe for any input.
"""
import pickle

__all__ = ["add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals"]

# Modules whose globals are never admitted, even when allowlisted: they run commands or reach the interpreter.
BLOCKED_MODULES = frozenset(("sys", "os", "posix", "nt"))

# entry -> None: an insertion-ordered set of what the user allowlisted (objects or (object, "module.name") pairs)
_user_globals = {}


def _check_entry(entry):
    if isinstance(entry, tuple):
        if len(entry) != 2:
            raise ValueError(f"Expected tuple of length 2 (global, str of callable full path), but got tuple of "
                             f"length: {len(entry)}")
        if type(entry[1]) is not str:
            raise TypeError(f"Expected second item in tuple to be str of callable full path, but got: "
                            f"{type(entry[1])}")
    elif not (hasattr(entry, "__module__") and hasattr(entry, "__qualname__")):
        raise TypeError(f"add_safe_globals: {entry!r:.80} is not a class or function (it has no __module__ and "
                        "__qualname__); pass it as a (global, 'module.name') tuple")


def _entries(safe_globals):
    if isinstance(safe_globals, (str, bytes)) or not hasattr(safe_globals, "__iter__"):
        raise TypeError(f"safe_globals must be a list of globals, not {type(safe_globals).__name__}")
    entries = list(safe_globals)
    for e in entries:
        _check_entry(e)
    return entries


def add_safe_globals(safe_globals):
    r"""Marks the given globals as safe for ``weights_only`` load. For example, functions added to this list can
    be called during unpickling, classes could be instantiated and have state set.

    Each item in the list can either be a function/class or a tuple of the form ``(function/class, string)``
    where string is the full path of the function/class.

    Within the serialized format, each function is identified with its full path as
    ``{__module__}.{__qualname__}``. When calling this API, you can provide this full path that should match the
    one in the checkpoint otherwise the default ``{fn.__module__}.{fn.__qualname__}`` will be used.

    Args:
        safe_globals (List[Union[Callable, Tuple[Callable, str]]]): list of globals to mark as safe

    Example::

        >>> class MyConfig:
        ...     def __init__(self, lr):
        ...         self.lr = lr
        >>> flow.save({"config": MyConfig(0.1)}, "ckpt.pt")
        >>> flow.load("ckpt.pt")  # raises pickle.UnpicklingError: ... __main__.MyConfig ...
        >>> flow.serialization.add_safe_globals([MyConfig])
        >>> flow.load("ckpt.pt")["config"].lr
        0.1
    """
    for e in _entries(safe_globals):
        _user_globals[e] = None


def get_safe_globals():
    """Returns the list of user-added globals that are safe for ``weights_only`` load."""
    return list(_user_globals)


def clear_safe_globals():
    """Clears the list of globals that are safe for ``weights_only`` load."""
    _user_globals.clear()


class safe_globals:
    r"""Context-manager that adds certain globals as safe for ``weights_only`` load.

    On exit, the globals it added are removed again (those that were already allowlisted stay).

    Args:
        safe_globals: List of globals for weights_only load (as for :func:`add_safe_globals`).

    Example::

        >>> with flow.serialization.safe_globals([MyConfig]):
        ...     ckpt = flow.load("ckpt.pt")
        >>> assert flow.serialization.get_safe_globals() == []
    """

    def __init__(self, safe_globals):
        self.safe_globals = _entries(safe_globals)
        self._added = []

    def __enter__(self):
        self._added = [e for e in self.safe_globals if e not in _user_globals]
        add_safe_globals(self._added)

    def __exit__(self, exc_type, exc_value, tb):
        for e in self._added:
            _user_globals.pop(e, None)
        self._added = []


def user_allowed():
    """``{"module.qualname": object}`` for every allowlisted global."""
    out = {}
    for e in _user_globals:
        if isinstance(e, tuple):
            out[e[1]] = e[0]
        else:
            out[f"{e.__module__}.{e.__qualname__}"] = e
    return out


UNSAFE_HINT = ("If you trust the source of the file, re-running flow.load with weights_only=False will likely "
               "succeed, but it can result in arbitrary code execution: do it only if you got the file from a "
               "trusted source.")


def refuse(module, name):
    """The ``pickle.UnpicklingError`` of a weights-only load for the global ``module.name`` (PyTorch's
    advice, in our words)."""
    path = f"{module}.{name}"
    if module in BLOCKED_MODULES:
        return pickle.UnpicklingError(
            f"flow.load: Weights only load failed: refusing to load the global '{path}' from the file, whose "
            f"module {module} is blocked. {UNSAFE_HINT}")
    shown = path[len("builtins."):] if path.startswith("builtins.") else path
    return pickle.UnpicklingError(
        f"flow.load: Weights only load failed: refusing to load the global '{path}' from the file. With "
        "weights_only=True (the default) only tensors, plain containers (dict, OrderedDict, list, tuple, set, "
        "numbers, strings) and allowlisted globals are loaded. To load it:\n"
        f"\t(1) {UNSAFE_HINT}\n"
        f"\t(2) Or, if you trust this class/function, allowlist it with "
        f"`oneflow.serialization.add_safe_globals([{shown}])` or the "
        f"`oneflow.serialization.safe_globals([{shown}])` context manager.")
