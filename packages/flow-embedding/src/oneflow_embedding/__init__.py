"""OneEmbedding for oneflow (``flow.one_embedding`` once installed): embedding tables in a tiered C++ key-value
store (RAM, or an LRU cache over SSD files) with sparse optimizer updates and atomic snapshots."""
from . import _core  # noqa: F401  (first: the store module's core symbols bind to the loaded core)
from .embedding import MultiTableEmbedding, MultiTableMultiColumnEmbedding
from .optim import Ftrl
from .options import (make_cached_host_mem_store_options, make_cached_ssd_store_options,
                      make_column_options, make_constant_initializer, make_device_mem_store_options,
                      make_normal_initializer, make_table, make_table_options, make_uniform_initializer)
from .snapshot import make_persistent_table_reader, make_persistent_table_writer

__all__ = [
    "MultiTableEmbedding", "MultiTableMultiColumnEmbedding", "Ftrl", "make_cached_host_mem_store_options",
    "make_cached_ssd_store_options", "make_column_options", "make_constant_initializer",
    "make_device_mem_store_options", "make_normal_initializer", "make_table", "make_table_options",
    "make_uniform_initializer", "make_persistent_table_reader", "make_persistent_table_writer",
]
