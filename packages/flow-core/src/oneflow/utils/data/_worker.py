"""The worker process side of DataLoader: the loop each worker runs, ``get_worker_info()``, and the wrapper that
carries a worker's exception (with its traceback text) to the main process."""
import dataclasses
import os
import queue
import random
import sys
import traceback

import numpy as np

from . import _transport
from ._collate import default_collate

__all__ = ["get_worker_info", "WorkerInfo"]

# How often a waiting worker checks that its parent is alive, and a waiting main process that its workers are.
MP_STATUS_CHECK_INTERVAL = 1.0


@dataclasses.dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker (read-only, as torch's frozen dataclass).

    Attributes:
        id (int): this worker's id, ``0 .. num_workers - 1``.
        num_workers (int): how many workers the DataLoader runs.
        seed (int): the seed this worker's random generators were given.
        dataset: this worker's copy of the dataset.
        rng: an optional random-state container (``None`` here).
        worker_method (str): how the worker runs: ``"multiprocessing"``.
    """

    id: int
    num_workers: int
    seed: int
    dataset: object
    rng: object = None
    worker_method: str = "multiprocessing"


_worker_info = None


def get_worker_info():
    """Inside a DataLoader worker process: its ``WorkerInfo``; in the main process: ``None``."""
    return _worker_info


class KeyErrorMessage(str):
    """A KeyError message that prints with its newlines (KeyError repr()s its argument)."""

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker, with its formatted traceback, that can be re-raised elsewhere."""

    def __init__(self, exc_info=None, where="in background"):
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:
            # the type needs other constructor arguments
            raise RuntimeError(msg) from None
        raise exc

    def __reduce__(self):
        # the exception class may not be importable in the parent (defined in __main__ of a spawned child):
        # fall back to RuntimeError then
        return (_rebuild_wrapper, (_picklable_type(self.exc_type), self.exc_msg, self.where))


def _picklable_type(t):
    import pickle

    try:
        pickle.dumps(t)
        return t
    except Exception:
        return RuntimeError


def _rebuild_wrapper(exc_type, exc_msg, where):
    w = ExceptionWrapper.__new__(ExceptionWrapper)
    w.exc_type, w.exc_msg, w.where = exc_type, exc_msg, where
    return w


class _IterableDatasetStopIteration:
    """Sent by a worker whose iterable dataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """Sent to persistent workers at the start of a new epoch; echoed back as an acknowledgement."""


class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index):
        if self.auto_collation:
            if self.collate_fn is default_collate:
                # readers that can build a whole batch at once (MNIST, CIFAR-10 without transforms) give the
                # result default_collate would, without per-sample tensors
                fast = getattr(self.dataset, "_collated_batch", None)
                if fast is not None:
                    batch = fast(index)
                    if batch is not NotImplemented:
                        return batch
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class _IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.dataset_iter))
                except StopIteration:
                    self.ended = True
                    break
            if len(data) == 0 or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.dataset_iter)
        return self.collate_fn(data)


def make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last):
    cls = _IterableFetcher if iterable else _MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


def _np_seed(base_seed, worker_id):
    # a 32-bit seed for NumPy's legacy global generator, different per worker and per base seed
    ss = np.random.SeedSequence([worker_id, base_seed & 0xFFFFFFFF, (base_seed >> 32) & 0xFFFFFFFF])
    return int(ss.generate_state(1)[0])


def worker_loop(iterable, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn, drop_last,
                base_seed, init_fn, worker_id, num_workers, shm_prefix, parent_pid):
    """Runs in a worker: fetch the indices it is sent, collate, and put ``(send_idx, batch)`` on ``data_queue``."""
    global _worker_info
    try:
        import oneflow

        seed = base_seed + worker_id
        random.seed(seed)
        oneflow.manual_seed(seed)
        np.random.seed(_np_seed(base_seed, worker_id))
        oneflow.set_num_threads(1)  # workers run in parallel with each other; no OpenMP team per worker
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)

        where = f"in DataLoader worker process {worker_id}"
        init_exception = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=where)

        iteration_end = False
        while os.getppid() == parent_pid:
            try:
                r = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(r, _ResumeIteration):
                data_queue.put((r, None))
                iteration_end = False
                if fetcher is not None:
                    fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
                continue
            if r is None:
                break
            if done_event.is_set() or iteration_end:
                continue
            idx, index = r
            if init_exception is not None:
                data, init_exception = init_exception, None
            else:
                try:
                    data = _transport.encode(fetcher.fetch(index), shm_prefix)
                except StopIteration:
                    if iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        iteration_end = True
                    else:
                        data = ExceptionWrapper(where=where)
                except Exception:
                    data = ExceptionWrapper(where=where)
            data_queue.put((idx, data))
            del data, idx, index, r
    except KeyboardInterrupt:
        pass
    if done_event.is_set():
        # the main process stopped reading: don't block exit on flushing the queue
        data_queue.cancel_join_thread()
        data_queue.close()
