"""Bad input raises Python exceptions naming the argument, and leaves the table as it was."""
import numpy as np
import pytest
from helpers import make_emb, oe, rows_of

import oneflow as flow


def test_ids_of_wrong_dtype(tmp_path):
    emb = make_emb(tmp_path)
    with pytest.raises(TypeError, match="ids must be an integer tensor"):
        emb(flow.tensor([1.0, 2.0]))
    with pytest.raises(TypeError, match="ids must be a Tensor"):
        emb([1, 2])
    with pytest.raises(TypeError, match="table_ids must be an integer tensor"):
        emb(flow.tensor([1]), flow.tensor([0.0]))


def test_table_ids_out_of_range_and_shape(tmp_path):
    emb = make_emb(tmp_path, num_tables=2)
    with pytest.raises(IndexError, match="table_ids holds 2, out of range for 2 table"):
        emb(flow.tensor([1, 2]), flow.tensor([0, 2], dtype=flow.int32))
    with pytest.raises(IndexError, match="table_ids holds -1"):
        emb(flow.tensor([1, 2]), flow.tensor([-1, 0], dtype=flow.int32))
    with pytest.raises(ValueError, match="table_ids has shape"):
        emb(flow.tensor([1, 2]), flow.tensor([0], dtype=flow.int32))
    with pytest.raises(ValueError, match="table_ids is required"):
        emb(flow.tensor([1, 2, 3]))
    assert emb.num_rows() == 0


def test_negative_ids(tmp_path):
    emb = make_emb(tmp_path)
    with pytest.raises(ValueError, match="ids: negative id -3"):
        emb(flow.tensor([1, -3]))
    assert emb.num_rows() == 0
    padded = make_emb(tmp_path / "p", padding_idx=-1)  # a negative padding_idx is allowed, and looks up zeros
    np.testing.assert_array_equal(padded(flow.tensor([-1])).detach().numpy(), 0)


def test_unwritable_persistent_path(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ValueError, match="persistent_path .* is not a writable directory"):
        make_emb(blocker / "sub")
    with pytest.raises(ValueError, match="persistent_path must be a non-empty path"):
        oe.make_device_mem_store_options("", capacity=10)


def test_capacity_exhausted_in_full_store(tmp_path):
    emb = make_emb(tmp_path, capacity=10)
    rows_of(emb, range(8))
    before = rows_of(emb, range(8))
    with pytest.raises(RuntimeError, match="capacity exhausted.*capacity 10"):
        emb(flow.tensor(list(range(5, 15))))
    assert emb.num_rows() == 8  # nothing of the failed batch was inserted
    np.testing.assert_array_equal(rows_of(emb, range(8)), before)
    rows_of(emb, [8, 9])  # up to the capacity is fine


def test_bad_options(tmp_path):
    with pytest.raises(ValueError, match="capacity must be a positive integer"):
        oe.make_device_mem_store_options(str(tmp_path), capacity=0)
    with pytest.raises(ValueError, match="physical_block_size must be a power of two"):
        oe.make_cached_ssd_store_options(1, str(tmp_path), physical_block_size=1000)
    with pytest.raises(ValueError, match="cache_budget_mb must be positive"):
        oe.make_cached_ssd_store_options(0, str(tmp_path))
    with pytest.raises(TypeError, match="key_type"):
        make_emb(tmp_path, key_type=flow.float32)
    with pytest.raises(ValueError, match="embedding_dim must be a positive integer"):
        make_emb(tmp_path, dim=0)
    with pytest.raises(ValueError, match="holds no row"):
        make_emb(tmp_path, dim=4096, kind="ssd", cache_mb=0.001)


def test_a_store_module_built_against_another_core_says_so():
    from oneflow_embedding._core import explain

    err = explain(ImportError("_store.so: undefined symbol: _ZN4flow3fooEv"))
    assert isinstance(err, ImportError)
    assert "built against another flow-core" in str(err) and "undefined symbol" in str(err)
    assert "reinstall flow-embedding" in str(err)
    other = ImportError("No module named 'numpy'")
    assert explain(other) is other
