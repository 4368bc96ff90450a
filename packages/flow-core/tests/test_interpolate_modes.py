"""interpolate's bicubic, area and nearest-exact modes and antialias=True against torch: values and
gradients (float64, so the resampling weights agree to rounding), up and down, align_corners, and errors."""
import numpy as np
import pytest
import torch

import oneflow as flow
from helpers import check_vs_torch

CASES = [dict(size=(8, 9), mode="bilinear", antialias=True), dict(size=(8, 9), mode="bicubic", antialias=True),
         dict(size=(40, 50), mode="bicubic"), dict(size=(40, 50), mode="bicubic", align_corners=True),
         dict(scale_factor=0.5, mode="bilinear", antialias=True), dict(size=(40, 7), mode="bilinear", antialias=True),
         dict(scale_factor=0.3, mode="bicubic"), dict(size=(8, 9), mode="area"),
         dict(size=(30, 11), mode="nearest-exact"), dict(scale_factor=1.7, mode="nearest-exact"),
         dict(size=(5, 30), mode="bicubic", antialias=True)]


@pytest.mark.parametrize("kw", CASES, ids=[str(i) for i in range(len(CASES))])
def test_matches_torch(kw):
    x = np.random.default_rng(4).standard_normal((2, 3, 17, 23))
    check_vs_torch(lambda t: flow.nn.functional.interpolate(t, **kw),
                   lambda t: torch.nn.functional.interpolate(t, **kw), [x], rtol=1e-9, atol=1e-11)


def test_other_ranks_and_errors():
    x = np.random.default_rng(5).standard_normal((2, 3, 10))
    check_vs_torch(lambda t: flow.nn.functional.interpolate(t, size=4, mode="area"),
                   lambda t: torch.nn.functional.interpolate(t, size=4, mode="area"), [x], rtol=1e-12)
    check_vs_torch(lambda t: flow.nn.functional.interpolate(t, size=17, mode="nearest-exact"),
                   lambda t: torch.nn.functional.interpolate(t, size=17, mode="nearest-exact"), [x], rtol=1e-12)
    up = flow.nn.Upsample(scale_factor=2, mode="bicubic")(flow.tensor(np.ones((1, 1, 3, 3))))
    np.testing.assert_allclose(up.numpy(), np.ones((1, 1, 6, 6)), rtol=1e-12)
    with pytest.raises(ValueError, match="Anti-alias option is restricted to bilinear and bicubic modes"):
        flow.nn.functional.interpolate(flow.ones(1, 1, 4), size=2, mode="linear", antialias=True)
    with pytest.raises(NotImplementedError, match="bicubic mode needs 4D input"):
        flow.nn.functional.interpolate(flow.ones(1, 1, 4), size=2, mode="bicubic")
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        flow.nn.functional.interpolate(flow.ones(1, 1, 4, 4), size=2, mode="area", align_corners=True)


# scale factors whose output keeps a dim's size (7 * 1.1 -> 7) or doubles it (7 * 2.1 -> 14): torch's linear and
# antialiased kernels copy a kept dim, its 2-D nearest kernel copies or halves indices, its 1-D and 3-D nearest
# kernels and bicubic apply the scale
SCALE_CASES = [(mode, nd, sf, aa) for mode, nd in (("nearest", 1), ("nearest", 2), ("nearest", 3), ("linear", 1),
                                                   ("bilinear", 2), ("trilinear", 3), ("bicubic", 2))
               for sf in (1.1, 2.1, 0.99) for aa in ((False, True) if mode in ("bilinear", "bicubic") else (False,))]


@pytest.mark.parametrize("mode,nd,sf,aa", SCALE_CASES, ids=[f"{m}{n}-{s}-{a}" for m, n, s, a in SCALE_CASES])
def test_scale_factor_that_keeps_or_doubles_a_size_matches_torch(mode, nd, sf, aa):
    x = np.random.default_rng(5).standard_normal((1, 2) + (7, 10, 5)[:nd])
    kw = dict(scale_factor=sf, mode=mode, antialias=aa)
    # torch's 1-D/3-D nearest and antialias backward kernels copy a kept dim (and halve indices of a doubled one)
    # while their forwards apply the scale, so their gradients are not the forwards' adjoints: compare
    # gradients only where torch's are
    torch_adjoint = not aa and not (mode == "nearest" and nd != 2)
    check_vs_torch(lambda t: flow.nn.functional.interpolate(t, **kw),
                   lambda t: torch.nn.functional.interpolate(t, **kw), [x], grad=torch_adjoint, rtol=1e-9,
                   atol=1e-11)
    # every mode is linear in x, so the gradient must satisfy <g, f(x)> == <grad, x>
    xt = flow.tensor(x, requires_grad=True)
    y = flow.nn.functional.interpolate(xt, **kw)
    g = np.random.default_rng(6).standard_normal(tuple(y.shape))
    y.backward(flow.tensor(g))
    np.testing.assert_allclose((g * y.detach().numpy()).sum(), (xt.grad.numpy() * x).sum(), rtol=1e-10)


@pytest.mark.parametrize("mode,aa", [("bilinear", False), ("bilinear", True), ("bicubic", False), ("bicubic", True)])
@pytest.mark.parametrize("size", [(31, 11), (8, 40), (34, 46)])
def test_uint8_images_resize_like_torch_within_one_level(mode, aa, size):
    # torch's uint8 kernels use fixed-point weights: ours (float weights, each pass rounded and clamped) may
    # differ by 1 on a few pixels, never more; bicubic overshoot is clamped between the passes as in torch
    a = np.random.default_rng(1).integers(0, 256, (2, 3, 17, 23)).astype("uint8")
    got = flow.nn.functional.interpolate(flow.tensor(a), size=size, mode=mode, antialias=aa)
    want = torch.nn.functional.interpolate(torch.tensor(a), size=size, mode=mode, antialias=aa).numpy()
    assert got.dtype == flow.uint8
    diff = np.abs(got.numpy().astype(int) - want.astype(int))
    assert diff.max() <= 1 and (diff > 0).mean() < 0.03


@pytest.mark.parametrize("dtype,kw,kernel", [
    ("int64", dict(size=(7, 3), mode="bicubic"), "compute_indices_weights_cubic"),
    ("int32", dict(size=(7, 3), mode="bilinear", antialias=True), "compute_index_ranges_weights"),
    ("int64", dict(size=(7, 3), mode="bilinear"), None),
    ("uint8", dict(size=7, mode="linear"), "compute_indices_weights_linear")])
def test_integer_resizes_torch_lacks_raise_not_implemented(dtype, kw, kernel):
    a = np.arange(40).reshape(1, 2, 4, 5).astype(dtype)
    if kw["mode"] == "linear":
        a = a[0]
    for M in (flow, torch):
        with pytest.raises(NotImplementedError, match=f'"{kernel}" not implemented' if kernel else "not implemented"):
            M.nn.functional.interpolate(M.tensor(a), **kw)
