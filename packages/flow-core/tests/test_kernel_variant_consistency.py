"""One computation, one rounding: where the same math is reached by two paths (an op's reduced and unreduced
forms, a function and the op it is a case of, a factorisation solved by two ops), both paths run the same kernel
variant (csrc/core/cpu_isa.h), so their results are bitwise equal. In a portable build a loop called directly,
or through a function pointer, runs the x86-64-v2 baseline while a parallel_for body runs the AVX2+FMA variant;
these cases once differed in their last bits. (The optimizer updates' case, a parameter updated alone or in a
large group, is in test_optim_lists.py.)"""
import numpy as np
import pytest

import oneflow as flow
import oneflow.nn.functional as F


@pytest.mark.parametrize("weighted", [False, True])
def test_reduced_smoothed_cross_entropy_is_the_sum_of_its_unreduced_rows(weighted):
    # float64, whose total is not rounded again: the rows' last bits show in it
    flow.manual_seed(0)
    x, t = flow.randn(64, 1000, dtype=flow.float64), flow.randint(0, 1000, (64,))
    w = flow.rand(1000, dtype=flow.float64) + 0.5 if weighted else None
    none = F.cross_entropy(x, t, weight=w, label_smoothing=0.1, reduction="none").numpy()
    total = F.cross_entropy(x, t, weight=w, label_smoothing=0.1, reduction="sum").numpy()
    in_order = 0.0
    for v in none:  # the kernel sums the rows in order
        in_order += float(v)
    assert float(total) == in_order


def test_digamma_equals_polygamma_of_order_zero():
    y = flow.rand(4096, dtype=flow.float64) * 20 + 0.05
    np.testing.assert_array_equal(flow.digamma(y).numpy(), flow.polygamma(0, y).numpy())


def test_lu_solve_equals_solve_on_the_same_factorisation():
    flow.manual_seed(0)
    a, b = flow.randn(3, 24, 24, dtype=flow.float64), flow.randn(3, 24, 5, dtype=flow.float64)
    lu, piv = flow.linalg.lu_factor(a)
    np.testing.assert_array_equal(flow.linalg.lu_solve(lu, piv, b).numpy(), flow.linalg.solve(a, b).numpy())


def test_variance_over_a_leading_dim_matches_float64_numpy():
    flow.manual_seed(0)
    z = flow.randn(300, 7, 5)
    got = flow.var(z, 0).numpy()
    np.testing.assert_allclose(got, np.var(z.numpy().astype(np.float64), 0, ddof=1), rtol=1e-6, atol=0)
    # and the column pass gives what the row pass gives for the same numbers, transposed
    np.testing.assert_allclose(got, flow.var(z.permute(1, 2, 0).contiguous(), -1).numpy(), rtol=1e-6, atol=0)
