"""Data loading (PyTorch's ``torch.utils.data``): datasets, samplers, and a DataLoader with worker processes."""
from .dataset import (  # noqa: F401
    Dataset,
    IterableDataset,
    TensorDataset,
    ConcatDataset,
    ChainDataset,
    StackDataset,
    Subset,
    random_split,
)
from .sampler import (  # noqa: F401
    Sampler,
    SequentialSampler,
    RandomSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
    BatchSampler,
)
from .distributed import DistributedSampler  # noqa: F401
from ._collate import default_collate, default_convert  # noqa: F401
from ._worker import get_worker_info, WorkerInfo  # noqa: F401
from .dataloader import DataLoader  # noqa: F401

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset", "StackDataset", "Subset",
    "random_split", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
    "WeightedRandomSampler", "BatchSampler", "DistributedSampler", "DataLoader", "default_collate",
    "default_convert", "get_worker_info", "WorkerInfo",
]
