"""_C._Plan: a precompiled list of registry-op calls over numbered tensor slots, run in one call (what graph
compilers lower to). Each step is (op name, input slots, attributes, output slots, slots freed after it)."""
import numpy as np
import pytest

import oneflow as flow
from oneflow import _C

from helpers import assert_close


def test_steps_run_in_order_over_slots_with_attributes_parsed_once():
    # slot 0: x, 1: y, 2: x + 2y, 3: exp(2), 4: sum over dim 1 keeping it
    plan = _C._Plan([("add", [0, 1], {"alpha": 2}, [2], []),
                     ("exp", [2], {}, [3], [2]),
                     ("sum", [3], {"dim": [1], "keepdim": True}, [4], [3])], 5)
    assert len(plan) == 3
    x, y = flow.randn(2, 3), flow.randn(2, 3)
    out, freed = plan.run([x, y, None, None, None], [4, 2])
    assert freed is None  # released after its last use
    assert_close(out, np.exp(x.numpy() + 2 * y.numpy()).sum(1, keepdims=True), rtol=1e-6)
    again = plan.run([x, y * 0, None, None, None], [4])[0]
    assert again is not out  # each run makes new results
    assert_close(again, np.exp(x.numpy()).sum(1, keepdims=True), rtol=1e-6)


def test_multi_output_absent_inputs_and_in_place_steps():
    x = flow.randn(2, 3, 4, 4)
    plan = _C._Plan([("max_pool", [0], {"kernel_size": [2, 2]}, [1, 2], []),
                     ("convolution", [1, 3, -1], {"stride": [1, 1], "padding": [0, 0], "dilation": [1, 1],
                                                  "transposed": False, "output_padding": [0, 0], "groups": 1},
                      [4], []),
                     ("mul_", [4, 5], {}, [-1], [])], 6)
    w = flow.randn(5, 3, 1, 1)
    pooled, idx, conv = plan.run([x, None, None, w, None, flow.tensor(2.0)], [1, 2, 4])
    ref, ref_idx = flow.nn.functional.max_pool2d(x, 2, return_indices=True)
    np.testing.assert_array_equal(pooled.numpy(), ref.numpy())
    np.testing.assert_array_equal(idx.numpy(), ref_idx.numpy())
    assert_close(conv, flow.nn.functional.conv2d(ref, w).numpy() * 2, rtol=1e-5, atol=1e-6)


def test_runs_below_autograd_and_updates_variables_in_place():
    p = flow.nn.Parameter(flow.ones(3))
    g = flow.full((3,), 0.5)
    buf = flow.zeros(3)
    lr = flow.tensor(0.1, dtype=flow.float64)
    plan = _C._Plan([("mul", [0, 0], {}, [4], []),
                     ("sgd_update_", [0, 1, 2, 3], {"momentum": 0.9, "_list_lengths": [1, 1, 1]}, [-1], [])], 5)
    sq = plan.run([p, g, buf, lr, None], [4])[0]
    assert not sq.requires_grad and sq.grad_fn is None
    # sgd_update_ without `fresh`: the zero buffer becomes 0.9 * 0 + g, and p moves by lr * buffer
    assert_close(p.detach(), np.ones(3) - 0.1 * 0.5, rtol=1e-6)
    assert_close(buf, np.full(3, 0.5), rtol=1e-6)
    assert_close(sq, np.ones(3), rtol=0)


def test_bad_plans_are_python_errors():
    with pytest.raises(ValueError, match="no registry op named 'nope'"):
        _C._Plan([("nope", [0], {}, [1], [])], 2)
    with pytest.raises(ValueError, match="names slot 7 of 2"):
        _C._Plan([("exp", [7], {}, [1], [])], 2)
    with pytest.raises(ValueError, match="a step is"):
        _C._Plan([("exp", [0])], 2)
    with pytest.raises(TypeError, match="sum"):
        _C._Plan([("sum", [0], {"dim": "rows"}, [1], [])], 2)
    plan = _C._Plan([("exp", [0], {}, [1], [])], 2)
    with pytest.raises(ValueError, match="expected 2 slots, got 1"):
        plan.run([flow.ones(1)], [1])
    with pytest.raises(RuntimeError):
        _C._Plan([("add", [0, 1], {}, [2], [])], 3).run([flow.ones(2), flow.ones(3), None], [2])
