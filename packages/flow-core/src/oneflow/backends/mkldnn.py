"""``oneflow.backends.mkldnn``: the oneDNN (MKL-DNN) switch with PyTorch's name. ``is_available()`` is True as in
PyTorch's CPU builds; ``enabled`` is stored and selects nothing (oneflow's CPU kernels do not use oneDNN)."""

enabled = True


def is_available():
    """True, as in PyTorch's CPU builds."""
    return True
