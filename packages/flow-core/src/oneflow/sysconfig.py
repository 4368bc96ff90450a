"""Build settings for C++ code that extends the core (OneFlow's ``oneflow.sysconfig``): where the headers and
``libflow_core.so`` are, and the flags to compile and link a plugin with.

    g++ $(python -c "import oneflow.sysconfig as s; print(' '.join(s.get_compile_flags()))") -shared -fPIC \\
        my_ops.cpp -o libmy_ops.so $(python -c "import oneflow.sysconfig as s; print(' '.join(s.get_link_flags()))")
"""
import os

from . import _C

_HERE = os.path.dirname(os.path.abspath(__file__))


def get_include():
    """The directory to put on the include path: ``#include <oneflow/ops/registry.h>`` finds the registry.
    An installed package ships the headers in ``oneflow/include``; a source checkout uses ``csrc``."""
    installed = os.path.join(_HERE, "include")
    if os.path.isdir(os.path.join(installed, "oneflow")):
        return installed
    # dev/build.py's in-place build: build/dev/include/oneflow links to csrc
    return os.path.normpath(os.path.join(_HERE, "..", "..", "build", "dev", "include"))


def get_lib():
    """The directory holding ``libflow_core.so``."""
    return _HERE


def with_cuda():
    """Whether this core was built with CUDA kernels."""
    return bool(_C.cuda_is_built())


def get_build_isa():
    """How the core's CPU code was compiled: ``'x86-64-v2+dispatch(avx2)'`` for the portable build (the
    default; ``'...(avx2,avx512)'`` with the AVX-512 variant too), whose kernels pick their instruction set when
    the library loads, or ``'native'`` for a ``FLOW_NATIVE=ON`` build, which was compiled for the build
    machine's CPU (``-march=native``) and may not run on another."""
    return _C._build_isa()


def get_kernel_capability():
    """The instruction set the core's own CPU kernels run at here, in PyTorch's names (``'DEFAULT'``,
    ``'AVX2'``, ``'AVX512'``): the strongest variant of this build that the CPU supports, lowered by the
    environment variable ``FLOW_CPU_CAPABILITY`` (``default``, ``avx2``) when it is set at startup.
    :func:`oneflow.backends.cpu.get_cpu_capability` reports what the CPU itself supports."""
    return _C._cpu_capability()


def get_compile_flags():
    """Compiler flags for a plugin: the include path, the language standard and the ABI of this build."""
    flags = [f"-I{get_include()}", "-std=c++17", "-fPIC", "-fopenmp",
             f"-D_GLIBCXX_USE_CXX11_ABI={_C._cxx11_abi()}"]
    if with_cuda():
        flags.append("-DFLOW_WITH_CUDA")
    return flags


def get_link_flags():
    """Linker flags for a plugin: link ``libflow_core.so`` and find it beside the module at run time."""
    lib = get_lib()
    return [f"-L{lib}", "-lflow_core", f"-Wl,-rpath,{lib}"]
