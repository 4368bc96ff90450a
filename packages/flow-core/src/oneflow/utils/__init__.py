"""Utilities (PyTorch's ``torch.utils``): ``oneflow.utils.data`` (datasets, samplers, DataLoader),
``oneflow.utils.checkpoint`` (activation checkpointing), ``oneflow.utils.dlpack`` (DLPack exchange),
``oneflow.utils.hooks`` (hook handles), ``oneflow.utils.tensor`` (OneFlow's from_torch/to_torch),
``oneflow.utils.tensorboard`` (SummaryWriter) and
``oneflow.utils.vision`` (dataset readers and transforms; these two are imported explicitly, as in torch)."""
import importlib

# The submodules load on first use rather than here: ``nn`` and ``optim`` import ``utils.hooks`` while
# ``oneflow`` is still initialising, and an eager import of ``data`` or ``checkpoint`` (which need the whole
# package) would close an import cycle. ``oneflow/__init__`` loads the usual ones once it is complete.
_SUBMODULES = ("checkpoint", "data", "dlpack", "hooks", "tensor")


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES))
