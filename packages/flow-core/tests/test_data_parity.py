"""oneflow.utils.data compared with torch.utils.data: DataLoader argument checks, collation, samplers, dataset
combinators, the IterableDataset length check and worker information."""
import collections
import dataclasses
import warnings

import numpy as np
import pytest

import oneflow as flow
from helpers import torch


def _outcome(fn, lib):
    """``("ok", value)`` or ``("err", exception type name, message)``, library names normalised."""
    try:
        return ("ok", str(_plain(fn(lib))).replace("oneflow", "torch"))
    except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
        return ("err", type(e).__name__, str(e).replace("oneflow", "torch"))


def _plain(x):
    """Tensors as (dtype, values) so that results of both libraries print alike."""
    if isinstance(x, (flow.Tensor, torch.Tensor)):
        return (str(x.dtype).split(".")[-1], x.tolist())
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)([_plain(v) for v in x]) if not hasattr(x, "_fields") else type(x)(*map(_plain, x))
    return x


def _same(fn):
    got, ref = _outcome(fn, flow), _outcome(fn, torch)
    assert got == ref
    return got


def _U(L):
    return L.utils.data


class _Ten:
    def __getitem__(self, i):
        return i

    def __len__(self):
        return 10


def _iterable(L, n, length=None):
    class Stream(_U(L).IterableDataset):
        def __iter__(self):
            return iter(range(n))

        def __repr__(self):
            return "Stream"

    if length is not None:
        Stream.__len__ = lambda self: length
    return Stream()


LOADER = {
    "batch_size=None with drop_last": lambda L: _U(L).DataLoader(_Ten(), batch_size=None, drop_last=True),
    "sampler with shuffle": lambda L: _U(L).DataLoader(_Ten(), sampler=[0, 1], shuffle=True),
    "batch_sampler with batch_size": lambda L: _U(L).DataLoader(_Ten(), batch_sampler=[[0]], batch_size=2),
    "batch_sampler with drop_last": lambda L: _U(L).DataLoader(_Ten(), batch_sampler=[[0]], drop_last=True),
    "negative timeout": lambda L: _U(L).DataLoader(_Ten(), timeout=-1),
    "prefetch_factor without workers": lambda L: _U(L).DataLoader(_Ten(), prefetch_factor=2),
    "persistent workers without workers": lambda L: _U(L).DataLoader(_Ten(), persistent_workers=True),
    "context without workers": lambda L: _U(L).DataLoader(_Ten(), multiprocessing_context="fork"),
    "iterable with shuffle": lambda L: _U(L).DataLoader(_iterable(L, 3), shuffle=True),
    "zero batch size": lambda L: _U(L).DataLoader(_Ten(), batch_size=0),
    "lengths": lambda L: [len(_U(L).DataLoader(_Ten(), **kw)) for kw in (
        {}, {"batch_size": 3}, {"batch_size": 3, "drop_last": True}, {"batch_size": None})],
    "iterable lengths": lambda L: [len(_U(L).DataLoader(_iterable(L, 5, 5), **kw)) for kw in (
        {"batch_size": 2}, {"batch_size": 2, "drop_last": True}, {"batch_size": None})],
    "batch_sampler batches": lambda L: list(_U(L).DataLoader(_Ten(), batch_sampler=[[0, 1], [5]])),
    "setting batch_size later": lambda L: setattr(_U(L).DataLoader(_Ten()), "batch_size", 3),
}


@pytest.mark.parametrize("name", list(LOADER))
def test_dataloader_arguments_like_torch(name):
    _same(LOADER[name])


NT = collections.namedtuple("NT", "a b")
COLLATE = {
    "numbers": lambda L: [_U(L).default_collate(b) for b in ([1, 2], [1.0, 2.5], [True, False])],
    "strings and bytes": lambda L: [_U(L).default_collate(b) for b in (["a", "b"], [b"a", b"b"])],
    "numpy arrays and scalars": lambda L: [_U(L).default_collate(b) for b in (
        [np.ones(2, np.int32), np.zeros(2, np.int32)], [np.float32(1), np.float32(2)], [np.array(1.0)] * 2)],
    "nested dict, namedtuple, tuple": lambda L: _U(L).default_collate(
        [{"x": (np.ones(1), NT(1, [True]))}, {"x": (np.zeros(1), NT(2, [False]))}]),
    "unequal lists": lambda L: _U(L).default_collate([[1, 2], [3]]),
    "unequal tensors": lambda L: _U(L).default_collate([L.ones(2), L.ones(3)]),
    "numpy strings": lambda L: _U(L).default_collate([np.array(["a"]), np.array(["b"])]),
    "objects": lambda L: _U(L).default_collate([object(), object()]),
    "convert nested": lambda L: _U(L).default_convert({"a": (np.ones(1), "s"), "b": [np.int64(3)], "c": NT(1, 2)}),
    "convert numpy strings": lambda L: _U(L).default_convert(np.array(["a"])).tolist(),
}


@pytest.mark.parametrize("name", list(COLLATE))
def test_collate_like_torch(name):
    _same(COLLATE[name])


SAMPLERS = {
    "random sampler lengths": lambda L: [len(_U(L).RandomSampler(range(10), **kw)) for kw in (
        {}, {"num_samples": 25}, {"replacement": True, "num_samples": 7})],
    "random sampler permutations repeat": lambda L: (lambda r: [sorted(r[:10]), sorted(r[10:20]), len(set(r[20:]))])(
        list(_U(L).RandomSampler(range(10), num_samples=25))),
    "random sampler bad replacement": lambda L: _U(L).RandomSampler(range(3), replacement=1),
    "random sampler bad num_samples": lambda L: _U(L).RandomSampler(range(3), num_samples=0),
    "weighted sampler zero weights": lambda L: list(_U(L).WeightedRandomSampler([0, 0, 1.0], 4)),
    "weighted sampler too many without replacement": lambda L: list(
        _U(L).WeightedRandomSampler([1.0, 1.0], 3, replacement=False)),
    "weighted sampler 2-d": lambda L: _U(L).WeightedRandomSampler([[1.0]], 1),
    "batch sampler": lambda L: [list(_U(L).BatchSampler(range(7), 3, d)) for d in (False, True)],
    "batch sampler bad size": lambda L: _U(L).BatchSampler(range(7), 0, False),
    "distributed padding": lambda L: [list(_U(L).DistributedSampler(range(2), 5, r, shuffle=False)) for r in range(5)],
    "distributed drop_last": lambda L: [list(_U(L).DistributedSampler(range(10), 3, r, shuffle=False,
                                                                      drop_last=True)) for r in range(3)],
    "distributed bad rank": lambda L: _U(L).DistributedSampler(range(10), 3, 3),
    "random_split fractions": lambda L: [len(s) for s in _U(L).random_split(range(11), [0.33, 0.33, 0.34])],
    "random_split bad lengths": lambda L: _U(L).random_split(range(10), [3, 3]),
    "random_split bad fraction": lambda L: _U(L).random_split(range(10), [1.5, -0.5]),
}


@pytest.mark.parametrize("name", list(SAMPLERS))
def test_samplers_like_torch(name):
    _same(SAMPLERS[name])


def test_subset_random_sampler_and_split_follow_their_generator():
    g = flow.Generator()
    a = list(flow.utils.data.SubsetRandomSampler([5, 7, 9, 11], generator=g.manual_seed(1)))
    assert sorted(a) == [5, 7, 9, 11] and a == list(flow.utils.data.SubsetRandomSampler([5, 7, 9, 11],
                                                                                         generator=g.manual_seed(1)))
    s1 = [list(s) for s in flow.utils.data.random_split(range(8), [0.5, 0.5], generator=g.manual_seed(4))]
    s2 = [list(s) for s in flow.utils.data.random_split(range(8), [0.5, 0.5], generator=g.manual_seed(4))]
    assert s1 == s2 and sorted(s1[0] + s1[1]) == list(range(8))


# ---- datasets -------------------------------------------------------------------------------------------
class _Batched:
    """A dataset that fetches whole batches through ``__getitems__``."""

    def __init__(self, n=None):
        self.n = n

    def __getitem__(self, i):
        return i

    def __getitems__(self, indices):
        return [100 + i for i in indices][: self.n]

    def __len__(self):
        return 5


DATASETS = {
    "stack getitems tuple": lambda L: _U(L).StackDataset(range(5), _Batched()).__getitems__([0, 3]),
    "stack getitems dict": lambda L: _U(L).StackDataset(a=range(5), b=_Batched()).__getitems__([4, 1]),
    "stack getitems size mismatch": lambda L: _U(L).StackDataset(_Batched(1)).__getitems__([0, 1]),
    "stack loader batches": lambda L: list(_U(L).DataLoader(_U(L).StackDataset(range(5), _Batched()), batch_size=2)),
    "stack both kinds": lambda L: _U(L).StackDataset(range(3), a=range(3)),
    "stack size mismatch": lambda L: _U(L).StackDataset(range(3), range(2)),
    "concat": lambda L: (lambda d: [len(d), d[3], d[-1], d.cumulative_sizes])(
        _U(L).ConcatDataset([range(3), range(10, 12)])),
    "concat of iterable": lambda L: _U(L).ConcatDataset([_iterable(L, 2)]),
    "chain": lambda L: list(_U(L).ChainDataset([_iterable(L, 2), _iterable(L, 3)])),
    "chain of map-style": lambda L: list(_U(L).ChainDataset([range(3)])),
}


@pytest.mark.parametrize("name", list(DATASETS))
def test_datasets_like_torch(name):
    _same(DATASETS[name])


def test_concat_dataset_old_attribute_name_warns():
    for L in (flow, torch):
        d = _U(L).ConcatDataset([range(2), range(3)])
        with pytest.warns(FutureWarning, match="`cummulative_sizes` attribute is renamed to `cumulative_sizes`"):
            assert d.cummulative_sizes == [2, 5]


# torch compares the batches yielded with the reported number of samples, hence 2 with batch_size=2
@pytest.mark.parametrize("batch_size,reported", [(None, 3), (2, 2)])
def test_iterable_dataset_longer_than_reported_warns_like_torch(batch_size, reported):
    msgs = []
    for L in (flow, torch):
        loader = _U(L).DataLoader(_iterable(L, 5, reported), batch_size=batch_size)
        len(loader)  # the check only runs once the length was asked for
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            list(loader)
        msgs.append([str(x.message) for x in w])
    assert msgs[0] == msgs[1] and msgs[0]
    assert msgs[0][0].startswith(f"Length of IterableDataset Stream was reported to be {reported}(when accessing")


def test_worker_info_is_a_frozen_dataclass_like_torch():
    from torch.utils.data._utils.worker import WorkerInfo as TorchWorkerInfo

    fields = []
    for cls in (flow.utils.data.WorkerInfo, TorchWorkerInfo):
        info = cls(id=1, num_workers=2, seed=3, dataset=None)
        with pytest.raises(dataclasses.FrozenInstanceError):
            info.id = 4
        fields.append([(f.name, f.default) for f in dataclasses.fields(cls)])
        assert (info.rng, info.worker_method) == (None, "multiprocessing")
    assert [n for n, _ in fields[0]] == [n for n, _ in fields[1]]
    assert flow.utils.data.get_worker_info() is None
    assert callable(flow.utils.data.DataLoader([1]).check_worker_number_rationality)


def test_iterable_dataset_sharded_by_worker_info_like_torch():
    def run(L):
        class Sharded(_U(L).IterableDataset):
            def __iter__(self):
                info = _U(L).get_worker_info()
                return iter([(i, info.id, info.num_workers, info.worker_method)
                             for i in range(info.id, 7, info.num_workers)])

        return [_plain(b) for b in _U(L).DataLoader(Sharded(), batch_size=2, num_workers=2)]

    assert run(flow) == run(torch)
