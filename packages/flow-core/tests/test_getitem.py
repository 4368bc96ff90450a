"""Tensor.__getitem__/__setitem__ against PyTorch: basic, advanced and mixed indexing, views, autograd, errors."""
import numpy as np
import pytest

import oneflow as flow
from helpers import assert_close, check_vs_torch, gradcheck, torch


def _conv(ix, lib):
    """The same index expression for flow or torch (tensors given as ('T', ndarray))."""
    if isinstance(ix, tuple) and not (len(ix) == 2 and ix[0] == "T"):
        return tuple(_conv(i, lib) for i in ix)
    if isinstance(ix, tuple):
        return lib.tensor(ix[1])
    return ix


def T(a):
    return ("T", np.asarray(a))


A = np.arange(120, dtype=np.float64).reshape(2, 3, 4, 5)
EXPRS = [
    0, -1, 1, (1, 2), (1, -1, 2, 0), slice(None), slice(1, None), slice(None, None, 2), (slice(None), slice(1, 3)),
    (Ellipsis, 1), (Ellipsis, slice(0, 4, 3)), (None,), (None, 1, None), (1, None, Ellipsis, None), (Ellipsis,),
    (slice(5, 10),), (slice(-2, None), slice(-100, 100)), True, False, (0, True), (Ellipsis, None),
    [1, 0], [[0, 1], [1, 1]], T([1, 0, 1]), (slice(None), [0, 2]), (slice(None), [0, 2], [1, 3]),
    ([0, 1], slice(None), [1, 3]), ([0, 1], slice(None), slice(None), [1, 3]), (1, slice(None), [0, 2]),
    (1, slice(None), [0, 2], slice(None)), ([0, 1], 1, slice(None), [0, 1]), (slice(None), 1, [0, 2]),
    (Ellipsis, [0, 2]), (Ellipsis, [0, 2], slice(None)), (None, [0, 1], None, [1, 2]), ([[0], [1]], slice(None), [0, 1, 2]),
    (slice(None), [0, 2], None), (T(np.array([1, 0], dtype=np.int32)),), (slice(None, None, 2), [0, 1, 2], slice(1, 3)),
    (T(A[:, 0, 0, 0] > 10),), (T(A[:, :, 0, 0] > 20),), (slice(None), T(A[0, :, :, 0] > 20)), (T(A[..., 0] > 50),),
    (T(A > 60),), (1, T(A[0, :, 0, 0] > 10), [0, 3]), ([0], T(A[0, :, 0, 0] > 10)), (T(np.array(True)),),
    (T(np.array(False)), 0), (T(np.array(1)),), (T(np.array([], dtype=np.int64)),), ([],),
    (slice(None), T(np.array([[-1, 0], [2, -3]]))), (np.int64(1), np.array([0, 1])),
]


@pytest.mark.parametrize("ix", EXPRS, ids=[str(i)[:40] for i in range(len(EXPRS))])
def test_getitem_matches_torch(ix):
    f, t = flow.tensor(A), torch.tensor(A)
    fr, tr = f[_conv(ix, flow)], t[_conv(ix, torch)]
    assert_close(fr, tr)


@pytest.mark.parametrize("ix", EXPRS[::3], ids=[str(i)[:40] for i in range(len(EXPRS[::3]))])
def test_getitem_backward(ix):
    check_vs_torch(lambda x: x[_conv(ix, flow)], lambda x: x[_conv(ix, torch)], [A])


def test_getitem_noncontiguous_and_views():
    f, t = flow.tensor(A).permute(3, 1, 0, 2), torch.tensor(A).permute(3, 1, 0, 2)
    for ix in [(1, slice(None), [1, 0]), (slice(1, None, 2), 0), ([0, 4], [2, 1]), (Ellipsis, [3, 0])]:
        assert_close(f[ix], t[ix])
    x = flow.zeros(4, 5)
    v = x[1:3, ::2]
    assert v.shape == (2, 3)
    v.fill_(7)  # shares storage
    assert x.numpy()[1:3, ::2].tolist() == [[7.0] * 3] * 2
    assert x.numpy()[0].tolist() == [0.0] * 5
    s = x[2]
    s[1] = 9
    assert x.numpy()[2, 1] == 9
    e = x[...]
    assert e.shape == x.shape and e is not x
    e[0, 0] = 3
    assert x.numpy()[0, 0] == 3
    # advanced indexing copies
    c = x[[0, 1]]
    c[0, 0] = -1
    assert x.numpy()[0, 0] == 3


def test_zero_size_and_0dim():
    f, t = flow.zeros(0, 3), torch.zeros(0, 3)
    for ix in [(slice(None), 1), ([],), (Ellipsis, [0, 2]), (slice(None), slice(1, 2))]:
        assert_close(f[_conv(ix, flow)], t[_conv(ix, torch)])
    s = flow.tensor(5.0)
    assert_close(s[...], torch.tensor(5.0))
    assert_close(s[None], torch.tensor(5.0)[None])
    assert_close(s[True], torch.tensor(5.0)[True])
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        s[0]


def test_getitem_errors():
    x = flow.tensor(A)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 2"):
        x[5]
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 1 with size 3"):
        x[0, -4]
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 2"):
        x[[0, 3]]
    with pytest.raises(IndexError, match="index -7 is out of bounds"):
        x[:, :, flow.tensor([-7])]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        x[::0]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 4"):
        x[0, 0, 0, 0, 0]
    with pytest.raises(IndexError, match="only integers, slices"):
        x[1.5]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        x[flow.tensor([1.0])]
    with pytest.raises(IndexError, match="The shape of the mask \\[3\\] at index 0 does not match"):
        x[flow.tensor([True, False, True])]
    with pytest.raises(IndexError, match="shape mismatch: indexing tensors could not be broadcast together"):
        x[[0, 1], [0, 1, 2]]
    # PyTorch (unlike NumPy) accepts several ellipses; see test_index_view_parity.py
    assert x[..., 0, ...].shape == torch.zeros(2, 3, 4, 5)[..., 0, ...].shape


SET_CASES = [
    (1, 5.0), ((0, 1), np.ones(5)), (slice(None), np.arange(5.0)), ((Ellipsis, 2), -1.0), ([0, 1], 3.0),
    ((slice(None), [0, 2]), np.arange(20.0).reshape(4, 5)), ((0, [0, 2], [1, 3]), np.array([[7.0], [8.0]])),
    (T(A[..., 0] > 50), np.arange(5.0)), ((slice(None), slice(1, None, 2)), np.ones((1, 1, 4, 5))),
    ((None, 0), np.ones((1, 3, 4, 5))), ((1, slice(None), [0, 1]), np.ones((3, 1, 5))), (True, 2.0),
]


@pytest.mark.parametrize("ix,val", SET_CASES, ids=[str(i) for i in range(len(SET_CASES))])
def test_setitem_matches_torch(ix, val):
    f, t = flow.tensor(A), torch.tensor(A)
    fv = flow.tensor(val) if isinstance(val, np.ndarray) else val
    tv = torch.tensor(val) if isinstance(val, np.ndarray) else val
    f[_conv(ix, flow)] = fv
    t[_conv(ix, torch)] = tv
    assert_close(f, t)


@pytest.mark.parametrize("ix,val", SET_CASES, ids=[str(i) for i in range(len(SET_CASES))])
def test_setitem_backward(ix, val):
    """Gradients through a write into a non-leaf, for both the target and the value."""
    def run(lib, a, v):
        y = a * 2
        vv = v * 3 if v is not None else 1.5
        y[_conv(ix, lib)] = vv
        return y * y

    if isinstance(val, np.ndarray):
        check_vs_torch(lambda a, v: run(flow, a, v), lambda a, v: run(torch, a, v), [A, val])
    else:
        check_vs_torch(lambda a: run(flow, a, None), lambda a: run(torch, a, None), [A])


def test_setitem_gradcheck():
    x = flow.tensor(np.random.randn(3, 4), requires_grad=True)
    v = flow.tensor(np.random.randn(2, 4), requires_grad=True)

    def fn(x, v):
        y = x * 1.0
        y[[2, 0]] = v * v
        z = y * 1.0
        z[1:, 1] = v[0, :2]
        return z

    gradcheck(fn, [x, v])


def test_setitem_dtype_version_and_errors():
    x = flow.zeros(3, 4, dtype=flow.int32)
    v0 = x._version
    x[1] = 2.7  # cast like torch
    assert x._version > v0
    x[[0, 2], 1] = 5.9
    x[[0], 2] = flow.tensor([3], dtype=flow.int32)
    t = torch.zeros(3, 4, dtype=torch.int32)
    t[1] = 2.7
    t[[0, 2], 1] = 5.9
    t[[0], 2] = torch.tensor([3], dtype=torch.int32)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match, got Int for "
                                           "the destination and Float for the source"):
        x[[0, 2], 1] = flow.tensor([5.9, 6.1])
    assert_close(x, t)
    with pytest.raises(RuntimeError):
        x[0] = flow.ones(5)
    with pytest.raises(RuntimeError, match="shape mismatch: value tensor of shape \\[2\\] cannot be broadcast"):
        x[[0, 1, 2]] = flow.ones(2, dtype=flow.int32)
    with pytest.raises(IndexError, match="index 3 is out of bounds"):
        x[3] = 1
    with pytest.raises(IndexError, match="index 7 is out of bounds"):
        x[[7]] = 1
    assert_close(x, t)  # failed writes left it untouched
    leaf = flow.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        leaf[0] = 2.0
    with flow.no_grad():
        leaf[0] = 2.0
    assert leaf.detach().numpy().tolist() == [2.0, 1.0, 1.0]


def test_setitem_through_view_shares_storage():
    base = flow.zeros(4, 6)
    v = base.t()[1:4]  # non-contiguous view
    v[0] = 1.0
    v[:, [0, 2]] = 5.0
    b = torch.zeros(4, 6)
    tv = b.t()[1:4]
    tv[0] = 1.0
    tv[:, [0, 2]] = 5.0
    assert_close(base, b)


def test_setitem_through_views_of_a_graph_matches_torch():
    res = []
    for lib in (flow, torch):
        x = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = x * 2
        z = y[0]
        z[1] = 5
        w = lib.tensor([1.0, 2.0], requires_grad=True)
        y[1, :2] = w * w
        y[:, 2] += 1
        (y * y).sum().backward()
        res.append((y, x.grad, w.grad))
    for a, b in zip(*res):
        assert np.allclose(a.detach().numpy(), b.detach().numpy())
