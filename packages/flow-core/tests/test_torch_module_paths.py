"""PyTorch's nn module paths: every class that a torch.nn.modules file defines, and oneflow.nn has, is reachable
at the same path under oneflow.nn.modules (the same object as oneflow.nn.<Name>)."""
import importlib
import inspect
import pkgutil

import pytest
import torch
import torch.nn.modules

import oneflow as flow

TORCH_FILES = sorted(m.name for m in pkgutil.iter_modules(torch.nn.modules.__path__) if not m.name.startswith("_"))


def _classes_defined_in(module):
    return [n for n, v in vars(module).items()
            if inspect.isclass(v) and not n.startswith("_") and v.__module__ == module.__name__]


@pytest.mark.parametrize("file", TORCH_FILES)
def test_torch_file_classes_at_the_same_path(file):
    torch_names = _classes_defined_in(importlib.import_module(f"torch.nn.modules.{file}"))
    ours = [n for n in torch_names if hasattr(flow.nn, n)]
    if not ours:
        pytest.skip(f"oneflow.nn has none of torch.nn.modules.{file}'s classes")
    module = importlib.import_module(f"oneflow.nn.modules.{file}")
    for name in ours:
        assert getattr(module, name, None) is getattr(flow.nn, name), f"oneflow.nn.modules.{file}.{name}"


def test_the_files_programs_name():
    # the layout of torch/nn/modules, in the from-imports real programs write
    from oneflow.nn.modules.activation import MultiheadAttention, ReLU
    from oneflow.nn.modules.batchnorm import BatchNorm2d, _BatchNorm
    from oneflow.nn.modules.container import ModuleList, Sequential
    from oneflow.nn.modules.conv import Conv2d, _ConvNd
    from oneflow.nn.modules.linear import Linear
    from oneflow.nn.modules.loss import CrossEntropyLoss, LinearCrossEntropyLoss, _Loss
    from oneflow.nn.modules.module import Module
    from oneflow.nn.modules.rnn import LSTM
    from oneflow.nn.modules.transformer import TransformerEncoderLayer

    assert MultiheadAttention is flow.nn.MultiheadAttention and LinearCrossEntropyLoss is flow.nn.LinearCrossEntropyLoss
    assert issubclass(BatchNorm2d, _BatchNorm) and issubclass(Conv2d, _ConvNd) and issubclass(CrossEntropyLoss, _Loss)
    for cls in (ReLU, ModuleList, Sequential, Linear, LSTM, TransformerEncoderLayer):
        assert issubclass(cls, Module)
    m = MultiheadAttention(4, 2, batch_first=True)
    x = flow.randn(1, 3, 4)
    out, weights = m(x, x, x)
    assert tuple(out.shape) == (1, 3, 4) and tuple(weights.shape) == (1, 3, 3)


def test_package_level_names_like_torch_nn_modules():
    from oneflow.nn.modules import Module  # noqa: F401

    for name in torch.nn.modules.__all__:
        if hasattr(flow.nn, name):
            assert getattr(flow.nn.modules, name) is getattr(flow.nn, name), name
    # only module classes: the package is not a second oneflow.nn
    for name in ("Parameter", "functional", "init", "no_such_layer"):
        with pytest.raises(AttributeError, match=f"module 'oneflow.nn.modules' has no attribute '{name}'"):
            getattr(flow.nn.modules, name)


@pytest.mark.parametrize("path", ["activation.no_such", "loss.no_such"])
def test_lazy_aliases_keep_plain_attribute_errors(path):
    file, name = path.split(".")
    module = importlib.import_module(f"oneflow.nn.modules.{file}")
    with pytest.raises(AttributeError, match=f"module 'oneflow.nn.modules.{file}' has no attribute '{name}'"):
        getattr(module, name)
