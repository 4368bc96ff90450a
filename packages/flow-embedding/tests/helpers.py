"""Builders shared by the tests: small embeddings over a temporary folder."""
import oneflow as flow

oe = flow.one_embedding


def make_emb(path, dim=4, num_tables=1, init=None, kind="ram", size_factor=1, capacity=100000, cache_mb=1.0,
             key_type=flow.int64, name="emb", background=False, **kw):
    init = init or oe.make_uniform_initializer(-0.5, 0.5)
    tables = [oe.make_table_options(init) for _ in range(num_tables)]
    if kind == "ram":
        store = oe.make_device_mem_store_options(str(path), capacity=capacity, size_factor=size_factor)
    else:
        store = oe.make_cached_ssd_store_options(cache_mb, str(path), capacity=None, size_factor=size_factor,
                                                 background_write_back=background)
    return oe.MultiTableEmbedding(name, dim, flow.float32, key_type, tables, store, **kw)


def rows_of(emb, ids, table=0):
    """Current values of ``ids`` of ``table`` (a NumPy array), without recording a gradient."""
    with flow.no_grad():
        t = flow.full((len(ids),), table, dtype=flow.int32)
        return emb(flow.tensor(list(ids), dtype=flow.int64), t).numpy().copy()
