"""The top-level names PyTorch also exposes (torch.conv2d, torch.layer_norm, torch.abs_, ...): each is the
functional op or in-place method it names, so results equal the long form's and torch's."""
import numpy as np
import pytest
import torch

import oneflow as flow


def test_functional_aliases_match_torch():
    g = np.random.default_rng(0)
    x, w = g.standard_normal((2, 3, 8, 8)).astype(np.float32), g.standard_normal((4, 3, 3, 3)).astype(np.float32)
    pairs = [(lambda L, a, b: L.conv2d(a, b, padding=1)), (lambda L, a, b: L.max_pool2d(a, 2)),
             (lambda L, a, b: L.layer_norm(a, (8,))), (lambda L, a, b: L.group_norm(a, 3)),
             (lambda L, a, b: L.pixel_shuffle(a[:, :2].reshape(2, 4, 4, 8), 2)),
             (lambda L, a, b: L.cosine_similarity(a, a * 2 + 1, 1)), (lambda L, a, b: L.avg_pool1d(a[:, :, 0], 2))]
    for f in pairs:
        got = f(flow, flow.tensor(x), flow.tensor(w)).numpy()
        want = f(torch, torch.tensor(x), torch.tensor(w)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["abs_", "sigmoid_", "relu_", "exp_", "clamp_", "square_", "trunc_"])
def test_inplace_aliases_match_torch(name):
    x = np.array([-1.5, -0.2, 0.0, 0.7, 2.3], np.float32)
    args = (0.0, 1.0) if name == "clamp_" else ()
    f, t = flow.tensor(x), torch.tensor(x)
    assert getattr(flow, name)(f, *args) is f
    getattr(torch, name)(t, *args)
    np.testing.assert_allclose(f.numpy(), t.numpy(), rtol=1e-6)


def test_predicates():
    assert flow.is_complex(flow.ones(2)) is False
    x = flow.ones(2)
    with flow.inference_mode():
        t, made = x + 1, flow.ones(2)  # results and freshly created tensors alike, as in torch
    assert flow.is_inference(t) and flow.is_inference(made)
    assert not flow.is_inference(x + 1) and not flow.is_inference(flow.ones(2))
    with pytest.raises(TypeError, match="must be Tensor"):
        flow.is_complex([1.0])
