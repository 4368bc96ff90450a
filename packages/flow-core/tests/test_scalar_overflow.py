"""Python numbers stored into a tensor of a narrower dtype (fill_, full, masked_fill, index_fill, clamp bounds,
where, pow, threshold, tensor(...)) raise PyTorch's overflow error where torch does, and wrap where it does
(arithmetic, negative integers into unsigned types)."""
import numpy as np
import pytest

import oneflow as flow

torch = pytest.importorskip("torch")

CASES = {
    "add_wraps": lambda M, u, m: u + 300,
    "fill": lambda M, u, m: u.clone().fill_(300),
    "full": lambda M, u, m: M.full((2,), 300, dtype=M.uint8),
    "full_like": lambda M, u, m: M.full_like(u, 300),
    "masked_fill": lambda M, u, m: u.masked_fill(m, 300),
    "masked_fill_0dim_tensor": lambda M, u, m: u.masked_fill(m, M.tensor(300)),
    "index_fill": lambda M, u, m: u.index_fill(0, M.tensor([0]), 300),
    "clamp": lambda M, u, m: u.clamp(max=256),
    "clamp_negative_int_wraps": lambda M, u, m: u.clamp(min=-1),
    "where": lambda M, u, m: M.where(m, u, 300),
    "where_float32": lambda M, u, m: M.where(m, M.ones(2), 1e300),
    "where_half_skips_check": lambda M, u, m: M.where(m, M.ones(2, dtype=M.float16), 1e5),
    "pow": lambda M, u, m: u ** 300,
    "float_pow_not_checked": lambda M, u, m: M.ones(2) ** 1e300,
    "tensor_int32": lambda M, u, m: M.tensor([2 ** 40], dtype=M.int32),
    "tensor_uint8_negative_wraps": lambda M, u, m: M.tensor([-1], dtype=M.uint8),
    "tensor_float16_inf": lambda M, u, m: M.tensor([1e5], dtype=M.float16),
    "f32_fill": lambda M, u, m: M.zeros(2).fill_(1e300),
    "f32_fill_inf": lambda M, u, m: M.zeros(2).fill_(float("inf")),
    "f16_fill": lambda M, u, m: M.zeros(2, dtype=M.float16).fill_(1e5),
    "bf16_fill": lambda M, u, m: M.zeros(2, dtype=M.bfloat16).fill_(1e300),
    "i32_fill": lambda M, u, m: M.zeros(2, dtype=M.int32).fill_(2 ** 40),
    "i32_fill_float": lambda M, u, m: M.zeros(2, dtype=M.int32).fill_(1e20),
    "i32_fill_nan": lambda M, u, m: M.zeros(2, dtype=M.int32).fill_(float("nan")),
    "u8_fill_minus_255_wraps": lambda M, u, m: u.clone().fill_(-255),
    "u8_fill_minus_256": lambda M, u, m: u.clone().fill_(-256),
    "bool_fill": lambda M, u, m: M.zeros(2, dtype=M.bool).fill_(300),
    "threshold_negative_int": lambda M, u, m: M.nn.functional.threshold(u, -1, 0),
    "threshold_negative_float": lambda M, u, m: M.nn.functional.threshold(u, -2.5, 0),
}


@pytest.mark.parametrize("case", list(CASES))
def test_overflow_rule_matches_torch(case):
    results = []
    for M in (flow, torch):
        u, m = M.tensor([5, 6], dtype=M.uint8), M.tensor([True, False])
        try:
            results.append(np.asarray(CASES[case](M, u, m).tolist()))
        except RuntimeError as e:
            assert "without overflow" in str(e)
            results.append("overflow")
    if isinstance(results[1], str):
        assert isinstance(results[0], str), f"torch raised, oneflow gave {results[0]}"
    else:
        assert not isinstance(results[0], str), "oneflow raised where torch did not"
        np.testing.assert_array_equal(results[0], results[1])


def test_overflow_message_names_the_c_type():
    with pytest.raises(RuntimeError, match="value cannot be converted to type uint8_t without overflow"):
        flow.tensor([1], dtype=flow.uint8).fill_(300)
    with pytest.raises(RuntimeError, match="type c10::Half without overflow"):
        flow.zeros(1, dtype=flow.float16).fill_(1e6)
