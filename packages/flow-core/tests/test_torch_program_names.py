"""Names PyTorch programs touch for device selection and TorchScript guards, with torch's answers on a CPU-only
build: oneflow.backends.mps, oneflow.cuda.is_bf16_supported, oneflow.jit, oneflow.multiprocessing."""
import multiprocessing

import pytest

import oneflow as flow
from helpers import torch


def test_device_queries_answer_like_cpu_only_torch():
    assert flow.backends.mps.is_available() is torch.backends.mps.is_available() is False
    assert flow.backends.mps.is_built() is False
    assert flow.cuda.is_bf16_supported() is torch.cuda.is_bf16_supported() is False
    device = "cuda" if flow.cuda.is_available() else "mps" if flow.backends.mps.is_available() else "cpu"
    assert flow.ones(2, device=device).device.type == "cpu"


def test_jit_guards_and_decorators():
    assert flow.jit.is_scripting() is torch.jit.is_scripting() is False
    assert flow.jit.is_tracing() is False

    def f(x):
        return x + 1

    assert flow.jit.ignore(f) is f and flow.jit.ignore(drop=True)(f) is f
    assert flow.jit.unused(f) is f and flow.jit.export(f) is f
    with pytest.raises(NotImplementedError, match="oneflow has no TorchScript"):
        flow.jit.script(flow.nn.Linear(2, 2))
    with pytest.raises(NotImplementedError, match="oneflow has no TorchScript"):
        flow.jit.trace(f, flow.ones(1))


def test_multiprocessing_is_pythons_with_sharing_strategies():
    assert flow.multiprocessing.Process is multiprocessing.Process
    assert flow.multiprocessing.get_all_sharing_strategies() == torch.multiprocessing.get_all_sharing_strategies()
    assert flow.multiprocessing.get_sharing_strategy() == "file_descriptor"
    flow.multiprocessing.set_sharing_strategy("file_system")
    try:
        assert flow.multiprocessing.get_sharing_strategy() == "file_system"
    finally:
        flow.multiprocessing.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError, match="Unsupported sharing strategy 'shm'"):
        flow.multiprocessing.set_sharing_strategy("shm")
