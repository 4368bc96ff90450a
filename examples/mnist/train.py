"""Train the documentation's SimpleCNN on MNIST: the project's main job.

    python examples/mnist/train.py                      # embedded digits (no network), 20 epochs
    python examples/mnist/train.py --data ./data        # the full MNIST IDX files in ./data (raw or .gz)
    python examples/mnist/train.py --checkpoint ck.of   # save after every epoch ...
    python examples/mnist/train.py --checkpoint ck.of --resume --epochs 30   # ... and go on from there

A checkpoint holds the model, the optimizer, the epoch and every random state the run draws from, so a resumed
run computes the same weights, bit for bit, as one that was never interrupted.

Without --data it trains on real handwritten digits that scikit-learn ships (see embedded_digits.py), written
once as MNIST IDX files into ~/.cache/oneflow/mnist-digits and read back through MNISTDataset, like full MNIST.
The model, loss, optimizer and loops are the documentation's program (examples/mnist/issue_program.py).
"""
import argparse
import os
import random
import sys
import time

import numpy as np

import oneflow as flow
from oneflow import nn
from oneflow.utils.data import DataLoader, Subset
from oneflow.utils.data.dataset import MNISTDataset

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import embedded_digits  # noqa: E402


class SimpleCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, kernel_size=3, stride=1, padding=1)
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.conv2 = nn.Conv2d(32, 64, kernel_size=3, stride=1, padding=1)
        self.fc1 = nn.Linear(64 * 7 * 7, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.pool(flow.relu(self.conv1(x)))
        x = self.pool(flow.relu(self.conv2(x)))
        x = x.view(-1, 64 * 7 * 7)
        x = flow.relu(self.fc1(x))
        x = self.fc2(x)
        return x


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Train SimpleCNN on MNIST with oneflow.")
    p.add_argument("--epochs", type=int, default=20,
                   help="epochs to train (default 20: ~460 steps on the embedded set's 1438 training digits; "
                        "the documentation's 10 epochs are meant for full MNIST's 60000)")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--test-batch-size", type=int, default=1000)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.9,
                   help="SGD momentum (default 0.9: the embedded set is 40x smaller than MNIST, and plain SGD at "
                        "lr 0.01 sits on the initial loss plateau for most of 460 steps; --momentum 0 is the "
                        "documentation's optimizer exactly)")
    p.add_argument("--data", default=None,
                   help="directory with the MNIST IDX files (train-images-idx3-ubyte[.gz], ...); "
                        "default: the embedded digits, prepared in " + embedded_digits.DEFAULT_ROOT)
    p.add_argument("--download", action="store_true", help="with --data: try to download missing MNIST files")
    p.add_argument("--checkpoint", default=None, help="save model and optimizer state here after every epoch")
    p.add_argument("--resume", action="store_true", help="start from --checkpoint if it exists")
    p.add_argument("--num-workers", type=int, default=0, help="DataLoader worker processes")
    p.add_argument("--limit-train", type=int, default=0, help="train on the first N training images only")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="intra-op threads (default: oneflow's default)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p.parse_args(argv)


def make_loaders(args):
    root = args.data if args.data else embedded_digits.prepare()
    download = bool(args.data) and args.download
    train_dataset = MNISTDataset(root=root, train=True, download=download)
    test_dataset = MNISTDataset(root=root, train=False, download=download)
    if args.limit_train:
        train_dataset = Subset(train_dataset, range(min(args.limit_train, len(train_dataset))))
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size, shuffle=True, num_workers=args.num_workers)
    test_loader = DataLoader(test_dataset, batch_size=args.test_batch_size, shuffle=False,
                             num_workers=args.num_workers)
    return root, train_loader, test_loader


class Progress:
    """A one-line text progress bar, redrawn with a carriage return (one plain line per epoch when not a tty)."""

    def __init__(self, total, prefix, enabled=True, stream=sys.stdout):
        self.total, self.prefix, self.stream = total, prefix, stream
        self.enabled = enabled
        self.live = enabled and stream.isatty()
        self.start = time.perf_counter()
        self.last_draw = 0.0

    def _line(self, step, loss, samples):
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        width = 30
        filled = int(width * step / max(self.total, 1))
        bar = "#" * filled + "." * (width - filled)
        return (f"{self.prefix} [{bar}] {step}/{self.total} loss {loss:.4f} "
                f"{samples / elapsed:8.1f} samples/s {elapsed:6.1f}s")

    def update(self, step, loss, samples):
        now = time.perf_counter()
        if self.live and (now - self.last_draw > 0.1 or step == self.total):
            self.last_draw = now
            self.stream.write("\r" + self._line(step, loss, samples))
            self.stream.flush()

    def close(self, step, loss, samples):
        if not self.enabled:
            return
        self.stream.write(("\r" if self.live else "") + self._line(step, loss, samples) + "\n")
        self.stream.flush()


def train_one_epoch(model, loss_fn, optimizer, train_loader, epoch, epochs, quiet=False):
    """One pass over the loader; returns the list of per-step losses."""
    model.train()
    losses, samples = [], 0
    bar = Progress(len(train_loader), f"epoch {epoch + 1}/{epochs}", enabled=not quiet)
    for i, (images, labels) in enumerate(train_loader):
        outputs = model(images)
        loss = loss_fn(outputs, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        samples += labels.size(0)
        bar.update(i + 1, losses[-1], samples)
    bar.close(len(losses), sum(losses[-10:]) / max(len(losses[-10:]), 1), samples)
    return losses


def evaluate(model, test_loader):
    """(correct, total) over the test loader, with the documentation's evaluation loop."""
    model.eval()
    with flow.no_grad():
        correct = 0
        total = 0
        for images, labels in test_loader:
            outputs = model(images)
            _, predicted = flow.max(outputs.data, 1)
            total += labels.size(0)
            correct += (predicted == labels).sum().item()
    return correct, total


def rng_states(train_loader):
    """Every random state a run draws from. The shuffling sampler of a DataLoader without its own generator
    is seeded from flow's default generator at the start of each epoch, so that state decides the next
    epoch's order; Python's and NumPy's generators are kept too, for datasets or transforms that use them."""
    np_state = np.random.get_state(legacy=False)
    loader_gen = train_loader.generator
    return {
        "flow": flow.get_rng_state(),
        "loader": None if loader_gen is None else loader_gen.get_state(),
        "python": random.getstate(),
        # flow.save keeps tensors, containers and numbers, not NumPy arrays (and tensors have no uint32)
        "numpy": {"bit_generator": np_state["bit_generator"],
                  "key": flow.from_numpy(np_state["state"]["key"].astype(np.int64)),
                  "pos": np_state["state"]["pos"], "has_gauss": np_state["has_gauss"], "gauss": np_state["gauss"]},
    }


def set_rng_states(states, train_loader):
    flow.set_rng_state(states["flow"])
    if states["loader"] is not None and train_loader.generator is not None:
        train_loader.generator.set_state(states["loader"])
    version, internal, gauss = states["python"]
    random.setstate((version, tuple(internal), gauss))
    n = states["numpy"]
    key = n["key"].numpy().astype(np.uint32)
    np.random.set_state({"bit_generator": n["bit_generator"], "state": {"key": key, "pos": n["pos"]},
                         "has_gauss": n["has_gauss"], "gauss": n["gauss"]})


def save_checkpoint(path, model, optimizer, epoch, train_loader=None):
    """Saved between epochs: ``epoch`` epochs are done, so the sampler starts the next one from the top and its
    position needs no record beyond the epoch and the random states."""
    state = {"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict()}
    if train_loader is not None:
        state["rng"] = rng_states(train_loader)
    flow.save(state, path)


def load_checkpoint(path, model, optimizer, train_loader=None):
    """Restore model and optimizer state (and, given the loader, the random states); returns the number of
    epochs already done."""
    state = flow.load(path)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if train_loader is not None and "rng" in state:
        set_rng_states(state["rng"], train_loader)
    return int(state["epoch"])


def main(argv=None):
    args = parse_args(argv)
    if args.threads:
        flow.set_num_threads(args.threads)
    flow.manual_seed(args.seed)
    try:
        root, train_loader, test_loader = make_loaders(args)
    except RuntimeError as e:
        if not args.data:
            raise
        # missing or malformed files in the user's folder: the reader names them; a traceback would bury that
        sys.exit(f"error: {e}\n(in this script, --download fetches missing files; without --data it trains on "
                 f"the embedded digits)")
    if not args.quiet:
        print(f"data: {root} ({len(train_loader.dataset)} training, {len(test_loader.dataset)} test images); "
              f"threads: {flow.get_num_threads()}")

    model = SimpleCNN()
    loss_fn = nn.CrossEntropyLoss()
    optimizer = flow.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    start = 0
    if args.resume and args.checkpoint and os.path.exists(args.checkpoint):
        start = load_checkpoint(args.checkpoint, model, optimizer, train_loader)
        if not args.quiet:
            print(f"resumed from {args.checkpoint} after epoch {start}")

    history = []
    t0 = time.perf_counter()
    for epoch in range(start, args.epochs):
        history.append(train_one_epoch(model, loss_fn, optimizer, train_loader, epoch, args.epochs, args.quiet))
        if args.checkpoint:
            save_checkpoint(args.checkpoint, model, optimizer, epoch + 1, train_loader)
    train_s = time.perf_counter() - t0

    correct, total = evaluate(model, test_loader)
    accuracy = 100 * correct / total
    print(f'Accuracy of the network on the {total} test images: {accuracy}%')
    if not args.quiet:
        print(f"trained {args.epochs - start} epochs in {train_s:.1f}s")
    return {"accuracy": accuracy, "losses": history, "model": model, "optimizer": optimizer}


if __name__ == "__main__":
    main()
