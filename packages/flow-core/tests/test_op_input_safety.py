"""Registry ops called directly (``oneflow._C.ops``) with arguments that no Python wrapper would pass: each
must raise a Python exception naming the op, never read or write out of bounds. These are the cases a random
argument fuzzer over every op schema found crashing the process (segfaults, heap corruption)."""
import pytest

import oneflow as flow

ops = flow._C.ops


@pytest.mark.parametrize("call,err,msg", [
    # gradient helpers whose size arguments disagree with the gradient they are given
    (lambda: ops.upsample_linear_backward(flow.ones(4, dtype=flow.float64), [], [1], False, [1e-30]),
     RuntimeError, "upsample_linear_backward"),
    (lambda: ops.upsample_nearest_backward(flow.ones(1, dtype=flow.float64), [1, 3], []),
     RuntimeError, "upsample_nearest_backward"),
    (lambda: ops.upsample_nearest_backward(flow.ones(1, 2, 4, 4), [1, 2, 2, 2], [8, 8]),
     RuntimeError, "does not match input_size"),
    (lambda: ops.upsample_nearest_backward(flow.ones(1, 2, 4, 4), [1, 2, 2, 2], [4, 4], [2.0]),
     RuntimeError, "expected 2 scales"),
    (lambda: ops.convolution_backward_input(flow.ones(2, 3, 4, 5, dtype=flow.float64), flow.ones(2, 3, 4, 5),
                                            [1], [1], [2], [1, 5], 1 << 40), RuntimeError,
     "convolution_backward_input"),
    (lambda: ops.convolution_backward_input(flow.ones(1, 4, 6, 6), flow.ones(4, 2, 3, 3), [1, 2, 5, 5], [1],
                                            [0], [1], 1), RuntimeError, "is not the output of a convolution"),
    (lambda: ops.convolution_backward_weight(flow.ones(1, 4, 6, 6), flow.ones(1, 2, 5, 5), [4, 2, 3, 3], [1],
                                             [0], [1], 1), RuntimeError, "is not the output of a convolution"),
    (lambda: ops._reduce_eq_mask(flow.tensor(1, dtype=flow.int32), flow.zeros(0, dtype=flow.int16)),
     RuntimeError, "must broadcast to self"),
    (lambda: ops._reduce_eq_mask(flow.ones(1, dtype=flow.int32), flow.ones(2, 3)), RuntimeError,
     "must broadcast to self"),
    (lambda: ops.slice_backward(flow.ones(2), [4], 0, 0, 4, 0), RuntimeError, "step must be positive"),
    (lambda: ops.slice_backward(flow.ones(1, dtype=flow.bool), [], 0, 1, None, 1), IndexError, "0-dim"),
    (lambda: ops._reduce_select(flow.ones(2, 0, 3, dtype=flow.float64), flow.zeros(2, 2, 2, dtype=flow.int64), -3,
                                False), RuntimeError, "does not come from"),
    (lambda: ops._reduce_select(flow.ones(2, 3), flow.zeros(3, dtype=flow.int8), 0, False), RuntimeError,
     "expected int64 indices"),
    (lambda: ops.as_strided_backward(flow.ones(2), flow.ones(1, 1, 1, 1, 1, dtype=flow.int8), [3, 2, -1], [], 2),
     RuntimeError, "differ in length"),
    (lambda: ops.as_strided_backward(flow.ones(4, dtype=flow.float16), flow.ones(0), [1, 3, -3], [1, 1, 1], 0),
     RuntimeError, "invalid size"),
    (lambda: ops.as_strided_backward(flow.ones(4), flow.ones(8), [3], [1], 0), RuntimeError, "grad of 4 elements"),
    (lambda: ops.split_backward([flow.ones(0, dtype=flow.int32)], [], [5], -1), RuntimeError, "at least one dim"),
    (lambda: ops.native_group_norm_backward(flow.ones(3, dtype=flow.float64), flow.ones(2, 0, 3), flow.ones(2, 0, 3),
                                            flow.ones(0), flow.ones(2, 0, 2), 1 << 40), RuntimeError, "does not match"),
    (lambda: ops.native_group_norm_backward(flow.ones(2, 4, 3), flow.ones(2, 4, 3), flow.ones(1), flow.ones(1),
                                            None, 2), RuntimeError, "expected 4 mean and rstd values"),
    (lambda: ops.native_layer_norm_backward(flow.ones(5), flow.ones(2, 3), flow.ones(2, 1), flow.ones(2, 1), None,
                                            [3]), RuntimeError, "does not match input"),
    # strided regions and views outside their storage
    (lambda: ops.view_scatter(flow.zeros(0, 2, 3), flow.ones(3), [1], [], 5), RuntimeError, "differ in length"),
    (lambda: ops.view_scatter(flow.zeros(0, 2, 3), flow.ones(1), [1], [1], 0), IndexError, "out of bounds"),
    (lambda: ops.view_scatter(flow.zeros(6), flow.ones(3), [3], [-4], 2), IndexError, "out of bounds"),
    (lambda: ops.view_scatter(flow.zeros(6), flow.ones(2), [2], [1 << 62], 0), IndexError, "out of bounds"),
    (lambda: ops.strided_view(flow.zeros(0, dtype=flow.int64), [0, -3, 1], [], 0), RuntimeError,
     "differ in length"),
    (lambda: ops.strided_view(flow.zeros(4), [0, -3], [1, 1], 0), IndexError, "out of bounds"),
    # sizes whose byte count overflows int64
    (lambda: ops.logspace(float("inf"), -1.5, 1 << 62, 1e-30), RuntimeError, "overflowed"),
    (lambda: flow.empty_strided((1 << 40, 1 << 40), (1 << 40, 1)), RuntimeError, "overflowed"),
    (lambda: flow.empty_strided((2,), (-1,)), RuntimeError, "overflowed"),
])
def test_bad_arguments_raise(call, err, msg):
    with pytest.raises(err, match=msg):
        call()


def test_valid_helper_calls_still_work():
    g = ops.upsample_nearest_backward(flow.ones(1, 2, 4, 4), [1, 2, 2, 2], [4, 4])
    assert g.shape == (1, 2, 2, 2) and float(g.sum()) == 32.0
    z = ops.view_scatter(flow.zeros(6), flow.ones(3), [3], [-2], 4)  # positions 4, 2, 0
    assert z.tolist() == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    assert ops.strided_view(flow.arange(6.0), [2], [3], 1).tolist() == [1.0, 4.0]
    assert flow.empty_strided((0,), (-1,)).shape == (0,)
    gx = ops.convolution_backward_input(flow.ones(1, 4, 4, 4), flow.ones(4, 2, 3, 3), [1, 2, 6, 6], [1], [0], [1],
                                        1)
    assert gx.shape == (1, 2, 6, 6) and float(gx[0, 0, 2, 2]) == 36.0
