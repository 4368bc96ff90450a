"""Datasets (PyTorch's ``torch.utils.data.dataset``): map-style and iterable datasets and their combinators.

The dataset readers ``MNISTDataset``, ``FashionMNIST`` and ``CIFAR10`` live in ``oneflow.utils.vision.datasets``
and are importable from here too (``from oneflow.utils.data.dataset import MNISTDataset``), the name OneFlow's
documentation uses.
"""
import bisect
import collections.abc
import itertools
import math
import warnings

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "ConcatDataset", "ChainDataset", "StackDataset",
           "Subset", "random_split", "MNISTDataset", "MNIST", "FashionMNIST", "CIFAR10"]


class Dataset:
    """A map-style dataset: subclasses implement ``__getitem__(index)`` and usually ``__len__``."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __class_getitem__(cls, item):
        # ``class MyData(Dataset[Tuple[Tensor, int]])`` as with PyTorch's generic Dataset
        return cls

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset, collections.abc.Iterable):
    """An iterable-style dataset: subclasses implement ``__iter__`` (an abstract method, so a subclass without
    it cannot be instantiated, as in PyTorch).

    With ``num_workers > 0`` every worker iterates its own copy; use ``get_worker_info()`` in ``__iter__`` to
    shard the stream, or each sample is seen once per worker.
    """

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are tuples of ``tensor[index]`` over tensors that share their first dimension."""

    def __init__(self, *tensors):
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0)


class StackDataset(Dataset):
    """Stacks datasets of equal length: samples are tuples (``*args``) or dicts (``**kwargs``) of their samples."""

    def __init__(self, *args, **kwargs):
        if args:
            if kwargs:
                raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                                 "input/output, but both types are given.")
            self._length = len(args[0])
            if any(self._length != len(d) for d in args):
                raise ValueError("Size mismatch between datasets")
            self.datasets = args
        elif kwargs:
            tmp = list(kwargs.values())
            self._length = len(tmp[0])
            if any(self._length != len(d) for d in tmp):
                raise ValueError("Size mismatch between datasets")
            self.datasets = kwargs
        else:
            raise ValueError("At least one dataset should be passed")

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices):
        """The samples at ``indices`` (a list), fetched in one ``__getitems__`` call from each dataset that has
        one (what DataLoader uses for a batch)."""
        names = list(self.datasets) if isinstance(self.datasets, dict) else range(len(self.datasets))
        columns = []
        for k in names:
            d = self.datasets[k]
            if callable(getattr(d, "__getitems__", None)):
                items = d.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, "
                                     f"got {len(items)}")
                columns.append(list(items))
            else:
                columns.append([d[i] for i in indices])
        if isinstance(self.datasets, dict):
            return [dict(zip(names, sample)) for sample in zip(*columns)] if columns else [{} for _ in indices]
        return [tuple(sample) for sample in zip(*columns)]

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """The concatenation of map-style datasets."""

    @staticmethod
    def cumsum(sequence):
        r, s = [], 0
        for e in sequence:
            s += len(e)
            r.append(s)
        return r

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self):
        return self.cumulative_sizes[-1]

    @property
    def cummulative_sizes(self):
        """Deprecated spelling of ``cumulative_sizes``."""
        warnings.warn("`cummulative_sizes` attribute is renamed to `cumulative_sizes`", FutureWarning, stacklevel=2)
        return self.cumulative_sizes

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        d = bisect.bisect_right(self.cumulative_sizes, idx)
        sample_idx = idx if d == 0 else idx - self.cumulative_sizes[d - 1]
        return self.datasets[d][sample_idx]


class ChainDataset(IterableDataset):
    """Chains iterable datasets one after another (lazily)."""

    def __init__(self, datasets):
        super().__init__()
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            yield from d

    def __len__(self):
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")
            total += len(d)
        return total


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Randomly splits ``dataset`` into non-overlapping ``Subset``s of the given lengths (or fractions summing to 1).

    Fractions give ``floor(frac * len(dataset))`` items each, the remainder dealt round-robin from the first split.
    """
    from ... import _C
    from ..._ops.creation_random import randperm

    if generator is None:
        generator = _C.default_generator
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(math.floor(len(dataset) * frac))
        for i in range(len(dataset) - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
        for i, n in enumerate(lengths):
            if n == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[offset - n:offset]) for offset, n in zip(itertools.accumulate(lengths), lengths)]


_READERS = {"MNISTDataset", "MNIST", "FashionMNIST", "CIFAR10"}


def __getattr__(name):
    # The readers import numpy/gzip/urllib; load them only when asked for.
    if name in _READERS:
        from ..vision import datasets

        return getattr(datasets, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
