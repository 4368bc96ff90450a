"""Indexing, views and in-place writes against PyTorch: the corners where oneflow used to differ (several
ellipses, one-element values through a bool mask, writes into expanded views, error order and types, ``t()``
of vectors, ``squeeze`` of repeated dims, ``take_along_dim`` checks, gradients through ``unfold``/``as_strided``
views written in place, ``data_ptr`` of empty tensors)."""
import numpy as np
import pytest

import oneflow as flow
from helpers import assert_close, torch

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def _both(fn):
    """``fn(lib)`` for oneflow and torch: both results, or both exceptions."""
    out = []
    for lib in (flow, torch):
        try:
            out.append(fn(lib))
        except Exception as e:  # noqa: BLE001 - the exception itself is compared
            out.append(e)
    return out


def _same_error(fn, words):
    f, t = _both(fn)
    assert isinstance(t, Exception), f"torch did not raise: {t}"
    assert type(f) is type(t), (f, t)
    assert words in str(f) and words in str(t), (str(f), str(t))


# ---- getitem / setitem ------------------------------------------------------------------------------------
@pytest.mark.parametrize("ix", [(Ellipsis, 0, Ellipsis), (0, Ellipsis, Ellipsis), ([0], Ellipsis, Ellipsis),
                                (Ellipsis, [1, 0], Ellipsis), (0, Ellipsis, 1, Ellipsis), (Ellipsis, None, Ellipsis),
                                (Ellipsis, Ellipsis)])
def test_several_ellipses(ix):
    f, t = flow.tensor(A), torch.tensor(A)
    assert_close(f[ix], t[ix])
    f[ix], t[ix] = -1.0, -1.0
    assert_close(f, t)


def test_several_ellipses_past_the_end():
    x = np.zeros((2, 3, 4, 5), dtype=np.float32)
    _same_error(lambda lib: lib.tensor(x)[..., ..., 0], "Dimension out of range")
    _same_error(lambda lib: lib.tensor(x)[..., ..., None], "Dimension out of range")
    _same_error(lambda lib: lib.tensor(x)[..., ..., [0]], "too many indices for tensor of dimension 4")


def test_zero_dim_messages():
    _same_error(lambda lib: lib.tensor(1.0)[:], "slice() cannot be applied to a 0-dim tensor")
    _same_error(lambda lib: lib.tensor(1.0).__setitem__(slice(None), 2.0), "slice() cannot be applied")
    _same_error(lambda lib: lib.tensor(1.0)[0, ], "too many indices for tensor of dimension 0")
    _same_error(lambda lib: lib.tensor(1.0)[np.int64(0)], "invalid index of a 0-dim tensor")


def _setitem(ix, value):
    def fn(lib):
        a = lib.tensor(A)
        a[ix(lib) if callable(ix) else ix] = value(lib) if callable(value) else value
        return a
    return fn


@pytest.mark.parametrize("ix,value", [
    (lambda lib: lib.tensor(A) > 10, lambda lib: lib.tensor(7, dtype=lib.int64)),
    (lambda lib: lib.tensor(A) > 10, lambda lib: lib.tensor([[2.5]], dtype=lib.float64)),
    (lambda lib: lib.tensor(A) > 10, lambda lib: lib.tensor(True)),
    (lambda lib: (slice(None), lib.tensor([True, False, True])), lambda lib: lib.tensor(7, dtype=lib.int64)),
    (lambda lib: (Ellipsis, lib.tensor([True, False, True, True])), lambda lib: lib.tensor([3], dtype=lib.int32)),
    (lambda lib: (None, lib.tensor([False, True])), lambda lib: lib.tensor(-1, dtype=lib.int64)),
])
def test_one_element_value_through_a_mask_is_cast(ix, value):
    f, t = _both(_setitem(ix, value))
    assert_close(f, t)


def test_one_element_value_through_a_mask_index_put():
    for fn in (lambda lib, a: a.index_put_((a > 5,), lib.tensor(9, dtype=lib.int64)),
               lambda lib, a: lib.index_put(a, (a > 5,), lib.tensor(9.5, dtype=lib.float64)),
               lambda lib, a: a.index_put((a[:, 0, 0] > 5,), lib.tensor([1], dtype=lib.int64))):
        f, t = _both(lambda lib: fn(lib, lib.tensor(A)))
        assert_close(f, t)
    # accumulating, an integer index or a longer value keep the dtype check
    for fn in (lambda lib, a: a.index_put_((a > 5,), lib.tensor(9, dtype=lib.int64), accumulate=True),
               lambda lib, a: a.index_put_((lib.tensor([1]),), lib.tensor(9, dtype=lib.int64)),
               lambda lib, a: a.__setitem__(a > 5, lib.ones(18, dtype=lib.float64))):
        _same_error(lambda lib: fn(lib, lib.tensor(A)), "Index put requires the source and destination dtypes")


def test_mask_cast_keeps_the_value_gradient():
    out = []
    for lib in (flow, torch):
        v = lib.tensor(2.0, dtype=lib.float64, requires_grad=True)
        a = lib.zeros(2, 3)
        a[lib.tensor([[True, False, True], [False, False, True]])] = v
        (a * lib.arange(6.0).view(2, 3)).sum().backward()
        out.append((a, v.grad))
    assert_close(out[0][0], out[1][0])
    assert_close(out[0][1], out[1][1])


def test_shape_mismatch_reported_before_dtype_mismatch():
    _same_error(_setitem((slice(None), [0, 1]), lambda lib: lib.ones(3, 2, dtype=lib.int64)),
                "value tensor of shape [3, 2] cannot be broadcast to indexing result of shape [2, 2, 4]")
    _same_error(lambda lib: lib.zeros(2, 3).index_put_((lib.tensor([0, 1]), lib.tensor([0, 1])),
                                                        lib.ones(3, dtype=lib.int64)),
                "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [2]")


@pytest.mark.parametrize("ix", [0, slice(None), Ellipsis, (0, slice(1, None))])
def test_setitem_into_expanded_view_refused(ix):
    words = "more than one element of the written-to tensor refers to a single memory location"
    _same_error(lambda lib: lib.ones(3, 1).expand(3, 4).__setitem__(ix, 2.0), words)
    _same_error(lambda lib: lib.ones(3, 1).expand(3, 4).__setitem__(ix, lib.tensor(2.0)), words)


def test_setitem_single_element_of_expanded_view_allowed():
    f, t = _both(lambda lib: (lambda e: (e.__setitem__((1, 2), 5.0), e)[1])(lib.zeros(3, 1).expand(3, 4)))
    assert_close(f, t)


@pytest.mark.parametrize("value", [None, "x", object()])
def test_setitem_value_of_a_bad_type(value):
    f, t = _both(_setitem(0, value))
    assert type(f) is type(t) is TypeError
    assert f"can't assign a {type(value).__name__} to a oneflow.FloatTensor" == str(f)


# ---- take_along_dim ---------------------------------------------------------------------------------------
def test_take_along_dim_checks():
    x = lambda lib: lib.tensor(A[0])  # noqa: E731
    _same_error(lambda lib: lib.take_along_dim(x(lib), lib.tensor([[0]], dtype=lib.int32), 1),
                "dtype of indices should be Long but got Int")
    _same_error(lambda lib: lib.take_along_dim(x(lib), lib.tensor([0, 1]), 1),
                "input and indices should have the same number of dimensions")
    _same_error(lambda lib: lib.take_along_dim(x(lib), lib.tensor([[0]]), 2), "Dimension out of range")
    _same_error(lambda lib: lib.take_along_dim(lib.tensor(1.0), lib.tensor(0), 0),
                "Dimension specified as 0 but tensor has no dimensions")
    f, t = _both(lambda lib: lib.take_along_dim(x(lib), lib.tensor([0, 5, 11], dtype=lib.int32)))
    assert_close(f, t)
    f, t = _both(lambda lib: x(lib).take_along_dim(lib.tensor([[2], [0], [1]]), -1))
    assert_close(f, t)


# ---- views ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(3,), ()])
def test_t_of_vector_is_a_new_view(shape):
    for lib in (flow, torch):
        x = lib.ones(shape)
        y = x.t()
        assert y is not x and y._base is x and tuple(y.shape) == shape
        assert lib.t(x) is not x
    _same_error(lambda lib: lib.ones(shape, requires_grad=True).t().mul_(2),
                "a view of a leaf Variable that requires grad is being used in an in-place operation")


def test_squeeze_repeated_dims():
    _same_error(lambda lib: lib.zeros(1, 3, 1).squeeze((0, 0)), "dim 0 appears multiple times in the list of dims")
    _same_error(lambda lib: lib.zeros(1, 3, 1).squeeze((2, -1)), "dim 2 appears multiple times")
    _same_error(lambda lib: lib.tensor(1.0).squeeze((0, -1)), "dim 0 appears multiple times")
    f, t = _both(lambda lib: lib.zeros(1, 3, 1).squeeze((-1, 0)))
    assert_close(f, t)


def _write_view_then_backward(make_view, op):
    def fn(lib):
        a = lib.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4), requires_grad=True)
        b = a * 1
        v = make_view(lib, b)
        op(v)
        (b * lib.arange(12.0).view(3, 4)).sum().backward()
        return b, a.grad
    return fn


@pytest.mark.parametrize("make_view", [
    lambda lib, b: b.unfold(1, 2, 2),
    lambda lib, b: b.unfold(0, 1, 2),
    lambda lib, b: b.t().unfold(0, 2, 2),
    lambda lib, b: b.as_strided((2, 2), (4, 2), 1),
    lambda lib, b: b.t().as_strided((3, 2), (1, 5), 2),
    lambda lib, b: b[:, :3].unfold(1, 1, 3),
    lambda lib, b: b[:, :3].unfold(1, 2, 2),
])
@pytest.mark.parametrize("op", [lambda v: v.mul_(3), lambda v: v.exp_()])
def test_gradient_through_strided_view_written_in_place(make_view, op):
    (fb, fg), (tb, tg) = _both(_write_view_then_backward(make_view, op))
    assert_close(fb, tb)
    assert_close(fg, tg)


def test_gradient_of_strided_view_after_base_written_in_place():
    def fn(lib):
        a = lib.arange(6.0, requires_grad=True)
        b = a * 1
        v = b.as_strided((2, 2), (3, 1), 1)
        b.add_(1)
        (v * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        return v, a.grad
    (fv, fg), (tv, tg) = _both(fn)
    assert_close(fv, tv)
    assert_close(fg, tg)


def test_unfold_without_grad_is_a_view_of_any_layout():
    for lib in (flow, torch):
        a = lib.zeros(4, 6)
        u = a[:, :5].unfold(1, 2, 1)
        assert u._base is a and u.storage_offset() == 0 and tuple(u.stride()) == (6, 1, 1)
        u[1, 3] = 7.0
        assert a[1, 3].item() == 7.0 and a[1, 4].item() == 7.0


def test_data_ptr_of_empty_tensor_is_zero():
    for lib in (flow, torch):
        a = lib.arange(6.0)
        assert a[2:2].data_ptr() == 0 and a[:0].data_ptr() == 0 and lib.empty(0).data_ptr() == 0
        assert a[1:].data_ptr() == a.data_ptr() + a.element_size()


@pytest.mark.parametrize("shape,size", [((3,), (1, 3)), ((3,), (2, 1, 3)), ((2, 1), (1, 1, 2, 4)), ((), (1, 1))])
def test_expand_strides_of_new_leading_dims_match_torch(shape, size):
    f = flow.ones(shape).expand(*size)
    t = torch.ones(shape).expand(*size)
    assert f.stride() == t.stride() and f.is_contiguous() == t.is_contiguous()


@pytest.mark.parametrize("name,err", [("index_copy_", IndexError), ("index_add_", RuntimeError)])
def test_index_source_count_errors_like_torch(name, err):
    for lib in (flow, torch):
        with pytest.raises(err, match=r"Number of indices \(2\) should be equal to source.size\(dim\)"):
            getattr(lib.zeros(3), name)(0, lib.tensor([0, 1]), lib.ones(3))
