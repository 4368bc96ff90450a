"""The random fills' ``shard`` attribute: a block of a larger logical tensor gets the values the whole tensor
has at those positions, and the generator advances by the whole tensor (what global creation builds on)."""
import numpy as np
import pytest

import oneflow as flow

FILLS = [("uniform_", (0.0, 1.0)), ("normal_", (0.5, 2.0)), ("exponential_", (1.5,)), ("random_", (0, 100)),
         ("random_", (-(2 ** 40), 2 ** 40))]


def _block(fill, attrs, shape, lo, hi, dtype, seed=3):
    flow.manual_seed(seed)
    t = flow.empty(*[b - a for a, b in zip(lo, hi)], dtype=dtype)
    getattr(flow._C.ops, fill)(t, *attrs, shard=[*shape, *lo])
    return t.double().numpy(), flow.rand(5).numpy()  # float64 holds every dtype here exactly (bfloat16 too)


def _whole(fill, attrs, shape, dtype, seed=3):
    flow.manual_seed(seed)
    t = flow.empty(*shape, dtype=dtype)
    getattr(flow._C.ops, fill)(t, *attrs)
    return t.double().numpy(), flow.rand(5).numpy()  # float64 holds every dtype here exactly (bfloat16 too)


def _dtypes(fill):
    if fill == "random_":
        return [flow.int64, flow.int32, flow.float32]
    return [flow.float32, flow.float64, flow.float16, flow.bfloat16]


@pytest.mark.parametrize("fill,attrs", FILLS)
@pytest.mark.parametrize("shape", [(13,), (5, 7), (3, 4, 5), (2, 3, 1, 6)])
def test_a_shard_equals_the_whole_tensor_at_its_positions_and_the_generator_advances_by_the_whole(fill, attrs,
                                                                                                   shape):
    rng = np.random.default_rng(len(shape))
    for dtype in _dtypes(fill):
        if fill == "random_" and attrs[1] > 2 ** 31 and dtype != flow.int64:
            continue
        want, after = _whole(fill, attrs, shape, dtype)
        blocks = [tuple((0, s) for s in shape)]  # the whole, then blocks starting inside Philox blocks
        for _ in range(6):
            blocks.append(tuple(tuple(sorted(rng.integers(0, s + 1, 2))) for s in shape))
        for d in range(len(shape)):  # one dim split, the others whole (global creation's common case)
            blocks.append(tuple((1, s) if e == d else (0, s) for e, s in enumerate(shape)))
        for blk in blocks:
            lo, hi = [a for a, _ in blk], [b for _, b in blk]
            got, got_after = _block(fill, attrs, shape, lo, hi, dtype)
            np.testing.assert_array_equal(got, want[tuple(slice(a, b) for a, b in blk)], err_msg=f"{dtype} {blk}")
            np.testing.assert_array_equal(got_after, after, err_msg=f"{dtype} {blk}: generator out of step")


@pytest.mark.parametrize("fill,attrs", FILLS)
@pytest.mark.parametrize("shape,lo,hi", [((3, 9000), (0, 4001), (3, 9000)),  # long runs, each drawn in place
                                         ((5, 3000), (1, 0), (4, 3000)),
                                         ((40000, 4), (0, 1), (40000, 3)),  # short runs over several spans
                                         ((7, 3000, 5), (2, 5, 1), (6, 2999, 4))])
def test_long_shards_and_shards_of_short_runs_over_many_buffers(fill, attrs, shape, lo, hi):
    dtype = flow.int64 if fill == "random_" else flow.float32
    want, after = _whole(fill, attrs, shape, dtype)
    got, got_after = _block(fill, attrs, shape, lo, hi, dtype)
    np.testing.assert_array_equal(got, want[tuple(slice(a, b) for a, b in zip(lo, hi))])
    np.testing.assert_array_equal(got_after, after)


def test_a_non_contiguous_shard_gets_the_same_values():
    flow.manual_seed(1)
    want = flow.randn(6, 8).numpy()
    flow.manual_seed(1)
    t = flow.empty(4, 3).t()  # (3, 4), transposed
    flow._C.ops.normal_(t, 0.0, 1.0, shard=[6, 8, 2, 3])
    np.testing.assert_array_equal(t.numpy(), want[2:5, 3:7])


def test_an_empty_shard_still_advances_the_generator_by_the_whole_tensor():
    flow.manual_seed(2)
    flow.rand(4, 5)
    after = flow.rand(3).numpy()
    flow.manual_seed(2)
    flow._C.ops.uniform_(flow.empty(0, 5), 0.0, 1.0, shard=[4, 5, 4, 0])
    np.testing.assert_array_equal(flow.rand(3).numpy(), after)


def test_a_shard_of_an_explicit_generator_draws_from_it():
    g = flow.Generator().manual_seed(9)
    want = flow.randn(5, 4, generator=g).numpy()
    g.manual_seed(9)
    t = flow.empty(2, 4)
    flow._C.ops.normal_(t, 0.0, 1.0, generator=g._handle, shard=[5, 4, 3, 0])
    np.testing.assert_array_equal(t.numpy(), want[3:5])


@pytest.mark.parametrize("shard,match", [([4, 5], r"\(4 ints for a 2-dim tensor\), got 2"),
                                         ([4, 5, 3, 0], "lies outside the logical size 4"),
                                         ([4, 5, -1, 0], "starting at -1"),
                                         ([4, 4, 0, 0], "lies outside the logical size 4")])
def test_a_bad_shard_raises_naming_the_op(shard, match):
    for fill, attrs in FILLS[:4]:
        with pytest.raises(RuntimeError, match=match) as e:
            getattr(flow._C.ops, fill)(flow.empty(2, 5), *attrs, shard=shard)
        assert fill in str(e.value)

