"""``flow.save`` / ``flow.load``: checkpoints in the project's own format, and reading of PyTorch files.

Our format is a zip archive (stored, not compressed; zip gives CRC checks and ZIP64 for free):

    oneflow/version       "1"
    oneflow/byteorder     "little" | "big"
    oneflow/data.json     the object tree (tagged JSON) plus the tensor and storage tables
    oneflow/data.pkl      only for objects JSON can't describe (modules, NumPy arrays, user classes): the
                          object as a pickle whose tensors refer to the tables (see ``_pickle_record``)
    oneflow/storages/<i>  the raw bytes of storage i

Every storage is written once; each tensor records (storage, dtype, size, stride, offset), so views, the same
tensor saved twice and tied weights share memory again after loading.

Loading is safe by default, as in PyTorch (``weights_only=True``): JSON describes data only, and pickles (our
record, PyTorch files) go through unpicklers that admit tensors, plain containers and the globals the user
allowlisted with :func:`add_safe_globals`; PyTorch's globals map to our own reconstruction functions (torch is
never imported). Only an explicit ``weights_only=False`` unpickles without restriction, which can run code from
the file.
"""
import collections
import ctypes
import io
import json
import math
import os
import pickle
import struct
import sys
import tempfile
import zipfile
import zlib

import numpy as np

from . import _C, _pickle_record, _plugins, _safe_globals
from ._safe_globals import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

__all__ = ["save", "load", "add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals"]

_FORMAT_VERSION = "1"
_PREFIX = "oneflow/"
_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64")
_CHUNK = 64 << 20  # bytes per write/read call, so huge storages never need one giant temporary


def _dtype_name(dt):
    return str(dt).split(".")[-1]


def _raw_buffer(ptr, nbytes):
    """A writable memoryview of ``nbytes`` of native memory at ``ptr`` (no copy)."""
    if nbytes == 0:
        return memoryview(bytearray(0))
    return memoryview((ctypes.c_char * nbytes).from_address(ptr)).cast("B")


# ---------------------------------------------------------------------------------------------------------
# encoding (object tree -> JSON-able data + storages)
# ---------------------------------------------------------------------------------------------------------
class _NotPlainData(Exception):
    """The object holds something the JSON tree can't describe (it is then pickled instead)."""


_PLAIN_CONTAINERS = (dict, collections.OrderedDict, list, tuple, set, frozenset)


class _Encoder:
    def __init__(self):
        self.tensors = []  # JSON records
        self.tensor_ids = {}  # id(tensor) -> index
        self.keep = []  # keeps encoded tensors alive until written (ids must stay unique)
        self.storages = []  # [tensor owning the memory, ptr, nbytes, dtype name]
        self.storage_ids = {}  # storage data pointer -> index
        self.active = set()  # ids of containers being encoded (cycle detection)

    def tensor(self, t, path):
        from .nn.parameter import Parameter

        idx = self.tensor_ids.get(id(t))
        if idx is not None:
            return {"T": "tensor", "i": idx}
        if getattr(t, "is_global", False) is True:
            raise RuntimeError(f"flow.save: {path} is a global tensor; pass global_dst_rank=<rank> to gather it "
                               f"whole onto that rank and save it there")
        if t.is_meta:
            raise RuntimeError(f"flow.save: can't save a tensor without data (meta tensor) at {path}")
        if not t.is_cpu:
            t_data = t.detach().cpu()
        else:
            t_data = t.detach()
        dt = _dtype_name(t_data.dtype)
        ptr, nbytes = t_data._storage_ptr(), t_data._storage_nbytes()
        sidx = self.storage_ids.get(ptr) if ptr else None
        if sidx is None:
            sidx = len(self.storages)
            self.storages.append([t_data, ptr, nbytes, dt])
            if ptr:
                self.storage_ids[ptr] = sidx
        else:
            rec = self.storages[sidx]
            if rec[3] != dt:
                raise RuntimeError(
                    f"flow.save: cannot save multiple tensors that view the same data as different types "
                    f"({rec[3]} and {dt}) at {path}")
            if nbytes > rec[2]:  # two storages over the same memory (e.g. from_numpy views): keep the larger
                rec[0], rec[2] = t_data, nbytes
        kind = "parameter" if isinstance(t, Parameter) else "tensor"
        idx = len(self.tensors)
        self.tensors.append({
            "storage": sidx, "dtype": dt, "size": list(t_data.shape), "stride": list(t_data.stride()),
            "offset": t_data.storage_offset(), "requires_grad": bool(t.requires_grad), "kind": kind,
            "device": str(t.device),
        })
        self.tensor_ids[id(t)] = idx
        self.keep.append(t)
        return {"T": "tensor", "i": idx}

    def encode(self, obj, path="obj"):
        from ._tensor import Tensor

        tp = type(obj)
        if obj is None or tp is bool or tp is str:
            return obj
        if tp is int:
            return obj
        if tp is float:
            if math.isfinite(obj):
                return obj
            return {"T": "float", "v": repr(obj)}  # 'nan', 'inf', '-inf'
        if isinstance(obj, Tensor):
            return self.tensor(obj, path)
        if isinstance(obj, (bool, np.bool_)):
            return bool(obj)
        if isinstance(obj, (int, np.integer)):
            return int(obj)
        if isinstance(obj, (float, np.floating)):
            return self.encode(float(obj), path)
        if isinstance(obj, str):
            return str(obj)
        if isinstance(obj, (bytes, bytearray)):
            return {"T": "bytearray" if isinstance(obj, bytearray) else "bytes", "v": bytes(obj).hex()}
        if isinstance(obj, complex):
            return {"T": "complex", "v": [repr(obj.real), repr(obj.imag)]}
        if isinstance(obj, _C.dtype):
            return {"T": "dtype", "v": _dtype_name(obj)}
        if isinstance(obj, _C.device):
            return {"T": "device", "v": str(obj)}
        if tp in _PLAIN_CONTAINERS or self._is_plain_tuple(obj):
            if id(obj) in self.active:  # pickle keeps the cycle
                raise _NotPlainData(f"circular reference at {path}")
            self.active.add(id(obj))
            try:
                return self._container(obj, path)
            finally:
                self.active.discard(id(obj))
        # a subclass of a container too: JSON would bring it back as the plain container
        raise _NotPlainData(f"an object of type {tp.__module__}.{tp.__qualname__} at {path}")

    @staticmethod
    def _is_plain_tuple(obj):
        from ._tensor import Size

        return isinstance(obj, Size) or (isinstance(obj, tuple) and hasattr(type(obj), "_fields"))

    def _container(self, obj, path):
        if isinstance(obj, dict):
            items = [[self.encode(k, f"{path} key {k!r}"), self.encode(v, f"{path}[{k!r}]")] for k, v in obj.items()]
            r = {"T": "odict" if isinstance(obj, collections.OrderedDict) else "dict", "v": items}
            meta = getattr(obj, "_metadata", None)  # nn.Module.state_dict's per-module versions
            if meta is not None:
                r["meta"] = self.encode(meta, f"{path}._metadata")
            return r
        from ._tensor import Size

        if isinstance(obj, Size):
            return {"T": "size", "v": [int(d) for d in obj]}
        if isinstance(obj, tuple) and hasattr(type(obj), "_fields"):
            return {"T": "namedtuple", "name": type(obj).__name__, "fields": list(type(obj)._fields),
                    "v": [self.encode(v, f"{path}.{f}") for f, v in zip(type(obj)._fields, obj)]}
        tag = "list" if isinstance(obj, list) else "tuple" if isinstance(obj, tuple) else \
            "frozenset" if isinstance(obj, frozenset) else "set"
        return {"T": tag, "v": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]}


def _write_archive(fileobj, root, enc, record=None):
    header = {"format": "oneflow", "version": _FORMAT_VERSION, "root": root, "tensors": enc.tensors,
              "storages": [{"dtype": s[3], "nbytes": s[2]} for s in enc.storages]}
    data = json.dumps(header, separators=(",", ":"), allow_nan=False).encode("utf-8")
    with zipfile.ZipFile(fileobj, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        zf.writestr(_PREFIX + "version", _FORMAT_VERSION)
        zf.writestr(_PREFIX + "byteorder", sys.byteorder)
        zf.writestr(_PREFIX + "data.json", data)
        if record is not None:
            zf.writestr(_PREFIX + "data.pkl", record)
        for i, (_owner, ptr, nbytes, _) in enumerate(enc.storages):  # _owner keeps ptr valid
            with zf.open(f"{_PREFIX}storages/{i}", "w", force_zip64=nbytes >= (1 << 31)) as out:
                buf = _raw_buffer(ptr, nbytes)
                for start in range(0, nbytes, _CHUNK):
                    out.write(buf[start:start + _CHUNK])
                del buf


_umask = None


def _default_mode():
    global _umask
    if _umask is None:
        _umask = os.umask(0)
        os.umask(_umask)
    return 0o666 & ~_umask


def _atomic_write(path, write):
    """Run ``write(fileobj)`` into a temporary file beside ``path``, fsync it, then rename it over ``path``."""
    path = os.path.realpath(os.fspath(path))
    directory, base = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp", dir=directory or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            mode = _default_mode()
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:  # make the rename itself durable; not possible everywhere (e.g. some network file systems)
        dfd = os.open(directory or ".", os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def save(obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False, *, global_dst_rank=None):
    """Saves an object to a disk file, as ``torch.save``.

    Plain data (tensors, dicts, OrderedDicts, lists, tuples, sets, named tuples, numbers, strings, bytes, None,
    dtypes and devices, nested freely: state dicts and most checkpoints) is written as data, which any
    :func:`load` reads without running code. Any other picklable object (a whole ``nn.Module``, NumPy arrays,
    instances of your own classes, subclasses of the containers above, cyclic structures) is pickled into the
    file, with its tensors still stored as tensor data; :func:`load` then reads it only with
    ``weights_only=False`` or with its classes allowlisted through :func:`add_safe_globals`, as in PyTorch.

    Args:
        obj: the object to save.
        f: a path (``str`` / ``os.PathLike``) or a writable binary file object. Writes to a path are atomic: a
            temporary file in the same directory is renamed over ``f`` only once it is complete, so a failure
            mid-save (an unpicklable object included) leaves any previous file intact.
        pickle_module: the module whose ``Pickler`` pickles objects that are not plain data. Default: ``pickle``.
        pickle_protocol (int): the protocol of that pickle. Default: ``pickle.DEFAULT_PROTOCOL``.
        _use_new_zipfile_serialization, _disable_byteorder_record: accepted for ``torch.save`` compatibility and
            ignored: the file is always this project's zip format.
        global_dst_rank (int, optional): for objects holding global tensors (flow-dist), as in OneFlow: every rank
            calls ``save`` with the same structure, each global tensor is gathered whole onto this rank, and only
            this rank writes ``f``, holding plain tensors that any layout can load back (see
            ``load(global_src_rank=)``). A failed write raises on every rank. Without it, saving a global tensor
            raises.

    Tensors that share memory are stored once and share it again after :func:`load`. Like ``torch.save``,
    gradients are not saved.
    """
    if global_dst_rank is not None:
        _save_global(obj, f, pickle_module, pickle_protocol, global_dst_rank)
        return
    _save(obj, f, pickle_module, pickle_protocol)


def _global_checkpoint():
    hooks = _plugins.load("_global_checkpoint")
    if hooks is None:
        raise _plugins.missing("placement")
    return hooks


def _save_global(obj, f, pickle_module, pickle_protocol, dst):
    hooks = _global_checkpoint()
    obj, writes = hooks.gather_for_save(obj, dst)
    error = None
    if writes:
        try:
            _save(obj, f, pickle_module, pickle_protocol)
        except Exception as e:  # told to every rank before it is raised here
            error = e
    hooks.finish_save(error, dst)
    if error is not None:
        raise error


def _save(obj, f, pickle_module, pickle_protocol):
    # everything is encoded in memory first, so that nothing touches the disk when it fails
    enc, record = _Encoder(), None
    try:
        root = enc.encode(obj)
    except _NotPlainData:
        enc = _Encoder()
        record = _pickle_record.dumps(obj, enc, pickle_module, pickle_protocol)
        root = {"T": "pickle"}
    if isinstance(f, (str, bytes, os.PathLike)):
        if isinstance(f, bytes):
            f = os.fsdecode(f)
        parent = os.path.dirname(os.path.abspath(f))
        # torch's errors, naming the user's path rather than our temporary file
        if not os.path.isdir(parent):
            raise RuntimeError(f"Parent directory {parent} does not exist.")
        if os.path.isdir(f):
            raise RuntimeError(f"flow.save: cannot write to {os.fspath(f)}: Is a directory")
        _atomic_write(f, lambda fo: _write_archive(fo, root, enc, record))
    elif hasattr(f, "write"):
        _write_archive(f, root, enc, record)
        if hasattr(f, "flush"):
            f.flush()
    else:
        raise TypeError(f"flow.save: expected a path or a writable file object, got {type(f).__name__}")


# ---------------------------------------------------------------------------------------------------------
# loading helpers shared by both formats
# ---------------------------------------------------------------------------------------------------------
class _Corrupt(Exception):
    pass


class _RaisedByThePickle(Exception):
    """An error from the file's own objects during a full (not weights-only) unpickling: :func:`load` raises it
    as it is, as ``pickle.load`` would, rather than as a corrupt file."""

    def __init__(self, error):
        super().__init__(error)
        self.error = error


def _unpickle(unpickler, opts):
    if opts.weights_only:
        return unpickler.load()
    try:
        return unpickler.load()
    except _Corrupt:
        raise
    except Exception as e:
        if str(e).startswith("flow.load"):
            raise
        raise _RaisedByThePickle(e) from None


def _check(cond, msg):
    if not cond:
        raise _Corrupt(msg)


_itemsizes = {}


def _itemsize(dtype):
    if dtype not in _itemsizes:
        _itemsizes[dtype] = _C._empty([0], getattr(_C, dtype), None).element_size()
    return _itemsizes[dtype]


def _is_int(v):
    return type(v) is int


def _read_storage(zf, name, dtype, nbytes, archive_size, byteorder):
    """Reads the entry ``name`` (``nbytes`` raw bytes of ``dtype``) into a fresh 1-D tensor."""
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise _Corrupt(f"missing storage record {name!r}") from None
    _check(info.file_size >= nbytes, f"storage record {name!r} holds {info.file_size} bytes, expected {nbytes}")
    _check(info.compress_size <= archive_size, f"storage record {name!r} is larger than the file")
    # never allocate more than the file can hold (deflate expands at most ~1032x)
    limit = info.compress_size if info.compress_type == zipfile.ZIP_STORED else 1032 * info.compress_size + 1024
    _check(nbytes <= limit, f"storage record {name!r} claims {nbytes} bytes but the file can't hold them")
    item = _itemsize(dtype)
    _check(nbytes % item == 0, f"storage record {name!r}: {nbytes} bytes is not a multiple of the {dtype} size")
    t = _C._empty([nbytes // item], getattr(_C, dtype), None)
    buf = _raw_buffer(t._storage_ptr(), nbytes)
    if info.compress_type == zipfile.ZIP_STORED and info.file_size == nbytes and not info.flag_bits & 0x1 \
            and hasattr(zf.fp, "readinto"):
        _read_stored(zf.fp, info, buf, name)
    else:
        _read_via_zipfile(zf, info, buf, name)
    if byteorder != sys.byteorder and item > 1:
        np.frombuffer(buf, dtype=f"u{item}").byteswap(inplace=True)
    del buf
    return t


def _read_stored(fp, info, buf, name):
    """Reads an uncompressed record straight into ``buf`` (no intermediate bytes), then checks its CRC."""
    fp.seek(info.header_offset)
    hdr = fp.read(30)
    _check(len(hdr) == 30 and hdr[:4] == b"PK\x03\x04", f"bad local header for {name!r}")
    skip = int.from_bytes(hdr[26:28], "little") + int.from_bytes(hdr[28:30], "little")
    fp.seek(info.header_offset + 30 + skip)
    nbytes, pos, crc = len(buf), 0, 0
    while pos < nbytes:
        n = fp.readinto(buf[pos:min(nbytes, pos + _CHUNK)])
        if not n:
            raise _Corrupt(f"storage record {name!r} is truncated")
        crc = zlib.crc32(buf[pos:pos + n], crc)
        pos += n
    _check(crc == info.CRC, f"storage record {name!r} is corrupted (bad CRC-32)")


def _read_via_zipfile(zf, info, buf, name):
    nbytes = len(buf)
    with zf.open(info) as src:
        pos = 0
        while pos < nbytes:
            n = src.readinto(buf[pos:min(nbytes, pos + _CHUNK)])
            if not n:
                raise _Corrupt(f"storage record {name!r} is truncated")
            pos += n
        if info.file_size == nbytes:
            src.read(1)  # reach EOF so zipfile verifies the CRC


def _view(base, size, stride, offset, what):
    """``as_strided`` over a loaded storage, bounds-checked here with Python ints (no int64 overflow)."""
    _check(isinstance(size, (list, tuple)) and isinstance(stride, (list, tuple)) and len(size) == len(stride),
           f"{what}: bad size/stride")
    _check(all(_is_int(s) and s >= 0 for s in size) and all(_is_int(s) and s >= 0 for s in stride),
           f"{what}: sizes and strides must be non-negative integers")
    _check(_is_int(offset) and offset >= 0, f"{what}: bad storage offset")
    if all(s > 0 for s in size):
        extent = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
        _check(extent <= base.numel(), f"{what}: size {list(size)} / stride {list(stride)} / offset {offset} "
                                       f"are out of bounds for a storage of {base.numel()} elements")
    return _C.ops.as_strided(base, list(size), list(stride), offset).detach()


def _restore_location(t, location):
    """``t`` (loaded on the CPU) moved to the device it was saved from, as torch does without ``map_location``."""
    if location.startswith("cpu"):
        return t
    dev = _C.device(location)
    if dev.type == "cuda" and _cuda_available():
        from . import cuda

        index = 0 if dev.index is None else dev.index
        if index >= cuda.device_count():
            raise RuntimeError(f"Attempting to deserialize object on CUDA device {index} but "
                               f"oneflow.cuda.device_count() is {cuda.device_count()}. Please use flow.load with "
                               "map_location to map your storages to an existing device.")
        return t.to(dev)
    raise RuntimeError(
        f"flow.load: the file holds tensors on device '{location}', which this build does not have "
        f"(oneflow.cuda.is_available() is False); pass map_location='cpu' to load them on the CPU")


def _apply_map_location(t, location, map_location):
    if map_location is None:
        return _restore_location(t, location)
    if callable(map_location):
        r = map_location(t, location)
        if r is None:
            return t
        from ._tensor import Tensor

        if not isinstance(r, Tensor) or r.dtype != t.dtype or tuple(r.shape) != tuple(t.shape):
            raise RuntimeError(
                "flow.load: a map_location callable must return the storage it was given (a 1-D tensor) or a "
                f"tensor of the same dtype ({t.dtype}) and shape ({tuple(t.shape)}), e.g. moved to another device")
        return r.contiguous()
    if isinstance(map_location, dict):
        target = map_location.get(location, location)
        return _apply_map_location(t, location, None if target == location else target)
    return t.to(_C.device(str(map_location)) if not isinstance(map_location, _C.device) else map_location)


def _finish_tensor(t, kind, requires_grad):
    from .nn.parameter import Parameter

    if kind == "parameter":
        return Parameter(t, requires_grad=requires_grad)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _archive_size(fileobj):
    pos = fileobj.tell()
    fileobj.seek(0, os.SEEK_END)
    size = fileobj.tell()
    fileobj.seek(pos)
    return size


class _Window(io.RawIOBase):
    """Bytes [start, end) of a seekable binary stream, as a stream of their own: zipfile finds an archive's
    index at the end of what it is given, so an archive followed by more data (a second save to the same
    stream) is read through a window that ends with it."""

    def __init__(self, fo, start, end):
        super().__init__()
        self._fo, self._start, self._end, self._pos = fo, start, end, 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def tell(self):
        return self._pos

    def seek(self, offset, whence=os.SEEK_SET):
        base = {os.SEEK_SET: 0, os.SEEK_CUR: self._pos, os.SEEK_END: self._end - self._start}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, b):
        n = max(0, min(len(b), self._end - self._start - self._pos))
        self._fo.seek(self._start + self._pos)
        data = self._fo.read(n)
        b[:len(data)] = data
        self._pos += len(data)
        return len(data)


def _zip_end(fo, start, end):
    """Where the zip archive that begins at `start` ends (`end` is the stream's): just past the first
    end-of-central-directory record whose central directory lies right before it and lists the entry at
    `start` first, so that signature bytes inside stored data, or a later archive, are not taken for it.
    zipfile writes offsets from the stream's start (ours), other writers from the archive's: both are
    accepted. `end` when no record fits, for zipfile to report."""
    def fits(e):  # e: absolute position of a candidate record
        fo.seek(e)
        rec = fo.read(22)
        if len(rec) < 22 or rec[:4] != b"PK\x05\x06":
            return None
        cd_size, cd_offset, comment = struct.unpack_from("<IIH", rec, 12)
        cd_end = e
        # a zip64 record and its locator, when present, sit between the directory and this record (some
        # writers add them to every archive); the record holds the sizes when the 32-bit fields are full
        if e - 20 >= start:
            fo.seek(e - 20)
            loc = fo.read(20)
            if loc[:4] == b"PK\x06\x07":
                rec64 = struct.unpack_from("<Q", loc, 8)[0]
                for base in (0, start):
                    if start <= base + rec64 <= e - 76:
                        fo.seek(base + rec64)
                        r = fo.read(56)
                        if r[:4] == b"PK\x06\x06":
                            cd_end = base + rec64
                            if cd_size == 0xFFFFFFFF or cd_offset == 0xFFFFFFFF:
                                cd_size, cd_offset = struct.unpack_from("<QQ", r, 40)
                            break
        for base in (0, start):  # the archive's first entry must be the one at `start`
            if cd_offset + cd_size == cd_end - base and cd_size >= 46:
                fo.seek(cd_end - cd_size)
                entry = fo.read(46)
                first = struct.unpack_from("<I", entry, 42)[0] if entry[:4] == b"PK\x01\x02" else None
                if first in (start - base, 0xFFFFFFFF):
                    return e + 22 + comment
        return None

    # the usual case: one archive that runs to the end of the stream
    tail = min(end - start, 22 + 65535)
    fo.seek(end - tail)
    last = fo.read(tail).rfind(b"PK\x05\x06")
    if last >= 0 and fits(end - tail + last) == end:
        return end
    chunk, pos = 1 << 20, start
    while pos < end:
        fo.seek(pos)
        data = fo.read(min(chunk + 3, end - pos))
        i = data.find(b"PK\x05\x06")
        while 0 <= i < chunk:
            stop = fits(pos + i)
            if stop is not None:
                return stop
            i = data.find(b"PK\x05\x06", i + 1)
        pos += chunk
    return end


# ---------------------------------------------------------------------------------------------------------
# our format
# ---------------------------------------------------------------------------------------------------------
_namedtuples = {}


def _load_ours(zf, map_location, archive_size, opts):
    try:
        byteorder = zf.read(_PREFIX + "byteorder").decode()
        version = zf.read(_PREFIX + "version").decode()
        header = json.loads(zf.read(_PREFIX + "data.json").decode("utf-8"))
    except KeyError as e:
        raise _Corrupt(f"missing record {e}") from None
    _check(version == _FORMAT_VERSION, f"unsupported format version {version!r} (this build reads {_FORMAT_VERSION})")
    _check(byteorder in ("little", "big"), "bad byteorder record")
    _check(isinstance(header, dict) and header.get("format") == "oneflow", "bad header")
    _check(header.get("version") == _FORMAT_VERSION, f"unsupported format version {header.get('version')!r}")
    storages_meta, tensors_meta = header["storages"], header["tensors"]
    _check(isinstance(storages_meta, list) and isinstance(tensors_meta, list), "bad tables")
    storages = {}

    def storage(i):
        if i not in storages:
            _check(_is_int(i) and 0 <= i < len(storages_meta), f"bad storage index {i!r}")
            m = storages_meta[i]
            _check(m["dtype"] in _DTYPES and _is_int(m["nbytes"]) and m["nbytes"] >= 0, f"bad storage {i}")
            storages[i] = _read_storage(zf, f"{_PREFIX}storages/{i}", m["dtype"], m["nbytes"], archive_size,
                                        byteorder)
        return storages[i]

    tensors = {}
    mapped_bases = {}

    def tensor(i):
        if i in tensors:
            return tensors[i]
        _check(_is_int(i) and 0 <= i < len(tensors_meta), f"bad tensor index {i!r}")
        m = tensors_meta[i]
        _check(isinstance(m, dict), "bad tensor record")
        base = storage(m["storage"])
        _check(m["dtype"] == storages_meta[m["storage"]]["dtype"], f"tensor {i}: dtype differs from its storage")
        device = str(m.get("device", "cpu"))
        key = m["storage"]
        if key not in mapped_bases:
            mapped_bases[key] = _apply_map_location(base, device, map_location)
        t = _view(mapped_bases[key], m["size"], m["stride"], m["offset"], f"tensor {i}")
        _check(m.get("kind") in ("tensor", "parameter"), f"tensor {i}: bad kind")
        t = _finish_tensor(t, m["kind"], bool(m["requires_grad"]))
        tensors[i] = t
        return t

    def decode(v, depth=0):
        _check(depth < 10000, "nesting too deep")
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        _check(isinstance(v, dict) and "T" in v, f"bad value {v!r:.80}")
        tag = v["T"]
        if tag == "tensor":
            return tensor(v["i"])
        if tag in ("dict", "odict"):
            r = collections.OrderedDict() if tag == "odict" else {}
            for kv in v["v"]:
                _check(isinstance(kv, list) and len(kv) == 2, "bad dict item")
                r[decode(kv[0], depth + 1)] = decode(kv[1], depth + 1)
            if "meta" in v:
                try:
                    r._metadata = decode(v["meta"], depth + 1)
                except AttributeError:  # plain dicts take no attributes
                    pass
            return r
        if tag in ("list", "tuple", "set", "frozenset"):
            _check(isinstance(v["v"], list), f"bad {tag}")
            items = [decode(x, depth + 1) for x in v["v"]]
            return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
        if tag == "namedtuple":
            name, fields = v["name"], tuple(v["fields"])
            _check(isinstance(name, str) and all(isinstance(f, str) for f in fields), "bad namedtuple")
            cls = _namedtuples.get((name, fields))
            if cls is None:  # namedtuple validates the names as identifiers; nothing from the file is run
                cls = _namedtuples[(name, fields)] = collections.namedtuple(name, fields)
            return cls(*[decode(x, depth + 1) for x in v["v"]])
        if tag == "size":
            return _torch_size(v["v"])
        if tag == "float":
            _check(v["v"] in ("nan", "inf", "-inf"), "bad float")
            return float(v["v"])
        if tag in ("bytes", "bytearray"):
            b = bytes.fromhex(v["v"])
            return bytearray(b) if tag == "bytearray" else b
        if tag == "complex":
            return complex(float(v["v"][0]), float(v["v"][1]))
        if tag == "dtype":
            _check(v["v"] in _DTYPES, "bad dtype")
            return getattr(_C, v["v"])
        if tag == "device":
            return _C.device(str(v["v"]))
        raise _Corrupt(f"unknown tag {tag!r}")

    root = header["root"]
    if isinstance(root, dict) and root.get("T") == "pickle":
        try:
            record = zf.read(_PREFIX + "data.pkl")
        except KeyError:
            raise _Corrupt("missing record 'oneflow/data.pkl'") from None
        return _unpickle(_pickle_record.unpickler(record, tensor, opts.weights_only, opts.pickle_module,
                                                  opts.encoding), opts)
    return decode(root)


# ---------------------------------------------------------------------------------------------------------
# PyTorch files, read through a restricted unpickler
# ---------------------------------------------------------------------------------------------------------
_TORCH_STORAGE_DTYPES = {
    "FloatStorage": "float32", "DoubleStorage": "float64", "HalfStorage": "float16", "BFloat16Storage": "bfloat16",
    "LongStorage": "int64", "IntStorage": "int32", "ShortStorage": "int16", "CharStorage": "int8",
    "ByteStorage": "uint8", "BoolStorage": "bool",
}
_TORCH_DTYPES = {
    "float32": "float32", "float": "float32", "float64": "float64", "double": "float64", "float16": "float16",
    "half": "float16", "bfloat16": "bfloat16", "int64": "int64", "long": "int64", "int32": "int32", "int": "int32",
    "int16": "int16", "short": "int16", "int8": "int8", "uint8": "uint8", "bool": "bool",
}


# torch dtypes without a oneflow counterpart, named in the error when a file holds them
_TORCH_UNSUPPORTED_DTYPES = frozenset((
    "complex32", "complex64", "complex128", "cfloat", "cdouble", "chalf", "uint16", "uint32", "uint64",
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
    "qint8", "quint8", "qint32", "quint4x2", "quint2x4", "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16",
    "int1", "int2", "int3", "int4", "int5", "int6", "int7", "uint1", "uint2", "uint3", "uint4", "uint5", "uint6",
    "uint7"))


class _StorageType:
    """Stands for ``torch.FloatStorage`` etc. in a pickle: it only carries the dtype."""

    def __init__(self, dtype):
        self.dtype = dtype


class _Layout:
    def __init__(self, name):
        self.name = name


_STRIDED = _Layout("torch.strided")


class _TorchStorage:
    def __init__(self, tensor, location):
        self.tensor, self.location = tensor, location


def _get_layout(name):
    if name != "torch.strided":
        raise pickle.UnpicklingError(f"flow.load: only strided tensors can be loaded, not {name}")
    return _STRIDED


def _torch_size(dims=()):
    from ._tensor import Size

    if not all(_is_int(d) for d in dims):
        raise pickle.UnpicklingError("flow.load: torch.Size takes integers")
    return Size(tuple(dims))


def _torch_device(kind, index=None):
    if not isinstance(kind, str) or not (index is None or _is_int(index)):
        raise pickle.UnpicklingError("flow.load: malformed torch.device")
    return _C.device(kind if index is None else f"{kind}:{index}")


def _no_hooks(hooks):
    if hooks:
        raise pickle.UnpicklingError("flow.load: tensors with backward hooks can't be loaded")


class _LoadOptions:
    """How :func:`load` unpickles: restricted (``weights_only``) or not, with which module and encoding."""

    def __init__(self, weights_only=True, pickle_module=None, encoding="utf-8"):
        self.weights_only, self.pickle_module, self.encoding = weights_only, pickle_module, encoding


_SAFE_LOAD = _LoadOptions()


def _oneflow_counterpart(module, name, imported_only=False):
    """The oneflow object at the path of the torch global ``module.name`` (``torch.nn.modules.linear.Linear``
    -> ``oneflow.nn.modules.linear.Linear``), for files that pickled whole torch objects. ``imported_only``
    looks only at modules already imported (a weights-only load imports nothing the file names)."""
    import importlib

    target = "oneflow" + module[len("torch"):]
    try:
        obj = sys.modules[target] if imported_only else importlib.import_module(target)
        for part in name.split("."):
            obj = getattr(obj, part)
        return obj
    except (ImportError, AttributeError, KeyError):
        raise pickle.UnpicklingError(
            f"flow.load: the file holds a '{module}.{name}', and oneflow has no '{target}.{name}' to load it "
            "as") from None


class _TorchUnpicklerMixin:
    """Reads PyTorch's pickles: PyTorch's tensor and storage globals become our reconstruction functions and the
    storages come from the archive records. With ``weights_only`` only those, plain containers and the
    allowlisted globals are admitted; otherwise other ``torch.*`` globals map to oneflow's object at the same
    path and any other global is imported (full pickle)."""

    def _setup(self, load_storage, weights_only):
        self._load_storage = load_storage
        self._weights_only = weights_only

    def _rebuild_tensor(self, storage, offset, size, stride, requires_grad=False, hooks=None, metadata=None):
        if not isinstance(storage, _TorchStorage):
            raise pickle.UnpicklingError("flow.load: _rebuild_tensor_v2 expects a storage")
        _no_hooks(hooks)
        t = _view(storage.tensor, list(size), list(stride), offset, "tensor")
        if requires_grad:
            t.requires_grad_(True)
        return t

    def _rebuild_tensor_v3(self, storage, offset, size, stride, requires_grad, hooks, dtype, metadata=None):
        return self._rebuild_tensor(storage, offset, size, stride, requires_grad, hooks, metadata)

    @staticmethod
    def _rebuild_parameter(data, requires_grad, hooks, state=None):
        from .nn.parameter import Parameter

        _no_hooks(hooks)
        if state:
            raise pickle.UnpicklingError("flow.load: parameters with extra Python state can't be loaded")
        return Parameter(data.detach(), requires_grad=requires_grad)

    @staticmethod
    def _rebuild_from_type_v2(func, new_type, args, state):
        """A tensor of a subclass, or one with Python attributes (``state``), as torch pickles them."""
        from ._tensor import Tensor

        if not (isinstance(new_type, type) and issubclass(new_type, Tensor)):
            raise pickle.UnpicklingError(
                f"flow.load: _rebuild_from_type_v2 expects a tensor type, not {new_type!r:.80}")
        ret = func(*args)
        if not isinstance(ret, Tensor):
            raise pickle.UnpicklingError("flow.load: _rebuild_from_type_v2 expects a tensor")
        if type(ret) is not new_type:
            ret = ret.as_subclass(new_type)
        dict_state, slots_state = state if isinstance(state, tuple) and len(state) == 2 else (state, None)
        for part in (dict_state, slots_state):
            if part:
                if not isinstance(part, dict):
                    raise pickle.UnpicklingError("flow.load: malformed tensor state")
                for k, v in part.items():
                    if not isinstance(k, str) or k.startswith("__"):  # no __class__ swaps from a file
                        raise pickle.UnpicklingError(f"flow.load: refusing the tensor attribute {k!r:.80}")
                    setattr(ret, k, v)
        return ret

    def _torch_global(self, module, name):
        """PyTorch's tensor-related globals, or None for any other."""
        from ._tensor import Tensor
        from .nn.parameter import Parameter

        if module == "torch._utils":
            if name == "_rebuild_tensor_v2":
                return self._rebuild_tensor
            if name == "_rebuild_tensor_v3":
                return self._rebuild_tensor_v3
            if name in ("_rebuild_parameter", "_rebuild_parameter_with_state"):
                return self._rebuild_parameter
        if module == "torch._tensor" and name == "_rebuild_from_type_v2":
            return self._rebuild_from_type_v2
        unsupported_storage = name.endswith("Storage") and name not in _TORCH_STORAGE_DTYPES
        if module in ("torch", "torch.storage") and (unsupported_storage or name in _TORCH_UNSUPPORTED_DTYPES):
            # a tensor dtype oneflow lacks (complex, uint16/32/64, float8, quantized ...): say so plainly
            raise pickle.UnpicklingError(
                f"flow.load: the file holds tensors stored as '{module}.{name}', a dtype oneflow does not support "
                f"(supported: {', '.join(_DTYPES)})")
        if module == "torch":
            if name in _TORCH_STORAGE_DTYPES:
                return _StorageType(_TORCH_STORAGE_DTYPES[name])
            if name in _TORCH_DTYPES:
                return getattr(_C, _TORCH_DTYPES[name])
            if name == "strided":
                return _STRIDED
            if name == "Size":
                return _torch_size
            if name == "device":
                return _torch_device
            if name == "Tensor":
                return Tensor
        if (module, name) == ("torch.nn.parameter", "Parameter"):
            return Parameter
        if module == "torch.serialization" and name == "_get_layout":
            return _get_layout
        return None

    def find_class(self, module, name):
        mapped = _pickle_record.py2_names(module, name)
        obj = self._torch_global(*mapped)
        if obj is not None:
            return obj
        is_torch = mapped[0] == "torch" or mapped[0].startswith("torch.")
        if self._weights_only:
            try:
                return _pickle_record.safe_global(module, name)
            except pickle.UnpicklingError:
                # allowlisting oneflow's class (``flow.nn.Linear``, or torch.nn.Linear under mock_torch) also
                # admits PyTorch's class at the same path in PyTorch files
                if is_torch:
                    try:
                        obj = _oneflow_counterpart(*mapped, imported_only=True)
                    except pickle.UnpicklingError:
                        obj = None
                    if obj is not None and any(obj is v for v in _safe_globals.user_allowed().values()):
                        return obj
                raise
        if is_torch:
            return _oneflow_counterpart(*mapped)
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"flow.load: unsupported persistent id {pid!r:.80}")
        storage_type, key, location, numel = pid[1], pid[2], pid[3], pid[4]
        if isinstance(storage_type, _C.dtype):  # torch.UntypedStorage paths pass a dtype
            dtype = _dtype_name(storage_type)
        elif isinstance(storage_type, _StorageType):
            dtype = storage_type.dtype
        else:
            raise pickle.UnpicklingError(f"flow.load: unsupported storage type {storage_type!r:.80}")
        if not isinstance(key, str) or not isinstance(location, str) or not _is_int(numel) or numel < 0:
            raise pickle.UnpicklingError("flow.load: malformed storage reference")
        return self._load_storage(key, dtype, numel, location)


class _TorchUnpickler(_TorchUnpicklerMixin, pickle.Unpickler):
    pass


def _torch_unpickler(file, load_storage, opts=_SAFE_LOAD):
    cls = _TorchUnpickler
    if opts.pickle_module is not None and opts.pickle_module.Unpickler is not pickle.Unpickler:
        cls = type("_TorchUnpickler", (_TorchUnpicklerMixin, opts.pickle_module.Unpickler), {})
    u = cls(file, encoding=opts.encoding)
    u._setup(load_storage, opts.weights_only)
    return u


def _load_torch_zip(zf, names, map_location, archive_size, opts):
    pkl = [n for n in names if n.endswith("data.pkl") and n.count("/") <= 1]
    _check(len(pkl) == 1, "no single data.pkl record")
    prefix = pkl[0][: -len("data.pkl")]
    byteorder = "little"
    if prefix + "byteorder" in names:
        byteorder = zf.read(prefix + "byteorder").decode().strip()
        _check(byteorder in ("little", "big"), "bad byteorder record")
    loaded = {}

    def load_storage(key, dtype, numel, location):
        if key not in loaded:
            base = _read_storage(zf, f"{prefix}data/{key}", dtype, numel * _itemsize(dtype), archive_size, byteorder)
            loaded[key] = _TorchStorage(_apply_map_location(base, location, map_location), location)
        else:
            st = loaded[key]
            _check(_dtype_name(st.tensor.dtype) == dtype, f"storage {key} is used with two dtypes")
        return loaded[key]

    with zf.open(pkl[0]) as f:
        data = io.BytesIO(f.read())
    return _unpickle(_torch_unpickler(data, load_storage, opts), opts)


_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C


def _load_torch_legacy(fo, map_location, archive_size, opts):
    """The pre-1.6 PyTorch format: pickles of (magic, version, sys_info, object, storage keys), then each storage
    as an 8-byte element count followed by its raw bytes."""
    def refuse(*a):
        raise pickle.UnpicklingError("flow.load: unexpected storage reference in a legacy file header")

    # the header pickles are plain data whatever weights_only says
    _check(_torch_unpickler(fo, refuse).load() == _LEGACY_MAGIC, "not a PyTorch file (bad magic number)")
    _check(_torch_unpickler(fo, refuse).load() == 1001, "unsupported legacy PyTorch protocol version")
    sys_info = _torch_unpickler(fo, refuse).load()
    _check(isinstance(sys_info, dict), "bad legacy sys_info")
    byteorder = "little" if sys_info.get("little_endian", True) else "big"
    pending = {}  # key -> (tensor to fill, dtype, numel, location)

    def load_storage(key, dtype, numel, location):
        if key not in pending:
            _check(numel * _itemsize(dtype) <= archive_size, f"storage {key} is larger than the file")
            pending[key] = _TorchStorage(_C._empty([numel], getattr(_C, dtype), None), location)
        return pending[key]

    obj = _unpickle(_torch_unpickler(fo, load_storage, opts), opts)  # views of storages filled below
    keys = _torch_unpickler(fo, refuse).load()
    _check(isinstance(keys, list), "bad legacy storage key list")
    for key in keys:
        _check(key in pending, f"legacy storage {key!r} is not referenced")
        t = pending[key].tensor
        head = fo.read(8)
        _check(len(head) == 8, "truncated legacy storage")
        _check(int.from_bytes(head, byteorder) == t.numel(), f"legacy storage {key!r} has the wrong size")
        buf = _raw_buffer(t._storage_ptr(), t._storage_nbytes())
        pos = 0
        while pos < len(buf):
            n = fo.readinto(buf[pos:])
            if not n:
                raise _Corrupt(f"legacy storage {key!r} is truncated")
            pos += n
        if byteorder != sys.byteorder and t.element_size() > 1:
            np.frombuffer(buf, dtype=f"u{t.element_size()}").byteswap(inplace=True)
        del buf
    _check(set(keys) == set(pending), "legacy file misses storage data")
    for st in pending.values():  # the tensors already view these storages, so mapping must keep them in place
        r = _apply_map_location(st.tensor, st.location, map_location)
        if r._storage_ptr() != st.tensor._storage_ptr():
            raise RuntimeError("flow.load: for legacy (non-zip) PyTorch files, map_location must keep tensors "
                               "on the CPU where they are loaded")
    return obj


# ---------------------------------------------------------------------------------------------------------
def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, global_src_rank=None,
         **pickle_load_args):
    """Loads an object saved with :func:`save` (or a PyTorch ``.pt`` / ``.pth`` file, zip or legacy) from ``f``.

    As in PyTorch, loading is restricted by default (``weights_only=True``): tensors, plain containers (dict,
    OrderedDict, list, tuple, set, numbers, strings, bytes), dtypes, devices and the globals allowlisted with
    :func:`add_safe_globals` / :class:`safe_globals` load, and anything else a pickle in the file names raises
    ``pickle.UnpicklingError`` before it is imported or called. Files that :func:`save` wrote as plain data
    never run code, whatever ``weights_only`` says.

    Args:
        f: a path or a readable binary file object (read from its current position).
        map_location: where tensors go: ``None`` (the device they were saved from), a device or device string,
            a dict mapping saved locations (``"cuda:0"``) to devices, or a callable
            ``(storage, location) -> storage or None`` that gets each storage as a 1-D CPU tensor.
        pickle_module: the module whose ``Unpickler`` reads pickles; only with ``weights_only=False`` (given
            alone, it implies ``weights_only=False``, as in PyTorch).
        weights_only (bool, optional): ``True`` (the default when ``pickle_module`` is None) restricts loading
            as above. ``False`` unpickles without restriction, so that whole modules, NumPy arrays and objects of
            any class load: the file can then **run arbitrary code**, so only use it for files from a trusted
            source. Other ``torch.*`` globals in PyTorch files map to oneflow's object at the same path
            (``torch.nn.modules.linear.Linear`` -> ``oneflow.nn.modules.linear.Linear``).
        mmap (bool): accepted for paths (the file is read, not mapped); a file object with ``mmap=True`` raises
            ``ValueError`` as in torch.
        global_src_rank (int, optional): as in OneFlow (flow-dist): every rank calls ``load``, only this rank
            reads ``f``, and every rank gets the same object with its tensors global, broadcast over all the
            job's ranks; ``load_state_dict`` then lays them out as the model's placement and sbp. A failure on
            that rank raises on every rank.
        pickle_load_args: ``encoding`` (default ``"utf-8"``), used to decode Python 2 strings in pickles.

    Raises:
        RuntimeError: for a truncated, corrupted or foreign file, naming the problem.
        pickle.UnpicklingError: with ``weights_only=True``, for a file that holds anything beyond the above
            (the message says how to allowlist it or to use ``weights_only=False``).
    """
    unknown = set(pickle_load_args) - {"encoding"}
    if unknown:
        raise TypeError(f"load() got an unexpected keyword argument '{sorted(unknown)[0]}'")
    if global_src_rank is not None:
        return _global_checkpoint().load_broadcast(
            lambda: load(f, map_location, pickle_module, weights_only=weights_only, mmap=mmap, **pickle_load_args),
            global_src_rank)
    if weights_only is None:
        weights_only = pickle_module is None
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    opts = _LoadOptions(bool(weights_only), pickle_module, pickle_load_args.get("encoding", "utf-8"))
    is_path = isinstance(f, (str, bytes, os.PathLike))
    if mmap and not is_path:
        raise ValueError("f must be a file path in order to use the mmap argument")
    _check_map_location(map_location)
    if is_path:
        with open(os.fsdecode(f) if isinstance(f, bytes) else f, "rb") as fo:
            return _load_file(fo, map_location, os.fspath(f), opts)
    if not hasattr(f, "read"):
        raise TypeError(f"flow.load: expected a path or a readable file object, got {type(f).__name__}")
    if not (hasattr(f, "seekable") and f.seekable()):
        f = io.BytesIO(f.read())
    return _load_file(f, map_location, getattr(f, "name", "<file object>"), opts)


def _check_map_location(map_location):
    """A map_location that names a CUDA device on a machine without one fails before anything is read, as in
    PyTorch (and not as a corrupt file)."""
    if not (map_location is None or callable(map_location) or isinstance(map_location, (str, dict, _C.device))):
        raise TypeError("flow.load: map_location must be None, a device, a device string, a dict mapping saved "
                        f"locations to devices or a callable, not {type(map_location).__name__}")
    targets = map_location.values() if isinstance(map_location, dict) else [map_location]
    for t in targets:
        if isinstance(t, (str, _C.device)) and _C.device(t).type == "cuda" and not _cuda_available():
            raise RuntimeError("Attempting to deserialize object on a CUDA device but oneflow.cuda.is_available() "
                               "is False. If you are running on a CPU-only machine, please use flow.load with "
                               "map_location=flow.device('cpu') to map your storages to the CPU.")


def _cuda_available():
    from . import cuda

    return cuda.is_available()


def _load_file(fo, map_location, name, opts):
    try:
        start = fo.tell()
        magic = fo.read(4)
        fo.seek(start)
        if len(magic) == 0:
            raise _Corrupt("the file is empty")
        if magic[:2] != b"PK":
            if magic[:1] == b"\x80":
                if not hasattr(fo, "readinto"):
                    fo = io.BytesIO(fo.read())
                return _load_torch_legacy(fo, map_location, _archive_size(fo), opts)
            raise _Corrupt("not a oneflow or PyTorch checkpoint (no zip header)")
        stream_end = _archive_size(fo)
        end = _zip_end(fo, start, stream_end)
        if end < stream_end:  # more data follows the archive: read it alone, and leave the stream after it
            fo.seek(end)
            fo = _Window(fo, start, end)
        else:
            fo.seek(start)
        archive_size = _archive_size(fo)
        with zipfile.ZipFile(fo, "r") as zf:
            names = zf.namelist()
            if _PREFIX + "data.json" in names:
                return _load_ours(zf, map_location, archive_size, opts)
            if any(n.endswith("data.pkl") for n in names):
                return _load_torch_zip(zf, names, map_location, archive_size, opts)
            raise _Corrupt("a zip archive that is neither a oneflow nor a PyTorch checkpoint")
    except _RaisedByThePickle as e:
        raise e.error from None
    except pickle.UnpicklingError as e:
        if str(e).startswith("flow.load"):
            raise
        raise pickle.UnpicklingError(f"flow.load: {name} is corrupted or not a valid checkpoint: {e}") from e
    except RuntimeError as e:
        if str(e).startswith("flow.load"):
            raise
        raise RuntimeError(f"flow.load: {name} is corrupted or not a valid checkpoint: {e}") from e
    except _Corrupt as e:
        raise RuntimeError(f"flow.load: {name} is not a valid checkpoint: {e}") from None
    except (zipfile.BadZipFile, zipfile.LargeZipFile, json.JSONDecodeError, UnicodeDecodeError, KeyError,
            IndexError, TypeError, ValueError, AttributeError, EOFError, NotImplementedError, zlib.error, OSError,
            MemoryError, OverflowError, RecursionError) as e:
        raise RuntimeError(f"flow.load: {name} is corrupted or not a valid checkpoint: "
                           f"{type(e).__name__}: {e}") from e
