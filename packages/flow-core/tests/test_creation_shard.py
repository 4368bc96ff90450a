"""The range creations' ``shard`` attribute (arange, linspace, logspace, eye): the op makes only a block of its
logical result, with exactly the whole result's values there (what split global creation builds on)."""
import numpy as np
import pytest

import oneflow as flow
from oneflow._ops import ranges

ops = flow._C.ops


def _blocks(n):
    return [(0, n), (0, 0), (n, n), (1, n), (0, n - 1), (n // 3, 2 * n // 3 + 1)]


@pytest.mark.parametrize("make", [
    lambda **k: ops.arange(0.5, 7.3, 0.37, **k), lambda **k: ops.arange(-3, 40, 3, **k),
    lambda **k: ops.arange(0.25, 9.0, 0.75, dtype=flow.float16, **k),
    lambda **k: ops.arange(1.0, 50.0, 1.1, dtype=flow.float64, **k),
    lambda **k: ops.linspace(-1.3, 2.7, 101, **k), lambda **k: ops.linspace(0, 100, 33, dtype=flow.int64, **k),
    lambda **k: ops.linspace(-2.0, 5.0, 64, dtype=flow.float64, **k), lambda **k: ops.linspace(3, 4, 1, **k),
    lambda **k: ops.logspace(-1.0, 2.0, 57, 3.0, **k), lambda **k: ops.logspace(0, 3, 40, 2.0, dtype=flow.float64, **k),
    lambda shard=None: ranges.linspace_block(-1, 1, 37, flow.float16, None, shard),
    lambda shard=None: ranges.linspace_block(-2, 3, 29, flow.bfloat16, None, shard),
])
def test_a_1d_block_equals_the_whole_result_at_its_indices(make):
    whole = make().double().numpy()
    for a, b in _blocks(len(whole)):
        got = make(shard=[a, b])
        assert tuple(got.shape) == (b - a,)
        np.testing.assert_array_equal(got.double().numpy(), whole[a:b], err_msg=f"[{a}, {b})")


@pytest.mark.parametrize("n,m", [(7, 5), (5, 7), (6, 6), (1, 4)])
def test_an_eye_block_has_the_ones_of_the_whole_matrix(n, m):
    whole = np.eye(n, m)
    for r0, r1 in _blocks(n):
        for c0, c1 in _blocks(m):
            got = ops.eye(n, m, dtype=flow.int32, shard=[r0, r1, c0, c1])
            np.testing.assert_array_equal(got.numpy(), whole[r0:r1, c0:c1], err_msg=f"{r0, r1, c0, c1}")


@pytest.mark.parametrize("bad,match", [
    (lambda: ops.arange(0, 10, shard=[2, 11]), "outside its size"), (lambda: ops.arange(0, 10, shard=[5, 4]), "outside"),
    (lambda: ops.linspace(0, 1, 5, shard=[0]), "a start and a stop per dim"),
    (lambda: ops.eye(3, shard=[0, 1]), "a start and a stop per dim"),
    (lambda: ops.eye(3, shard=[0, 1, -1, 2]), "outside"),
])
def test_a_bad_shard_raises(bad, match):
    with pytest.raises(RuntimeError, match=match):
        bad()
