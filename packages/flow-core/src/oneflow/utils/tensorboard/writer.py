"""SummaryWriter: TensorBoard event files written by this package alone (no TensorFlow, protobuf or
tensorboard package needed to write them; TensorBoard reads them as it reads PyTorch's)."""
import os
import socket
import struct
import time
import zlib
from datetime import datetime

import numpy as np

from . import _records as rec

__all__ = ["SummaryWriter"]

_file_counter = 0


class _EventFile:
    """One events.out.tfevents.* file: records appended through a buffer that is flushed every ``max_queue``
    records or ``flush_secs`` seconds (checked as records arrive), and on flush()/close()."""

    def __init__(self, log_dir, max_queue, flush_secs, filename_suffix):
        global _file_counter
        os.makedirs(log_dir, exist_ok=True)
        _file_counter += 1
        name = (f"events.out.tfevents.{int(time.time()):010d}.{socket.gethostname()}.{os.getpid()}."
                f"{_file_counter}{filename_suffix}")
        self.path = os.path.join(log_dir, name)
        self._f = open(self.path, "ab")
        self._max_queue, self._flush_secs = max_queue, flush_secs
        self._pending, self._last_flush = 0, time.time()
        self.write(rec.event(time.time(), file_version="brain.Event:2"))
        self.flush()

    def write(self, event_bytes):
        if self._f is None:
            raise RuntimeError("SummaryWriter: the writer is closed")
        self._f.write(rec.frame(event_bytes))
        self._pending += 1
        if self._pending >= self._max_queue or time.time() - self._last_flush >= self._flush_secs:
            self.flush()

    def flush(self):
        if self._f is not None:
            self._f.flush()
            self._pending, self._last_flush = 0, time.time()

    def close(self):
        if self._f is not None:
            self._f.close()
            self._f = None


def _scalar(x, what):
    if hasattr(x, "detach"):
        x = x.detach()
        if x.numel() != 1:
            raise ValueError(f"{what}: expected a scalar or a one-element tensor, got shape {tuple(x.shape)}")
        return x.item()
    arr = np.asarray(x)
    if arr.size != 1:
        raise ValueError(f"{what}: expected a scalar, got an array of shape {arr.shape}")
    return arr.reshape(()).item()


def _numpy(x):
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _tensorflow_bins():
    """TensorBoard's default histogram edges: +-1e-12 growing by 10% to +-1e20, and 0."""
    pos = []
    v = 1e-12
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return [-x for x in reversed(pos)] + [0.0] + pos


def _histogram(values, bins, max_bins):
    values = _numpy(values).astype(np.float64).reshape(-1)
    if values.size == 0:
        raise ValueError("add_histogram: the input has no values")
    if not np.isfinite(values).all():
        raise ValueError("add_histogram: the input has non-finite values")
    counts, edges = np.histogram(values, bins=_tensorflow_bins() if bins == "tensorflow" else bins)
    if max_bins is not None and len(counts) > max_bins:  # merge neighbours down to at most max_bins buckets
        group = -(-len(counts) // max_bins)
        pad = (-len(counts)) % group
        counts = np.pad(counts, (0, pad)).reshape(-1, group).sum(axis=1)
        edges = np.concatenate([edges[:-1:group], edges[-1:]])
    # keep the non-empty range with one empty bucket in front, as TensorBoard's own writer does
    nz = np.flatnonzero(counts)
    first, last = int(nz[0]), int(nz[-1])
    lo = max(first - 1, 0)
    limits = edges[lo + 1:last + 2]
    counts = counts[lo:last + 1]
    return rec.histogram(values.min(), values.max(), values.size, values.sum(), values.dot(values),
                         limits.tolist(), counts.astype(np.float64).tolist())


def _to_hwc(img, dataformats):
    img = _numpy(img)
    fmt = dataformats.upper()
    if len(fmt) != img.ndim or sorted(fmt) != sorted(set(fmt)) or not set(fmt) <= set("NCHW"):
        raise ValueError(f"add_image: dataformats {dataformats!r} does not fit an image of shape {img.shape}")
    if "N" in fmt:
        img = _grid(np.moveaxis(img, [fmt.index(c) for c in "N" + "".join(c for c in "HWC" if c in fmt)],
                                range(img.ndim)), "C" in fmt)
    else:
        img = np.transpose(img, [fmt.index(c) for c in "HWC" if c in fmt])
    if img.ndim == 2:
        img = img[:, :, None]
    if img.shape[2] not in (1, 3, 4):
        raise ValueError(f"add_image: expected 1, 3 or 4 channels, got {img.shape[2]}")
    scale = 1 if img.dtype == np.uint8 else 255  # float images are in [0, 1]
    return (img.astype(np.float32) * scale).clip(0, 255).astype(np.uint8)


def _grid(imgs, has_c, ncols=8):
    """N images (N, H, W[, C]) tiled into rows of at most ncols, the empty cells black."""
    if not has_c:
        imgs = imgs[..., None]
    n, h, w, c = imgs.shape
    cols = min(n, ncols)
    rows = -(-n // cols)
    canvas = np.zeros((rows * h, cols * w, c), dtype=imgs.dtype)
    for i in range(n):
        r, k = divmod(i, cols)
        canvas[r * h:(r + 1) * h, k * w:(k + 1) * w] = imgs[i]
    return canvas


def _png(img):
    """A PNG (8-bit gray, RGB or RGBA, no filtering) of an HWC uint8 array."""
    h, w, c = img.shape
    color = {1: 0, 3: 2, 4: 6}[c]
    raw = b"".join(b"\x00" + img[r].tobytes() for r in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


class SummaryWriter:
    r"""Writes TensorBoard event files into ``log_dir`` (view them with ``tensorboard --logdir``).

    Args:
        log_dir (str, optional): Default: ``runs/<date>_<time>_<hostname><comment>``.
        comment (str): appended to the default ``log_dir``. Default: ``''``.
        purge_step (int, optional): events at or after this step from an earlier, crashed run are hidden.
        max_queue (int): records buffered before a write to disk. Default: ``10``.
        flush_secs (int): the longest time records wait in the buffer. Default: ``120``.
        filename_suffix (str): appended to the event file's name. Default: ``''``.

    Supported: ``add_scalar``, ``add_scalars``, ``add_histogram``, ``add_image``, ``add_images``, ``add_text``,
    ``flush``, ``close``, use as a context manager.
    """

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120, filename_suffix=""):
        if log_dir is None:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            log_dir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.log_dir = os.fspath(log_dir)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs, self.filename_suffix = max_queue, flush_secs, filename_suffix
        self._file = self._open(self.log_dir)
        self._scalar_files = {}

    def _open(self, log_dir):
        f = _EventFile(log_dir, self.max_queue, self.flush_secs, self.filename_suffix)
        if self.purge_step is not None:  # SessionLog(status=START) at purge_step: TensorBoard drops later steps
            f.write(rec.event(time.time(), self.purge_step) + rec.f_bytes(6, rec.f_varint(1, 1)))
        return f

    def get_logdir(self):
        """The directory the event files go to."""
        return self.log_dir

    def _add(self, value, global_step, walltime, file=None):
        step = None if global_step is None else int(_scalar(global_step, "global_step"))
        wall = time.time() if walltime is None else float(walltime)
        (file or self._file).write(rec.event(wall, step, summary=rec.summary(value)))

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        r"""Records one number (a Python/NumPy scalar or one-element tensor) under ``tag`` at ``global_step``.
        ``new_style`` stores it as a tensor summary (float64 with ``double_precision``)."""
        x = float(_scalar(scalar_value, "add_scalar"))
        if new_style:
            dtype, val = (2, rec.f_double(6, x)) if double_precision else (1, rec.f_float(5, x))
            tensor = rec.f_varint(1, dtype) + rec.f_bytes(2, b"") + val
            v = rec.value(tag, tensor=tensor, metadata=rec.plugin_metadata("scalars"))
        else:
            v = rec.value(tag, simple_value=x)
        self._add(v, global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        r"""Records several numbers at one step, each in its own run ``<log_dir>/<main_tag>_<tag>`` under the
        common tag ``main_tag``, so TensorBoard draws them in one chart."""
        for tag, x in tag_scalar_dict.items():
            run = os.path.join(self.log_dir, f"{main_tag.replace('/', '_')}_{tag}")
            if run not in self._scalar_files:
                self._scalar_files[run] = self._open(run)
            self._add(rec.value(main_tag, simple_value=float(_scalar(x, "add_scalars"))), global_step, walltime,
                      self._scalar_files[run])

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        r"""Records the distribution of ``values`` (a tensor or array). ``bins`` is ``'tensorflow'``
        (TensorBoard's exponential buckets) or anything :func:`numpy.histogram` takes."""
        self._add(rec.value(tag, histo=_histogram(values, bins, max_bins)), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        r"""Records an image: float values in [0, 1] or uint8 in [0, 255], laid out as ``dataformats``
        (``'CHW'``, ``'HWC'`` or ``'HW'``) with 1, 3 or 4 channels."""
        img = _to_hwc(img_tensor, dataformats)
        colorspace = {1: 1, 3: 3, 4: 4}[img.shape[2]]
        self._add(rec.value(tag, image=rec.image(img.shape[0], img.shape[1], colorspace, _png(img))),
                  global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        r"""Records a batch of images tiled into one grid (eight per row); ``dataformats`` as in
        :meth:`add_image` with a leading ``N``."""
        self.add_image(tag, img_tensor, global_step, walltime, dataformats)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        r"""Records a (Markdown) string, shown in TensorBoard's text tab."""
        v = rec.value(f"{tag}/text_summary", tensor=rec.string_tensor([text_string]),
                      metadata=rec.plugin_metadata("text"))
        self._add(v, global_step, walltime)

    def flush(self):
        """Writes buffered records to disk."""
        for f in [self._file, *self._scalar_files.values()]:
            f.flush()

    def close(self):
        """Flushes and closes the event files; later ``add_*`` calls raise RuntimeError."""
        for f in [self._file, *self._scalar_files.values()]:
            f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_file", None) is not None:
            self.close()
