"""Build configuration of this flow-core, as PyTorch's ``torch.__config__``."""
from . import _C, sysconfig

__all__ = ["show"]


def show():
    """A summary of how this core was built and what it runs with here: the version, the CPU code (portable with
    run-time dispatch, or native), the kernels' instruction set on this CPU, CUDA and the C++ ABI."""
    from . import __version__
    from .backends import cpu

    lines = [
        f"flow-core {__version__}",
        f"  - CPU build: {sysconfig.get_build_isa()}",
        f"  - CPU kernels run at: {sysconfig.get_kernel_capability()} (CPU capability: {cpu.get_cpu_capability()})",
        "  - OpenMP, oneDNN (onednn-cpu-gomp)",
        f"  - CUDA: {'built' if sysconfig.with_cuda() else 'not built'}",
        f"  - _GLIBCXX_USE_CXX11_ABI={_C._cxx11_abi()}",
    ]
    return "\n".join(lines) + "\n"

