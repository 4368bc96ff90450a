"""``oneflow.backends.cpu``: CPU capability queries with PyTorch's names."""

# strongest first: PyTorch's capability names and the /proc/cpuinfo flags each needs
_CAPABILITIES = (("AVX512", {"avx512f", "avx512bw", "avx512vl", "avx512dq"}), ("AVX2", {"avx2", "fma"}))


def get_cpu_capability():
    """The strongest SIMD level of this CPU in PyTorch's terms (``'AVX512'``, ``'AVX2'``), read from the
    ``/proc/cpuinfo`` flags; ``'DEFAULT'`` when neither is present or the flags cannot be read."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = set()
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        return "DEFAULT"
    for name, needed in _CAPABILITIES:
        if needed <= flags:
            return name
    return "DEFAULT"
