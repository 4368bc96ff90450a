"""Bit-level dtype behaviour: ``Tensor.view(dtype)`` and the float <-> 16-bit float casts, against PyTorch."""
import numpy as np
import pytest
import torch

import oneflow as flow

rng = np.random.default_rng(3)


def special_floats():
    """Values that probe every branch of a 16-bit cast: signed zeros, float16 subnormals and overflow, ties,
    infinities and NaNs with payloads and both signs, between random normals; 67 of them, so that the
    vectorised runs of 8 and 16 lanes end in a scalar tail."""
    bits = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF812345, 0x7FBFFFFF], dtype=np.uint32)
    vals = np.concatenate([
        np.array([0.0, -0.0, 1.0, -1.0, 65504.0, 65520.0, 65519.99, 1e6, -1e6, 6e-8, 3e-8, 2.98e-8, -6.1e-5,
                  1e-40, np.inf, -np.inf, 1 + 2 ** -11, 1 + 3 * 2 ** -11, 1 + 2 ** -8, 1 + 3 * 2 ** -8], np.float32),
        bits.view(np.float32),  # (a float64 detour would change the signalling NaNs' bits)
        rng.standard_normal(42).astype(np.float32) * 100,
    ])
    assert vals.size == 67
    return vals


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_float32_to_16_bit_casts_match_torch_bit_for_bit(dtype):
    x = special_floats()
    got = flow.tensor(x).to(getattr(flow, dtype)).view(flow.int16).numpy()
    want = torch.tensor(x).to(getattr(torch, dtype)).view(torch.int16).numpy()
    if dtype == "bfloat16":
        # NaN bits differ between PyTorch's own bfloat16 casts (0xFFFF vectorised, 0x7FC0 scalar); ours is
        # c10::BFloat16's 0x7FC0
        nan = np.isnan(x)
        np.testing.assert_array_equal(got[nan], np.int16(0x7FC0))
        got, want = got[~nan], want[~nan]
    np.testing.assert_array_equal(got, want)
    # and back: exact, NaNs included
    back = flow.tensor(x).to(getattr(flow, dtype)).to(flow.float32).view(flow.int32).numpy()
    want_back = torch.tensor(x).to(getattr(torch, dtype)).to(torch.float32).view(torch.int32).numpy()
    keep = ~np.isnan(x) if dtype == "bfloat16" else slice(None)
    np.testing.assert_array_equal(back[keep], want_back[keep])


def test_float16_to_float32_is_exact_for_every_bit_pattern():
    h = np.arange(1 << 16, dtype=np.uint16).view(np.int16)
    got = flow.tensor(h).view(flow.float16).to(flow.float32).view(flow.int32).numpy()
    want = torch.tensor(h).view(torch.float16).to(torch.float32).view(torch.int32).numpy()
    np.testing.assert_array_equal(got, want)


def test_view_dtype_same_size_shares_memory():
    x = flow.tensor([1.0, -2.0, 0.5])
    i = x.view(flow.int32)
    np.testing.assert_array_equal(i.numpy(), np.array([1.0, -2.0, 0.5], np.float32).view(np.int32))
    i[0] = 0  # writes through
    assert x[0].item() == 0.0
    assert i.data_ptr() == x.data_ptr()


@pytest.mark.parametrize("src,dst", [("float32", "float16"), ("float16", "float32"), ("float64", "int16"),
                                     ("uint8", "int32"), ("int32", "uint8")])
def test_view_dtype_other_size_matches_torch(src, dst):
    a = rng.standard_normal((3, 8)).astype(np.float32)
    t = torch.tensor(a).view(torch.uint8).view(getattr(torch, src))
    f = flow.tensor(a).view(flow.uint8).view(getattr(flow, src))
    cut = t.shape[1] % 4 == 0
    for tv, fv in ((t, f), (t[1:], f[1:]), (t[:, :4] if cut else t, f[:, :4] if cut else f)):
        try:
            want = tv.view(getattr(torch, dst))
        except RuntimeError as e:
            with pytest.raises(RuntimeError, match=str(e).split(" to view")[0].replace("(", r"\(").replace(")", r"\)")):
                fv.view(getattr(flow, dst))
            continue
        got = fv.view(getattr(flow, dst))
        assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride()
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_view_dtype_refuses_what_torch_refuses_and_never_requires_grad():
    x = flow.randn(2, 4, requires_grad=True)
    assert not x.view(flow.float32).requires_grad and not x.view(flow.int32).requires_grad
    with pytest.raises(RuntimeError, match=r"self.dim\(\) cannot be 0 to view Float as Half"):
        flow.tensor(1.0).view(flow.float16)
    with pytest.raises(RuntimeError, match=r"self.stride\(-1\) must be 1 to view Float as Half .*but got 4"):
        flow.randn(4, 4).t().view(flow.float16)
    with pytest.raises(RuntimeError, match=r"self.size\(-1\) must be divisible by 2 to view Half as Float"):
        flow.randn(3, dtype=flow.float16).view(flow.float32)
    with pytest.raises(RuntimeError, match=r"self.storage_offset\(\) must be divisible by 2"):
        flow.randn(5, dtype=flow.float16)[1:].view(flow.float32)
    with pytest.raises(RuntimeError, match=r"self.stride\(0\) must be divisible by 2 .*but got 3"):
        flow.randn(3, 3, dtype=flow.float16)[:, :2].view(flow.float32)
