"""The argument helpers every creation function uses (creation.py, ranges.py, tensor_data.py): devices, the
``requires_grad``/``out=`` epilogue, PyTorch's type names in errors and once-only warnings. A leaf module, so that
creation.py can re-export the ranges and data constructors without an import cycle."""
import builtins
import warnings

from .. import _C

_UNSET = object()

_warned = set()


def _warn_once(key, message, stacklevel):
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)


def _typename(obj):
    """The type name PyTorch's argument errors use: ``list``, ``numpy.float32``, ``Tensor``."""
    if isinstance(obj, _C.TensorBase):
        return "Tensor"
    cls = type(obj)
    module = cls.__module__.split(".")[0]
    return cls.__name__ if module == "builtins" else f"{module}.{cls.__name__}"


def _device(device):
    """``device`` as the creation ops' ``device`` attribute: ``None`` for the CPU (the default unless
    ``set_default_device`` chose another), else a ``oneflow.device``. Devices this build lacks raise its error."""
    if device is None:
        return _default_device[0]
    if isinstance(device, builtins.int) and not isinstance(device, builtins.bool):
        device = _C.device("cuda", device)  # an index names an accelerator, as in PyTorch
    d = device if isinstance(device, _C.device) else _C.device(device)
    if d.type == "cpu":
        return None
    if d.type != "meta":
        _C._empty([0], _C.float32, d)  # raises the build's device error
    return d


# The device factory functions allocate on when given none (set_default_device); None: the CPU.
_default_device = [None]


def _check_requires_grad(dtype):
    # the creation functions' own wording (requires_grad_() on a tensor words it differently, as in PyTorch)
    if not dtype.is_floating_point:
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")


def _finish(t, requires_grad, out=None):
    if out is not None:
        if list(out.shape) != list(t.shape):  # resized like the ops' out= (silently when it was empty)
            if out.numel() != 0:
                warnings.warn(f"An output with one or more elements was resized since it had shape "
                              f"{list(out.shape)}, which does not match the required output shape {list(t.shape)}. "
                              "Pass outputs with zero elements to resize them silently.", UserWarning, stacklevel=3)
            out.resize_(list(t.shape))
        _C.ops.copy_(out, t)
        return out
    if requires_grad:
        _check_requires_grad(t.dtype)
        t.requires_grad_(True)
    return t
