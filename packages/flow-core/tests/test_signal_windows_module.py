"""``oneflow.signal.windows`` against ``torch.signal.windows``: values for symmetric and periodic windows of
several lengths and dtypes, and the argument checks (ValueError / TypeError with PyTorch's messages)."""
import numpy as np
import pytest

import oneflow as flow

torch = pytest.importorskip("torch")

CASES = [("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {}), ("exponential", {"tau": 0.5}),
         ("gaussian", {}), ("gaussian", {"std": 0.7}), ("general_cosine", {"a": [0.46, 0.23, 0.31]}),
         ("general_hamming", {}), ("general_hamming", {"alpha": 0.6}), ("hamming", {}), ("hann", {}),
         ("kaiser", {}), ("kaiser", {"beta": 2.0}), ("nuttall", {})]


@pytest.mark.parametrize("name,kw", CASES)
def test_windows_match_torch(name, kw):
    for m in (0, 1, 2, 5, 8):
        for sym in (True, False):
            for dt in ("float32", "float64"):
                got = getattr(flow.signal.windows, name)(m, sym=sym, dtype=getattr(flow, dt), **kw)
                want = getattr(torch.signal.windows, name)(m, sym=sym, dtype=getattr(torch, dt), **kw)
                assert str(got.dtype) == f"oneflow.{dt}" and tuple(got.shape) == tuple(want.shape)
                np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_window_defaults_and_options():
    w = flow.signal.windows
    assert w.hann(4).dtype == flow.get_default_dtype()
    assert w.hann(4, requires_grad=True).requires_grad
    np.testing.assert_allclose(w.exponential(5, center=1.0, sym=False).numpy(),
                               torch.signal.windows.exponential(5, center=1.0, sym=False).numpy(), rtol=1e-6)
    # sym=False is the periodic window of the top-level functions
    np.testing.assert_allclose(w.hann(7, sym=False).numpy(), flow.hann_window(7, periodic=True).numpy())
    assert sorted(flow.signal.windows.__all__) == sorted(torch.signal.windows.__all__)


@pytest.mark.parametrize("call", [
    lambda M: M.signal.windows.hann(-1), lambda M: M.signal.windows.kaiser(-2),
    lambda M: M.signal.windows.hann(3, dtype=M.float16), lambda M: M.signal.windows.cosine(3, dtype=M.int64),
    lambda M: M.signal.windows.exponential(3, tau=0), lambda M: M.signal.windows.exponential(3, center=1.0),
    lambda M: M.signal.windows.gaussian(3, std=0), lambda M: M.signal.windows.kaiser(3, beta=-1.0),
    lambda M: M.signal.windows.general_cosine(3, a=[]), lambda M: M.signal.windows.general_cosine(3, a=3),
    lambda M: M.signal.windows.bartlett(3, layout=M.sparse_coo),
])
def test_window_errors_match_torch(call):
    results = []
    for M in (flow, torch):
        with pytest.raises((ValueError, TypeError)) as info:
            call(M)
        results.append((info.type, str(info.value).replace("torch.", "").replace("oneflow.", "")))
    assert results[0] == results[1]
