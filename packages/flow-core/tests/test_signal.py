"""Window functions, trapezoidal integration, histogram, unravel_index and frombuffer against torch."""
import numpy as np
import pytest

import oneflow as flow

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("name,kw", [("hann_window", {}), ("hamming_window", {}),
                                     ("hamming_window", dict(alpha=0.5, beta=0.4)), ("blackman_window", {}),
                                     ("bartlett_window", {}), ("kaiser_window", {}),
                                     ("kaiser_window", dict(beta=3.0))])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_match_torch(name, kw, n, periodic):
    for dt in ("float32", "float64"):
        got = getattr(flow, name)(n, periodic, dtype=getattr(flow, dt), **kw)
        want = getattr(torch, name)(n, periodic, dtype=getattr(torch, dt), **kw)
        assert str(got.dtype).endswith(dt)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
    with pytest.raises(RuntimeError, match="expects floating point dtypes"):
        getattr(flow, name)(4, dtype=flow.int64)


@pytest.mark.parametrize("fn", ["trapezoid", "cumulative_trapezoid"])
@pytest.mark.parametrize("case", ["plain", "dx", "x1d", "xfull", "dim0"])
def test_trapezoid_values_and_gradients_match_torch(fn, case):
    rng = np.random.default_rng(0)
    y, x1, xf = rng.standard_normal((3, 5)), np.cumsum(rng.random(5)), np.cumsum(rng.random((3, 5)), axis=1)
    res = []
    for M in (flow, torch):
        Y = M.tensor(y, requires_grad=True)
        kw = {"plain": {}, "dx": dict(dx=0.5), "x1d": dict(x=M.tensor(x1)), "xfull": dict(x=M.tensor(xf)),
              "dim0": dict(dim=0)}[case]
        out = getattr(M, fn)(Y, **kw)
        out.sum().backward()
        res.append((out.detach().numpy(), Y.grad.numpy()))
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    assert flow.trapz(flow.tensor([1.0, 2.0, 3.0]), dx=2.0).item() == 8.0


def test_histogram_unravel_index_frombuffer_like_torch():
    for M in (flow, torch):
        h = M.histogram(M.tensor([1.0, 2.0, 1.0]), bins=4, range=(0.0, 3.0))
        assert h.hist.tolist() == [0.0, 2.0, 1.0, 0.0] and h.bin_edges.tolist() == [0.0, 0.75, 1.5, 2.25, 3.0]
        w = M.histogram(M.tensor([1.0, 2.0, 1.0, 5.0]), bins=M.tensor([0.0, 1.0, 2.0, 6.0]),
                        weight=M.tensor([1.0, 2.0, 3.0, 4.0]))
        assert w.hist.tolist() == [0.0, 4.0, 6.0]
        coords = M.unravel_index(M.tensor([4, 1, -1]), (2, 3))
        assert [c.tolist() for c in coords] == [[1, 0, 1], [1, 1, 2]]
        buf = bytearray(np.arange(4, dtype=np.float32).tobytes())
        t = M.frombuffer(buf, dtype=M.float32, offset=4)
        assert t.tolist() == [1.0, 2.0, 3.0]
        buf[4:8] = np.float32(9.0).tobytes()  # shares the buffer's memory
        assert t[0].item() == 9.0
