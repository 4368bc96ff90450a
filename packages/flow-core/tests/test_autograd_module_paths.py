"""PyTorch's autograd module paths (grad_mode, anomaly_mode, variable) and the multithreading switch."""
import torch

import oneflow as flow


def test_module_paths_export_torchs_names():
    from oneflow.autograd import anomaly_mode, grad_mode, variable

    for mod, tmod in ((grad_mode, torch.autograd.grad_mode), (anomaly_mode, torch.autograd.anomaly_mode),
                      (variable, torch.autograd.variable)):
        for name in mod.__all__:
            assert hasattr(tmod, name), name
    assert grad_mode.no_grad is flow.no_grad and anomaly_mode.detect_anomaly is flow.autograd.detect_anomaly
    assert variable.Variable is flow.autograd.Variable


def test_set_multithreading_enabled_like_torch():
    for lib in (flow, torch):
        assert lib.autograd.is_multithreading_enabled()
        with lib.autograd.set_multithreading_enabled(False):
            assert not lib.autograd.is_multithreading_enabled()
            x = lib.ones(2, requires_grad=True)
            (x * 3).sum().backward()
            assert x.grad.tolist() == [3.0, 3.0]
        assert lib.autograd.is_multithreading_enabled()

    @flow.autograd.set_multithreading_enabled(False)
    def inner():
        return flow.autograd.is_multithreading_enabled()

    assert inner() is False and flow.autograd.is_multithreading_enabled()
