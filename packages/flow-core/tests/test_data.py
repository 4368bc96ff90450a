"""oneflow.utils.data: datasets, samplers, collate and DataLoader (in-process and with worker processes),
checked against torch.utils.data where the result is deterministic."""
import collections
import glob
import os
import time

import numpy as np
import pytest
import torch
import torch.utils.data as tud

import oneflow as flow
from oneflow.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader, Dataset, DistributedSampler,
                                IterableDataset, RandomSampler, Sampler, SequentialSampler, Subset,
                                SubsetRandomSampler, TensorDataset, WeightedRandomSampler, default_collate,
                                default_convert, get_worker_info, random_split)


def _np(x):
    return x.numpy() if isinstance(x, flow.Tensor) else np.asarray(x)


def _same_structure(a, b):
    """a: oneflow result, b: torch result; same containers, dtypes, shapes, values."""
    if isinstance(b, torch.Tensor):
        assert isinstance(a, flow.Tensor), type(a)
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    elif isinstance(b, dict):
        assert type(a) is type(b) and list(a) == list(b)
        for k in b:
            _same_structure(a[k], b[k])
    elif isinstance(b, (list, tuple)) and not isinstance(b, str):
        assert type(a).__name__ == type(b).__name__ and len(a) == len(b)
        for x, y in zip(a, b):
            _same_structure(x, y)
    else:
        assert a == b


class Range(Dataset):
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return np.full((2,), i, dtype=np.float32), i

    def __len__(self):
        return self.n


class Stream(IterableDataset):
    """0..n-1, sharded across workers by get_worker_info()."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))


# ---- datasets ------------------------------------------------------------------------------------------------
def test_tensor_dataset_and_errors():
    x, y = flow.randn(5, 3), flow.arange(5)
    ds = TensorDataset(x, y)
    assert len(ds) == 5
    a, b = ds[2]
    np.testing.assert_array_equal(a.numpy(), x.numpy()[2])
    assert b.item() == 2
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        TensorDataset(x, flow.arange(4))


def test_concat_subset_chain():
    c = ConcatDataset([Range(3), Range(4)])
    tc = tud.ConcatDataset([Range(3), Range(4)])
    assert len(c) == 7 and c.cumulative_sizes == tc.cumulative_sizes
    assert [c[i][1] for i in range(-7, 7)] == [tc[i][1] for i in range(-7, 7)]
    with pytest.raises(ValueError, match="absolute value of index"):
        c[-8]
    with pytest.raises(AssertionError, match="empty iterable"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="does not support IterableDataset"):
        ConcatDataset([Stream(3)])
    assert len(Range(2) + Range(3)) == 5
    s = Subset(Range(10), [7, 3, 5])
    assert len(s) == 3 and [s[i][1] for i in range(3)] == [7, 3, 5]
    ch = ChainDataset([Stream(3), Stream(2)])
    assert list(ch) == [0, 1, 2, 0, 1]
    assert list(Stream(2) + Stream(2)) == [0, 1, 0, 1]


def test_random_split_lengths_and_fractions():
    g = flow.Generator().manual_seed(3)
    parts = random_split(range(10), [3, 7], generator=g)
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    again = random_split(range(10), [3, 7], generator=flow.Generator().manual_seed(3))
    assert again[0].indices == parts[0].indices
    # fractions: floor, then the remainder round-robin from the first split (torch's rule)
    fr = random_split(range(11), [0.3, 0.3, 0.4], generator=flow.Generator().manual_seed(0))
    tf = tud.random_split(range(11), [0.3, 0.3, 0.4], generator=torch.Generator().manual_seed(0))
    assert [len(p) for p in fr] == [len(p) for p in tf]
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(range(10), [-0.5, 1.5])


# ---- samplers ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,bs,drop", [(10, 3, False), (10, 3, True), (9, 3, True), (1, 4, False), (0, 2, False)])
def test_sequential_and_batch_sampler_match_torch(n, bs, drop):
    assert list(SequentialSampler(range(n))) == list(tud.SequentialSampler(range(n)))
    b = BatchSampler(SequentialSampler(range(n)), bs, drop)
    tb = tud.BatchSampler(tud.SequentialSampler(range(n)), bs, drop)
    assert list(b) == list(tb) and len(b) == len(tb)


def test_batch_sampler_errors():
    with pytest.raises(ValueError, match="batch_size should be a positive integer value, but got batch_size=0"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="batch_size should be a positive integer value"):
        BatchSampler(range(3), True, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean value, but got drop_last=1"):
        BatchSampler(range(3), 2, 1)


def test_random_sampler():
    n = 13
    a = list(RandomSampler(range(n), generator=flow.Generator().manual_seed(5)))
    b = list(RandomSampler(range(n), generator=flow.Generator().manual_seed(5)))
    assert a == b and sorted(a) == list(range(n))
    flow.manual_seed(1)
    c = list(RandomSampler(range(n)))
    flow.manual_seed(1)
    assert list(RandomSampler(range(n))) == c
    # num_samples beyond len: whole permutations then a partial one
    m = list(RandomSampler(range(5), num_samples=12, generator=flow.Generator().manual_seed(0)))
    assert len(m) == 12 and sorted(m[:5]) == list(range(5)) and sorted(m[5:10]) == list(range(5))
    r = list(RandomSampler(range(4), replacement=True, num_samples=70, generator=flow.Generator().manual_seed(0)))
    assert len(r) == 70 and set(r) <= set(range(4)) and len(set(r)) == 4
    assert len(RandomSampler(range(4), num_samples=7)) == 7
    with pytest.raises(TypeError, match="replacement should be a boolean value"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value, but got num_samples=0"):
        RandomSampler(range(3), num_samples=0)


def test_subset_random_and_weighted_sampler():
    idx = [10, 20, 30, 40]
    s = list(SubsetRandomSampler(idx, generator=flow.Generator().manual_seed(2)))
    assert sorted(s) == idx
    assert s == list(SubsetRandomSampler(idx, generator=flow.Generator().manual_seed(2)))
    w = WeightedRandomSampler([0.0, 1.0, 3.0], 4000, generator=flow.Generator().manual_seed(0))
    draws = np.bincount(list(w), minlength=3)
    assert draws[0] == 0 and abs(draws[2] / draws[1] - 3.0) < 0.4
    nr = list(WeightedRandomSampler([1.0, 0.0, 5.0, 2.0], 3, replacement=False,
                                    generator=flow.Generator().manual_seed(1)))
    assert sorted(nr) == [0, 2, 3]
    assert list(WeightedRandomSampler([1.0, 0.0], 2, replacement=False)) == [0, 1]  # torch: zero weights last
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        list(WeightedRandomSampler([1.0, 0.0], 3, replacement=False))
    with pytest.raises(RuntimeError, match="probability entry < 0"):
        list(WeightedRandomSampler([1.0, -1.0], 2))
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0, 2.0]], 2)
    with pytest.raises(ValueError, match="num_samples should be a positive integer value"):
        WeightedRandomSampler([1.0], 0)


@pytest.mark.parametrize("n,replicas,drop", [(10, 3, False), (10, 3, True), (2, 5, False), (12, 4, False),
                                             (7, 2, True)])
def test_distributed_sampler_matches_torch_without_shuffle(n, replicas, drop):
    for rank in range(replicas):
        s = DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop)
        t = tud.DistributedSampler(range(n), num_replicas=replicas, rank=rank, shuffle=False, drop_last=drop)
        assert list(s) == list(t) and len(s) == len(t)


def test_distributed_sampler_shuffle_epochs_and_errors():
    def shard(rank, epoch):
        s = DistributedSampler(range(10), num_replicas=2, rank=rank, seed=7)
        s.set_epoch(epoch)
        return list(s)

    assert sorted(shard(0, 0) + shard(1, 0)) == list(range(10))
    assert shard(0, 0) == shard(0, 0)
    assert shard(0, 0) + shard(1, 0) != shard(0, 1) + shard(1, 1)
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)


# ---- collate -------------------------------------------------------------------------------------------------
def _both(batch_fn):
    fb = batch_fn(flow.tensor)
    tb = batch_fn(torch.tensor)
    return default_collate(fb), tud.default_collate(tb)


def test_default_collate_matches_torch():
    Point = collections.namedtuple("Point", "x y")
    cases = [
        lambda T: [T([1.0, 2.0]), T([3.0, 4.0])],
        lambda T: [T(1), T(2)],
        lambda T: [1, 2, 3],
        lambda T: [1.5, 2.5],
        lambda T: [True, False],
        lambda T: ["a", "b"],
        lambda T: [np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)],
        lambda T: [np.float32(1.0), np.float32(2.0)],
        lambda T: [np.array(3, dtype=np.uint8), np.array(4, dtype=np.uint8)],
        lambda T: [(T([1.0]), 2, "x"), (T([3.0]), 4, "y")],
        lambda T: [{"a": T([1, 2]), "b": 0.5}, {"a": T([3, 4]), "b": 1.5}],
        lambda T: [Point(T(1.0), 1), Point(T(2.0), 2)],
        lambda T: [[T(1), {"k": [1, 2]}], [T(2), {"k": [3, 4]}]],
        lambda T: [np.zeros((2, 3), dtype=np.float64), np.ones((2, 3), dtype=np.float64)],
    ]
    for make in cases:
        a, b = _both(make)
        _same_structure(a, b)


def test_default_collate_errors_and_convert():
    with pytest.raises(TypeError, match="default_collate: batch must contain tensors, numpy arrays, numbers, dicts "
                                        "or lists; found <class 'object'>"):
        default_collate([object(), object()])
    with pytest.raises(RuntimeError, match="each element in list of batch should be of equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([np.array(["a"]), np.array(["b"])])
    src = {"a": np.array([1, 2]), "b": (np.float64(2.0), "s"), "c": 3}
    _same_structure(default_convert(src), tud.default_convert(src))
    t = flow.tensor([1, 2])
    assert default_convert(t) is t


# ---- DataLoader ----------------------------------------------------------------------------------------------
def _batches(loader):
    return [(x.numpy().tolist(), y.numpy().tolist()) for x, y in loader]


def test_dataloader_argument_errors():
    ds = Range(4)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="timeout option should be non-negative"):
        DataLoader(ds, timeout=-1)
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
        DataLoader(ds, prefetch_factor=2)
    with pytest.raises(ValueError, match="persistent_workers option needs num_workers > 0"):
        DataLoader(ds, persistent_workers=True)
    with pytest.raises(ValueError, match="sampler option is mutually exclusive with shuffle"):
        DataLoader(ds, sampler=SequentialSampler(ds), shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive with batch_size"):
        DataLoader(ds, batch_size=2, batch_sampler=BatchSampler(range(4), 2, False))
    with pytest.raises(ValueError, match="batch_size=None option disables auto-batching"):
        DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="expected unspecified shuffle option, but got shuffle=True"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Stream(3), sampler=[0])
    with pytest.raises(ValueError, match="multiprocessing_context can only be used with multi-process loading"):
        DataLoader(ds, multiprocessing_context="fork")
    with pytest.raises(ValueError, match="multiprocessing_context option should specify a valid start method"):
        DataLoader(ds, num_workers=1, multiprocessing_context="nope")
    dl = DataLoader(ds)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        dl.batch_size = 3


def test_dataloader_single_process_matches_torch():
    for kw in [dict(batch_size=3), dict(batch_size=3, drop_last=True), dict(batch_size=None),
               dict(batch_sampler=[[3, 1], [0]])]:
        f = DataLoader(Range(7), **kw)
        t = tud.DataLoader(Range(7), **kw)
        assert len(f) == len(t)
        for a, b in zip(f, t):
            _same_structure(a, b)


def test_dataloader_shuffle_reproducible_with_generator():
    a = _batches(DataLoader(Range(10), batch_size=4, shuffle=True, generator=flow.Generator().manual_seed(4)))
    b = _batches(DataLoader(Range(10), batch_size=4, shuffle=True, generator=flow.Generator().manual_seed(4)))
    assert a == b and sorted(sum((y for _, y in a), [])) == list(range(10))


def test_workers_give_same_batches_in_order():
    ds = Range(23)
    for kw in [dict(batch_size=4), dict(batch_size=4, drop_last=True), dict(batch_size=5, shuffle=True)]:
        ref = _batches(DataLoader(ds, generator=flow.Generator().manual_seed(9), **kw))
        got = _batches(DataLoader(ds, num_workers=2, generator=flow.Generator().manual_seed(9), **kw))
        assert got == ref


def test_workers_tensor_dtypes_and_shared_memory_cleanup():
    x = {"f": flow.randn(8, 3, 2), "h": flow.randn(8, 2).half(), "b": flow.randn(8) > 0, "i8": flow.arange(8).char(),
         "u8": flow.arange(8).byte(), "bf": flow.randn(8, 2).bfloat16(), "e": flow.zeros(8, 0)}

    class D(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return {k: v[i] for k, v in x.items()}

    before = set(glob.glob("/dev/shm/flowdl_*"))
    batches = list(DataLoader(D(), batch_size=3, num_workers=2))
    assert [b["f"].shape[0] for b in batches] == [3, 3, 2]
    for k, v in x.items():
        got = flow.cat([b[k] for b in batches])
        assert got.dtype == v.dtype and got.shape == v.shape
        np.testing.assert_array_equal(np.asarray(got.float() if k == "bf" else got),
                                      np.asarray(v.float() if k == "bf" else v))
    assert set(glob.glob("/dev/shm/flowdl_*")) == before


def test_tensor_pickle_all_dtypes():
    import pickle

    for dt in [flow.float32, flow.float64, flow.float16, flow.bfloat16, flow.int64, flow.int32, flow.int16,
               flow.int8, flow.uint8, flow.bool]:
        t = (flow.randn(3, 4) * 10).to(dt)
        r = pickle.loads(pickle.dumps(t))
        assert r.dtype == dt and r.shape == t.shape
        assert bool((r == t).all())
    p = flow.randn(2).requires_grad_()
    assert pickle.loads(pickle.dumps(p)).requires_grad


def _init_fn(worker_id):
    info = get_worker_info()
    assert info.id == worker_id
    info.dataset.tag = f"w{worker_id}"


class InfoDataset(Dataset):
    tag = "main"

    def __len__(self):
        return 6

    def __getitem__(self, i):
        info = get_worker_info()
        return {"i": i, "wid": info.id, "n": info.num_workers, "seed": info.seed, "tag": self.tag,
                "pid": os.getpid(), "np": float(np.random.rand())}


def test_worker_info_init_fn_and_seeds():
    assert get_worker_info() is None
    rows = []
    for b in DataLoader(InfoDataset(), batch_size=1, num_workers=2, worker_init_fn=_init_fn):
        rows.append({k: (v.item() if isinstance(v, flow.Tensor) else v[0]) for k, v in b.items()})
    assert [r["i"] for r in rows] == list(range(6))
    assert [r["wid"] for r in rows] == [0, 1, 0, 1, 0, 1]  # round-robin
    assert all(r["n"] == 2 and r["tag"] == f"w{r['wid']}" for r in rows)
    assert rows[1]["seed"] == rows[0]["seed"] + 1
    assert os.getpid() not in {r["pid"] for r in rows} and len({r["pid"] for r in rows}) == 2
    assert rows[0]["np"] != rows[1]["np"]  # NumPy seeded per worker
    assert InfoDataset.tag == "main"


class Failing(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise ValueError("bad sample 5")
        return i


def test_worker_exception_reraised_with_traceback():
    with pytest.raises(ValueError) as ei:
        list(DataLoader(Failing(), batch_size=2, num_workers=2))
    msg = str(ei.value)
    assert "Caught ValueError in DataLoader worker process 0." in msg
    assert "Original Traceback (most recent call last):" in msg and "bad sample 5" in msg
    assert "__getitem__" in msg

    class KeyFail(Dataset):
        def __len__(self):
            return 2

        def __getitem__(self, i):
            return {}["missing"]

    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process"):
        list(DataLoader(KeyFail(), num_workers=1))


def test_worker_init_fn_exception():
    def bad_init(wid):
        raise RuntimeError("init failed")

    with pytest.raises(RuntimeError, match="(?s)Caught RuntimeError in DataLoader worker process.*init failed"):
        list(DataLoader(Range(4), num_workers=1, worker_init_fn=bad_init))


class Slow(Dataset):
    def __len__(self):
        return 2

    def __getitem__(self, i):
        time.sleep(60)
        return i


def test_timeout():
    t0 = time.time()
    with pytest.raises(RuntimeError, match=r"DataLoader timed out after 0.2 seconds"):
        list(DataLoader(Slow(), num_workers=1, timeout=0.2))
    assert time.time() - t0 < 30  # raised long before the sample was ready; the stuck worker was ended


def test_persistent_workers_reused_across_epochs():
    dl = DataLoader(InfoDataset(), batch_size=2, num_workers=2, persistent_workers=True)
    pids = []
    for _ in range(3):
        rows = list(dl)
        assert [r["i"].tolist() for r in rows] == [[0, 1], [2, 3], [4, 5]]
        pids.append({p for r in rows for p in r["pid"].tolist()})
    assert pids[0] == pids[1] == pids[2]
    workers = dl._iterator._workers
    # stop mid-epoch: the next epoch starts from the beginning
    it = iter(dl)
    next(it)
    assert [r["i"].tolist() for r in dl] == [[0, 1], [2, 3], [4, 5]]
    assert dl._iterator._workers is workers and all(w.is_alive() for w in workers)
    dl._iterator._shutdown_workers()
    assert not any(w.is_alive() for w in workers)


def test_workers_exit_after_epoch_and_on_del():
    dl = DataLoader(Range(6), batch_size=2, num_workers=2)
    it = iter(dl)
    next(it)
    workers = it._workers
    assert all(w.is_alive() for w in workers)
    del it
    for w in workers:
        w.join(timeout=5)
    assert not any(w.is_alive() for w in workers) and all(w.exitcode is not None for w in workers)
    it = iter(dl)
    list(it)
    assert not any(w.is_alive() for w in it._workers)


@pytest.mark.parametrize("workers", [0, 2])
def test_iterable_dataset_with_workers(workers):
    got = [b.tolist() for b in DataLoader(Stream(9), batch_size=2, num_workers=workers)]
    flat = sorted(sum(got, []))
    assert flat == list(range(9))
    if workers == 0:
        assert got == [[0, 1], [2, 3], [4, 5], [6, 7], [8]]
    else:
        # worker 0 streams 0,2,4,6,8 and worker 1 streams 1,3,5,7; batches alternate between them
        assert got == [[0, 2], [1, 3], [4, 6], [5, 7], [8]]
    dropped = [b.tolist() for b in DataLoader(Stream(9), batch_size=2, num_workers=workers, drop_last=True)]
    assert all(len(b) == 2 for b in dropped)
    single = [int(b) for b in DataLoader(Stream(5), batch_size=None, num_workers=workers)]
    assert sorted(single) == list(range(5))


def test_iterable_persistent_workers_two_epochs():
    dl = DataLoader(Stream(6), batch_size=2, num_workers=2, persistent_workers=True)
    a = sorted(sum((b.tolist() for b in dl), []))
    b = sorted(sum((b.tolist() for b in dl), []))
    assert a == b == list(range(6))
    dl._iterator._shutdown_workers()


def test_dataloader_len():
    assert len(DataLoader(Range(10), batch_size=3)) == 4
    assert len(DataLoader(Range(10), batch_size=3, drop_last=True)) == 3

    class SizedStream(Stream):
        def __len__(self):
            return self.n

    assert len(DataLoader(SizedStream(10), batch_size=3)) == 4


class Dies(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            os._exit(3)
        return i


def test_worker_death_is_reported():
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        list(DataLoader(Dies(), num_workers=1))


def test_dataloader_iterator_not_picklable_and_custom_collate_in_workers():
    import pickle

    it = iter(DataLoader(Range(4)))
    with pytest.raises(NotImplementedError):
        pickle.dumps(it)
    got = list(DataLoader(Range(5), batch_size=2, num_workers=2, collate_fn=lambda b: [y for _, y in b]))
    assert got == [[0, 1], [2, 3], [4]]


def test_transport_falls_back_to_pickling_without_shared_memory(monkeypatch):
    from oneflow.utils.data import _transport

    batch = [flow.arange(6).view(2, 3), {"s": "x", "f": flow.ones(2, 2).t()}]
    prefix = _transport.make_prefix()
    enc = _transport.encode(batch, prefix)
    assert isinstance(enc, _transport.Payload) and os.path.exists(enc.path)
    dec = _transport.decode(enc)
    assert not os.path.exists(enc.path)  # unlinked on receipt; the tensors keep the mapping alive
    assert dec[0].tolist() == [[0, 1, 2], [3, 4, 5]] and dec[1]["s"] == "x" and dec[1]["f"].tolist() == [[1, 1]] * 2

    def full(fd, off, n):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    enc = _transport.encode(batch, prefix)
    assert enc is batch and not glob.glob(prefix + "*")
    # loading still works when /dev/shm is full
    got = list(DataLoader(Range(4), batch_size=2, num_workers=1))
    assert [y.tolist() for _, y in got] == [[0, 1], [2, 3]]


def test_generic_subscripts_and_flow_attribute():
    class MySampler(Sampler[int]):
        def __iter__(self):
            return iter([2, 0])

        def __len__(self):
            return 2

    class MyData(Dataset[int]):
        def __getitem__(self, i):
            return i * 10

        def __len__(self):
            return 3

    assert [b.tolist() for b in DataLoader(MyData(), sampler=MySampler())] == [[20], [0]]
    assert issubclass(IterableDataset[int], Dataset)
    assert flow.utils.data.DataLoader is DataLoader


@pytest.mark.parametrize("prefetch", [0, 1, 3])
def test_prefetch_factor(prefetch):
    got = [y.tolist() for _, y in DataLoader(Range(7), batch_size=2, num_workers=2, prefetch_factor=prefetch)]
    assert got == [[0, 1], [2, 3], [4, 5], [6]]


def test_workers_without_auto_batching_and_with_batch_sampler():
    for kw in [dict(batch_size=None), dict(batch_sampler=[[3, 1], [0], [6, 5, 4]])]:
        ref = list(DataLoader(Range(7), **kw))
        got = list(DataLoader(Range(7), num_workers=2, **kw))
        assert len(ref) == len(got)
        for a, b in zip(got, ref):
            assert type(a) is type(b)
            np.testing.assert_array_equal(_np(a[0]), _np(b[0]))
            np.testing.assert_array_equal(_np(a[1]), _np(b[1]))


def test_weighted_sampler_without_replacement_takes_zero_weights_last():
    flow.manual_seed(0)
    got = list(WeightedRandomSampler([0, 1, 1, 0], 3, replacement=False))
    assert sorted(got[:2]) == [1, 2] and got[2] in (0, 3) and len(set(got)) == 3
    assert sorted(WeightedRandomSampler([0, 1, 1, 0], 4, replacement=False)) == [0, 1, 2, 3]
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        list(WeightedRandomSampler([0, 1, 1, 0], 5, replacement=False))


def test_iterable_dataset_is_abstract_and_sampler_without_process_group():
    with pytest.raises(TypeError, match="abstract"):
        flow.utils.data.IterableDataset()

    class Count(flow.utils.data.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    assert list(Count() + Count()) == [0, 1, 2, 0, 1, 2]
    env = {k: os.environ.pop(k) for k in ("WORLD_SIZE", "RANK") if k in os.environ}
    try:
        if not hasattr(flow, "env"):  # no distributed plugin: no process group to ask
            with pytest.raises(ValueError, match="Default process group has not been initialized"):
                DistributedSampler(range(4))
        assert len(DistributedSampler(range(4), num_replicas=2, rank=0)) == 2
    finally:
        os.environ.update(env)
