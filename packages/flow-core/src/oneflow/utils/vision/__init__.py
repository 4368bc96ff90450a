"""Vision helpers (torchvision-like): ``oneflow.utils.vision.datasets`` (MNIST, FashionMNIST, CIFAR-10 readers)
and ``oneflow.utils.vision.transforms``."""
from . import datasets, transforms  # noqa: F401
