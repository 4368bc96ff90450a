"""Errors for inputs a PyTorch user passes by habit: NumPy arrays and torch tensors given to modules and ops, and
bad thread counts. Each raises the exception type torch raises in the same place, with a message that names the
foreign type in full and says how to convert."""
import numpy as np
import pytest
import torch

import oneflow as flow
from oneflow import nn


@pytest.fixture
def threads():
    before = flow.get_num_threads()
    yield before
    flow.set_num_threads(before)


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return info.value


@pytest.mark.parametrize("value", [0, -1, -8])
def test_set_num_threads_refuses_non_positive_counts_like_torch(threads, value):
    ref = _error(lambda: torch.set_num_threads(value))
    torch.set_num_threads(threads)
    with pytest.raises(type(ref), match="^set_num_threads expects a positive integer$"):
        flow.set_num_threads(value)
    assert str(ref) == "set_num_threads expects a positive integer"
    assert flow.get_num_threads() == threads


@pytest.mark.parametrize("value", [1.5, True, "2", None])
def test_set_num_threads_refuses_non_ints_like_torch(threads, value):
    ref = _error(lambda: torch.set_num_threads(value))
    torch.set_num_threads(threads)
    with pytest.raises(type(ref)) as info:
        flow.set_num_threads(value)
    assert str(info.value) == str(ref) == f"set_num_threads expects an int, but got {type(value).__name__}"
    assert flow.get_num_threads() == threads


def test_set_num_threads_accepts_python_and_numpy_ints(threads):
    flow.set_num_threads(np.int64(1))
    assert flow.get_num_threads() == 1
    flow.set_num_threads(2)
    assert flow.get_num_threads() == 2


def test_set_num_threads_overflow_like_torch(threads):
    ref = _error(lambda: torch.set_num_threads(2 ** 31))
    with pytest.raises(type(ref), match=str(ref)):
        flow.set_num_threads(2 ** 31)


MODULES = [
    (lambda: nn.Linear(2, 3), lambda: torch.nn.Linear(2, 3), (1, 2)),
    (lambda: nn.ReLU(), lambda: torch.nn.ReLU(), (1, 2)),
    (lambda: nn.Conv2d(1, 1, 1), lambda: torch.nn.Conv2d(1, 1, 1), (1, 1, 2, 2)),
    (lambda: nn.Sequential(nn.Linear(2, 3), nn.ReLU()), lambda: torch.nn.Sequential(torch.nn.Linear(2, 3)), (1, 2)),
]


@pytest.mark.parametrize("make,make_ref,shape", MODULES)
def test_numpy_array_into_a_module(make, make_ref, shape):
    a = np.ones(shape, np.float32)
    ref = _error(lambda: make_ref()(a))
    with pytest.raises(type(ref)) as info:
        make()(a)
    msg = str(info.value)
    assert "argument 'input' (position 1) must be a oneflow.Tensor, not numpy.ndarray" in msg, msg
    assert "oneflow.from_numpy(array)" in msg and "oneflow.tensor(array)" in msg
    assert info.value.__cause__ is not None  # the original failure stays visible in the traceback


@pytest.mark.parametrize("make,make_ref,shape", MODULES)
def test_torch_tensor_into_a_module(make, make_ref, shape):
    t = torch.ones(shape)
    ref = _error(lambda: make_ref()(np.ones(shape, np.float32)))  # torch's error for a foreign array
    with pytest.raises(type(ref)) as info:
        make()(t)
    msg = str(info.value)
    assert "must be a oneflow.Tensor, not torch.Tensor" in msg, msg
    assert "oneflow.from_dlpack(t)" in msg and "oneflow.from_numpy(t.detach().cpu().numpy())" in msg
    # the advice works: the converted tensor goes through
    assert make()(flow.from_dlpack(t)).shape[0] == shape[0]


def test_torch_parameter_is_named_by_its_class():
    p = torch.nn.Parameter(torch.ones(1, 2))
    msg = str(_error(lambda: nn.Linear(2, 3)(p)))
    assert "not torch.nn.parameter.Parameter" in msg, msg


def test_foreign_input_as_keyword_and_with_hooks():
    lin = nn.Linear(2, 3)
    msg = str(_error(lambda: lin(input=np.ones((1, 2), np.float32))))
    assert "Linear.forward(): argument 'input' must be a oneflow.Tensor, not numpy.ndarray" in msg, msg
    lin.register_forward_hook(lambda m, args, out: None)
    with pytest.raises(TypeError, match="not numpy.ndarray. Convert it with oneflow.from_numpy"):
        lin(np.ones((1, 2), np.float32))


class _TakesArrays(nn.Module):
    def forward(self, a):
        return flow.from_numpy(a) * 2


class _OtherBug(nn.Module):
    def forward(self, a):
        raise TypeError("unsupported flag combination")


def test_modules_that_take_arrays_and_unrelated_errors_are_left_alone():
    a = np.ones(2, np.float32)
    np.testing.assert_array_equal(_TakesArrays()(a).numpy(), [2, 2])
    with pytest.raises(TypeError, match="^unsupported flag combination$"):
        _OtherBug()(a)


def test_torch_tensor_into_an_op_is_a_type_error_like_torch():
    t = torch.ones(2)
    ref = _error(lambda: torch.add(np.ones(2), t))
    with pytest.raises(type(ref), match=r"add\(\): argument 'self' \(position 1\) must be Tensor"):
        flow.add(t, t)


def test_torch_tensor_into_an_op_names_torch_and_the_conversion():
    msg = str(_error(lambda: flow.relu(torch.ones(2))))
    assert "not torch.Tensor" in msg and "oneflow.from_dlpack" in msg, msg
