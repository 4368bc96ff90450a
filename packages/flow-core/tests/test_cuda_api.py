"""oneflow.cuda without a CUDA build behaves like torch.cuda in a CPU-only PyTorch: queries say there is no
device, seeding and cache calls do nothing, device calls raise AssertionError, the deprecated cuda.amp
spellings warn and disable themselves, and DataLoader(pin_memory=True) warns."""
import warnings

import pytest

import oneflow as flow
from helpers import torch


def test_queries_match_cpu_only_torch():
    for name in ("is_available", "device_count", "is_initialized", "memory_allocated", "max_memory_allocated",
                 "memory_reserved", "max_memory_reserved"):
        assert getattr(flow.cuda, name)() == getattr(torch.cuda, name)(), name
    for name in ("empty_cache", "reset_peak_memory_stats"):
        assert getattr(flow.cuda, name)() is None
    flow.cuda.manual_seed(0)
    flow.cuda.manual_seed_all(0)
    torch.cuda.manual_seed_all(0)
    assert flow.ones(2).is_pinned() is torch.ones(2).is_pinned() is False
    for lib in (flow, torch):  # no accelerator to pin for
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available"):
            lib.ones(2).pin_memory()


@pytest.mark.parametrize("name", ["current_device", "synchronize", "get_device_name", "init"])
def test_device_calls_raise_assertion_error(name):
    with pytest.raises(AssertionError, match="without CUDA support"):
        getattr(flow.cuda, name)()


def test_device_selection_idiom_runs():
    device = "cuda" if flow.cuda.is_available() else "cpu"
    model = flow.nn.Linear(2, 2).to(device)
    assert model(flow.ones(1, 2, device=device)).shape == (1, 2)


def test_deprecated_cuda_amp_spellings_disable_themselves():
    with pytest.warns(FutureWarning, match="oneflow.amp.autocast\\('cuda'"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            ctx = flow.cuda.amp.autocast()
    with ctx:
        assert not flow.is_autocast_enabled()
    with pytest.warns(FutureWarning, match="oneflow.amp.GradScaler\\('cuda'"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            scaler = flow.cuda.amp.GradScaler()
    assert not scaler.is_enabled()
    loss = flow.ones((), requires_grad=True)
    assert scaler.scale(loss) is loss  # a disabled scaler passes values through, as torch's does


def test_dataloader_pin_memory_warns_like_torch():
    from oneflow.utils.data import DataLoader, TensorDataset

    loader = DataLoader(TensorDataset(flow.arange(4.0)), batch_size=2, pin_memory=True)
    with pytest.warns(UserWarning, match="no accelerator is found"):
        batches = [b[0].tolist() for b in loader]
    assert batches == [[0.0, 1.0], [2.0, 3.0]] and loader.pin_memory
