"""Indexing and index assignment with Python sequences (range, lists of ints/bools/floats, tuples inside the
index tuple, NumPy arrays), compared with torch 2.13 for values, shapes, writes, gradients and errors."""
import collections
import warnings

import numpy as np
import pytest
import torch

import oneflow as flow

INDICES = {
    "range": range(3),
    "range_negative_step": range(3, 0, -1),
    "range_to_start": range(3, -1, -1),
    "range_negative_values": range(-1, -5, -2),
    "range_empty": range(0),
    "range_empty_backwards": range(2, 2, -1),
    "range_in_tuple_first": (range(2), 1),
    "range_in_tuple_second": (1, range(5, 0, -2)),
    "two_ranges": (range(2), range(2)),
    "slice_then_range": (slice(None), range(1, 5, 2)),
    "ellipsis_then_empty_range": (Ellipsis, range(0)),
    "none_then_range": (None, range(2)),
    "range_none_int": (range(1, 3), None, 0),
    "range_and_tuple": (range(2), (1, 2)),
    "list_holding_range": [range(2)],
    "list_of_ranges_like_tuple": [[0, 1], range(2)],
    "tuple_in_tuple": ((0, 1),),
    "two_tuples": ((0, 1), (1, 2)),
    "list_of_tuples": [(0, 1), (1, 2)],
    "nested_list_like_tuple": [[0, 1], [1, 0]],
    "nested_list_in_tuple": ([[0, 1], [2, 3]],),
    "int_and_list": [1, [2]],
    "bool_list": [True, False, True, False],
    "bool_tuple_in_tuple": ((True, False, True, False),),
    "nested_bool_list": [[True, False, True, False]],
    "int_and_bool_list": [1, True],
    "float_list": [0.7, 1.2],
    "numpy_ints": np.array([0, -1]),
    "numpy_int32": np.array([1, 2], dtype=np.int32),
    "numpy_int8": np.array([1, 2], dtype=np.int8),
    "numpy_uint64": np.array([1, 2], dtype=np.uint64),
    "numpy_floats": np.array([0.7, 2.5]),
    "numpy_empty_float": np.array([]),
    "numpy_and_slice": (np.array([0, 1]), slice(None, None, 2)),
    "numpy_scalars_in_list": [np.int64(1), 2],
    "numpy_0d_int": np.array(1),
    "numpy_0d_bool": np.array(True),
    "empty_list": [],
    "empty_tuple_in_tuple": ((),),
    "deque": collections.deque([2, 0]),
}


def _pair():
    a = np.arange(24).reshape(4, 6)
    return flow.tensor(a), torch.tensor(a)


def _quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation of lists treated as tuples
        return fn()


@pytest.mark.parametrize("name", list(INDICES))
def test_getitem_like_torch(name):
    index = INDICES[name]
    f, t = _pair()
    rf, rt = f[index], _quiet(lambda: t[index])
    assert tuple(rf.shape) == tuple(rt.shape)
    np.testing.assert_array_equal(rf.numpy(), rt.numpy())


@pytest.mark.parametrize("name", list(INDICES))
def test_setitem_like_torch(name):
    index = INDICES[name]
    f, t = _pair()
    f[index] = -1
    _quiet(lambda: t.__setitem__(index, -1))
    np.testing.assert_array_equal(f.numpy(), t.numpy())


@pytest.mark.parametrize("index", [range(2), range(4, -1, -2), (slice(None), range(0, 6, 4))])
def test_setitem_with_a_tensor_value_and_gradients(index):
    shape = (5,) if isinstance(index, range) and index.start == 4 else (4, 6)
    results = []
    for lib in (flow, torch):
        base = lib.zeros(*shape, requires_grad=True)
        y = base * 1
        target = y[index]
        value = lib.arange(float(target.numel())).reshape(target.shape).requires_grad_(True)
        y[index] = value
        (y * lib.arange(float(y.numel())).reshape(y.shape)).sum().backward()
        results.append((y.detach().numpy(), base.grad.numpy(), value.grad.numpy()))
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_range_index_copies_like_torch():
    # an advanced index: the result does not share memory with the tensor, as in torch
    for lib in (flow, torch):
        x = lib.arange(6)
        r = x[range(0, 6, 2)]
        r[0] = 100
        assert x[0].item() == 0


@pytest.mark.parametrize("index,error,message", [
    (range(10), IndexError, "index 4 is out of bounds for dimension 0 with size 4"),
    ((range(2), range(3)), IndexError, "shape mismatch: indexing tensors could not be broadcast together"),
    ([-5], IndexError, "index -5 is out of bounds for dimension 0 with size 4"),
    ("a", TypeError, "new\\(\\): invalid data type 'str'"),
    ((0, "a"), TypeError, "new\\(\\): invalid data type 'str'"),
    (b"\x00\x01", TypeError, "new\\(\\): invalid data type 'bytes'"),
    ({0}, IndexError, "only integers, slices"),
])
def test_errors_like_torch(index, error, message):
    f, t = _pair()
    for x in (f, t):
        with pytest.raises(error, match=message):
            x[index]
        with pytest.raises(error, match=message):
            x[index] = 0
