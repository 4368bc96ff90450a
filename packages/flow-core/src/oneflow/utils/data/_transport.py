"""How worker processes hand batches to the main process: tensor data through shared memory.

A worker pickles each batch with tensors replaced by references (``persistent_id``) and copies all the tensor
bytes of that batch into one file under ``/dev/shm`` (memory, not disk). The main process maps the file, unlinks
it at once (the memory lives until the last tensor viewing it is freed) and rebuilds every tensor as a zero-copy
view of the mapping. The pickled skeleton is small, so the queue only carries a few hundred bytes per batch.
Where there is no ``/dev/shm`` the whole batch is pickled instead.

File names start with the loader's prefix (``flowdl_<pid>_<id>_``), so the main process can delete any file that
a worker wrote but nobody received (a loader stopped early) when it shuts the workers down.
"""
import glob
import io
import itertools
import mmap
import os
import pickle

import numpy as np

_SHM_DIR = "/dev/shm"
_ALIGN = 64
_counter = itertools.count()


def shm_available():
    return os.path.isdir(_SHM_DIR) and os.access(_SHM_DIR, os.W_OK)


def make_prefix():
    """A file-name prefix unique to one DataLoader iterator of this process."""
    return os.path.join(_SHM_DIR, f"flowdl_{os.getpid()}_{next(_counter)}_{os.urandom(4).hex()}_")


def cleanup(prefix):
    """Deletes the shared-memory files of ``prefix`` that no one received."""
    for path in glob.glob(glob.escape(prefix) + "*"):
        try:
            os.unlink(path)
        except OSError:
            pass


class Payload:
    """A batch on its way from a worker: the pickled skeleton and the shared-memory file holding tensor bytes."""

    __slots__ = ("blob", "path", "size")

    def __init__(self, blob, path, size):
        self.blob, self.path, self.size = blob, path, size

    def __reduce__(self):
        return (Payload, (self.blob, self.path, self.size))


def _shareable(obj):
    from ... import _C
    from ..._tensor import Tensor

    return (type(obj) is Tensor and obj.dtype != _C.bfloat16 and not obj.is_meta)


class _Pickler(pickle.Pickler):
    def __init__(self, file):
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.tensors = []
        self.offset = 0

    def persistent_id(self, obj):
        if not _shareable(obj):
            return None
        n = obj.numel() * obj.element_size()
        ref = ("flow_tensor", str(np.dtype(_np_dtype(obj))), tuple(obj.shape), self.offset, bool(obj.requires_grad))
        self.tensors.append((obj, self.offset))
        self.offset += (n + _ALIGN - 1) // _ALIGN * _ALIGN
        return ref


_NP_DTYPES = {}


def _np_dtype(t):
    d = _NP_DTYPES.get(t.dtype)
    if d is None:
        from ... import _C

        d = _NP_DTYPES[t.dtype] = _C._to_numpy(_C._empty([0], t.dtype, None)).dtype
    return d


def encode(obj, prefix):
    """Packs ``obj`` for the queue (in the worker). Tensors go to one shared-memory file named ``prefix...``."""
    if prefix is None:
        return obj
    from ... import _C

    buf = io.BytesIO()
    p = _Pickler(buf)
    p.dump(obj)
    if p.offset == 0:
        return Payload(buf.getvalue(), None, 0)
    path = f"{prefix}{os.getpid()}_{next(_counter)}"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        # reserve the pages now: a full /dev/shm (64 MiB in default Docker) then fails here with ENOSPC
        # instead of killing the worker with SIGBUS on the first write
        if hasattr(os, "posix_fallocate"):
            os.posix_fallocate(fd, 0, p.offset)
        else:
            os.ftruncate(fd, p.offset)
        mm = mmap.mmap(fd, p.offset)
    except OSError:
        os.close(fd)
        os.unlink(path)
        return obj  # no room in shared memory: the queue pickles the batch (tensors by value)
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)
    try:
        for t, off in p.tensors:
            src = _C._to_numpy(t.detach())
            if src.size:
                dst = np.frombuffer(mm, dtype=src.dtype, count=src.size, offset=off).reshape(src.shape)
                np.copyto(dst, src)
                del dst
    except BaseException:
        mm.close()
        os.unlink(path)
        raise
    mm.close()
    return Payload(buf.getvalue(), path, p.offset)


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, mm):
        super().__init__(file)
        self.mm = mm

    def persistent_load(self, pid):
        from ... import _C

        kind, dtype, shape, offset, requires_grad = pid
        if kind != "flow_tensor":
            raise pickle.UnpicklingError(f"unknown persistent id {kind!r}")
        count = int(np.prod(shape, dtype=np.int64))
        if count == 0:
            arr = np.empty(shape, dtype=dtype)
        else:
            arr = np.frombuffer(self.mm, dtype=dtype, count=count, offset=offset).reshape(shape)
        t = _C._from_numpy(arr)
        if requires_grad:
            t.requires_grad_(True)
        return t


def decode(obj):
    """Rebuilds what ``encode`` packed (in the main process); a non-``Payload`` passes through."""
    if not isinstance(obj, Payload):
        return obj
    mm = None
    if obj.path is not None:
        try:
            fd = os.open(obj.path, os.O_RDWR)
        except FileNotFoundError:
            raise RuntimeError(f"DataLoader: the shared-memory file {obj.path} of a batch disappeared "
                               "(was /dev/shm cleaned while the loader ran?)") from None
        try:
            mm = mmap.mmap(fd, obj.size)
        finally:
            os.close(fd)
            os.unlink(obj.path)  # the mapping keeps the memory alive
    return _Unpickler(io.BytesIO(obj.blob), mm).load()
