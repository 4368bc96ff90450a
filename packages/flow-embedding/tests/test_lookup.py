"""Lookups: values, tables, deterministic initialisation, initializers, padding, key types, columns."""
import numpy as np
import pytest
from helpers import make_emb, oe, rows_of

import oneflow as flow
from oneflow_embedding import _store


def test_forward_matches_numpy_and_repeats(tmp_path):
    emb = make_emb(tmp_path, dim=5, num_tables=3)
    ids = np.array([[3, 7, 3], [9, 7, 1]], np.int64)
    out = emb(flow.tensor(ids)).detach().numpy()
    assert out.shape == (2, 3, 5)
    # column j is table j: the same id in the same table gives the same row, anywhere in the batch
    np.testing.assert_array_equal(out[1, 1], out[0, 1])
    for b in range(2):
        for j in range(3):
            np.testing.assert_array_equal(out[b, j], rows_of(emb, [ids[b, j]], table=j)[0])
    # a second lookup sees the same values (rows were stored, not drawn again)
    np.testing.assert_array_equal(emb(flow.tensor(ids)).detach().numpy(), out)
    assert emb.num_rows() == 5


def test_same_id_in_different_tables_are_different_rows(tmp_path):
    emb = make_emb(tmp_path, dim=8, num_tables=2)
    ids = flow.tensor([4, 4], dtype=flow.int64)
    out = emb(ids, flow.tensor([0, 1], dtype=flow.int32)).detach().numpy()
    assert not np.allclose(out[0], out[1])
    assert emb.num_rows() == 2


def test_init_is_deterministic_from_seed_and_id(tmp_path):
    a = make_emb(tmp_path / "a", dim=6, seed=7)
    b = make_emb(tmp_path / "b", dim=6, seed=7)
    c = make_emb(tmp_path / "c", dim=6, seed=8)
    ids = list(range(50))
    ra = rows_of(a, ids)
    rb = rows_of(b, ids[::-1])[::-1]  # other arrival order
    np.testing.assert_array_equal(ra, rb)
    assert not np.allclose(ra, rows_of(c, ids))
    # the store's exposed initial value is what a lookup gives
    assert ra[3, 2] == pytest.approx(_store.initial_value(7, 0, 3, 2, 0, -0.5, 0.5), abs=0)


@pytest.mark.parametrize("init,check", [
    (oe.make_uniform_initializer(-0.2, 0.3), lambda v: (v.min() >= -0.2 and v.max() < 0.3
                                                        and abs(v.mean() - 0.05) < 0.01
                                                        and abs(v.std() - 0.5 / 12 ** 0.5) < 0.01)),
    (oe.make_normal_initializer(1.0, 0.25), lambda v: abs(v.mean() - 1.0) < 0.01 and abs(v.std() - 0.25) < 0.01),
    (oe.make_constant_initializer(0.75), lambda v: np.all(v == 0.75)),
])
def test_initializers(tmp_path, init, check):
    emb = make_emb(tmp_path, dim=16, init=init)
    v = rows_of(emb, range(2000))
    assert check(v), (v.mean(), v.std())


def test_default_initializer_and_bad_initializers(tmp_path):
    tables = [oe.make_table_options(None)]
    store = oe.make_device_mem_store_options(str(tmp_path), capacity=10000)
    emb = oe.MultiTableEmbedding("e", 8, flow.float32, flow.int64, tables, store,
                                 default_initializer=oe.make_constant_initializer(2.0))
    assert np.all(rows_of(emb, [1, 2]) == 2.0)
    with pytest.raises(ValueError, match="high"):
        oe.make_uniform_initializer(1.0, 0.0)
    with pytest.raises(ValueError, match="std"):
        oe.make_normal_initializer(0.0, -1.0)
    with pytest.raises(TypeError, match="initializer"):
        oe.make_table_options({"type": "nope"})


def test_padding_idx_rows_are_zero_and_get_no_gradient(tmp_path):
    emb = make_emb(tmp_path, dim=4, padding_idx=0)
    ids = flow.tensor([0, 1, 0, 2], dtype=flow.int64)
    out = emb(ids)
    np.testing.assert_array_equal(out.detach().numpy()[[0, 2]], 0)
    before = rows_of(emb, [1, 2])
    opt = flow.optim.SGD(emb.parameters(), lr=1.0)
    out.sum().backward()
    opt.step()
    np.testing.assert_array_equal(rows_of(emb, [0]), 0)
    np.testing.assert_allclose(rows_of(emb, [1, 2]), before - 1.0, rtol=1e-6)
    assert emb.num_rows() == 2  # the padding id never got a row


@pytest.mark.parametrize("key_type", [flow.int32, flow.int64]
                         + [getattr(flow, n) for n in ("uint32", "uint64") if hasattr(flow, n)])
def test_key_types(tmp_path, key_type):
    emb = make_emb(tmp_path, dim=3, key_type=key_type)
    ref = make_emb(tmp_path / "ref", dim=3)
    ids = [5, 1, 5, 1000000]
    out = emb(flow.tensor(ids, dtype=key_type)).detach().numpy()
    np.testing.assert_array_equal(out, rows_of(ref, ids))


def test_zero_size_and_multidim_ids(tmp_path):
    emb = make_emb(tmp_path, dim=3)
    assert tuple(emb(flow.zeros(0, dtype=flow.int64)).shape) == (0, 3)
    out = emb(flow.tensor([[[1, 2]], [[3, 1]]], dtype=flow.int64))
    assert tuple(out.shape) == (2, 1, 2, 3)
    np.testing.assert_array_equal(out.detach().numpy()[1, 0, 1], out.detach().numpy()[0, 0, 0])


def test_multi_column_embedding(tmp_path):
    tables = [oe.make_table_options([oe.make_column_options(oe.make_constant_initializer(1.0)),
                                     oe.make_column_options(oe.make_constant_initializer(-2.0))])
              for _ in range(2)]
    store = oe.make_device_mem_store_options(str(tmp_path), capacity=100)
    emb = oe.MultiTableMultiColumnEmbedding("mc", [2, 3], flow.float32, flow.int64, tables, store)
    out = emb(flow.tensor([[1, 2]], dtype=flow.int64)).detach().numpy()
    assert out.shape == (1, 2, 5)
    np.testing.assert_array_equal(out[0, :, :2], 1.0)
    np.testing.assert_array_equal(out[0, :, 2:], -2.0)


def test_float16_storage(tmp_path):
    tables = [oe.make_table_options(oe.make_uniform_initializer(-0.5, 0.5))]
    store32 = oe.make_device_mem_store_options(str(tmp_path / "a"), capacity=1000, size_factor=2)
    store16 = oe.make_cached_ssd_store_options(0.001, str(tmp_path / "b"), size_factor=2)
    e32 = oe.MultiTableEmbedding("e", 8, flow.float32, flow.int64, tables, store32)
    e16 = oe.MultiTableEmbedding("e", 8, flow.float16, flow.int64, tables, store16)
    ids = flow.tensor(list(range(200)))
    out16 = e16(ids)
    assert out16.dtype == flow.float16
    # the stored value is the float32 initial value rounded to the nearest half
    np.testing.assert_array_equal(out16.detach().numpy(), e32(ids).detach().numpy().astype(np.float16))
    # a 32-byte half row: 0.001 MiB holds 32 of the 200 rows, so they went through the file and back
    assert e16.cache_stats()["evictions"] > 100
    o32 = flow.optim.SGD(e32.parameters(), lr=0.1, momentum=0.9)
    o16 = flow.optim.SGD(e16.parameters(), lr=0.1, momentum=0.9)
    g = np.random.default_rng(0).standard_normal((200, 8)).astype(np.float32)
    for _ in range(3):
        for e, o, dt in ((e32, o32, flow.float32), (e16, o16, flow.float16)):
            e(ids).backward(flow.tensor(g).to(dt))
            o.step()
            o.zero_grad()
    a = e32(ids).detach().numpy()
    b = e16(ids).detach().numpy().astype(np.float32)
    np.testing.assert_allclose(b, a, atol=5e-3)
    with pytest.raises(TypeError, match="dtype must be flow.float32 or flow.float16"):
        oe.MultiTableEmbedding("e", 8, flow.float64, flow.int64, tables, store32)


def test_half_conversion_rounds_to_nearest_even(tmp_path):
    # constants chosen at the edges of binary16: normal, subnormal, overflow, ties
    values = [1.0, -2.5, 65504.0, 70000.0, 6.1e-5, 3e-7, 1e-9, 1.0 + 2 ** -11, 1.0 + 3 * 2 ** -11, -0.0]
    for v in values:
        tables = [oe.make_table_options(oe.make_constant_initializer(v))]
        store = oe.make_device_mem_store_options(str(tmp_path), capacity=10)
        emb = oe.MultiTableEmbedding("h", 1, flow.float16, flow.int64, tables, store)
        got = emb(flow.tensor([1])).detach().numpy()[0, 0]
        with np.errstate(over="ignore"):
            want = np.float32(v).astype(np.float16)
        assert got == want or (np.isinf(got) and np.isinf(want)), (v, got, want)
