"""oneflow.accelerator: PyTorch 2.6+'s torch.accelerator. A build without CUDA reports no accelerator exactly as a
CPU-only torch 2.13 does (return values, exception types and messages)."""
import warnings

import pytest
import torch

import oneflow as flow

no_flow_accelerator = pytest.mark.skipif(flow.accelerator.current_accelerator() is not None,
                                         reason="this oneflow build has an accelerator")
TORCH_HAS_NONE = torch.accelerator.current_accelerator() is None


def _outcome(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            result = ("ok", fn())
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            # torch says torch.device where we say oneflow.device
            result = (type(e).__name__, str(e).replace("torch.device", "oneflow.device"))
    return result, [x.category for x in w]


CALLS = {
    "current_accelerator()": lambda a: a.current_accelerator(),
    "current_accelerator(True)": lambda a: a.current_accelerator(check_available=True),
    "is_available()": lambda a: a.is_available(),
    "device_count()": lambda a: a.device_count(),
    "current_device_index()": lambda a: a.current_device_index(),
    "current_device_idx()": lambda a: a.current_device_idx(),
    "set_device_index(0)": lambda a: a.set_device_index(0),
    "set_device_index(-1)": lambda a: a.set_device_index(-1),
    "set_device_index('cpu')": lambda a: a.set_device_index("cpu"),
    "set_device_index('cuda:0')": lambda a: a.set_device_index("cuda:0"),
    "set_device_index(None)": lambda a: a.set_device_index(None),
    "set_device_idx(-1)": lambda a: a.set_device_idx(-1),
    "synchronize()": lambda a: a.synchronize(),
    "synchronize(0)": lambda a: a.synchronize(0),
    "synchronize('cuda')": lambda a: a.synchronize("cuda"),
    "memory_allocated()": lambda a: a.memory_allocated(),
    "max_memory_allocated('cpu')": lambda a: a.max_memory_allocated("cpu"),
    "memory_reserved()": lambda a: a.memory_reserved(),
    "reset_peak_memory_stats()": lambda a: a.reset_peak_memory_stats(),
    "empty_cache()": lambda a: a.empty_cache(),
}

NONE_AVAILABLE = ("RuntimeError", "Cannot access accelerator device when none is available.")
# what torch 2.13 gives on a CPU-only machine
CPU_ONLY = {
    "current_accelerator()": ("ok", None),
    "current_accelerator(True)": ("ok", None),
    "is_available()": ("ok", False),
    "device_count()": ("ok", 0),
    "current_device_index()": NONE_AVAILABLE,
    "current_device_idx()": NONE_AVAILABLE,
    "set_device_index(0)": NONE_AVAILABLE,
    "set_device_index(-1)": ("ok", None),
    "set_device_index('cpu')": ("RuntimeError", "Accelerator expected"),
    "set_device_index('cuda:0')": ("RuntimeError", "Accelerator expected"),
    "set_device_index(None)": ("ValueError",
                               "Expected a oneflow.device with a specified index or an integer, but got:None"),
    "set_device_idx(-1)": ("ok", None),
    "synchronize()": NONE_AVAILABLE,
    "synchronize(0)": NONE_AVAILABLE,
    "synchronize('cuda')": ("RuntimeError", "Accelerator expected"),
    "memory_allocated()": NONE_AVAILABLE,
    "max_memory_allocated('cpu')": NONE_AVAILABLE,
    "memory_reserved()": NONE_AVAILABLE,
    "reset_peak_memory_stats()": NONE_AVAILABLE,
    "empty_cache()": NONE_AVAILABLE,
}


@no_flow_accelerator
@pytest.mark.parametrize("call", list(CALLS))
def test_cpu_only_build_reports_no_accelerator(call):
    got, _ = _outcome(lambda: CALLS[call](flow.accelerator))
    assert got == CPU_ONLY[call]


@no_flow_accelerator
@pytest.mark.skipif(not TORCH_HAS_NONE, reason="torch sees an accelerator here")
@pytest.mark.parametrize("call", list(CALLS))
def test_same_as_cpu_only_torch(call):
    got, got_warnings = _outcome(lambda: CALLS[call](flow.accelerator))
    want, want_warnings = _outcome(lambda: CALLS[call](torch.accelerator))
    assert got == want
    assert got_warnings == want_warnings  # the deprecated *_idx names warn with FutureWarning in both


@no_flow_accelerator
def test_device_index_context_like_torch():
    for lib in (flow, torch):
        with lib.accelerator.device_index(None):  # no switch: fine without an accelerator
            pass
        for index in (0, -1):
            with pytest.raises(RuntimeError, match=NONE_AVAILABLE[1]):
                with lib.accelerator.device_index(index):
                    pass


def test_picking_a_device_the_usual_way():
    acc = flow.accelerator.current_accelerator(check_available=True)
    device = acc if acc is not None else flow.device("cpu")
    m = flow.nn.Linear(2, 2).to(device)
    assert m.weight.device.type == device.type
    assert flow.accelerator.is_available() == flow.cuda.is_available()
    assert flow.accelerator.device_count() == flow.cuda.device_count()


def test_public_names_exist_in_torch():
    for name in flow.accelerator.__all__:
        assert hasattr(torch.accelerator, name), name
