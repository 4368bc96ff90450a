"""The MNIST example (examples/mnist): embedded-data IDX files, a short training run, checkpoint resume that
reproduces the uninterrupted run, and its command-line behaviour."""
import os
import struct
import subprocess
import sys

import numpy as np
import pytest

import oneflow as flow

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "mnist")
sys.path.insert(0, os.path.abspath(EXAMPLE))

import embedded_digits  # noqa: E402
import train  # noqa: E402
from oneflow.utils.data.dataset import MNISTDataset  # noqa: E402


@pytest.fixture(scope="module")
def digits_root(tmp_path_factory):
    return embedded_digits.prepare(str(tmp_path_factory.mktemp("digits")))


def _read_idx(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack(">I", data[:4])[0]
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return magic, np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def test_idx_files_are_real_mnist_format(digits_root):
    magic, images = _read_idx(os.path.join(digits_root, "train-images-idx3-ubyte"))
    assert magic == 0x803 and images.shape == (1438, 28, 28)
    magic, labels = _read_idx(os.path.join(digits_root, "train-labels-idx1-ubyte"))
    assert magic == 0x801 and labels.shape == (1438,)
    _, test_images = _read_idx(os.path.join(digits_root, "t10k-images-idx3-ubyte"))
    _, test_labels = _read_idx(os.path.join(digits_root, "t10k-labels-idx1-ubyte"))
    assert test_images.shape == (359, 28, 28) and test_labels.shape == (359,)
    # the digits sit in the middle 20x20 like MNIST's, on a black border; every class is present
    assert images[:, :4].max() == 0 and images[:, 24:].max() == 0 and images[:, :, :4].max() == 0
    assert images.max() == 255 and set(np.unique(labels)) == set(range(10)) == set(np.unique(test_labels))
    # the conversion is deterministic: digit 0 of the set (a zero) has the same pixels on every machine
    digits, all_labels = embedded_digits.load_digits()
    assert all_labels[0] == 0 and labels[0] == 0
    np.testing.assert_array_equal(images[0], embedded_digits.to_mnist_images(digits[:1])[0])


def test_upscale_matches_bilinear_interpolation():
    import torch

    digits, _ = embedded_digits.load_digits()
    d = digits[:50]
    ref = torch.nn.functional.interpolate(torch.tensor(d[:, None].astype(np.float64)), size=(20, 20),
                                          mode="bilinear", align_corners=False)[:, 0].numpy()
    ours = embedded_digits.to_mnist_images(d)[:, 4:24, 4:24].astype(np.float64)
    assert np.abs(ours - np.clip(ref * 255 / 16, 0, 255)).max() <= 0.5 + 1e-6  # rounding only


def test_idx_round_trips_through_mnist_dataset(digits_root):
    _, images = _read_idx(os.path.join(digits_root, "t10k-images-idx3-ubyte"))
    _, labels = _read_idx(os.path.join(digits_root, "t10k-labels-idx1-ubyte"))
    ds = MNISTDataset(root=digits_root, train=False, download=False)
    assert len(ds) == 359 and len(MNISTDataset(root=digits_root, train=True)) == 1438
    for i in (0, 7, 358):
        image, label = ds[i]
        assert image.dtype == flow.float32 and tuple(image.shape) == (1, 28, 28)
        assert label.dtype == flow.int64 and label.dim() == 0 and label.item() == labels[i]
        np.testing.assert_allclose(image.numpy()[0], images[i] / 255.0, rtol=0, atol=1e-6)


def test_prepare_is_written_once(digits_root):
    path = os.path.join(digits_root, "train-images-idx3-ubyte")
    before = os.stat(path).st_mtime_ns
    assert embedded_digits.prepare(digits_root) == digits_root
    assert os.stat(path).st_mtime_ns == before


def _args(root, *extra):
    return ["--data", root, "--quiet", "--threads", "2", "--limit-train", "320", "--test-batch-size", "359",
            *extra]


def test_short_training_lowers_the_loss(digits_root, capsys):
    out = train.main(_args(digits_root, "--epochs", "6", "--lr", "0.05", "--momentum", "0.9"))
    first, last = np.mean(out["losses"][0]), np.mean(out["losses"][-1])
    assert len(out["losses"]) == 6 and len(out["losses"][0]) == 5  # 320 images / batch 64
    assert last < 0.8 * first, (first, last)
    printed = capsys.readouterr().out
    assert "Accuracy of the network on the 359 test images: " in printed
    assert 0 <= out["accuracy"] <= 100


def _state_equal(a, b):
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], dict):
            _state_equal(a[k], b[k])
        elif isinstance(a[k], flow.Tensor):
            np.testing.assert_array_equal(a[k].numpy(), b[k].numpy())
        elif isinstance(a[k], list) and a[k] and isinstance(a[k][0], dict):
            for x, y in zip(a[k], b[k]):
                _state_equal(x, y)
        else:
            assert a[k] == b[k], k


def test_checkpoint_resume_restores_model_and_optimizer(digits_root, tmp_path, capsys):
    ckpt = str(tmp_path / "mnist.ckpt")
    first = train.main(_args(digits_root, "--epochs", "1", "--momentum", "0.9", "--checkpoint", ckpt))
    assert os.path.exists(ckpt)
    opt_state = first["optimizer"].state_dict()
    assert opt_state["state"], "SGD with momentum keeps a momentum buffer per parameter"

    model = train.SimpleCNN()
    optimizer = flow.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    assert train.load_checkpoint(ckpt, model, optimizer) == 1
    _state_equal(model.state_dict(), first["model"].state_dict())
    _state_equal(optimizer.state_dict(), opt_state)

    # --resume continues after the saved epoch: only epoch 2 runs, and the checkpoint advances
    resumed = train.main(_args(digits_root, "--epochs", "2", "--momentum", "0.9", "--checkpoint", ckpt, "--resume"))
    assert len(resumed["losses"]) == 1
    assert flow.load(ckpt)["epoch"] == 2
    capsys.readouterr()


def test_resume_equals_the_uninterrupted_run(digits_root, tmp_path, capsys):
    """2 epochs, a checkpoint, then --resume to 3 computes what 3 straight epochs compute, bit for bit: the
    shuffle order of epoch 3 comes from random states the checkpoint restores."""
    straight = train.main(_args(digits_root, "--epochs", "3", "--lr", "0.05"))
    ckpt = str(tmp_path / "mnist.ckpt")
    train.main(_args(digits_root, "--epochs", "2", "--lr", "0.05", "--checkpoint", ckpt))
    flow.manual_seed(12345)  # whatever ran in between must not matter
    resumed = train.main(_args(digits_root, "--epochs", "3", "--lr", "0.05", "--checkpoint", ckpt, "--resume"))
    capsys.readouterr()
    assert resumed["losses"] == straight["losses"][2:]
    _state_equal(resumed["model"].state_dict(), straight["model"].state_dict())
    _state_equal(resumed["optimizer"].state_dict(), straight["optimizer"].state_dict())
    assert resumed["accuracy"] == straight["accuracy"]


def test_checkpoint_restores_python_and_numpy_random_states(digits_root, tmp_path, capsys):
    import random

    ckpt = str(tmp_path / "mnist.ckpt")
    random.seed(7)
    np.random.seed(7)
    train.main(_args(digits_root, "--epochs", "1", "--checkpoint", ckpt))
    capsys.readouterr()
    expected = (random.random(), np.random.rand(3))
    random.seed(99)
    np.random.seed(99)
    model = train.SimpleCNN()
    optimizer = flow.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loader = train.make_loaders(train.parse_args(_args(digits_root)))[1]
    train.load_checkpoint(ckpt, model, optimizer, loader)
    assert random.random() == expected[0]
    np.testing.assert_array_equal(np.random.rand(3), expected[1])


def test_quiet_prints_only_the_accuracy_line(digits_root, capsys):
    train.main(_args(digits_root, "--epochs", "1"))
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Accuracy of the network on the 359 test images: "), lines


def test_empty_data_folder_exits_with_a_message(tmp_path):
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLE, "train.py"), "--data", str(tmp_path), "--quiet"],
                          capture_output=True, text=True, env=_child_env(), timeout=300)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr, proc.stderr
    assert "dataset not found" in proc.stderr and "train-images-idx3-ubyte" in proc.stderr, proc.stderr
    assert "--download" in proc.stderr


def _child_env():
    return dict(os.environ, OMP_NUM_THREADS="2",
                PYTHONPATH=os.pathsep.join(p for p in [os.path.dirname(os.path.dirname(flow.__file__)),
                                                       os.environ.get("PYTHONPATH", "")] if p))


def test_issue_program_runs_unchanged(tmp_path):
    """The documentation's program (only its data path differs) runs end to end on a small IDX directory."""
    digits, labels = embedded_digits.load_digits()
    images, labels = embedded_digits.to_mnist_images(digits[:160]), labels[:160]
    embedded_digits.write_idx_images(str(tmp_path / "train-images-idx3-ubyte"), images[:128])
    embedded_digits.write_idx_labels(str(tmp_path / "train-labels-idx1-ubyte"), labels[:128])
    embedded_digits.write_idx_images(str(tmp_path / "t10k-images-idx3-ubyte"), images[128:])
    embedded_digits.write_idx_labels(str(tmp_path / "t10k-labels-idx1-ubyte"), labels[128:])
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLE, "issue_program.py"), str(tmp_path)],
                          capture_output=True, text=True, env=_child_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("Accuracy of the network on the 10000 test images: "), proc.stdout
    assert 0 <= float(proc.stdout.split(": ")[1].rstrip().rstrip("%")) <= 100
