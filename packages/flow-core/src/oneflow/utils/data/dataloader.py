"""``DataLoader``: batches from a dataset, in the main process or in worker processes (PyTorch's semantics).

With ``num_workers > 0`` each worker is a separate process (forked where the platform can) with its own index
queue; the main process hands out up to ``prefetch_factor * num_workers`` batch indices round-robin, returns the
batches in sampler order, re-raises a worker's exception with the worker's traceback, and shuts the workers
down when the epoch ends (or keeps them for the next epoch with ``persistent_workers=True``). Tensors travel
through shared memory (see ``_transport``).
"""
import atexit
import itertools
import math
import multiprocessing as python_mp
import os
import queue
import warnings
import weakref

from ... import cuda as _cuda
from . import _transport
from ._collate import default_collate, default_convert
from ._worker import (MP_STATUS_CHECK_INTERVAL, ExceptionWrapper, _IterableDatasetStopIteration,
                      _ResumeIteration, make_fetcher, worker_loop)
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]


class _InfiniteConstantSampler(Sampler):
    """The sampler of iterable datasets: ``None`` forever (the dataset decides what comes next)."""

    def __iter__(self):
        while True:
            yield None


def _default_context():
    # fork: workers inherit the dataset without pickling it, and start in milliseconds
    if "fork" in python_mp.get_all_start_methods():
        return python_mp.get_context("fork")
    return python_mp.get_context()


class DataLoader:
    """Iterates over ``dataset`` in batches.

    Args:
        dataset: a map-style ``Dataset`` (``__getitem__``/``__len__``) or an ``IterableDataset``.
        batch_size (int or None): samples per batch (default 1); ``None`` disables automatic batching.
        shuffle (bool): reshuffle the indices every epoch (map-style datasets).
        sampler / batch_sampler: custom index order (mutually exclusive with ``shuffle`` / with ``batch_size``,
            ``shuffle``, ``sampler`` and ``drop_last``).
        num_workers (int): worker processes (0: load in the main process).
        collate_fn: merges a list of samples into a batch (default ``default_collate``).
        pin_memory (bool): page-locked batches for an accelerator; without one (this build) it warns, as
            PyTorch does, and has no effect.
        drop_last (bool): drop the last incomplete batch.
        timeout (float): seconds to wait for a batch from the workers before raising ``RuntimeError`` (0: forever).
        worker_init_fn: called as ``worker_init_fn(worker_id)`` in each worker after seeding.
        multiprocessing_context: a start method name (``"fork"``, ``"spawn"``, ``"forkserver"``) or context.
        generator: the ``oneflow.Generator`` for the random sampler and the workers' base seed.
        prefetch_factor (int): batches loaded in advance per worker (default 2 with workers).
        persistent_workers (bool): keep the workers alive between epochs.
        pin_memory_device, in_order: accepted for compatibility; batches always come in sampler order.
    """

    _initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._iterable = True
            if shuffle not in {False, None}:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._iterable = False

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                             "drop_last")

        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self._IterableDataset_len_called = None  # len(dataset) once len(self) was asked, for the iterators' check
        self._initialized = True
        self._check_worker_number()

    # ---- attributes ---------------------------------------------------------------------------------------
    @property
    def multiprocessing_context(self):
        return self._mp_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, ctx):
        if ctx is not None:
            if self.num_workers > 0:
                if isinstance(ctx, str):
                    valid = python_mp.get_all_start_methods()
                    if ctx not in valid:
                        raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                         f"{valid!r}, but got multiprocessing_context={ctx!r}")
                    ctx = python_mp.get_context(ctx)
                if not isinstance(ctx, python_mp.context.BaseContext):
                    raise TypeError(f"multiprocessing_context option should be a valid context object or a string "
                                    f"specifying the start method, but got multiprocessing_context={ctx}")
            else:
                raise ValueError(f"multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
        object.__setattr__(self, "_mp_context", ctx)

    def __setattr__(self, attr, val):
        if self._initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                          "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def check_worker_number_rationality(self):
        """Warns when ``num_workers`` exceeds the CPUs this process may run on."""
        self._check_worker_number()

    def _check_worker_number(self):
        if self.num_workers <= 1:
            return
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count()
        if cpus and self.num_workers > cpus:
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. Our suggested "
                          f"max number of worker in current system is {cpus}, which is smaller than what this "
                          f"DataLoader is going to create. Please be aware that excessive worker creation might "
                          f"get DataLoader running slow or even freeze, lower the worker number to avoid potential "
                          f"slowness/freeze if necessary.", stacklevel=3)

    # ---- iteration ----------------------------------------------------------------------------------------
    def _get_iterator(self):
        if self.pin_memory and not _cuda.is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", stacklevel=3)
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self):
        if self._iterable:
            length = self._IterableDataset_len_called = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)

    def _base_seed(self):
        from ..._ops.creation_random import randint

        return int(randint(0, 2 ** 62, (1,), generator=self.generator).item())


class _BaseDataLoaderIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._persistent_workers = loader.persistent_workers
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = loader._base_seed()
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        # torch's check: more items than the length the dataset reported when len(loader) was taken (it compares
        # with the sample count even when batching)
        if self._iterable and self._IterableDataset_len_called is not None \
                and self._num_yielded > self._IterableDataset_len_called:
            msg = (f"Length of IterableDataset {self._dataset} was reported to be "
                   f"{self._IterableDataset_len_called}(when accessing len(dataloader)), but {self._num_yielded} "
                   "samples have been fetched. ")
            if self._num_workers > 0:
                msg += ("For multiprocessing data-loading, this could be caused by not properly configuring the "
                        "IterableDataset replica at each worker. Please see the IterableDataset documentation for "
                        "examples.")
            warnings.warn(msg)
        return data

    def __len__(self):
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        assert self._timeout == 0 and self._num_workers == 0
        self._fetcher = make_fetcher(self._iterable, self._dataset, self._auto_collation, self._collate_fn,
                                     self._drop_last)

    def _next_data(self):
        index = self._next_index()
        return self._fetcher.fetch(index)


# Iterators with live workers, shut down at interpreter exit (before multiprocessing's own exit handler).
_live_iterators = weakref.WeakSet()


@atexit.register
def _shutdown_all():
    for it in list(_live_iterators):
        it._shutdown_workers()


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._shutdown = False
        assert self._num_workers > 0 and self._prefetch_factor >= 0
        ctx = loader.multiprocessing_context or _default_context()
        self._shm_prefix = _transport.make_prefix() if _transport.shm_available() else None
        self._data_queue = ctx.Queue()
        self._workers_done_event = ctx.Event()
        self._index_queues, self._workers = [], []
        try:
            for i in range(self._num_workers):
                iq = ctx.Queue()
                iq.cancel_join_thread()  # a dead worker must not block our exit on flushing its queue
                w = ctx.Process(target=worker_loop, daemon=True, args=(
                    self._iterable, self._dataset, iq, self._data_queue, self._workers_done_event,
                    self._auto_collation, self._collate_fn, self._drop_last, self._base_seed, loader.worker_init_fn,
                    i, self._num_workers, self._shm_prefix, os.getpid()))
                with warnings.catch_warnings():
                    # Python >= 3.12 warns about fork() in a process with threads (our OpenMP pool); workers
                    # run single-threaded and touch no lock those threads hold
                    warnings.filterwarnings("ignore", message=r".*use of fork\(\) may lead to deadlocks",
                                            category=DeprecationWarning)
                    w.start()
                self._index_queues.append(iq)
                self._workers.append(w)
        except BaseException:
            self._shutdown_workers()
            raise
        _live_iterators.add(self)
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for q in self._index_queues:
                q.put(_ResumeIteration())
            remaining = self._num_workers
            while remaining > 0:
                idx, _ = self._get_data()  # results of the previous epoch's unfinished tasks are dropped
                if isinstance(idx, _ResumeIteration):
                    remaining -= 1
        for _ in range(max(self._prefetch_factor, 1) * self._num_workers):  # prefetch_factor=0: one in flight
            self._try_put_index()

    def _try_put_index(self):
        assert self._tasks_outstanding < max(self._prefetch_factor, 1) * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_queue_idx_cycle)
            if self._workers_status[wid]:
                break
        else:
            return  # every worker is exhausted (iterable dataset)
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _try_get_data(self, timeout):
        try:
            idx, data = self._data_queue.get(timeout=timeout)
        except queue.Empty:
            failed = [w for w, alive in zip(self._workers, self._workers_status) if alive and not w.is_alive()]
            if failed:
                pids = ", ".join(str(w.pid) for w in failed)
                codes = ", ".join(str(w.exitcode) for w in failed)
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly (exit code(s) "
                                   f"{codes})") from None
            return False, None
        return True, (idx, _transport.decode(data))

    def _get_data(self):
        if self._timeout > 0:
            ok, data = self._try_get_data(self._timeout)
            if ok:
                return data
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        while True:
            ok, data = self._try_get_data(MP_STATUS_CHECK_INTERVAL)
            if ok:
                return data

    def _next_data(self):
        while True:
            # skip the slots of exhausted workers (iterable datasets)
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                data = self._task_info.pop(self._rcvd_idx)[1]
                self._rcvd_idx += 1
                return self._process_data(data)
            if self._shutdown:
                raise StopIteration
            idx, data = self._get_data()
            if isinstance(idx, _ResumeIteration):
                continue
            self._tasks_outstanding -= 1
            if self._iterable and isinstance(data, _IterableDatasetStopIteration):
                self._mark_worker_done(data.worker_id)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if idx in self._task_info:
                    self._task_info[idx] += (data,)
            else:
                del self._task_info[idx]
                self._rcvd_idx += 1
                return self._process_data(data)

    def _process_data(self, data):
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _mark_worker_done(self, wid):
        if self._persistent_workers:
            self._workers_status[wid] = False  # it stays alive, waiting for the next epoch
        else:
            self._index_queues[wid].put(None)
            self._workers_status[wid] = False

    def _shutdown_workers(self):
        if getattr(self, "_shutdown", True):
            return
        self._shutdown = True
        try:
            self._workers_done_event.set()
            for q in self._index_queues:
                try:
                    q.put(None)
                except (OSError, ValueError):
                    pass
            for w in self._workers:
                w.join(timeout=MP_STATUS_CHECK_INTERVAL)
                if w.is_alive():
                    w.terminate()
                    w.join()
            for q in self._index_queues:
                q.cancel_join_thread()
                q.close()
            self._data_queue.cancel_join_thread()
            self._data_queue.close()
        finally:
            if self._shm_prefix is not None:
                _transport.cleanup(self._shm_prefix)
            _live_iterators.discard(self)

    def __del__(self):
        try:
            self._shutdown_workers()
        except Exception:
            pass  # interpreter shutdown: the atexit handler (or the OS) has ended the workers
