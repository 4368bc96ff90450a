# The documentation's MNIST program, verbatim except for the data path (the first four lines): with no
# argument it uses the embedded digits (see embedded_digits.py), else the MNIST IDX files in the given directory.
import os, sys  # noqa: E401
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from embedded_digits import prepare  # noqa: E402
DATA = sys.argv[1] if len(sys.argv) > 1 else prepare()

import oneflow as flow
from oneflow import nn
from oneflow.utils.data import DataLoader
from oneflow.utils.data.dataset import MNISTDataset

train_dataset = MNISTDataset(root=DATA, train=True, download=True)
test_dataset = MNISTDataset(root=DATA, train=False, download=True)
train_loader = DataLoader(train_dataset, batch_size=64, shuffle=True)
test_loader = DataLoader(test_dataset, batch_size=1000, shuffle=False)

class SimpleCNN(nn.Module):
    def __init__(self):
        super(SimpleCNN, self).__init__()
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

model = SimpleCNN()
loss_fn = nn.CrossEntropyLoss()
optimizer = flow.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(10):
    for i, (images, labels) in enumerate(train_loader):
        outputs = model(images)
        loss = loss_fn(outputs, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
with flow.no_grad():
    correct = 0
    total = 0
    for images, labels in test_loader:
        outputs = model(images)
        _, predicted = flow.max(outputs.data, 1)
        total += labels.size(0)
        correct += (predicted == labels).sum().item()
    print(f'Accuracy of the network on the 10000 test images: {100 * correct / total}%')
