"""clamp/clip/clamp_min/clamp_max with tensor bounds against torch: broadcasting, type promotion, crossing
bounds, NaN bounds, ties, gradients for input and bounds, and the in-place forms."""
import numpy as np
import pytest

import oneflow as flow

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3)).astype("float32")
LO = RNG.standard_normal(3).astype("float32") - 0.5
HI = RNG.standard_normal((2, 1)).astype("float32") + 0.5
X[0, 0] = LO[0]  # a tie: the input keeps the gradient, as in torch

CASES = {
    "both": lambda M, x, lo, hi: M.clamp(x, lo, hi),
    "min_method": lambda M, x, lo, hi: x.clamp(min=lo),
    "clip_max": lambda M, x, lo, hi: M.clip(x, max=hi),
    "clamp_max_method": lambda M, x, lo, hi: x.clamp_max(hi),
    "clamp_min_fn": lambda M, x, lo, hi: M.clamp_min(x, lo),
    "crossing": lambda M, x, lo, hi: M.clamp(x, min=hi, max=lo),
    "nan_bound": lambda M, x, lo, hi: M.clamp(x, min=lo * M.tensor([float("nan"), 1.0, 1.0])),
    "zero_dim_bound_with_grad": lambda M, x, lo, hi: M.clamp(x, min=lo[1], max=hi[0, 0]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_tensor_bounds_match_torch_with_gradients(case):
    res = []
    for M in (flow, torch):
        x, lo, hi = (M.tensor(a, requires_grad=True) for a in (X, LO, HI))
        r = CASES[case](M, x, lo, hi)
        r.backward(M.tensor(np.arange(r.numel(), dtype="float32").reshape(tuple(r.shape))))
        res.append([r.detach().numpy()] + [t.grad.numpy() if t.grad is not None else None for t in (x, lo, hi)])
    for a, b in zip(*res):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-6, equal_nan=True)


def test_integer_input_with_float_bound_promotes_and_in_place_refuses():
    for M in (flow, torch):
        r = M.clamp(M.tensor([1, 5, 9]), M.tensor([2, 2, 2]), M.tensor([4.5, 4.5, 4.5]))
        assert str(r.dtype).endswith("float32") and r.tolist() == [2.0, 4.5, 4.5]
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            M.tensor([1, 2]).clamp_(M.tensor([0.5, 0.5]))


def test_in_place_forms_and_broadcast_shape():
    y = flow.tensor([1.0, 5.0, 9.0])
    assert y.clamp_(flow.tensor([2.0, 2.0, 2.0]), flow.tensor([4.0, 4.0, 4.0])) is y
    assert y.tolist() == [2.0, 4.0, 4.0]
    z = flow.tensor([0.0, 3.0])
    z.clamp_min_(flow.tensor([1.0, 1.0]))
    z.clip_(max=flow.tensor([2.0, 2.0]))
    assert z.tolist() == [1.0, 2.0]
    assert flow.clamp(flow.zeros(3), min=flow.zeros(2, 3)).shape == (2, 3)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        flow.zeros(3).clamp_(min=flow.zeros(2, 3))


def test_number_nan_bound_gives_nan_like_torch():
    for M in (flow, torch):
        assert np.isnan(M.clamp(M.tensor([1.0, 2.0]), min=float("nan")).numpy()).all()
        assert np.isnan(M.clamp(M.tensor([1.0, 2.0]), max=float("nan")).numpy()).all()


def test_zero_dim_bound_of_a_wider_dtype_does_not_promote_like_torch():
    for M in (flow, torch):
        b = M.tensor(0.5, dtype=M.float64, requires_grad=True)
        assert str(M.clamp(M.ones(2), min=b).dtype).endswith("float32")
