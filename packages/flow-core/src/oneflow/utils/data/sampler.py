"""Samplers (PyTorch's ``torch.utils.data.sampler``): iterables of dataset indices (or of index batches).

Random samplers draw from a ``oneflow.Generator`` (Philox): for a given generator seed the order is reproducible,
though not the same numbers PyTorch's Mersenne twister gives.
"""
import numpy as np

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


def _rand_ops():
    from ..._ops import creation_random

    return creation_random


def _fresh_generator():
    """A generator seeded from the default one, as PyTorch does for samplers without ``generator=``."""
    from ... import _C

    r = _rand_ops()
    seed = int(r.randint(0, 2 ** 62, (1,)).item())
    g = _C.Generator()
    g.manual_seed(seed)
    return g


class Sampler:
    """Base class: subclasses implement ``__iter__`` (and ``__len__`` when the length is known)."""

    def __init__(self, data_source=None):
        pass

    def __class_getitem__(cls, item):
        # ``class MySampler(Sampler[int])`` as with PyTorch's generic Sampler
        return cls

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Indices ``0 .. len(data_source) - 1`` in order."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """Random indices: a permutation (``replacement=False``, repeated when ``num_samples > len``) or uniform draws
    with replacement."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or isinstance(self.num_samples, bool) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        # the dataset's size may change at runtime
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        g = self.generator if self.generator is not None else _fresh_generator()
        r = _rand_ops()
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from r.randint(0, n, (32,), generator=g).tolist()
            yield from r.randint(0, n, (self.num_samples % 32,), generator=g).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from r.randperm(n, generator=g).tolist()
            yield from r.randperm(n, generator=g).tolist()[: self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _rand_ops().randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices drawn with probabilities proportional to ``weights`` (with or without replacement)."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        from ..._ops.creation import as_tensor
        from ... import _C

        w = as_tensor(weights, dtype=_C.float64)
        if len(w.shape) != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w.shape)}")
        self.weights = w
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        w = np.asarray(self.weights.numpy(), dtype=np.float64)
        if not np.all(np.isfinite(w)):
            raise RuntimeError("invalid multinomial distribution (encountering probability entry = infinity or NaN)")
        if np.any(w < 0):
            raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
        if w.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        # as torch.multinomial: without replacement, zero-weight indices come after all the others
        if not self.replacement and self.num_samples > len(w):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        from ... import _C

        u = _rand_ops().rand(self.num_samples if self.replacement else len(w), generator=self.generator,
                             dtype=_C.float64).numpy()
        if self.replacement:
            # inverse CDF: the first index whose cumulative weight exceeds u * total
            cdf = np.cumsum(w)
            idx = np.searchsorted(cdf, u * cdf[-1], side="right")
            idx = np.minimum(idx, len(w) - 1)
        else:
            # exponential race (Efraimidis-Spirakis): the k smallest -log(u)/w are a weighted sample w/o replacement
            with np.errstate(divide="ignore"):
                keys = -np.log1p(-u) / w
            idx = np.argsort(keys, kind="stable")[: self.num_samples]
        yield from idx.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the indices of ``sampler`` into lists of ``batch_size`` (the last one shorter unless ``drop_last``)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        it = iter(self.sampler)
        if self.drop_last:
            for batch in zip(*([it] * self.batch_size)):
                yield list(batch)
        else:
            batch = []
            for idx in it:
                batch.append(idx)
                if len(batch) == self.batch_size:
                    yield batch
                    batch = []
            if batch:
                yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
