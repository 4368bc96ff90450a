"""``oneflow.backends.mps``: Apple's Metal backend, which oneflow does not have (PyTorch's names, so that device
selection such as ``"mps" if flow.backends.mps.is_available() else "cpu"`` runs unchanged)."""


def is_available():
    """False: oneflow has no MPS (Metal) backend."""
    return False


def is_built():
    """False: oneflow is never built with MPS."""
    return False
