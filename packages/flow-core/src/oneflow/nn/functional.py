"""Functional neural-network ops (``oneflow.nn.functional``), mirroring ``torch.nn.functional``.

The functions live in ``nn/_functional_<family>.py`` modules (activations, conv/pooling, normalisation and
losses, ...); every public name of each is re-exported here.
"""
import importlib as _importlib
import os as _os



def _load():
    names = {}
    for f in sorted(_os.listdir(_os.path.dirname(__file__))):
        if f.startswith("_functional_") and f.endswith(".py"):
            m = _importlib.import_module(f"{__package__}.{f[:-3]}")
            for n in getattr(m, "__all__", ()):
                names[n] = getattr(m, n)
    return names


from ..amp._policy import wrap_functional as _wrap_functional  # noqa: E402

globals().update(_wrap_functional(_load()))
