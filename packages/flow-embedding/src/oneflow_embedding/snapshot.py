"""Snapshots of an embedding's shard, and OneFlow's persistent table reader/writer over them.

A snapshot ``NAME`` of a shard is ``<shard folder>/snapshots/NAME``, a symbolic link to a folder holding
``rows.bin`` (written by the C++ store, with a checksum) and ``meta.json``. A save writes a new folder, syncs it,
then replaces the link with ``os.replace`` (atomic): a process killed at any point leaves either the previous
snapshot or the new one, never a mix.
"""
import json
import os
import shutil
import uuid

import numpy as np

import oneflow as flow

from ._store import Store

__all__ = ["make_persistent_table_reader", "make_persistent_table_writer"]

FORMAT = 1


def _check_name(name):
    if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
        raise ValueError(f"snapshot name must be a non-empty file name (no '/', not starting with '.'), got {name!r}")


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_stale(folder):
    # folders of saves whose process died (their pid is in the name) are left over; remove them
    for entry in os.listdir(folder):
        if not entry.startswith(".tmp-"):
            continue
        try:
            pid = int(entry.split("-")[1])
            os.kill(pid, 0)
        except (ValueError, IndexError, ProcessLookupError):
            shutil.rmtree(os.path.join(folder, entry), ignore_errors=True)
        except PermissionError:
            pass


def write(store, folder, name, meta):
    """Saves ``store`` as snapshot ``name`` in ``folder`` (atomically, see the module docstring)."""
    _check_name(name)
    os.makedirs(folder, exist_ok=True)
    _remove_stale(folder)
    data = f".tmp-{os.getpid()}-{uuid.uuid4().hex}"
    tmp = os.path.join(folder, data)
    os.mkdir(tmp)
    try:
        store.save(os.path.join(tmp, "rows.bin"))
        with open(os.path.join(tmp, "meta.json"), "w") as f:
            json.dump(dict(meta, format=FORMAT, rows=len(store), row_floats=store.row_floats), f)
            f.flush()
            os.fsync(f.fileno())
        _fsync_dir(tmp)
        final = data.replace(".tmp-", ".data-", 1)
        os.rename(tmp, os.path.join(folder, final))
        link = os.path.join(folder, name)
        old = os.readlink(link) if os.path.islink(link) else None
        tmp_link = os.path.join(folder, f".tmp-{os.getpid()}-{uuid.uuid4().hex}.link")
        os.symlink(final, tmp_link)
        os.replace(tmp_link, link)  # the commit point
        _fsync_dir(folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if old is not None and old != final:
        shutil.rmtree(os.path.join(folder, old), ignore_errors=True)


def read_meta(folder, name):
    """The snapshot's folder and meta; FileNotFoundError or RuntimeError (corrupted) otherwise."""
    _check_name(name)
    path = os.path.join(folder, name)
    if not os.path.isdir(path):
        raise FileNotFoundError(f"no snapshot named {name!r} in {folder!r}")
    try:
        with open(os.path.join(path, "meta.json")) as f:
            meta = json.load(f)
        if meta.get("format") != FORMAT:
            raise ValueError(f"unknown format {meta.get('format')!r}")
    except (OSError, ValueError) as e:
        raise RuntimeError(f"snapshot {name!r} in {folder!r} is corrupted: {e}") from e
    return path, meta


def save(emb, name):
    write(emb._store, os.path.join(emb.path, "snapshots"), name,
          {"embedding_dim": emb.embedding_dim, "num_tables": emb.num_tables, "name": emb.name})


def load(emb, name):
    folder = os.path.join(emb.path, "snapshots")
    path, meta = read_meta(folder, name)
    dim = meta.get("embedding_dim")
    if dim is not None and dim != emb.embedding_dim:
        raise RuntimeError(f"snapshot {name!r} holds an embedding of dim {dim}, this one has {emb.embedding_dim}")
    try:
        emb._store.load(os.path.join(path, "rows.bin"))
    except RuntimeError as e:
        raise RuntimeError(f"cannot load snapshot {name!r} of embedding '{emb.name}' (the table is unchanged): "
                           f"{e}") from None


# ---- persistent table reader / writer ---------------------------------------------------------------------------
def _paths(paths):
    if isinstance(paths, str):
        return [paths]
    if not isinstance(paths, (list, tuple)) or not paths:
        raise ValueError("paths must be a shard folder or a list of them")
    return list(paths)


def _np_key_type(key_type):
    from .embedding import _KEY_TYPES

    if key_type not in _KEY_TYPES:
        raise TypeError(f"key_type must be one of {list(_KEY_TYPES)}, got {key_type!r}")
    return _KEY_TYPES[key_type]


class PersistentTableReader:
    """Iterates the rows of a snapshot in the shard folders ``paths``: ``(keys, values)`` chunks, ``values`` of
    ``storage_dim`` columns (embedding values, then optimizer state). :meth:`read_with_table_ids` also gives
    each row's table."""

    def __init__(self, paths, snapshot_name, key_type, value_type, storage_dim, physical_block_size=4096,
                 batch_size=65536):
        if value_type != flow.float32:
            raise NotImplementedError(f"value_type must be flow.float32, got {value_type}")
        self.paths, self.name, self.storage_dim = _paths(paths), snapshot_name, int(storage_dim)
        self.key_np, self.block, self.batch_size = _np_key_type(key_type), physical_block_size, batch_size

    def read_with_table_ids(self):
        for p in self.paths:
            path, meta = read_meta(os.path.join(p, "snapshots"), self.name)
            if meta["row_floats"] != self.storage_dim:
                raise ValueError(f"snapshot {self.name!r} in {p!r} has storage_dim {meta['row_floats']}, not "
                                 f"{self.storage_dim}")
            tables = [[] for _ in range(meta.get("num_tables", 1))]
            store = Store(self.storage_dim, self.storage_dim, -1, False, 0, p, self.block, 0, tables)
            try:
                store.load(os.path.join(path, "rows.bin"))
            except RuntimeError as e:
                raise RuntimeError(f"cannot read snapshot {self.name!r} in {p!r}: {e}") from None
            for start in range(0, len(store), self.batch_size):
                n = min(self.batch_size, len(store) - start)
                t, k = np.empty(n, np.int32), np.empty(n, np.int64)
                v = np.empty((n, self.storage_dim), np.float32)
                store.export_rows(start, t, k, v)
                yield t, k.astype(self.key_np), v

    def __iter__(self):
        for _, k, v in self.read_with_table_ids():
            yield k, v

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class PersistentTableWriter:
    """Writes rows as snapshot ``snapshot_name`` of the shard folder ``paths`` (one folder): :meth:`write`
    ``(keys, values, table_ids=None)`` adds rows, closing (or leaving the ``with`` block) saves them."""

    def __init__(self, paths, snapshot_name, key_type, value_type, storage_dim, physical_block_size=4096):
        if value_type != flow.float32:
            raise NotImplementedError(f"value_type must be flow.float32, got {value_type}")
        paths = _paths(paths)
        if len(paths) != 1:
            raise ValueError("make_persistent_table_writer writes one shard folder at a time")
        _check_name(snapshot_name)
        self.path, self.name, self.storage_dim = paths[0], snapshot_name, int(storage_dim)
        self.key_np, self.block, self._parts = _np_key_type(key_type), physical_block_size, []

    def write(self, keys, values, table_ids=None):
        keys = keys.numpy() if isinstance(keys, flow.Tensor) else np.asarray(keys)
        values = values.numpy() if isinstance(values, flow.Tensor) else np.asarray(values)
        keys = np.ascontiguousarray(keys.reshape(-1), np.int64)
        values = np.ascontiguousarray(values, np.float32).reshape(keys.size, -1)
        if values.shape[1] != self.storage_dim:
            raise ValueError(f"values must have storage_dim={self.storage_dim} columns, got {values.shape[1]}")
        if table_ids is None:
            tables = np.zeros(keys.size, np.int32)
        else:
            tables = table_ids.numpy() if isinstance(table_ids, flow.Tensor) else np.asarray(table_ids)
            tables = np.ascontiguousarray(tables.reshape(-1), np.int32)
        self._parts.append((tables, keys, values))

    def close(self):
        if self._parts is None:
            return
        tables, keys, values = (np.concatenate(p) for p in zip(*self._parts)) if self._parts else (
            np.zeros(0, np.int32), np.zeros(0, np.int64), np.zeros((0, self.storage_dim), np.float32))
        ntables = int(tables.max()) + 1 if tables.size else 1
        os.makedirs(self.path, exist_ok=True)
        store = Store(self.storage_dim, self.storage_dim, -1, False, 0, self.path, self.block, 0,
                      [[] for _ in range(ntables)])
        store.import_rows(tables, keys, values)
        write(store, os.path.join(self.path, "snapshots"), self.name, {"num_tables": ntables})
        self._parts = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is None:
            self.close()
        return False


def make_persistent_table_reader(paths, snapshot_name, key_type, value_type, storage_dim,
                                 physical_block_size=4096):
    """A reader of snapshot ``snapshot_name`` in the shard folders ``paths`` (see
    :class:`PersistentTableReader`); the shard folder of an embedding is ``emb.path``."""
    return PersistentTableReader(paths, snapshot_name, key_type, value_type, storage_dim, physical_block_size)


def make_persistent_table_writer(paths, snapshot_name, key_type, value_type, storage_dim,
                                 physical_block_size=4096):
    """A writer of snapshot ``snapshot_name`` into the shard folder ``paths`` (see :class:`PersistentTableWriter`)."""
    return PersistentTableWriter(paths, snapshot_name, key_type, value_type, storage_dim, physical_block_size)
