"""Sharding an embedding over the ranks of a flow-dist job.

Each id is owned by one rank, ``hash(id) % world_size`` (OneFlow's placement: the table id does not take part, so
an id's rows of every table live on one rank). A lookup sends each id (with its table id) to its owner with
``flow.comm.all_to_all``: counts first, then the ids; the owner looks them up in its shard of the store and sends
the rows back, which land in the caller's order. An optimizer step sends the gradient rows the same way; the
owner sums duplicates (its store's update does, in arrival order: rank 0's rows first) and applies the sparse
update to its rows.

Gradients are averaged over the ranks, as ``DistributedDataParallel`` averages the dense ones (and TorchRec's
default): N ranks with per-rank mean losses train like one rank on the whole batch with its mean loss.
:func:`set_gradient_division` turns the division off (the gradients of the ranks' losses are then summed).

Every call is collective: every rank must look up (possibly zero ids) and step together. A rank whose ids are
invalid raises its error and the other ranks raise a RuntimeError naming it, instead of waiting forever; so does
an owner whose store fails (a full store's capacity): the other owners then keep the rows that lookup inserted,
with their initial values, which any later lookup would give them anyway.
"""
import weakref

import numpy as np

import oneflow as flow

__all__ = ["rank_and_world", "owners", "set_gradient_division", "lookup", "route_gradients", "on_every_rank",
           "handle", "sharded_lookup", "sharded_update"]

_state = {"divide": True}


def rank_and_world():
    """(rank, world_size) from flow-dist when it is installed, else (0, 1)."""
    try:
        env = flow.env
        world = env.get_world_size()
        return env.get_rank(), world
    except (AttributeError, ImportError, RuntimeError):
        return 0, 1


def set_gradient_division(value):
    """Whether the embedding gradients of the ranks are averaged (True, the default) or summed (False)."""
    _state["divide"] = bool(value)


_M1, _M2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)
_S = np.uint64(33)


def owners(keys, world_size):
    """The owner rank of each id (int64 array): a 64-bit finaliser hash of the id, modulo ``world_size``. The
    store's own index uses another hash, so a shard's slots stay evenly spread."""
    h = keys.astype(np.int64, copy=False).view(np.uint64)
    with np.errstate(over="ignore"):
        h = h ^ (h >> _S)
        h = h * _M1
        h = h ^ (h >> _S)
        h = h * _M2
        h = h ^ (h >> _S)
    return (h % np.uint64(world_size)).astype(np.int64)


def _exchange(pieces, recv_counts, dtype, row):
    """all_to_all of ``pieces`` (one NumPy array per rank, ``row`` values per item); returns what arrives, one
    array per source rank, concatenated (``recv_counts[r]`` items from rank r)."""
    n = len(pieces)
    send = [flow.from_numpy(np.ascontiguousarray(p, dtype=dtype).reshape(-1)) for p in pieces]
    recv = [flow.empty(int(recv_counts[r]) * row, dtype=send[0].dtype) for r in range(n)]
    flow.comm.all_to_all(recv, send)
    return np.concatenate([t.numpy() for t in recv]) if n else np.zeros(0, dtype)


def _agree_counts(emb, counts, error, what="the collective call"):
    """Exchanges the per-destination counts and an error flag; raises on every rank if any rank failed."""
    n = emb.world_size
    msg = [np.array([counts[r], 1 if error is not None else 0], np.int64) for r in range(n)]
    got = _exchange(msg, [2] * n, np.int64, 1).reshape(n, 2)
    failed = [r for r in range(n) if got[r, 1]]
    if error is not None:
        raise error
    if failed:
        raise RuntimeError(f"{type(emb).__name__} '{emb.name}': {what} failed on rank(s) {failed} (see the error "
                           f"there)")
    return got[:, 0]


def _check_ids(emb, tables, keys):
    """The store's checks, made on the caller before anything is sent (the owner would raise too late)."""
    bad = keys < 0
    if emb.padding_idx is not None:
        bad &= keys != emb.padding_idx
    if bad.any():
        raise ValueError(f"ids: negative id {int(keys[bad][0])} (ids must be >= 0)")


def _partition(keys, world_size):
    dest = owners(keys, world_size)
    order = np.argsort(dest, kind="stable")  # stable: each owner gets a rank's ids in batch order
    counts = np.bincount(dest, minlength=world_size)
    bounds = np.concatenate([[0], np.cumsum(counts)])
    return order, counts, [order[bounds[r]:bounds[r + 1]] for r in range(world_size)]


def lookup(emb, ids, table_ids):
    """The rows of ``ids`` (see ``MultiTableEmbedding.forward``) from their owners: ``(tables, keys, rows)``."""
    n, dim = emb.world_size, emb.embedding_dim
    error, tables, keys = None, None, None
    try:
        tables, keys = emb._keys(ids, table_ids)
        _check_ids(emb, tables, keys)
    except (TypeError, ValueError, IndexError) as e:
        error = e
    if error is None:
        order, counts, parts = _partition(keys, n)
    else:
        order, counts, parts = None, np.zeros(n, np.int64), [np.zeros(0, np.int64)] * n
    recv_counts = _agree_counts(emb, counts, error, "the lookup")
    packed = [np.stack([keys[p], tables[p].astype(np.int64)], axis=1) for p in parts]
    got = _exchange(packed, recv_counts, np.int64, 2).reshape(-1, 2)
    rows = np.empty((got.shape[0], dim), np.float32)
    status, owner_error = 0.0, None
    try:
        emb._store.lookup(np.ascontiguousarray(got[:, 1], np.int32), np.ascontiguousarray(got[:, 0]), rows,
                          *emb._padding())
    except (RuntimeError, ValueError, IndexError) as e:  # e.g. a full store's capacity
        status, owner_error = 1.0, e
    # the rows go back with one extra value per destination: the owner's status
    bounds = np.concatenate([[0], np.cumsum(recv_counts)])
    flag = np.array([status], np.float32)
    back = [np.concatenate([rows[bounds[r]:bounds[r + 1]].reshape(-1), flag]) for r in range(n)]
    flat = _exchange(back, [int(c) * dim + 1 for c in counts], np.float32, 1)
    offs = np.concatenate([[0], np.cumsum(np.asarray(counts) * dim + 1)])
    failed = [r for r in range(n) if flat[offs[r + 1] - 1] != 0]
    if owner_error is not None:
        raise owner_error
    if failed:
        raise RuntimeError(f"{type(emb).__name__} '{emb.name}': the lookup failed on owner rank(s) {failed} "
                           f"(see the error there)")
    out = np.empty((keys.size, dim), np.float32)
    if keys.size:
        mask = np.ones(flat.size, bool)
        mask[offs[1:] - 1] = False
        out[order] = flat[mask].reshape(-1, dim)
    return tables, keys, out


def route_gradients(emb, pending):
    """Sends the gradient rows ``pending`` (a list of ``(tables, keys, grads)``; empty on a rank without
    gradients) to the ids' owners. Returns this rank's ``(tables, keys, grads)`` to apply, or None when no rank
    has gradients (the step is then skipped everywhere, as on one rank)."""
    n, dim = emb.world_size, emb.embedding_dim
    if pending:
        tables, keys, grads = (np.concatenate(p) for p in zip(*pending))
        _, counts, parts = _partition(keys, n)
    else:
        counts, parts = np.zeros(n, np.int64), [np.zeros(0, np.int64)] * n
    msg = [np.array([counts[r], 1 if pending else 0], np.int64) for r in range(n)]
    got = _exchange(msg, [2] * n, np.int64, 1).reshape(n, 2)
    if not got[:, 1].any():
        return None
    recv_counts = got[:, 0]
    # one message per destination: each row is the id and table id (int64, their bytes as 4 float32) and the
    # gradient (MPI moves bytes, so the ids arrive intact)
    if pending:
        rows = [np.concatenate([np.stack([keys[p], tables[p].astype(np.int64)], axis=1).view(np.float32),
                                grads[p]], axis=1) for p in parts]
    else:
        rows = [np.zeros((0, dim + 4), np.float32)] * n
    got = _exchange(rows, recv_counts, np.float32, dim + 4).reshape(-1, dim + 4)
    ids = np.ascontiguousarray(got[:, :4]).view(np.int64)
    g = np.ascontiguousarray(got[:, 4:])
    if _state["divide"]:
        g *= np.float32(1.0 / n)
    return np.ascontiguousarray(ids[:, 1], np.int32), np.ascontiguousarray(ids[:, 0]), g


def on_every_rank(emb, what, fn, *args):
    """Runs ``fn(*args)`` (each rank on its shard) and, on several ranks, tells every rank whether all succeeded:
    a rank that failed raises its error, the others a RuntimeError naming it. (A snapshot saved or loaded on
    some ranks only stays so on those ranks.)"""
    if emb.world_size == 1:
        return fn(*args)
    error = None
    try:
        fn(*args)
    except Exception as e:  # any failure must reach the other ranks before it is raised
        error = e
    _agree_counts(emb, np.zeros(emb.world_size, np.int64), error, what)
    return None


# ---- the exchange as registry ops ------------------------------------------------------------------------------
# A sharded lookup's row count per owner depends on the ids' values, so no static plan can hold the exchange as
# separate ops; each direction is one op of static shape whose kernel runs the exchange above (Python kernels
# through flow.library.custom_op). Eager code and nn.Graph run the same ops; the update is declared with side
# effects, so graph passes keep it. Embeddings and optimizers are named to the kernels by handles.
_objects = weakref.WeakValueDictionary()


def handle(obj):
    """An int naming ``obj`` to the ops' kernels (weakly held)."""
    _objects[id(obj)] = obj
    return id(obj)


def _resolve(h, what):
    obj = _objects.get(h)
    if obj is None:
        raise RuntimeError(f"one_embedding: the {what} of this sharded op no longer exists")
    return obj


def _lookup_kernel(keys, tables, emb, dim):
    owner = _resolve(emb, "embedding")
    _, _, rows = lookup(owner, keys, tables)
    return flow.from_numpy(rows)


def _lookup_meta(keys, tables, emb, dim):
    return flow.empty((keys.numel(), dim), dtype=flow.float32, device="meta")


def _lists(flat, lengths):
    out, i = [], 0
    for n in lengths:
        out.append(flat[i:i + n])
        i += n
    return out


def _update_kernel(*flat, emb, optimizer, group, _list_lengths):
    keys, tables, grads = _lists(flat, _list_lengths)
    owner, opt = _resolve(emb, "embedding"), _resolve(optimizer, "optimizer")
    pending = [(t.numpy().astype(np.int32, copy=False), k.numpy().astype(np.int64, copy=False),
                np.ascontiguousarray(g.numpy(), dtype=np.float32)) for k, t, g in zip(keys, tables, grads)]
    owner._apply_routed(opt, opt.param_groups[group], route_gradients(owner, pending))
    return flow.zeros(())


def _update_meta(*flat, emb, optimizer, group, _list_lengths):
    return flow.empty((), device="meta")


sharded_lookup = flow.library.custom_op(
    "one_embedding_sharded_lookup", "(Tensor keys, Tensor tables, *, int emb, int dim) -> Tensor",
    kernel=_lookup_kernel, meta=_lookup_meta, side_effects=True)
sharded_update = flow.library.custom_op(
    "one_embedding_sharded_update", "(Tensor[] keys, Tensor[] tables, Tensor[] grads, *, int emb, int optimizer, "
    "int group) -> Tensor", kernel=_update_kernel, meta=_update_meta, side_effects=True)
