"""Errors for arrays of other libraries (NumPy arrays, PyTorch tensors) passed where a oneflow tensor is
expected: they name the foreign type in full (a bare ``Tensor`` would read as ours) and say how to convert.

The checks run only after a call has failed, so the success path pays nothing for them.
"""

import numpy as np

__all__ = ["ForeignInputError", "foreign_type_name", "conversion_hint", "module_input_error"]


class ForeignInputError(TypeError):
    """A NumPy array or a tensor of another framework reached code that needs a oneflow tensor."""


def foreign_type_name(obj):
    """``'numpy.ndarray'`` or ``'torch.Tensor'`` (a subclass by its own qualified name) for a foreign array, else
    None. torch is recognised by name, so that this never imports it."""
    cls = type(obj)
    if isinstance(obj, np.ndarray):
        base = np.ndarray
        base_name = "numpy.ndarray"
    else:
        base = next((c for c in cls.__mro__ if c.__module__ == "torch" and c.__name__ == "Tensor"), None)
        if base is None:
            return None
        base_name = "torch.Tensor"
    return base_name if cls is base else f"{cls.__module__}.{cls.__qualname__}"


def conversion_hint(obj):
    """How to turn ``obj`` (a foreign array) into a oneflow tensor, as a sentence; None for other objects."""
    name = foreign_type_name(obj)
    if name is None:
        return None
    if name.startswith("numpy"):
        return ("Convert it with oneflow.from_numpy(array) (shares its memory) or oneflow.tensor(array) "
                "(copies).")
    return ("Convert it with oneflow.from_dlpack(t) (shares its memory; also oneflow.utils.dlpack.from_dlpack) "
            "or oneflow.from_numpy(t.detach().cpu().numpy()).")


def _mentions(exc, obj):
    # the failure names the object's type ("... must be Tensor, not ndarray", "'numpy.ndarray' object has no
    # attribute 'dim'"): then the foreign array caused it, not some other bug in forward
    return type(obj).__name__ in str(exc)


def _arg_label(forward, position):
    import inspect

    try:
        params = list(inspect.signature(forward).parameters.values())
    except (TypeError, ValueError):
        params = []
    if position < len(params) and params[position].kind in (params[position].POSITIONAL_ONLY,
                                                              params[position].POSITIONAL_OR_KEYWORD):
        return f"'{params[position].name}' (position {position + 1})"
    return f"(position {position + 1})"


def module_input_error(module, forward, args, kwargs, exc):
    """The error to raise instead of ``exc`` (a TypeError or AttributeError from ``module``'s ``forward``) when
    a foreign array among the call's arguments caused it; None when none did."""
    if isinstance(exc, ForeignInputError):  # an inner module already explained it
        return None
    where = [(i, a) for i, a in enumerate(args)] + list(kwargs.items())
    for key, value in where:
        name = foreign_type_name(value)
        if name is not None and _mentions(exc, value):
            label = _arg_label(forward, key) if isinstance(key, int) else f"'{key}'"
            return ForeignInputError(f"{type(module).__name__}.forward(): argument {label} must be a oneflow.Tensor, "
                                     f"not {name}. {conversion_hint(value)}")
    return None
