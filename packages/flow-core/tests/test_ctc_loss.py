"""nn.CTCLoss / F.ctc_loss against torch: losses and gradients for padded and concatenated targets, every
reduction, repeated labels, impossible alignments with and without zero_infinity, unbatched input,
float64, and the argument errors."""
import numpy as np
import pytest
import torch

import oneflow as flow


def case(seed, T=12, N=4, C=6, S=5):
    g = np.random.default_rng(seed)
    logits = g.standard_normal((T, N, C)).astype(np.float32)
    tl = g.integers(1, S + 1, N)
    il = g.integers(max(tl.max() * 2, 1), T + 1, N)
    targets = g.integers(1, C, (N, S))
    targets[0, :3] = [2, 2, 3]  # a repeat needs a blank between
    return logits, targets, il, tl


def run(lib, logits, targets, il, tl, dtype="float32", **kw):
    x = lib.tensor(logits.astype(dtype), requires_grad=True)
    lp = x.log_softmax(-1)
    lp.retain_grad()
    def as_t(v):
        return v if isinstance(v, (torch.Tensor, flow.Tensor)) else lib.tensor(v)
    loss = lib.nn.functional.ctc_loss(lp, as_t(targets), as_t(il), as_t(tl), **kw)
    loss.sum().backward()
    return loss.detach().numpy(), x.grad.numpy(), lp.grad.numpy()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("blank", [0, 5])
def test_padded_targets_match_torch(reduction, blank):
    logits, targets, il, tl = case(1)
    targets = np.where(targets == blank, (blank + 1) % 6, targets)
    f = run(flow, logits, targets, il, tl, blank=blank, reduction=reduction)
    t = run(torch, logits, targets, il, tl, blank=blank, reduction=reduction)
    for a, b in zip(f, t):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)


def test_concatenated_targets_float64_and_unbatched_match_torch():
    logits, targets, il, tl = case(2)
    flat = np.concatenate([targets[b, :tl[b]] for b in range(len(tl))])
    for a, b in zip(run(flow, logits, flat, il, tl, "float64"), run(torch, logits, flat, il, tl, "float64")):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    one = logits[:, 0]
    f = run(flow, one, targets[0, :tl[0]], int(il[0]), int(tl[0]), reduction="none")
    t = run(torch, one, targets[0, :tl[0]], torch.tensor(int(il[0])), torch.tensor(int(tl[0])), reduction="none")
    for a, b in zip(f, t):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)


def test_impossible_alignments_and_zero_infinity():
    # 3 frames cannot hold 3 labels with two repeats (needs 5): infinite loss, NaN-free zeros with zero_infinity
    logits = np.random.default_rng(3).standard_normal((3, 2, 4)).astype(np.float32)
    targets = np.array([[1, 1, 1], [1, 2, 0]])
    il, tl = np.array([3, 3]), np.array([3, 2])
    f = run(flow, logits, targets, il, tl, reduction="none")
    t = run(torch, logits, targets, il, tl, reduction="none")
    np.testing.assert_array_equal(np.isinf(f[0]), [True, False])
    np.testing.assert_allclose(f[0][1], t[0][1], rtol=1e-5)
    f = run(flow, logits, targets, il, tl, reduction="mean", zero_infinity=True)
    t = run(torch, logits, targets, il, tl, reduction="mean", zero_infinity=True)
    for a, b in zip(f, t):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5)
    assert np.isfinite(f[1]).all()
    # zero-length input: loss 0 for an empty target, inf otherwise
    z = flow.nn.functional.ctc_loss(flow.zeros(4, 2, 3).log_softmax(2), flow.tensor([[1], [1]]), [0, 0], [0, 1],
                                    reduction="none")
    np.testing.assert_array_equal(z.numpy(), [0.0, np.inf])


def test_module_and_errors():
    logits, targets, il, tl = case(4)
    lp = flow.tensor(logits).log_softmax(2)
    m = flow.nn.CTCLoss(blank=0, reduction="sum")
    np.testing.assert_allclose(m(lp, flow.tensor(targets), flow.tensor(il), flow.tensor(tl)).item(),
                               torch.nn.CTCLoss(reduction="sum")(torch.tensor(logits).log_softmax(2), torch.tensor(targets),
                                                                  torch.tensor(il), torch.tensor(tl)).item(), rtol=1e-4)
    F = flow.nn.functional
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, flow.tensor(targets), il.tolist(), tl.tolist(), blank=6)
    with pytest.raises(RuntimeError, match="input_lengths must be of size batch_size"):
        F.ctc_loss(lp, flow.tensor(targets), il.tolist()[:2], tl.tolist())
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 12, but got value 13"):
        F.ctc_loss(lp, flow.tensor(targets), [13] + il.tolist()[1:], tl.tolist())
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 5 at dimension 1, but got size 2"):
        F.ctc_loss(lp, flow.tensor(targets[:, :2]), il.tolist(), [5] + tl.tolist()[1:])
    with pytest.raises(IndexError, match="target 9 is out of bounds for 6 labels"):
        F.ctc_loss(lp, flow.tensor(np.full((4, 5), 9)), il.tolist(), tl.tolist())
