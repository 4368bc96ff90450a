"""Readers for MNIST, Fashion-MNIST (IDX files) and CIFAR-10 (its python pickle batches).

Without a transform a sample is ``(image, label)``: ``image`` a float32 tensor C×H×W in [0, 1], ``label`` an int64
0-dim tensor. A ``transform`` receives the raw image as a uint8 NumPy array (H×W for MNIST, H×W×C for CIFAR), the
input ``transforms.ToTensor`` expects (torchvision hands a PIL image there); ``target_transform`` receives the
label as a Python int, as in torchvision.

The files are read from ``root`` or from torchvision's layout (``root/MNIST/raw``, ``root/FashionMNIST/raw``,
``root/cifar-10-batches-py``). ``download=True`` fetches missing files from the standard mirrors; without network
it raises a ``RuntimeError`` that names the files and the directory to put them in.
"""
import gzip
import os
import pickle
import shutil
import tarfile
import urllib.error
import zlib

import numpy as np

from ..data.dataset import Dataset

__all__ = ["MNIST", "MNISTDataset", "FashionMNIST", "CIFAR10"]

_DOWNLOAD_TIMEOUT = 10  # seconds per connection attempt: fail fast when offline


def _to_sample(img_chw_u8, label):
    from ... import _C

    img = _C._from_numpy(img_chw_u8.astype(np.float32) / np.float32(255))
    return img, _C._from_numpy(np.array(label, dtype=np.int64))


def _collated(images_u8, labels):
    """What default_collate makes of the samples (images N×C×H×W uint8, labels int64): one tensor each."""
    from ... import _C

    x = images_u8.astype(np.float32)
    x /= np.float32(255)
    return [_C._from_numpy(x), _C._from_numpy(np.ascontiguousarray(labels, dtype=np.int64))]


def _download(url, dst):
    """Downloads ``url`` to ``dst`` atomically (a temporary file renamed into place)."""
    from ...hub import _download as download

    download(url, dst, None, False, _DOWNLOAD_TIMEOUT)


# ---- IDX (MNIST family) -------------------------------------------------------------------------------------
_IDX_TYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def read_idx(path, expected_ndim=None):
    """Reads an IDX file (raw or gzip) into a NumPy array, validating the magic number and the size."""
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rb") as f:
            data = f.read()
    except (OSError, EOFError, zlib.error) as e:
        raise RuntimeError(f"{path}: cannot read the file ({e}); it may be truncated or not gzip data") from None
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_TYPES:
        raise RuntimeError(f"{path}: not an IDX file (bad magic number {data[:4].hex() or 'empty'}; expected "
                           f"00 00 <type> <ndim>)")
    ndim = data[3]
    if expected_ndim is not None and ndim != expected_ndim:
        raise RuntimeError(f"{path}: expected an IDX file with {expected_ndim} dimension(s), got {ndim} "
                           f"(magic number {data[:4].hex()})")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise RuntimeError(f"{path}: truncated IDX header ({len(data)} bytes, need {header})")
    dims = tuple(int(d) for d in np.frombuffer(data, dtype=">u4", count=ndim, offset=4))
    dtype = np.dtype(_IDX_TYPES[data[2]])
    need = header + int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    if len(data) != need:
        raise RuntimeError(f"{path}: size mismatch: the header says {dims} ({need} bytes in all) but the file "
                           f"has {len(data)} bytes")
    arr = np.frombuffer(data, dtype=dtype, offset=header).reshape(dims)
    return arr.astype(dtype.newbyteorder("=")) if dtype.byteorder == ">" else arr


class MNIST(Dataset):
    """The MNIST digits: 60000 training / 10000 test images 28×28 with labels 0-9, read from the IDX files
    ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte``,
    ``t10k-labels-idx1-ubyte`` (each raw or ``.gz``)."""

    mirrors = ["https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"]
    files = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
             False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]

    def __init__(self, root, train=True, download=False, transform=None, target_transform=None):
        self.root = os.path.expanduser(str(root))
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        names = self.files[bool(train)]
        paths = [self._find(n) for n in names]
        if any(p is None for p in paths):
            if download:
                self.download()
                paths = [self._find(n) for n in names]
            if any(p is None for p in paths):
                missing = ", ".join(n for n, p in zip(names, paths) if p is None)
                raise RuntimeError(
                    f"{type(self).__name__}: dataset not found: missing {missing} "
                    f"(raw or .gz) in {self.raw_folder} or {self.root}. "
                    + ("" if download else "Use download=True to download it, or place the files there."))
        images = read_idx(paths[0], expected_ndim=3)
        labels = read_idx(paths[1], expected_ndim=1)
        if images.dtype != np.uint8 or labels.dtype != np.uint8:
            raise RuntimeError(f"{type(self).__name__}: expected unsigned-byte IDX files, got {images.dtype} images "
                               f"and {labels.dtype} labels")
        if len(images) != len(labels):
            raise RuntimeError(f"{type(self).__name__}: {paths[0]} has {len(images)} images but {paths[1]} has "
                               f"{len(labels)} labels")
        if len(labels) and labels.max() >= len(self.classes):
            raise RuntimeError(f"{type(self).__name__}: {paths[1]} has label {int(labels.max())}, outside "
                               f"0..{len(self.classes) - 1}")
        self.data = images
        self.targets = labels.astype(np.int64)

    @property
    def raw_folder(self):
        return os.path.join(self.root, type(self).__name__ if type(self) is not MNISTDataset else "MNIST", "raw")

    def _find(self, name):
        for d in (self.raw_folder, self.root):
            for suffix in ("", ".gz"):
                p = os.path.join(d, name + suffix)
                if os.path.isfile(p):
                    return p
        return None

    def download(self):
        """Downloads the missing ``.gz`` files into ``raw_folder``; offline, raises RuntimeError saying what to
        place where."""
        missing = [n for n in self.files[True] + self.files[False] if self._find(n) is None]
        errors = []
        for name in missing:
            for mirror in self.mirrors:
                try:
                    _download(mirror + name + ".gz", os.path.join(self.raw_folder, name + ".gz"))
                    break
                except (urllib.error.URLError, OSError, ValueError) as e:
                    errors.append(f"{mirror}{name}.gz: {getattr(e, 'reason', e)}")
            else:
                wanted = ", ".join(n + ".gz" for n in missing)
                raise RuntimeError(
                    f"{type(self).__name__}: could not download {wanted} ({'; '.join(errors[-len(self.mirrors):])}). "
                    f"Without network access, place the files {wanted} (gzip or uncompressed) in the directory "
                    f"{os.path.abspath(self.raw_folder)} (or directly in {os.path.abspath(self.root)}).")

    def __getitem__(self, index):
        img, target = self.data[index], int(self.targets[index])
        if self.transform is not None:
            img = self.transform(img)
            if self.target_transform is not None:
                return img, self.target_transform(target)
            from ..._ops.creation import tensor
            from ... import _C

            return img, tensor(target, dtype=_C.int64)
        x, y = _to_sample(img[None], target)
        return x, (self.target_transform(target) if self.target_transform is not None else y)

    def _collated_batch(self, indices):
        if self.transform is not None or self.target_transform is not None:
            return NotImplemented
        idx = np.asarray(indices, dtype=np.int64)
        return _collated(self.data[idx][:, None], self.targets[idx])

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        return (f"Dataset {type(self).__name__}\n    Number of datapoints: {len(self)}\n    Root location: "
                f"{self.root}\n    Split: {'Train' if self.train else 'Test'}")


class MNISTDataset(MNIST):
    """OneFlow's name for the MNIST reader (``oneflow.utils.data.dataset.MNISTDataset``); same as ``MNIST``."""


class FashionMNIST(MNIST):
    """Fashion-MNIST: Zalando's 28×28 clothing images in MNIST's IDX format and file names."""

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]


# ---- CIFAR-10 -------------------------------------------------------------------------------------------------
def _np_reconstruct():
    try:
        from numpy._core import multiarray
    except ImportError:  # NumPy < 2
        from numpy.core import multiarray
    return multiarray


class _RestrictedUnpickler(pickle.Unpickler):
    """Unpickles plain containers and NumPy arrays only: any other global is refused, so a crafted batch file
    cannot run code."""

    def find_class(self, module, name):
        ma = _np_reconstruct()
        allowed = {
            ("numpy.core.multiarray", "_reconstruct"): ma._reconstruct,
            ("numpy._core.multiarray", "_reconstruct"): ma._reconstruct,
            ("numpy.core.multiarray", "scalar"): ma.scalar,
            ("numpy._core.multiarray", "scalar"): ma.scalar,
            ("numpy", "ndarray"): np.ndarray,
            ("numpy", "dtype"): np.dtype,
            ("_codecs", "encode"): _codecs_encode,
            ("builtins", "bytearray"): bytearray,
            ("__builtin__", "bytearray"): bytearray,
        }
        obj = allowed.get((module, name))
        if obj is None:
            raise pickle.UnpicklingError(f"refusing to load {module}.{name}: CIFAR batch files hold only "
                                         f"containers and NumPy arrays")
        return obj


def _codecs_encode(obj, encoding="utf-8", errors="strict"):
    # protocol-2 pickles of bytes call _codecs.encode(str, 'latin1'): allow that and nothing else
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1", "utf-8", "utf8", "ascii"):
        raise pickle.UnpicklingError("refusing _codecs.encode on a non-string")
    return obj.encode(encoding, errors)


def _load_batch(path):
    try:
        with open(path, "rb") as f:
            entry = _RestrictedUnpickler(f, encoding="latin1").load()
    except pickle.UnpicklingError as e:
        raise RuntimeError(f"{path}: not a valid CIFAR batch file: {e}") from None
    except (EOFError, ValueError, TypeError, IndexError, KeyError) as e:
        raise RuntimeError(f"{path}: corrupt CIFAR batch file ({type(e).__name__}: {e})") from None
    if not isinstance(entry, dict):
        raise RuntimeError(f"{path}: expected a dict in a CIFAR batch file, got {type(entry).__name__}")
    entry = {k.decode("latin1") if isinstance(k, bytes) else k: v for k, v in entry.items()}
    return entry


class CIFAR10(Dataset):
    """CIFAR-10: 50000 training / 10000 test colour images 32×32 in 10 classes, read from the python batches
    ``cifar-10-batches-py/data_batch_1..5`` and ``test_batch``."""

    base_folder = "cifar-10-batches-py"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    filename = "cifar-10-python.tar.gz"
    train_list = [f"data_batch_{i}" for i in range(1, 6)]
    test_list = ["test_batch"]
    classes = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]

    def __init__(self, root, train=True, download=False, transform=None, target_transform=None):
        self.root = os.path.expanduser(str(root))
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        names = self.train_list if train else self.test_list
        folder = self._folder()
        if folder is None and download:
            self.download()
            folder = self._folder()
        if folder is None:
            raise RuntimeError(f"CIFAR10: dataset not found: expected {', '.join(names)} in "
                               f"{os.path.join(self.root, self.base_folder)}. "
                               + ("" if download else "Use download=True to download it, or place the files there."))
        data, labels = [], []
        for n in names:
            p = os.path.join(folder, n)
            if not os.path.isfile(p):
                raise RuntimeError(f"CIFAR10: missing {p}")
            e = _load_batch(p)
            if "data" not in e or ("labels" not in e and "fine_labels" not in e):
                raise RuntimeError(f"{p}: a CIFAR batch needs 'data' and 'labels' entries, got {sorted(e)}")
            d = e["data"]
            if not isinstance(d, np.ndarray) or d.dtype != np.uint8 or d.ndim != 2 or d.shape[1] != 3072:
                raise RuntimeError(f"{p}: 'data' must be a uint8 array N×3072, got "
                                   f"{getattr(d, 'dtype', type(d).__name__)} {getattr(d, 'shape', '')}")
            lab = np.asarray(e.get("labels", e.get("fine_labels")), dtype=np.int64)
            if lab.shape != (d.shape[0],):
                raise RuntimeError(f"{p}: {d.shape[0]} images but {lab.size} labels")
            if lab.size and (lab.min() < 0 or lab.max() >= len(self.classes)):
                raise RuntimeError(f"{p}: labels outside 0..{len(self.classes) - 1}")
            data.append(d)
            labels.append(lab)
        self.data = np.concatenate(data).reshape(-1, 3, 32, 32)
        self.targets = np.concatenate(labels)
        meta = os.path.join(folder, "batches.meta")
        if os.path.isfile(meta):
            m = _load_batch(meta)
            if isinstance(m.get("label_names"), list):
                self.classes = [c.decode() if isinstance(c, bytes) else c for c in m["label_names"]]

    def _folder(self):
        for d in (os.path.join(self.root, self.base_folder), self.root):
            names = self.train_list if self.train else self.test_list
            if all(os.path.isfile(os.path.join(d, n)) for n in names):
                return d
        return None

    def download(self):
        """Downloads and extracts the python batches into ``root``; offline, raises a RuntimeError saying what
        to place where."""
        archive = os.path.join(self.root, self.filename)
        if not os.path.isfile(archive):
            try:
                _download(self.url, archive)
            except (urllib.error.URLError, OSError, ValueError) as e:
                raise RuntimeError(
                    f"CIFAR10: could not download {self.url} ({getattr(e, 'reason', e)}). Without network access, "
                    f"place {self.filename} in {os.path.abspath(self.root)}, or its extracted files "
                    f"{', '.join(self.train_list + self.test_list)} in "
                    f"{os.path.abspath(os.path.join(self.root, self.base_folder))}.") from None
        with tarfile.open(archive, "r:gz") as tar:
            members = [m for m in tar.getmembers() if m.isfile()
                       and os.path.normpath(m.name).startswith(self.base_folder + os.sep)
                       and ".." not in m.name.split("/")]
            for m in members:
                dst = os.path.join(self.root, os.path.normpath(m.name))
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                with tar.extractfile(m) as src, open(dst, "wb") as out:
                    shutil.copyfileobj(src, out)

    def __getitem__(self, index):
        img, target = self.data[index], int(self.targets[index])
        if self.transform is not None:
            img = self.transform(np.ascontiguousarray(img.transpose(1, 2, 0)))
            if self.target_transform is not None:
                return img, self.target_transform(target)
            from ..._ops.creation import tensor
            from ... import _C

            return img, tensor(target, dtype=_C.int64)
        x, y = _to_sample(img, target)
        return x, (self.target_transform(target) if self.target_transform is not None else y)

    def _collated_batch(self, indices):
        if self.transform is not None or self.target_transform is not None:
            return NotImplemented
        idx = np.asarray(indices, dtype=np.int64)
        return _collated(self.data[idx], self.targets[idx])

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        return (f"Dataset CIFAR10\n    Number of datapoints: {len(self)}\n    Root location: {self.root}\n"
                f"    Split: {'Train' if self.train else 'Test'}")
