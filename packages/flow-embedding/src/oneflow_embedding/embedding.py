"""MultiTableEmbedding and MultiTableMultiColumnEmbedding: embedding tables kept in the C++ key-value store.

The module holds one parameter, ``shadow`` (OneFlow's name), a zero-size tensor that stands for the table in
autograd and in optimizers: a lookup records the ids and the backward pass the gradient rows; an optimizer's
step then calls ``shadow._sparse_update(optimizer, group)``, which applies that optimizer's update to those rows
only, inside the store. On one rank the lookup and the update are registry ops (``_ops.py``) on tensors, so an
``nn.Graph`` traces them like any op and runs them inside its compiled step.
"""
import os
import weakref

import numpy as np

import oneflow as flow
from oneflow import nn

from . import _ops
from . import options as _opts
from . import sharding, snapshot
from ._store import Store
from .optim import sparse_rule, state_columns

__all__ = ["MultiTableEmbedding", "MultiTableMultiColumnEmbedding"]

_KEY_TYPES = {flow.int32: np.int32, flow.int64: np.int64}
for _name in ("uint32", "uint64"):  # OneFlow's unsigned key types, where this build has them
    if hasattr(flow, _name):
        _KEY_TYPES[getattr(flow, _name)] = np.dtype(_name).type
_ID_DTYPES = tuple(_KEY_TYPES)


def _default_initializer():
    return _opts.make_normal_initializer(mean=0.0, std=0.05)


class _Lookup(flow.autograd.Function):
    """Carries the looked-up rows into autograd: the backward hands the rows' gradient to the embedding."""

    @staticmethod
    def forward(ctx, shadow, rows, owner, keys):
        ctx.owner, ctx.keys = owner, keys
        return rows

    @staticmethod
    def backward(ctx, grad):
        owner = ctx.owner()
        if owner is not None:
            owner._record_gradient(ctx.keys, grad)
        return flow.zeros(0), None, None, None


class MultiTableEmbedding(nn.Module):
    """Several embedding tables of one ``embedding_dim`` in one key-value store (OneFlow's OneEmbedding).

    Rows are created on first lookup, initialised from their table's initializer deterministically from
    ``(seed, table, id)``: values never depend on the order ids arrive in or on the number of ranks. On several
    ranks (flow-dist) each id is owned by one rank (a hash of the id modulo the world size) and lookups and
    gradients are exchanged with ``all_to_all``.

    Args:
        name (str): the embedding's name (a folder of that name holds its files under ``persistent_path``).
        embedding_dim (int): the width of each row.
        dtype (flow.dtype): storage and lookup type of the values: ``flow.float32``, or ``flow.float16`` (rows and
            their optimizer state take half the memory and disk; updates compute in float32 and round once).
        key_type (flow.dtype): type of the ids (``flow.int32`` or ``flow.int64``; unsigned where available).
        tables (list): one ``make_table_options(initializer)`` per table.
        store_options (dict): from ``make_device_mem_store_options``, ``make_cached_ssd_store_options`` or
            ``make_cached_host_mem_store_options``.
        default_initializer (dict, optional): for tables without one (default: normal, mean 0, std 0.05).
        padding_idx (int, optional): ids equal to it look up zeros and get no gradient.
        seed (int): seed of the initializers.

    Forward ``emb(ids, table_ids=None)``: ``ids`` an integer tensor; ``table_ids`` (same shape) gives each id's
    table; it may be left out with one table, or when ``ids`` has shape ``(batch, num_tables)`` (column ``j``
    then belongs to table ``j``). Returns ``ids.shape + (embedding_dim,)`` values that require grad.

    Example::

        >>> tables = [flow.one_embedding.make_table_options(flow.one_embedding.make_uniform_initializer(-0.1, 0.1))
        ...           for _ in range(3)]
        >>> store = flow.one_embedding.make_device_mem_store_options("/path/to/emb", capacity=1 << 20)
        >>> emb = flow.one_embedding.MultiTableEmbedding("emb", 16, flow.float32, flow.int64, tables, store)
        >>> emb(flow.tensor([[1, 2, 3], [4, 5, 6]])).shape
        oneflow.Size([2, 3, 16])
    """

    def __init__(self, name, embedding_dim, dtype, key_type, tables, store_options, default_initializer=None,
                 padding_idx=None, seed=0):
        super().__init__()
        if isinstance(embedding_dim, bool) or not isinstance(embedding_dim, int) or embedding_dim <= 0:
            raise ValueError(f"embedding_dim must be a positive integer, got {embedding_dim!r}")
        segments = self._table_segments(tables, embedding_dim, default_initializer)
        self._setup(name, embedding_dim, dtype, key_type, segments, store_options, padding_idx, seed)

    # ---- construction -------------------------------------------------------------------------------------
    @staticmethod
    def _default(default_initializer):
        if default_initializer is None:
            return _default_initializer()
        return _opts._check_initializer(default_initializer, "default_initializer")

    def _table_segments(self, tables, dim, default_initializer):
        default = self._default(default_initializer)
        if not isinstance(tables, (list, tuple)) or not tables:
            raise ValueError("tables must be a non-empty list of make_table_options(...)")
        out = []
        for i, t in enumerate(tables):
            if not isinstance(t, dict) or "initializer" not in t:
                raise TypeError(f"tables[{i}] must come from make_table_options(initializer), got {t!r}")
            out.append([(0, dim, *_opts.initializer_spec(t["initializer"] or default))])
        return out

    def _setup(self, name, dim, dtype, key_type, segments, store_options, padding_idx, seed):
        if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
            raise ValueError(f"name must be a non-empty file name (no '/', not starting with '.'), got {name!r}")
        if dtype not in (flow.float32, flow.float16):
            raise TypeError(f"dtype must be flow.float32 or flow.float16 (the storage and lookup type), got {dtype}")
        if key_type not in _KEY_TYPES:
            raise TypeError(f"key_type must be one of {list(_KEY_TYPES)}, got {key_type!r}")
        if not isinstance(store_options, dict) or "kind" not in store_options:
            raise TypeError("store_options must come from make_device_mem_store_options, "
                            "make_cached_ssd_store_options or make_cached_host_mem_store_options")
        if padding_idx is not None and (isinstance(padding_idx, bool) or not isinstance(padding_idx, int)):
            raise TypeError(f"padding_idx must be an int or None, got {padding_idx!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {seed!r}")
        self.name, self.embedding_dim, self.dtype, self.key_type = name, dim, dtype, key_type
        self.padding_idx, self.seed, self.num_tables = padding_idx, seed, len(segments)
        self.store_options = dict(store_options)
        self.rank, self.world_size = sharding.rank_and_world()
        self.path = self._rank_path(store_options["persistent_path"])
        opts = store_options
        self.size_factor = opts["size_factor"]
        row_floats = dim * self.size_factor
        capacity = opts["capacity"]
        if capacity is not None:  # the capacity is the whole embedding's; each rank holds its share
            capacity = -(-capacity // self.world_size)
        cached = opts["kind"] == "cached_ssd"
        half = dtype == flow.float16  # rows (values and optimizer state) stored as halves, updated in float32
        row_bytes = row_floats * (2 if half else 4)
        cache_rows = int(opts["cache_budget_mb"] * (1 << 20)) // row_bytes if cached else 0
        if cached and cache_rows < 1:
            raise ValueError(f"cache_budget_mb={opts['cache_budget_mb']} holds no row of {row_bytes} bytes")
        self._store = Store(dim, row_floats, -1 if capacity is None else capacity, cached, cache_rows,
                            self.path, opts["physical_block_size"], seed & ((1 << 64) - 1), segments, half,
                            bool(opts.get("background_write_back", False)))
        self.shadow = nn.Parameter(flow.zeros(0))
        owner = weakref.ref(self)  # the parameter's hooks must not keep the module (and its store) alive
        self.shadow._sparse_update = lambda opt, group: _call(owner, "_sparse_update", opt, group)
        self.shadow._sparse_zero_grad = lambda: _call(owner, "_clear_gradients")
        self.shadow._sparse_check = lambda opt, group: _call(owner, "_check_sparse", opt, group)
        self.shadow.register_post_accumulate_grad_hook(lambda p: _call(owner, "_end_backward"))
        self._pending = []  # (tables, ids, grads) recorded since the last zero_grad
        self._pass_started = False

    def _rank_path(self, persistent_path):
        if isinstance(persistent_path, list):
            if len(persistent_path) != self.world_size:
                raise ValueError(f"persistent_path lists {len(persistent_path)} paths for {self.world_size} ranks")
            base = persistent_path[self.rank]
        else:
            base = os.path.join(persistent_path, f"{self.rank}-{self.world_size}")
        path = os.path.join(base, self.name)
        try:
            os.makedirs(path, exist_ok=True)
            probe = os.path.join(path, f".probe-{os.getpid()}")
            with open(probe, "wb"):
                pass
            os.unlink(probe)
        except OSError as e:
            raise ValueError(f"persistent_path {base!r} is not a writable directory: {e}") from e
        return path

    # ---- lookup -----------------------------------------------------------------------------------------
    def _keys(self, ids, table_ids):
        if not isinstance(ids, flow.Tensor):
            raise TypeError(f"{type(self).__name__}: ids must be a Tensor, got {type(ids).__name__}")
        if ids.dtype not in _ID_DTYPES:
            raise TypeError(f"{type(self).__name__}: ids must be an integer tensor of one of "
                            f"{list(_ID_DTYPES)}, got {ids.dtype}")
        if table_ids is None:
            if self.num_tables == 1:
                tables = np.zeros(ids.numel(), np.int32)
            elif ids.dim() == 2 and ids.shape[1] == self.num_tables:
                tables = np.tile(np.arange(self.num_tables, dtype=np.int32), ids.shape[0])
            else:
                raise ValueError(f"{type(self).__name__}: table_ids is required with {self.num_tables} tables "
                                 f"unless ids has shape (batch, {self.num_tables}); got ids of shape "
                                 f"{tuple(ids.shape)}")
        else:
            if not isinstance(table_ids, flow.Tensor) or table_ids.dtype not in _ID_DTYPES:
                raise TypeError(f"{type(self).__name__}: table_ids must be an integer tensor")
            if tuple(table_ids.shape) != tuple(ids.shape):
                raise ValueError(f"{type(self).__name__}: table_ids has shape {tuple(table_ids.shape)}, ids "
                                 f"{tuple(ids.shape)}; they must be equal")
            t = table_ids.numpy().reshape(-1)
            if t.size and (t.min() < 0 or t.max() >= self.num_tables):
                bad = t[(t < 0) | (t >= self.num_tables)][0]
                raise IndexError(f"{type(self).__name__}: table_ids holds {bad}, out of range for "
                                 f"{self.num_tables} table(s)")
            tables = np.ascontiguousarray(t, dtype=np.int32)
        keys = np.ascontiguousarray(ids.numpy().reshape(-1), dtype=np.int64)
        if hasattr(flow, "uint64") and ids.dtype == flow.uint64 and keys.size and (keys < 0).any():
            raise ValueError(f"{type(self).__name__}: uint64 ids of 2**63 and above are not supported")
        return tables, keys

    def _padding(self):
        return (self.padding_idx is not None, 0 if self.padding_idx is None else self.padding_idx)

    def _table_tensor(self, ids, table_ids):
        """Each id's table as a flat int32 tensor (flow ops only: no values are read, so it traces)."""
        name = type(self).__name__
        if not isinstance(ids, flow.Tensor):
            raise TypeError(f"{name}: ids must be a Tensor, got {type(ids).__name__}")
        if ids.dtype not in _ID_DTYPES:
            raise TypeError(f"{name}: ids must be an integer tensor of one of {list(_ID_DTYPES)}, got {ids.dtype}")
        if table_ids is None:
            if self.num_tables == 1:
                return flow.zeros(ids.numel(), dtype=flow.int32)
            if ids.dim() == 2 and ids.shape[1] == self.num_tables:
                cols = flow.arange(self.num_tables, dtype=flow.int32)
                return cols.reshape(1, -1).expand(ids.shape[0], self.num_tables).reshape(-1)
            raise ValueError(f"{name}: table_ids is required with {self.num_tables} tables unless ids has shape "
                             f"(batch, {self.num_tables}); got ids of shape {tuple(ids.shape)}")
        if not isinstance(table_ids, flow.Tensor) or table_ids.dtype not in _ID_DTYPES:
            raise TypeError(f"{name}: table_ids must be an integer tensor")
        if tuple(table_ids.shape) != tuple(ids.shape):
            raise ValueError(f"{name}: table_ids has shape {tuple(table_ids.shape)}, ids {tuple(ids.shape)}; they "
                             f"must be equal")
        return table_ids.reshape(-1)  # the lookup op checks the range

    def forward(self, ids, table_ids=None):
        """Look up ``ids`` (see the class docstring); the result requires grad when the embedding trains."""
        if self.world_size > 1:
            try:
                tables, keys = self._table_tensor(ids, table_ids), ids.reshape(-1)
            except (TypeError, ValueError):  # bad input on this rank: raised collectively by the lookup
                sharding.lookup(self, ids, table_ids)
                raise
            # one registry op (the exchange and the owners' lookups): eager code and nn.Graph run the same
            rows = sharding.sharded_lookup(keys, tables, emb=sharding.handle(self), dim=self.embedding_dim)
            if self.dtype == flow.float16:
                rows = rows.to(flow.float16)  # exact: the store holds halves
            out = rows.reshape(*ids.shape, self.embedding_dim)
        else:
            tables = self._table_tensor(ids, table_ids)
            keys = ids.reshape(-1)
            if hasattr(flow, "uint64") and ids.dtype == flow.uint64 and keys.numel() and bool((keys < 0).any()):
                raise ValueError(f"{type(self).__name__}: uint64 ids of 2**63 and above are not supported")
            has_padding, padding_idx = self._padding()
            rows = _ops.lookup(keys, tables, store=self._store.handle, dim=self.embedding_dim,
                               has_padding=has_padding, padding_idx=padding_idx)
            if self.dtype == flow.float16:
                rows = rows.to(flow.float16)  # exact: the store holds halves
            out = rows.reshape(*ids.shape, self.embedding_dim)
        if flow.is_grad_enabled() and self.shadow.requires_grad:
            out = _Lookup.apply(self.shadow, out, weakref.ref(self), (tables, keys))
        return out

    # ---- gradients and updates --------------------------------------------------------------------------
    def _record_gradient(self, keys, grad):
        # a backward pass that finds no gradient on the shadow follows a zero_grad (or is the first)
        if self.shadow.grad is None and not self._pass_started:
            self._pending.clear()
        self._pass_started = True
        g = grad.detach().reshape(-1, self.embedding_dim).to(flow.float32)
        self._pending.append((keys[0], keys[1], g))

    def _end_backward(self):
        self._pass_started = False

    def _clear_gradients(self):
        self._pending.clear()

    def _check_sparse(self, optimizer, group):
        """``(kind, hyper)`` of ``optimizer``'s sparse rule for ``group``; raises when it has none or the store's
        rows have too few columns for its state."""
        kind, hyper = sparse_rule(optimizer, group, 1)
        need = 1 + state_columns(kind, hyper)
        if need > self.size_factor:
            raise ValueError(f"{type(optimizer).__name__} keeps {need - 1} state column(s) per embedding column: "
                             f"the store of embedding '{self.name}' needs size_factor >= {need} "
                             f"(it has {self.size_factor})")
        return kind, hyper

    def _sparse_update(self, optimizer, group):
        has_grad = self.shadow.grad is not None and bool(self._pending)
        if self.world_size > 1:  # collective: every rank takes part, with or without gradients
            index = next(i for i, g in enumerate(optimizer.param_groups) if g is group)
            if not has_grad:  # (eager only: every rank of a graph runs the same step)
                self._apply_routed(optimizer, group, sharding.route_gradients(self, []))
                return
            tables, keys, grads = (list(parts) for parts in zip(*self._pending))
            # one registry op with side effects: the kernel routes the rows and updates the owners' shards
            sharding.sharded_update(keys, tables, grads, emb=sharding.handle(self),
                                    optimizer=sharding.handle(optimizer), group=index)
            return
        if not has_grad:
            return
        state = optimizer.state[self.shadow]
        step = state.get("step")
        if step is None:
            step = state["step"] = flow.zeros((), dtype=flow.float32)
        kind, hyper = self._check_sparse(optimizer, group)
        if len(self._pending) == 1:
            tables, keys, grads = self._pending[0]
        else:
            tables, keys, grads = (flow.cat(list(parts)) for parts in zip(*self._pending))
        index = next(i for i, g in enumerate(optimizer.param_groups) if g is group)
        has_padding, padding_idx = self._padding()
        # the op advances the step counter and reads the lr tensor: both change between calls of a compiled graph
        _ops.sparse_update_(step, keys, tables, grads, optimizer._lr_tensor(index, group), store=self._store.handle,
                            kind=kind, hyper=[float(h) for h in hyper], lr_decay=float(group.get("lr_decay", 0.0)),
                            has_padding=has_padding, padding_idx=padding_idx)

    def _apply_routed(self, optimizer, group, routed):
        """The owner's part of a sharded step: the rows ``routed`` here (``(tables, keys, grads)`` NumPy arrays,
        or None when no rank had gradients) updated with ``optimizer``'s sparse rule for ``group``."""
        if routed is None:
            return
        state = optimizer.state[self.shadow]
        step = state.get("step")
        if step is None:
            step = state["step"] = flow.zeros((), dtype=flow.float32)
        kind, hyper = sparse_rule(optimizer, group, int(step.item()) + 1)
        self._check_sparse(optimizer, group)
        step.add_(1)
        tables, keys, grads = routed
        self._store.update(tables, keys, grads, kind, [float(h) for h in hyper], *self._padding())

    # ---- snapshots and introspection --------------------------------------------------------------------
    def save_snapshot(self, snapshot_name):
        """Save the table (values and optimizer state) as ``snapshot_name``: written to a temporary folder and
        then renamed into place, so an interrupted save leaves the previous snapshot of that name loadable."""
        sharding.on_every_rank(self, "save_snapshot", snapshot.save, self, snapshot_name)

    def load_snapshot(self, snapshot_name):
        """Replace the table with snapshot ``snapshot_name``; a missing or corrupted snapshot raises an error and
        leaves the table as it was."""
        sharding.on_every_rank(self, "load_snapshot", snapshot.load, self, snapshot_name)

    def num_rows(self):
        """Rows held by this rank's shard."""
        return len(self._store)

    def cache_stats(self):
        """``{"hits", "misses", "evictions", "writebacks"}`` of this rank's cache (cached SSD store). Hits count
        lookups' keys found in the cache; misses count every row read from the file (a lookup's, and an update's
        whose row was evicted since its lookup); the update of rows its lookup placed is neither."""
        return dict(zip(("hits", "misses", "evictions", "writebacks"), self._store.stats()))

    def reset_cache_stats(self):
        self._store.reset_stats()

    def extra_repr(self):
        return (f"name={self.name!r}, embedding_dim={self.embedding_dim}, num_tables={self.num_tables}, "
                f"store={self.store_options['kind']!r}, key_type={self.key_type}")


def _call(owner, method, *args):
    module = owner()
    if module is not None:
        return getattr(module, method)(*args)
    return None


class MultiTableMultiColumnEmbedding(MultiTableEmbedding):
    """Tables whose rows are several columns, each with its own width and initializer (OneFlow's
    ``MultiTableMultiColumnEmbedding``). A lookup returns the columns side by side: ``ids.shape + (sum of the
    column widths,)``.

    Args:
        name, dtype, key_type, store_options, default_initializer, padding_idx, seed: as
            :class:`MultiTableEmbedding`.
        embedding_dim (int or list of int): the width of each column (one int: every column has that width).
        tables (list): one ``make_table_options([make_column_options(initializer), ...])`` per table; every
            table has the same number of columns.
    """

    def __init__(self, name, embedding_dim, dtype, key_type, tables, store_options, default_initializer=None,
                 padding_idx=None, seed=0):
        nn.Module.__init__(self)
        if not isinstance(tables, (list, tuple)) or not tables:
            raise ValueError("tables must be a non-empty list of make_table_options([...columns])")
        ncols = None
        for i, t in enumerate(tables):
            if not isinstance(t, dict) or "columns" not in t:
                raise TypeError(f"tables[{i}] must come from make_table_options([make_column_options(...), ...])")
            if ncols is not None and len(t["columns"]) != ncols:
                raise ValueError("every table must have the same number of columns")
            ncols = len(t["columns"])
        dims = [embedding_dim] * ncols if isinstance(embedding_dim, int) else list(embedding_dim)
        if len(dims) != ncols or any(isinstance(d, bool) or not isinstance(d, int) or d <= 0 for d in dims):
            raise ValueError(f"embedding_dim must be a positive int or a list of {ncols} positive ints, got "
                             f"{embedding_dim!r}")
        default = self._default(default_initializer)
        segments = []
        for t in tables:
            start, segs = 0, []
            for col, d in zip(t["columns"], dims):
                segs.append((start, d, *_opts.initializer_spec(col["initializer"] or default)))
                start += d
            segments.append(segs)
        self.column_dims = dims
        self._setup(name, sum(dims), dtype, key_type, segments, store_options, padding_idx, seed)
