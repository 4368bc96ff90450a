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
