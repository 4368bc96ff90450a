"""An MNIST-style CNN trainer written for PyTorch, on synthetic 28x28 "digits" (class-dependent blobs):
Conv2d/Dropout/max_pool2d/log_softmax, nll_loss, Adadelta + StepLR, a DataLoader with worker processes,
torch.save/torch.load of the state dict. Prints the final test loss and accuracy as JSON."""
import json
import os
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(8 * 12 * 12, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def synthetic_digits(n, seed):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n)
    yy, xx = np.mgrid[0:28, 0:28]
    centers = [(7 + 14 * (k % 2), 4 + 5 * (k // 2)) for k in range(10)]
    images = np.empty((n, 1, 28, 28), np.float32)
    for i, k in enumerate(labels):
        cy, cx = centers[k]
        images[i, 0] = np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 8.0)
    images += 0.2 * rng.standard_normal(images.shape).astype(np.float32)
    return torch.from_numpy((images - 0.1) / 0.3), torch.from_numpy(labels.astype(np.int64))


def train(model, device, loader, optimizer):
    model.train()
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()


def test(model, device, loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    n = len(loader.dataset)
    return test_loss / n, correct / n


def main():
    use_cuda = torch.cuda.is_available()
    torch.manual_seed(1)
    device = torch.device("cuda" if use_cuda else "cpu")
    train_ds, test_ds = TensorDataset(*synthetic_digits(640, 0)), TensorDataset(*synthetic_digits(256, 1))
    workers = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    train_loader = DataLoader(train_ds, batch_size=64, shuffle=True, num_workers=workers)
    test_loader = DataLoader(test_ds, batch_size=256)
    model = Net().to(device)
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    for _epoch in range(3):
        train(model, device, train_loader, optimizer)
        scheduler.step()
    loss, acc = test(model, device, test_loader)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "mnist_cnn.pt")
        torch.save(model.state_dict(), path)
        again = Net()
        again.load_state_dict(torch.load(path))
    reloaded_loss, _ = test(again, device, test_loader)
    print(json.dumps({"loss": loss, "accuracy": acc, "reloaded_loss": reloaded_loss}))


if __name__ == "__main__":
    main()
