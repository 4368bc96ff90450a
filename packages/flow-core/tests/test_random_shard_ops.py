"""The ``shard`` attribute of bernoulli, normal(mean, std) and the rejection samplers (poisson, binomial,
_standard_gamma): a block of the logical result gets the values the whole result has there and the generator
advances by the whole; dropout draws its mask as bernoulli(x, p) with the values bernoulli(full(1 - p)) gives."""
import numpy as np
import pytest

import oneflow as flow
import oneflow.nn.functional as F

ops = flow._C.ops
SHAPE = (5, 7)
BLOCKS = [((0, 5), (0, 7)), ((1, 4), (2, 7)), ((0, 5), (3, 4)), ((4, 5), (0, 7)), ((2, 2), (0, 7))]
rng = np.random.default_rng(0)
PROBS = rng.random(SHAPE)
CASES = [
    ("bernoulli", lambda ins, **k: ops.bernoulli(ins[0], **k), [PROBS]),
    ("bernoulli p=", lambda ins, **k: ops.bernoulli(ins[0], 0.3, **k), [PROBS]),
    ("bernoulli f16", lambda ins, **k: ops.bernoulli(ins[0].half(), **k), [PROBS]),
    ("normal(mean, std)", lambda ins, **k: ops._normal_tensor(ins[0], ins[1], **k), [PROBS - 0.5, PROBS]),
    ("poisson", lambda ins, **k: ops.poisson(ins[0], **k), [PROBS * 5]),
    ("binomial", lambda ins, **k: ops.binomial(ins[0], ins[1], **k), [np.floor(PROBS * 9), PROBS[::-1].copy()]),
    ("_standard_gamma", lambda ins, **k: ops._standard_gamma(ins[0], **k), [PROBS + 0.2]),
]


@pytest.mark.parametrize("name,op,arrays", CASES, ids=[c[0] for c in CASES])
def test_a_block_equals_the_whole_result_at_its_positions(name, op, arrays):
    flow.manual_seed(5)
    whole = op([flow.tensor(a, dtype=flow.float32) for a in arrays]).double().numpy()
    after = flow.rand(4).numpy()
    for blk in BLOCKS:
        sl = tuple(slice(a, b) for a, b in blk)
        flow.manual_seed(5)
        got = op([flow.tensor(np.ascontiguousarray(a[sl]), dtype=flow.float32) for a in arrays],
                 shard=[*SHAPE, *(a for a, _ in blk)])
        np.testing.assert_array_equal(got.double().numpy(), whole[sl], err_msg=f"{name} {blk}")
        np.testing.assert_array_equal(flow.rand(4).numpy(), after, err_msg=f"{name} {blk}: generator out of step")


def test_a_bad_shard_raises():
    with pytest.raises(RuntimeError, match="lies outside the logical size"):
        ops.bernoulli(flow.rand(3, 3), shard=[3, 2, 0, 0])
    with pytest.raises(RuntimeError, match="the logical shape then"):
        ops.poisson(flow.rand(3), shard=[3])


@pytest.mark.parametrize("dtype", [flow.float32, flow.float64, flow.float16, flow.bfloat16])
@pytest.mark.parametrize("p", [0.1, 0.3, 0.5, 0.9])
def test_dropout_masks_are_those_of_bernoulli_of_a_probability_tensor(dtype, p):
    x = flow.ones(40, 50, dtype=dtype)
    flow.manual_seed(2)
    got = F.dropout(x, p)
    flow.manual_seed(2)
    mask = flow.bernoulli(flow.full((40, 50), 1 - p, dtype=dtype))
    np.testing.assert_array_equal(got.double().numpy(), (x * mask * (1 / (1 - p))).double().numpy())


def test_dropout_records_no_gradient_into_its_mask_and_p1_zeroes():
    x = flow.randn(6, 4, requires_grad=True)
    flow.manual_seed(1)
    y = F.dropout(x, 0.5)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), (y.detach().numpy() != 0) * 2.0)
    np.testing.assert_array_equal(F.dropout(x, 1.0).detach().numpy(), np.zeros((6, 4)))
