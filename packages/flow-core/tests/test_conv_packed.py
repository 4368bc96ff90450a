"""Prepacked convolution weights (convolution_pack_weight + convolution_forward_packed, what nn.Graph's
prepack_conv_weights pass emits): bitwise the plain convolution's result on every kernel path (oneDNN with a
blocked weight, the paths that read the plain weight, float64), and clear errors for a packed weight that does
not match."""
import numpy as np
import pytest

import oneflow as flow
import oneflow.nn.functional as F

ops = flow._C.ops
rng = np.random.default_rng(0)

CASES = [  # (input, weight, stride, padding, dilation, groups, bias)
    ((2, 64, 16, 16), (128, 64, 3, 3), 2, 1, 1, 1, True),   # oneDNN, blocked weight: packing pays
    ((32, 64, 4, 4), (64, 64, 3, 3), 1, 1, 1, 1, False),    # oneDNN (too few tiles for Winograd)
    ((2, 32, 8, 8), (48, 32, 3, 3), 1, 1, 1, 1, True),
    ((1, 8, 9, 9), (8, 4, 3, 3), 1, 2, 2, 2, True),         # grouped, dilated
    ((2, 16, 8, 8), (32, 16, 1, 1), 1, 0, 1, 1, True),      # 1x1
    ((1, 3, 12, 12), (8, 3, 3, 3), 1, 1, 1, 1, True),       # few input channels
    ((1, 128, 4, 4), (128, 128, 3, 3), 1, 1, 1, 1, False),  # im2col + sgemm (few output positions)
    ((8, 64, 16, 16), (40, 64, 3, 3), 1, 1, 1, 1, True),    # Winograd (where built): its weight transform
]


def _pair(xs, ws, s, p, d, g, bias, dtype=np.float32, x=None):
    x = flow.tensor(rng.standard_normal(xs).astype(dtype)) if x is None else x
    w = flow.tensor(rng.standard_normal(ws).astype(dtype))
    b = flow.tensor(rng.standard_normal(ws[0]).astype(dtype)) if bias else None
    packed = ops.convolution_pack_weight(w, list(x.shape), [s, s], [p, p], [d, d], g, bias)
    got = ops.convolution_forward_packed(x, packed, b, list(ws), [s, s], [p, p], [d, d], g)
    return got, F.conv2d(x, w, b, stride=s, padding=p, dilation=d, groups=g), packed


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}x{c[1]}" for c in CASES])
def test_packed_forward_equals_convolution_bitwise(case):
    got, want, packed = _pair(*case)
    assert packed.dim() == 1 and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_at_least_the_blocked_case_packs():
    xs, ws, s, p, d, g, bias = CASES[0]
    assert flow._C._conv_weight_packing_pays(list(xs), list(ws), [2, 128, 8, 8], [s, s], [p, p], [d, d], g, bias)
    # the Winograd forward's transformed weights: 16 per tap pair, output channels padded to the register block
    if flow._C._conv_weight_packing_pays([8, 64, 16, 16], [40, 64, 3, 3], [8, 40, 16, 16], [1, 1], [1, 1], [1, 1], 1,
                                         True):
        _, _, packed = _pair(*CASES[-1])
        assert packed.numel() > 40 * 64 * 16
    assert not flow._C._conv_weight_packing_pays([1, 128, 4, 4], [128, 128, 3, 3], [1, 128, 4, 4], [1, 1], [1, 1],
                                                 [1, 1], 1, False)  # im2col reads the plain weight


def test_float64_and_strided_input():
    got, want, packed = _pair(*CASES[0], dtype=np.float64)
    assert packed.dtype == flow.float64 and packed.numel() == 128 * 64 * 9
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    x = flow.tensor(rng.standard_normal((2, 16, 16, 64)).astype(np.float32)).permute(0, 3, 1, 2)  # channels-last
    assert not x.is_contiguous()
    got, want, _ = _pair((2, 64, 16, 16), (128, 64, 3, 3), 2, 1, 1, 1, True, x=x)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_mismatched_packed_weight_raises():
    xs, ws, s, p, d, g, bias = CASES[0]
    w = flow.randn(*ws)
    packed = ops.convolution_pack_weight(w, list(xs), [s, s], [p, p], [d, d], g, bias)
    with pytest.raises(RuntimeError, match="convolution_forward_packed: packed_weight must be 1-dimensional"):
        ops.convolution_forward_packed(flow.randn(*xs), packed.reshape(2, -1), None, list(ws), [s, s], [p, p],
                                       [d, d], g)
    with pytest.raises(RuntimeError, match="convolution_forward_packed: the packed weight has"):
        ops.convolution_forward_packed(flow.randn(*xs), packed[:-5], None, list(ws), [s, s], [p, p], [d, d], g)
    with pytest.raises(RuntimeError, match="convolution_pack_weight: input_sizes"):
        ops.convolution_pack_weight(w, [2, 64, 16], [s, s], [p, p], [d, d], g, bias)
    with pytest.raises(RuntimeError, match="channels"):  # the input does not match the weight
        ops.convolution_pack_weight(w, [2, 32, 16, 16], [s, s], [p, p], [d, d], g, bias)
