"""``oneflow.testing``: assert_close's acceptance rules and failure messages (text compared with PyTorch's),
the deprecated assert_allclose, and make_tensor's ranges, layouts and errors."""
import collections
import warnings

import numpy as np
import pytest

import oneflow as flow

torch = pytest.importorskip("torch")


def outcome(fn):
    """``"OK"`` or the exception's type and message, with the frameworks' names removed."""
    try:
        fn()
        return "OK"
    except Exception as e:  # noqa: BLE001 - comparing whatever both frameworks raise
        return f"{type(e).__name__}: {e}".replace("torch.", "X.").replace("oneflow._tensor.", "X.") \
            .replace("oneflow.", "X.")


def same_outcome(case):
    f, t = outcome(lambda: case(flow)), outcome(lambda: case(torch))
    assert f == t, f"\noneflow: {f}\ntorch:   {t}"
    return f


CASES = [
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0, 3.0]), M.tensor([1.0, 2.5, 3.0])),
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0, 3.0]), M.tensor([1.0, 2.0, 3.0]) + 1e-7),
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0, 3.0]), M.tensor([1.1, 2.0, 0.0])),
    lambda M: M.testing.assert_close(M.tensor([[1, 2], [3, 4]]), M.tensor([[1, 2], [5, 4]])),
    lambda M: M.testing.assert_close(M.tensor([[1, 2], [3, 4]]), M.tensor([[1, 2], [3, 0]])),
    lambda M: M.testing.assert_close(M.tensor(1.0), M.tensor(2.0)),
    lambda M: M.testing.assert_close(M.tensor(1), M.tensor(2)),
    lambda M: M.testing.assert_close(M.tensor([1.0, float("nan")]), M.tensor([1.0, float("nan")])),
    lambda M: M.testing.assert_close(M.tensor([1.0, float("nan")]), M.tensor([1.0, float("nan")]), equal_nan=True),
    lambda M: M.testing.assert_close(M.tensor([1.0, float("inf")]), M.tensor([1.0, float("-inf")])),
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0]), M.tensor([1.0, 2.0], dtype=M.float64)),
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0]), M.tensor([1.0, 2.000001], dtype=M.float64),
                                     check_dtype=False),
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0]), M.tensor([1.0, 2.1], dtype=M.float64), check_dtype=False),
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0]), M.tensor([1.0, 2.0, 3.0])),
    lambda M: M.testing.assert_close(M.ones(2, 3).t(), M.ones(3, 2), check_stride=True),
    lambda M: M.testing.assert_close(M.ones(2, 3).t(), M.ones(3, 2)),
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0]), M.tensor([1.0, 2.5]), rtol=0.3, atol=0),
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0]), M.tensor([1.0, 2.5]), rtol=0.3),
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0]), M.tensor([1.0, 2.5]), atol=0.3),
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0]), M.tensor([1.0, 2.5]), rtol=0, atol=0),
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0]), M.tensor([1.0, 2.5]), msg="custom"),
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0]), M.tensor([1.0, 2.5]), msg=lambda m: f"H\n{m}\nF"),
    lambda M: M.testing.assert_close([M.tensor(1.0), M.tensor([1.0, 2.0])], [M.tensor(1.0), M.tensor([1.0, 3.0])]),
    lambda M: M.testing.assert_close({"a": M.tensor(1.0), "b": [1, 2]}, {"a": M.tensor(1.0), "b": [1, 3]}),
    lambda M: M.testing.assert_close({"a": 1, "b": 2}, {"a": 1, "c": 2}),
    lambda M: M.testing.assert_close(collections.OrderedDict(a=1), {"a": 1}),
    lambda M: M.testing.assert_close([1, 2], [1, 2, 3]),
    lambda M: M.testing.assert_close((1, [2, 3.0]), [1, (2, 3.0)]),
    lambda M: M.testing.assert_close([M.tensor([1.0]), 3], [M.tensor([2.0]), (1, 2)]),
    lambda M: M.testing.assert_close(1, 1.0),
    lambda M: M.testing.assert_close(1, 1.0, check_dtype=False),
    lambda M: M.testing.assert_close(1.0, 1.1),
    lambda M: M.testing.assert_close(1.0, 1.0 + 1e-9),
    lambda M: M.testing.assert_close(1.0, 0.0),
    lambda M: M.testing.assert_close(float("nan"), float("nan")),
    lambda M: M.testing.assert_close(float("nan"), float("nan"), equal_nan=True),
    lambda M: M.testing.assert_close(3, np.int64(3)),
    lambda M: M.testing.assert_close(True, False),
    lambda M: M.testing.assert_close(None, None),
    lambda M: M.testing.assert_close(None, 1),
    lambda M: M.testing.assert_close("a", "a"),
    lambda M: M.testing.assert_close(np.array([1.0, 2.0]), np.array([1.0, 2.5])),
    lambda M: M.testing.assert_close(np.array([1.0, 2.0]), M.tensor([1.0, 2.0])),
    lambda M: M.testing.assert_close(M.tensor(1.0), 1.0),
    lambda M: M.testing.assert_close(M.nn.Parameter(M.ones(2)), M.ones(2)),
    lambda M: M.testing.assert_close(M.nn.Parameter(M.ones(2)), M.ones(2), allow_subclasses=False),
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0], dtype=M.float16), M.tensor([1.0, 2.001], dtype=M.float16)),
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0], dtype=M.float16), M.tensor([1.0, 2.01], dtype=M.float16)),
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0], dtype=M.bfloat16), M.tensor([1.0, 2.1], dtype=M.bfloat16)),
    lambda M: M.testing.assert_close(M.tensor([True, False]), M.tensor([True, True])),
    lambda M: M.testing.assert_close(M.tensor([1, 2], dtype=M.uint8), M.tensor([1, 0], dtype=M.uint8)),
    lambda M: M.testing.assert_close(M.arange(1000.0), M.arange(1000.0) * (1 + (M.arange(1000.0) % 7 == 0) * 1e-3)),
    lambda M: M.testing.assert_close(M.tensor([1.0, 2.0], requires_grad=True), M.tensor([1.0, 2.0])),
    lambda M: M.testing.assert_close(M.zeros(0), M.zeros(0)),
]


@pytest.mark.parametrize("case", CASES)
def test_assert_close_matches_torch(case):
    same_outcome(case)


def test_assert_close_message_format():
    with pytest.raises(AssertionError) as info:
        flow.testing.assert_close([flow.tensor(1.0), {"w": flow.tensor([[1.0, 2.0], [3.0, 4.0]])}],
                                  [flow.tensor(1.0), {"w": flow.tensor([[1.0, 2.0], [3.0, 5.0]])}])
    assert str(info.value) == (
        "Tensor-likes are not close!\n\n"
        "Mismatched elements: 1 / 4 (25.0%)\n"
        "Greatest absolute difference: 1.0 at index (1, 1) (up to 1e-05 allowed)\n"
        "Greatest relative difference: 0.20000000298023224 at index (1, 1) (up to 1.3e-06 allowed)\n\n"
        "The failure occurred for item [1]['w']")


@pytest.mark.parametrize("case", [
    lambda M: M.testing.assert_allclose(M.tensor([1.0, 2.0]), [1.0, 2.00001]),
    lambda M: M.testing.assert_allclose(M.tensor([1.0, 2.0]), [1.0, 2.01]),
    lambda M: M.testing.assert_allclose(M.tensor([1.0, float("nan")]), [1.0, float("nan")]),
    lambda M: M.testing.assert_allclose([1, 2], [1, 3]),
    lambda M: M.testing.assert_allclose(M.tensor([1.0, 2.0]), M.tensor([1, 2])),
    lambda M: M.testing.assert_allclose(M.tensor([1.0, 2.0]), [1.0, 2.5], rtol=0.3),
    lambda M: M.testing.assert_allclose(M.tensor([1.0, 2.0]), [1.0, 2.5], msg="boom"),
])
def test_assert_allclose_matches_torch(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        same_outcome(case)
    with pytest.warns(FutureWarning, match="assert_allclose\\(\\)` is deprecated"):
        flow.testing.assert_allclose(flow.ones(1), flow.ones(1))


MAKE_CASES = [
    lambda M: tuple(M.testing.make_tensor(2, 3, dtype=M.float32, device="cpu").shape),
    lambda M: tuple(M.testing.make_tensor((2, 3), dtype=M.float64, device="cpu").shape),
    lambda M: M.testing.make_tensor([4], dtype=M.int64, device="cpu", low=3, high=4).tolist(),
    lambda M: M.testing.make_tensor(3, dtype=M.int64, device="cpu", requires_grad=True),
    lambda M: M.testing.make_tensor(3, dtype=M.bool, device="cpu", requires_grad=True),
    lambda M: M.testing.make_tensor(3, dtype=M.float32, device="cpu", low=2, high=1),
    lambda M: M.testing.make_tensor(3, dtype=M.float32, device="cpu", low=float("nan")),
    lambda M: M.testing.make_tensor(3, dtype=M.uint8, device="cpu", low=-5, high=-1),
    lambda M: M.testing.make_tensor(3, dtype=M.int32, device="cpu", low=1, high=1),
    lambda M: M.testing.make_tensor(3, dtype=M.float32, device="cpu", noncontiguous=True,
                                    memory_format=M.contiguous_format),
    lambda M: M.testing.make_tensor(3, 4, dtype=M.float32, device="cpu", noncontiguous=True).is_contiguous(),
    lambda M: M.testing.make_tensor(1, dtype=M.float32, device="cpu", noncontiguous=True).is_contiguous(),
    lambda M: M.testing.make_tensor(2, 3, 4, 5, dtype=M.float32, device="cpu", memory_format=M.channels_last).stride(),
    lambda M: (lambda t: (t.requires_grad, t.is_leaf))(
        M.testing.make_tensor(3, dtype=M.float32, device="cpu", requires_grad=True)),
    lambda M: sorted(set(M.testing.make_tensor(2000, dtype=M.uint8, device="cpu").tolist())),
    lambda M: sorted(set(M.testing.make_tensor(2000, dtype=M.int16, device="cpu").tolist())),
    lambda M: sorted(set(M.testing.make_tensor(200, dtype=M.bool, device="cpu").tolist())),
    lambda M: sorted(set(M.testing.make_tensor(200, dtype=M.int64, device="cpu", low=0.5, high=2.5).tolist())),
    lambda M: bool((M.testing.make_tensor(500, dtype=M.int8, device="cpu", low=-1, high=1, exclude_zero=True)
                    != 0).all()),
    lambda M: M.testing.make_tensor(50, dtype=M.float16, device="cpu", low=0, high=1e-9,
                                    exclude_zero=True).min().item(),
    lambda M: (lambda t: (t.min().item() >= -9, t.max().item() < 9))(
        M.testing.make_tensor(1000, dtype=M.float64, device="cpu")),
    lambda M: bool(M.isfinite(M.testing.make_tensor(100, dtype=M.float32, device="cpu", low=-1e39, high=1e39)).all()),
]


@pytest.mark.parametrize("case", MAKE_CASES)
def test_make_tensor_matches_torch(case):
    def result(M):
        try:
            return "ok", case(M)
        except Exception as e:  # noqa: BLE001 - comparing whatever both frameworks raise
            return type(e).__name__, str(e).replace("torch.", "X.").replace("oneflow.", "X.")

    assert result(flow) == result(torch)


def test_make_tensor_low_equal_high_warns():
    with pytest.warns(FutureWarning, match="low==high"):
        t = flow.testing.make_tensor(3, dtype=flow.float32, device="cpu", low=2, high=2)
    assert t.tolist() == [2.0] * 3
    with pytest.raises(TypeError, match="not supported by torch.testing.make_tensor"):
        flow.testing.make_tensor(3, dtype="float32", device="cpu")
