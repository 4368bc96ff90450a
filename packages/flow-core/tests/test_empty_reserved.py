"""_C._empty_reserved: a CPU tensor over reserved address space (graph tracing's placeholders), which reads as
zeros, takes writes, and stays outside the caching allocator."""
import numpy as np
import pytest

import oneflow as flow
from oneflow import _C


def test_empty_reserved_is_zero_filled_writable_and_outside_the_allocator():
    before = _C._allocator_stats()
    t = _C._empty_reserved([256, 1024], [1, 256], flow.float32)  # 1 MiB, column-major
    made = _C._allocator_stats()
    assert made["allocated_bytes"] == before["allocated_bytes"]
    assert made["num_system_allocs"] == before["num_system_allocs"]
    assert t.shape == (256, 1024) and t.stride() == (1, 256) and t.dtype == flow.float32
    assert t.data_ptr() % 4096 == 0
    np.testing.assert_array_equal(t.numpy(), np.zeros((256, 1024), np.float32))
    t.add_(2)
    assert float(t.sum()) == 2 * 256 * 1024
    assert _C._empty_reserved([0, 3], [3, 1], flow.int64).numel() == 0
    assert _C._empty_reserved([], [], flow.float64).shape == ()
    with pytest.raises(RuntimeError, match="negative dimension"):
        _C._empty_reserved([-1], [1], flow.float32)
    with pytest.raises(RuntimeError, match="mismatch in length of strides and shape"):
        _C._empty_reserved([2, 2], [1], flow.float32)
