"""``oneflow.backends.cudnn``: cuDNN flags (``enabled``, ``benchmark``, ``deterministic``, ``allow_tf32``) with
PyTorch's defaults. This build has no cuDNN: ``is_available()`` is False, ``version()`` is None, and setting the
flags is accepted but changes nothing."""

enabled = True
benchmark = False
benchmark_limit = None
deterministic = False
allow_tf32 = True


def is_available():
    """Whether cuDNN can be used (never, in this CPU-only build)."""
    return False


def version():
    """The cuDNN version, or None when cuDNN is not available."""
    return None
