"""Registers the store library's registry ops (``one_embedding_lookup``, ``one_embedding_sparse_update_``) with
flow-core, so eager code and ``nn.Graph`` call the same C++ definitions (``flow.ops.<name>``)."""
import oneflow as flow

from . import _store

OPS = flow.ops.load_library(_store.__file__)
lookup = flow.ops.one_embedding_lookup
sparse_update_ = flow.ops.one_embedding_sparse_update_
