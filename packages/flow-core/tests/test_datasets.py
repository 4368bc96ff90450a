"""MNIST / Fashion-MNIST / CIFAR-10 readers on small files written here in the real formats, and the transforms."""
import gzip
import os
import pickle
import struct

import numpy as np
import pytest
import torch

import oneflow as flow
from oneflow.utils.data import DataLoader
from oneflow.utils.data.dataset import MNISTDataset
from oneflow.utils.vision import datasets as vds
from oneflow.utils.vision import transforms as T


def write_idx(path, arr, gz=False, magic_type=0x08):
    arr = np.asarray(arr, dtype=np.uint8)
    header = struct.pack(">BBBB", 0, 0, magic_type, arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape)
    opener = gzip.open if gz else open
    with opener(str(path), "wb") as f:
        f.write(header + arr.tobytes())


def make_mnist(d, n_train=7, n_test=3, gz=False, prefix=""):
    rng = np.random.default_rng(0)
    os.makedirs(d, exist_ok=True)
    out = {}
    for split, n in (("train", n_train), ("t10k", n_test)):
        imgs = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, size=(n,), dtype=np.uint8)
        sfx = ".gz" if gz else ""
        write_idx(os.path.join(d, f"{split}-images-idx3-ubyte{sfx}"), imgs, gz)
        write_idx(os.path.join(d, f"{split}-labels-idx1-ubyte{sfx}"), labels, gz)
        out[split] = (imgs, labels)
    return out


@pytest.mark.parametrize("gz", [False, True])
def test_mnist_reads_idx(tmp_path, gz):
    ref = make_mnist(tmp_path, gz=gz)
    for train, key in ((True, "train"), (False, "t10k")):
        ds = MNISTDataset(root=str(tmp_path), train=train)
        imgs, labels = ref[key]
        assert len(ds) == len(labels)
        for i in range(len(ds)):
            x, y = ds[i]
            assert x.dtype == flow.float32 and tuple(x.shape) == (1, 28, 28)
            assert y.dtype == flow.int64 and y.dim() == 0 and y.item() == labels[i]
            # same values as torchvision's ToTensor: uint8 / 255 in float32
            exp = (torch.from_numpy(imgs[i].copy()).float().div(255)).numpy()[None]
            np.testing.assert_array_equal(x.numpy(), exp)
            assert 0.0 <= float(x.min()) and float(x.max()) <= 1.0


def test_mnist_torchvision_layout_and_loader(tmp_path):
    ref = make_mnist(tmp_path / "MNIST" / "raw", n_train=10, gz=True)
    ds = MNISTDataset(root=str(tmp_path), train=True, download=True)  # present: no download attempted
    loader = DataLoader(ds, batch_size=4, shuffle=False)
    images, labels = next(iter(loader))
    assert tuple(images.shape) == (4, 1, 28, 28) and images.dtype == flow.float32
    assert labels.dtype == flow.int64 and labels.tolist() == ref["train"][1][:4].tolist()
    with_workers = [(x.numpy(), y.numpy()) for x, y in DataLoader(ds, batch_size=4, num_workers=2)]
    plain = [(x.numpy(), y.numpy()) for x, y in loader]
    for (a, b), (c, e) in zip(with_workers, plain):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, e)
    assert vds.MNIST is not None and issubclass(MNISTDataset, vds.MNIST)


def test_mnist_transforms(tmp_path):
    ref = make_mnist(tmp_path)
    tf = T.Compose([T.ToTensor(), T.Normalize((0.1307,), (0.3081,))])
    ds = MNISTDataset(str(tmp_path), transform=tf, target_transform=lambda y: y + 100)
    x, y = ds[0]
    assert y == ref["train"][1][0] + 100
    exp = (ref["train"][0][0].astype(np.float32) / 255 - np.float32(0.1307)) / np.float32(0.3081)
    np.testing.assert_allclose(x.numpy()[0], exp, rtol=1e-6, atol=1e-6)
    x2, y2 = MNISTDataset(str(tmp_path), transform=T.ToTensor())[1]
    assert y2.dtype == flow.int64 and y2.item() == ref["train"][1][1]


def test_fashion_mnist(tmp_path):
    ref = make_mnist(tmp_path / "FashionMNIST" / "raw", gz=True)
    ds = vds.FashionMNIST(str(tmp_path), train=False)
    assert len(ds) == 3 and ds[2][1].item() == ref["t10k"][1][2]
    assert ds.classes[9] == "Ankle boot"


def test_mnist_corrupt_files(tmp_path):
    make_mnist(tmp_path)
    img = tmp_path / "train-images-idx3-ubyte"
    data = img.read_bytes()
    img.write_bytes(data[:-5])
    with pytest.raises(RuntimeError, match="size mismatch"):
        MNISTDataset(str(tmp_path))
    img.write_bytes(b"\x00\x00\x08\x01" + data[4:])
    with pytest.raises(RuntimeError, match="expected an IDX file with 3 dimension"):
        MNISTDataset(str(tmp_path))
    img.write_bytes(b"PK\x03\x04" + data[4:])
    with pytest.raises(RuntimeError, match="not an IDX file"):
        MNISTDataset(str(tmp_path))
    img.write_bytes(data)
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.zeros(6))
    with pytest.raises(RuntimeError, match="has 7 images but .* has 6 labels"):
        MNISTDataset(str(tmp_path))
    write_idx(tmp_path / "train-labels-idx1-ubyte", np.full(7, 12))
    with pytest.raises(RuntimeError, match="label 12, outside 0..9"):
        MNISTDataset(str(tmp_path))
    (tmp_path / "t10k-images-idx3-ubyte").unlink()
    (tmp_path / "t10k-images-idx3-ubyte.gz").write_bytes(b"\x1f\x8b\x08 not really gzip")
    with pytest.raises(RuntimeError, match="cannot read the file"):
        MNISTDataset(str(tmp_path), train=False)


def test_mnist_missing_and_offline_download(tmp_path, monkeypatch):
    with pytest.raises(RuntimeError, match="dataset not found: missing train-images-idx3-ubyte, "
                                           "train-labels-idx1-ubyte.*download=True"):
        MNISTDataset(str(tmp_path), train=True)
    # a mirror that refuses connections at once stands in for "no network"
    monkeypatch.setattr(vds.MNIST, "mirrors", ["http://127.0.0.1:9/"])
    with pytest.raises(RuntimeError) as ei:
        MNISTDataset(str(tmp_path / "data"), train=True, download=True)
    msg = str(ei.value)
    for name in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz",
                 "t10k-labels-idx1-ubyte.gz"):
        assert name in msg
    assert os.path.join(str(tmp_path / "data"), "MNIST", "raw") in msg and "could not download" in msg
    assert not any(p.name.startswith(".download-") for p in (tmp_path / "data" / "MNIST" / "raw").iterdir())


# ---- CIFAR-10 -------------------------------------------------------------------------------------------------
def make_cifar(root, n=4, protocol=2):
    d = os.path.join(root, "cifar-10-batches-py")
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(1)
    ref = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        data = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n).tolist()
        with open(os.path.join(d, name), "wb") as f:
            pickle.dump({"batch_label": f"{name}", "labels": labels, "data": data,
                         "filenames": [f"img{i}.png" for i in range(n)]}, f, protocol=protocol)
        ref[name] = (data, labels)
    with open(os.path.join(d, "batches.meta"), "wb") as f:
        pickle.dump({"label_names": ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
                                     "truck"], "num_vis": 3072}, f, protocol=protocol)
    return ref


@pytest.mark.parametrize("protocol", [2, 4])
def test_cifar10_reads_batches(tmp_path, protocol):
    ref = make_cifar(str(tmp_path), protocol=protocol)
    train = vds.CIFAR10(str(tmp_path), train=True)
    test = vds.CIFAR10(str(tmp_path), train=False)
    assert len(train) == 20 and len(test) == 4
    x, y = train[5]  # second image of data_batch_2
    data, labels = ref["data_batch_2"]
    assert x.dtype == flow.float32 and tuple(x.shape) == (3, 32, 32)
    assert y.dtype == flow.int64 and y.item() == labels[1]
    np.testing.assert_array_equal(x.numpy(), data[1].reshape(3, 32, 32).astype(np.float32) / np.float32(255))
    # transforms get H×W×C uint8 like a PIL image would give
    tf = T.Compose([T.RandomCrop(32, padding=4), T.RandomHorizontalFlip(), T.ToTensor(),
                    T.Normalize((0.5, 0.5, 0.5), (0.25, 0.25, 0.25))])
    xt, _ = vds.CIFAR10(str(tmp_path), train=False, transform=tf)[0]
    assert tuple(xt.shape) == (3, 32, 32)
    xs, _ = vds.CIFAR10(str(tmp_path), train=False, transform=T.ToTensor())[0]
    np.testing.assert_array_equal(xs.numpy(), test[0][0].numpy())


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


def test_cifar10_refuses_code_and_corrupt(tmp_path):
    make_cifar(str(tmp_path))
    p = os.path.join(str(tmp_path), "cifar-10-batches-py", "test_batch")
    with open(p, "wb") as f:
        pickle.dump({"data": np.zeros((1, 3072), np.uint8), "labels": [_Evil()]}, f, protocol=2)
    with pytest.raises(RuntimeError, match="refusing to load posix.system|refusing to load os.system"):
        vds.CIFAR10(str(tmp_path), train=False)
    with open(p, "wb") as f:
        f.write(b"\x80\x02}q\x00(")  # truncated
    with pytest.raises(RuntimeError, match="corrupt CIFAR batch file|not a valid CIFAR batch"):
        vds.CIFAR10(str(tmp_path), train=False)
    with open(p, "wb") as f:
        pickle.dump({"data": np.zeros((2, 100), np.uint8), "labels": [0, 1]}, f, protocol=2)
    with pytest.raises(RuntimeError, match="'data' must be a uint8 array N×3072"):
        vds.CIFAR10(str(tmp_path), train=False)
    with pytest.raises(RuntimeError, match="dataset not found"):
        vds.CIFAR10(str(tmp_path / "nothing"), train=True)


def test_cifar10_offline_download(tmp_path, monkeypatch):
    monkeypatch.setattr(vds.CIFAR10, "url", "http://127.0.0.1:9/cifar-10-python.tar.gz")
    with pytest.raises(RuntimeError, match="could not download .*place cifar-10-python.tar.gz in"):
        vds.CIFAR10(str(tmp_path), download=True)


# ---- transforms -----------------------------------------------------------------------------------------------
def test_to_tensor_and_normalize_match_torch():
    img = np.random.default_rng(0).integers(0, 256, size=(5, 6, 3), dtype=np.uint8)
    x = T.ToTensor()(img)
    exp = torch.from_numpy(img.transpose(2, 0, 1).copy()).float().div(255)
    np.testing.assert_array_equal(x.numpy(), exp.numpy())
    assert tuple(T.ToTensor()(img[:, :, 0]).shape) == (1, 5, 6)
    f = np.random.rand(4, 4, 2).astype(np.float64)
    np.testing.assert_array_equal(T.ToTensor()(f).numpy(), f.transpose(2, 0, 1))
    with pytest.raises(TypeError, match="pic should be PIL Image or ndarray"):
        T.ToTensor()([1, 2])
    mean, std = (0.1, 0.2, 0.3), (0.5, 0.25, 2.0)
    y = T.Normalize(mean, std)(x)
    ey = (exp - torch.tensor(mean).view(-1, 1, 1)) / torch.tensor(std).view(-1, 1, 1)
    np.testing.assert_allclose(y.numpy(), ey.numpy(), rtol=1e-6, atol=1e-7)
    xi = x.clone()
    out = T.Normalize(mean, std, inplace=True)(xi)
    np.testing.assert_allclose(xi.numpy(), ey.numpy(), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="std evaluated to zero"):
        T.Normalize(mean, (1.0, 0.0, 1.0))(x)
    with pytest.raises(TypeError, match="Input tensor should be a float tensor"):
        T.Normalize(mean, std)(flow.zeros(3, 2, 2, dtype=flow.int64))
    assert out is xi


def test_random_crop_flip_center_lambda():
    x = flow.arange(2 * 6 * 6, dtype=flow.float32).view(2, 6, 6)
    flow.manual_seed(0)
    c1 = T.RandomCrop(4)(x)
    flow.manual_seed(0)
    c2 = T.RandomCrop(4)(x)
    assert tuple(c1.shape) == (2, 4, 4) and bool((c1 == c2).all())
    # the crop is a window of the input
    xn = x.numpy()
    found = any(np.array_equal(c1.numpy(), xn[:, i:i + 4, j:j + 4]) for i in range(3) for j in range(3))
    assert found
    p = T.RandomCrop(6, padding=2)(x)
    assert tuple(p.shape) == (2, 6, 6)
    # padding only: crop size = padded size gives the zero-padded image
    pz = T.RandomCrop(10, padding=2)(x).numpy()
    np.testing.assert_array_equal(pz, np.pad(xn, [(0, 0), (2, 2), (2, 2)]))
    with pytest.raises(ValueError, match="Required crop size"):
        T.RandomCrop(7)(x)
    assert tuple(T.RandomCrop(8, pad_if_needed=True)(x).shape) == (2, 8, 8)
    np.testing.assert_array_equal(T.RandomHorizontalFlip(p=1.0)(x).numpy(), xn[:, :, ::-1])
    np.testing.assert_array_equal(T.RandomHorizontalFlip(p=0.0)(x).numpy(), xn)
    hwc = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    np.testing.assert_array_equal(T.RandomHorizontalFlip(p=1.0)(hwc), hwc[:, ::-1])
    assert T.RandomCrop((1, 2))(hwc).shape == (1, 2, 3)
    np.testing.assert_array_equal(T.CenterCrop(2)(x).numpy(), xn[:, 2:4, 2:4])
    assert T.Lambda(lambda t: t * 2)(flow.tensor(2)).item() == 4
    with pytest.raises(TypeError, match="Argument lambd should be callable"):
        T.Lambda(3)
    flips = []
    flow.manual_seed(1)
    for _ in range(200):
        flips.append(bool((T.RandomHorizontalFlip()(x) != x).any()))
    assert 60 < sum(flips) < 140
    assert "Compose(" in repr(T.Compose([T.ToTensor()]))


def test_resize_and_alias():
    from oneflow.utils.data import transforms as T2

    assert T2.Compose is T.Compose
    x = flow.rand(3, 4, 6)
    y = T.Resize((8, 12))(x)
    e = torch.nn.functional.interpolate(torch.from_numpy(x.numpy())[None], size=(8, 12), mode="bilinear",
                                        align_corners=False)[0]
    np.testing.assert_allclose(y.numpy(), e.numpy(), rtol=1e-5, atol=1e-6)
    assert tuple(T.Resize(8)(x).shape) == (3, 8, 12)


def test_batched_fast_path_equals_default_collate(tmp_path):
    from oneflow.utils.data import default_collate

    make_mnist(tmp_path, n_train=9)
    make_cifar(str(tmp_path))
    for ds in (MNISTDataset(str(tmp_path)), vds.CIFAR10(str(tmp_path))):
        idx = [4, 0, 7, 7, 2]
        fast = ds._collated_batch(idx)
        slow = default_collate([ds[i] for i in idx])
        assert type(fast) is type(slow) and len(fast) == 2
        for a, b in zip(fast, slow):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        # a custom collate_fn sees the per-sample tuples
        seen = []
        list(DataLoader(ds, batch_size=3, collate_fn=lambda b: seen.append(b) or b))
        assert isinstance(seen[0], list) and isinstance(seen[0][0], tuple) and seen[0][0][1].dim() == 0
        with pytest.raises(IndexError):
            ds._collated_batch([100])
    assert MNISTDataset(str(tmp_path), transform=T.ToTensor())._collated_batch([0]) is NotImplemented


def test_random_crop_per_channel_fill_center_crop_padding_and_bool_to_tensor():
    flow.manual_seed(0)
    img = np.zeros((4, 5, 3), np.uint8)
    out = T.RandomCrop(8, padding=2, fill=(1, 2, 3))(img)
    assert out.shape == (8, 8, 3) and out.dtype == np.uint8
    values = {tuple(px) for px in out.reshape(-1, 3)}
    assert values <= {(0, 0, 0), (1, 2, 3)} and (1, 2, 3) in values
    t = T.RandomCrop(8, padding=2, fill=(1, 2, 3))(flow.zeros(3, 4, 5))
    assert tuple(t.shape) == (3, 8, 8)
    assert {tuple(t[:, i, j].tolist()) for i in range(8) for j in range(8)} <= {(0.0, 0.0, 0.0), (1.0, 2.0, 3.0)}
    # CenterCrop larger than the image pads with zeros first, as torchvision (left/top get the smaller half)
    cc = T.CenterCrop(6)(np.ones((4, 5, 1), np.uint8))[:, :, 0]
    expected = np.zeros((6, 6), np.uint8)
    expected[1:5, 0:5] = 1
    np.testing.assert_array_equal(cc, expected)
    assert T.ToTensor()(np.ones((2, 2), bool)).dtype == flow.bool
