"""The embedded default data set of the MNIST example: real handwritten digits that need no network.

scikit-learn's wheel ships the UCI "Optical Recognition of Handwritten Digits" test set
(`sklearn/datasets/data/digits.csv.gz`, 1797 digits by 43 writers, 8x8 pixels with 17 grey levels, BSD-3-Clause
with scikit-learn). This module turns it, once, into the real MNIST IDX files
(`train-images-idx3-ubyte`, `train-labels-idx1-ubyte`, `t10k-images-idx3-ubyte`, `t10k-labels-idx1-ubyte`) in
a cache directory, so the example then reads it through `MNISTDataset`, the same reader as for full MNIST.

The conversion is fixed so that every machine writes byte-identical files:
- each 8x8 digit (values 0..16) is upscaled to 20x20 by bilinear interpolation with half-pixel centres
  (PyTorch's `interpolate(mode="bilinear", align_corners=False)`), then placed in the middle of a 28x28
  black image with a 4-pixel border, which is how MNIST frames its 20x20 digits;
- grey levels are scaled by 255/16 and rounded to uint8;
- the split is by position: every fifth digit (index % 5 == 4) is the test set (359 digits), the other
  1438 are the training set.
"""
import gzip
import importlib.util
import os
import struct

import numpy as np

DEFAULT_ROOT = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.join(os.path.expanduser("~"), ".cache")),
                            "oneflow", "mnist-digits")
FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
_FORMAT_VERSION = "1"  # bump when the conversion changes, so stale caches are rewritten


def _digits_csv():
    """Path of scikit-learn's bundled digits file (found without importing scikit-learn, which is slow)."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the embedded MNIST example data comes from scikit-learn's bundled digits: "
                           "install it with `pip install scikit-learn`, or pass --data DIR with the MNIST IDX files")
    path = os.path.join(list(spec.submodule_search_locations)[0], "datasets", "data", "digits.csv.gz")
    if not os.path.exists(path):
        raise RuntimeError(f"scikit-learn is installed but its digits file is missing: {path}")
    return path


def load_digits():
    """The 1797 digits as (uint8 images N x 8 x 8 with values 0..16, int64 labels N)."""
    with gzip.open(_digits_csv(), "rt") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64)
    return table[:, :64].reshape(-1, 8, 8).astype(np.uint8), table[:, 64]


def _bilinear_matrix(n_in, n_out):
    """(n_out, n_in) interpolation weights, half-pixel centres, edges clamped (align_corners=False)."""
    w = np.zeros((n_out, n_in), dtype=np.float64)
    for o in range(n_out):
        src = max((o + 0.5) * n_in / n_out - 0.5, 0.0)
        i0 = min(int(np.floor(src)), n_in - 1)
        i1 = min(i0 + 1, n_in - 1)
        frac = src - i0
        w[o, i0] += 1.0 - frac
        w[o, i1] += frac
    return w


def to_mnist_images(digits8):
    """N x 8 x 8 digits (0..16) -> N x 28 x 28 uint8 images framed like MNIST (20x20 digit, 4-pixel border)."""
    m = _bilinear_matrix(8, 20)
    up = np.einsum("oi,nij,pj->nop", m, digits8.astype(np.float64), m)  # separable bilinear resize
    out = np.zeros((digits8.shape[0], 28, 28), dtype=np.uint8)
    out[:, 4:24, 4:24] = np.clip(np.rint(up * (255.0 / 16.0)), 0, 255).astype(np.uint8)
    return out


def write_idx_images(path, images):
    """IDX3 file: magic 0x00000803, big-endian count/rows/cols, then uint8 pixels row-major."""
    n, rows, cols = images.shape
    _atomic_write(path, struct.pack(">IIII", 0x803, n, rows, cols) + np.ascontiguousarray(images, np.uint8).tobytes())


def write_idx_labels(path, labels):
    """IDX1 file: magic 0x00000801, big-endian count, then uint8 labels."""
    _atomic_write(path, struct.pack(">II", 0x801, len(labels)) + np.asarray(labels, np.uint8).tobytes())


def _atomic_write(path, data):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def split(images, labels):
    """Deterministic train/test split: every fifth digit is a test digit."""
    test = np.arange(len(labels)) % 5 == 4
    return (images[~test], labels[~test]), (images[test], labels[test])


def prepare(root=None, force=False):
    """Write the embedded digits as MNIST IDX files under `root` (once) and return `root`."""
    root = root or DEFAULT_ROOT
    stamp = os.path.join(root, "SOURCE")
    if not force and all(os.path.exists(os.path.join(root, f)) for f in FILES) and os.path.exists(stamp):
        with open(stamp) as f:
            if f.readline().strip() == f"sklearn-digits v{_FORMAT_VERSION}":
                return root
    os.makedirs(root, exist_ok=True)
    digits, labels = load_digits()
    (tr_x, tr_y), (te_x, te_y) = split(to_mnist_images(digits), labels)
    write_idx_images(os.path.join(root, FILES[0]), tr_x)
    write_idx_labels(os.path.join(root, FILES[1]), tr_y)
    write_idx_images(os.path.join(root, FILES[2]), te_x)
    write_idx_labels(os.path.join(root, FILES[3]), te_y)
    _atomic_write(stamp, f"sklearn-digits v{_FORMAT_VERSION}\n"
                         "scikit-learn's bundled UCI optical digits (8x8, 1797 images), bilinear-upscaled to 20x20 "
                         "in a 28x28 frame; every fifth digit is in the test set.\n".encode())
    return root


if __name__ == "__main__":
    import sys

    print(prepare(sys.argv[1] if len(sys.argv) > 1 else None, force=True))
