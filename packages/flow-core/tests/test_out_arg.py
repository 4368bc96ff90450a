"""PyTorch's ``out=`` argument on ops that return new tensors, and ``Tensor.resize_`` under it."""
import warnings

import numpy as np
import pytest
import torch

import oneflow as flow
from helpers import assert_close

rng = np.random.default_rng(7)


def r(*shape):
    return rng.standard_normal(shape).astype(np.float32)


CASES = [
    ("sin", lambda L, a, b: (a,), {}),
    ("add", lambda L, a, b: (a, b[0]), {"alpha": 2}),  # broadcast
    ("mul", lambda L, a, b: (a, 3.0), {}),
    ("sum", lambda L, a, b: (a, 1), {}),
    ("mean", lambda L, a, b: (a, 0), {"keepdim": True}),
    ("mm", lambda L, a, b: (a, b.t()), {}),  # a non-contiguous operand
    ("matmul", lambda L, a, b: (a, b.t()), {}),
    ("addmm", lambda L, a, b: (a[:, :1], a, b.t()), {"beta": 0.5}),
    ("clamp", lambda L, a, b: (a, -0.5, 0.5), {}),
    ("cat", lambda L, a, b: ([a, b],), {}),
]


@pytest.mark.parametrize("name,args,kw", CASES, ids=[c[0] for c in CASES])
def test_out_matches_torch_and_returns_out(name, args, kw):
    a, b = r(4, 5), r(4, 5)
    want = getattr(torch, name)(*args(torch, torch.tensor(a), torch.tensor(b)), **kw)
    out = flow.empty(0)  # zero elements: resized silently
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = getattr(flow, name)(*args(flow, flow.tensor(a), flow.tensor(b)), **kw, out=out)
    assert got is out
    assert_close(out, want.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,args,kw", CASES, ids=[c[0] for c in CASES])
def test_out_of_the_result_shape_is_written_directly(name, args, kw):
    # an out of the exact shape and dtype takes the kernel's direct path: same values, same memory
    a, b = r(4, 5), r(4, 5)
    want = getattr(torch, name)(*args(torch, torch.tensor(a), torch.tensor(b)), **kw)
    out = flow.full(tuple(want.shape), float("nan"))
    ptr = out.data_ptr()
    got = getattr(flow, name)(*args(flow, flow.tensor(a), flow.tensor(b)), **kw, out=out)
    assert got is out and out.data_ptr() == ptr
    assert_close(out, want.numpy(), rtol=1e-5, atol=1e-5)


def test_out_sharing_an_inputs_storage_is_computed_before_it_is_written():
    # written directly, these would read inputs their own output had already overwritten
    a = r(64, 64)
    x = flow.tensor(a)
    flow.mm(x, x, out=x)
    assert_close(x, a @ a, rtol=1e-4, atol=1e-4)
    y = flow.tensor(a)
    with pytest.raises(RuntimeError, match="refer to a single memory location"):
        flow.add(y.t(), 1, out=y)  # an elementwise out partly overlapping an input: refused, as in torch
    y = flow.tensor(a)
    flow.cumsum(y.t(), 1, out=y)
    assert_close(y, np.cumsum(a.T, 1), rtol=1e-5, atol=1e-5)
    a = a[:6, :6]
    vals, idx = flow.empty(6), flow.empty(6, dtype=flow.int64)
    flow.max(flow.tensor(a), 1, out=(vals, idx))
    assert_close(vals, a.max(1))
    np.testing.assert_array_equal(idx.numpy(), a.argmax(1))


def test_out_of_the_right_shape_is_written_in_place():
    a = flow.tensor(r(3, 4))
    out = flow.full((3, 4), 7.0)
    ptr, v0 = out.data_ptr(), out._version
    flow.exp(a, out=out)
    assert out.data_ptr() == ptr and out._version > v0
    assert_close(out, np.exp(a.numpy()), rtol=1e-6)
    # out aliasing an input is an in-place update
    flow.add(a, 1, out=a)
    assert_close(a, out.log().numpy() + 1, rtol=1e-5, atol=1e-6)
    # a strided out (a column slice) keeps its memory and leaves the rest alone
    big = flow.zeros(3, 6)
    flow.mul(flow.ones(3, 2), 5, out=big[:, 2:4])
    assert_close(big, np.array([[0, 0, 5, 5, 0, 0]] * 3, np.float32))


def test_out_with_elements_and_another_shape_warns_and_resizes():
    out = flow.empty(2)
    with pytest.warns(UserWarning, match=r"add: an output with one or more elements was resized"):
        flow.add(flow.ones(3, 3), 1, out=out)
    assert tuple(out.shape) == (3, 3)
    assert_close(out, np.full((3, 3), 2, np.float32))


def test_multi_output_ops_take_a_tuple():
    x = r(4, 6)
    v, i = flow.empty(0), flow.empty(0, dtype=flow.int64)
    res = flow.max(flow.tensor(x), 1, out=(v, i))
    assert res.values is v and res.indices is i
    np.testing.assert_array_equal(i.numpy(), x.argmax(1))
    assert_close(v, x.max(1))
    sv, si = flow.empty(0), flow.empty(0, dtype=flow.int64)
    flow.sort(flow.tensor(x), 1, out=(sv, si))
    assert_close(sv, np.sort(x, 1))
    with pytest.raises(TypeError, match=r"argument 'out' must be a tuple of 2 Tensors"):
        flow.max(flow.tensor(x), 1, out=v)


def test_out_dtype_rules_follow_torch():
    x = flow.tensor(r(3))
    with pytest.raises(RuntimeError, match=r"result type Float can't be cast to the desired output type Long"):
        flow.add(x, x, out=flow.empty(3, dtype=flow.int64))
    # integer results cast into a float out, and int32 into int64
    f = flow.empty(3)
    flow.add(flow.ones(3, dtype=flow.int64), 1, out=f)
    assert f.dtype == flow.float32 and f.tolist() == [2.0, 2.0, 2.0]
    i = flow.empty(3, dtype=flow.int64)
    flow.add(flow.ones(3, dtype=flow.int32), 1, out=i)
    assert i.dtype == flow.int64 and i.tolist() == [2, 2, 2]


def test_out_refuses_autograd_and_bad_arguments():
    x = flow.tensor(r(3), requires_grad=True)
    msg = r"add\(\): functions with out=\.\.\. arguments don't support automatic differentiation"
    with pytest.raises(RuntimeError, match=msg):
        flow.add(x, 1, out=flow.empty(3))
    with flow.no_grad():
        o = flow.empty(3)
        flow.add(x, 1, out=o)
    assert not o.requires_grad
    assert_close(o, x.detach().numpy() + 1)
    with pytest.raises(TypeError, match=r"argument 'out' must be Tensor, not int"):
        flow.sin(flow.ones(2), out=3)
    # views and in-place ops have no out=, as in PyTorch
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'out'"):
        flow.transpose(flow.ones(2, 3), 0, 1, out=flow.empty(3, 2))


def test_resize_grows_in_place_and_keeps_values():
    a = flow.arange(6.0)
    v = a[2:]
    assert a.resize_(2, 10) is a
    assert tuple(a.shape) == (2, 10) and a.is_contiguous()
    np.testing.assert_array_equal(a.view(-1)[:6].numpy(), np.arange(6.0))
    np.testing.assert_array_equal(v.numpy(), [2, 3, 4, 5])  # a view still sees the (moved) memory
    a.view(-1)[3] = 30.0
    assert v[1].item() == 30.0
    a.resize_(4)  # shrinking keeps the storage
    np.testing.assert_array_equal(a.numpy(), [0, 1, 2, 30])
    b = flow.zeros(3)
    b.resize_as_(flow.empty(2, 2))
    assert tuple(b.shape) == (2, 2)


def test_resize_refuses_what_torch_refuses():
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        flow.zeros(3, requires_grad=True).resize_(5)
    t = flow.from_numpy(np.zeros(3, np.float32))
    with pytest.raises(RuntimeError, match="Trying to resize storage that is not resizable"):
        t.resize_(10)
    t.resize_(2)  # within the memory it has: allowed
    assert tuple(t.shape) == (2,)
    with pytest.raises(RuntimeError, match="negative dimension"):
        flow.zeros(3).resize_(-1)


def test_creation_ops_resize_out_like_torch():
    out = flow.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert flow.rand(2, 3, out=out) is out
    assert tuple(out.shape) == (2, 3) and ((out >= 0) & (out < 1)).all()
    full = flow.empty(3)
    with pytest.warns(UserWarning, match="was resized since it had shape \\[3\\]"):
        flow.zeros(2, 2, out=full)
    np.testing.assert_array_equal(full.numpy(), np.zeros((2, 2), np.float32))
