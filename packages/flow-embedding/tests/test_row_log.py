"""The cached SSD tier's append-only row log: rewritten rows read back as their newest copy, the cleaner keeps the
working file bounded, snapshots taken after cleaning are exact, and a process killed mid-training leaves its saved
snapshot intact."""
import glob
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from helpers import make_emb, rows_of

import oneflow as flow

DIM, SIZE_FACTOR = 8, 4  # Adam with amsgrad: 4 x 8 floats = 128-byte rows
ROW_BYTES = DIM * SIZE_FACTOR * 4


def _train(emb, opt, ids, seed):
    g = np.random.default_rng(seed).standard_normal((len(ids), DIM)).astype(np.float32)
    (emb(flow.tensor(ids, dtype=flow.int64)) * flow.tensor(g)).sum().backward()
    opt.step()
    opt.zero_grad()


def _log_stats(emb):
    names = ("file_bytes", "live_bytes", "segments_cleaned", "rows_moved", "sparse_cleans")
    return dict(zip(names, emb._store.log_stats()))


def _data_files_bytes(emb):
    return sum(os.path.getsize(f) for f in glob.glob(os.path.join(emb.path, "rows-*.bin")))


def _pair(tmp_path, cache_mb, background=False):
    ram = make_emb(tmp_path / "ram", dim=DIM, size_factor=SIZE_FACTOR)
    ssd = make_emb(tmp_path / "ssd", dim=DIM, size_factor=SIZE_FACTOR, kind="ssd", cache_mb=cache_mb,
                   background=background)
    opts = dict(lr=0.05, amsgrad=True)
    return (ram, flow.optim.Adam(ram.parameters(), **opts)), (ssd, flow.optim.Adam(ssd.parameters(), **opts))


@pytest.mark.parametrize("background", [False, True], ids=["sync-write-back", "background-write-back"])
def test_rows_rewritten_many_times_read_back_newest(tmp_path, background):
    # 3000 rows, a cache of 160: every pass evicts (and so appends) nearly every row again
    (ram, o_ram), (ssd, o_ssd) = _pair(tmp_path, cache_mb=0.02, background=background)
    rng = np.random.default_rng(0)
    for step in range(40):
        ids = rng.permutation(3000)[:1500] if step % 2 else rng.integers(0, 3000, 700)
        _train(ram, o_ram, ids, step)
        _train(ssd, o_ssd, ids, step)
    st = _log_stats(ssd)
    assert ssd.cache_stats()["writebacks"] > 10 * 3000 // 2
    assert st["segments_cleaned"] > 0 and st["rows_moved"] > 0  # records the cleaner moved were read back too
    everything = range(3000)
    np.testing.assert_array_equal(rows_of(ssd, everything), rows_of(ram, everything))
    # the optimizer columns came back too: one more step over every row still agrees
    _train(ram, o_ram, list(everything), 99)
    _train(ssd, o_ssd, list(everything), 99)
    np.testing.assert_array_equal(rows_of(ssd, everything), rows_of(ram, everything))


def test_cleaner_keeps_the_file_bounded(tmp_path):
    rows = 20_000  # 2.4 MiB of live rows; the cache holds 2% of them
    emb = make_emb(tmp_path, dim=DIM, size_factor=SIZE_FACTOR, kind="ssd", cache_mb=0.05)
    opt = flow.optim.SGD(emb.parameters(), lr=0.1)
    rng = np.random.default_rng(1)
    peak = 0
    for step in range(60):  # 30 passes over the working set, each row rewritten ~30 times
        _train(emb, opt, rng.permutation(rows)[:10_000], step)
        peak = max(peak, _data_files_bytes(emb))
    st = _log_stats(emb)
    live = rows * ROW_BYTES
    assert st["live_bytes"] == live
    written = emb.cache_stats()["writebacks"] * ROW_BYTES
    assert written > 20 * live  # without reclaiming, the log would be over 20x the table
    assert st["segments_cleaned"] > 100
    assert peak <= 2 * live, (peak, live)
    assert st["file_bytes"] == _data_files_bytes(emb)


@pytest.mark.parametrize("mapped", [True, False], ids=["mmap", "pread"])
def test_cleaner_reads_sparse_and_full_segments_exactly(tmp_path, monkeypatch, mapped):
    # every row written once, then a hot third rewritten step after step with a few tail rows: the cleaner meets
    # segments with a handful of live records and fuller ones. Through the file's mapping it copies each live
    # record from there; with pread (FLOW_EMBEDDING_MMAP=0, the fallback) it reads sparse segments' records one
    # by one and fuller segments whole.
    monkeypatch.setenv("FLOW_EMBEDDING_MMAP", "1" if mapped else "0")
    (ram, o_ram), (ssd, o_ssd) = _pair(tmp_path, cache_mb=0.02)
    rng = np.random.default_rng(4)
    for step in range(40):
        ids = rng.permutation(3000) if step < 2 else np.concatenate([rng.integers(0, 1000, 3000),
                                                                     rng.integers(0, 3000, 30)])
        _train(ram, o_ram, ids, step)
        _train(ssd, o_ssd, ids, step)
    st = _log_stats(ssd)
    if mapped:
        assert st["sparse_cleans"] == 0 < st["segments_cleaned"], st
    else:
        assert 0 < st["sparse_cleans"] < st["segments_cleaned"], st
    everything = range(3000)
    np.testing.assert_array_equal(rows_of(ssd, everything), rows_of(ram, everything))
    _train(ram, o_ram, list(everything), 99)  # the optimizer columns moved with the values
    _train(ssd, o_ssd, list(everything), 99)
    np.testing.assert_array_equal(rows_of(ssd, everything), rows_of(ram, everything))


def test_snapshot_after_cleaning_round_trips_exactly(tmp_path):
    (ram, o_ram), (ssd, o_ssd) = _pair(tmp_path, cache_mb=0.02)
    rng = np.random.default_rng(2)
    for step in range(30):
        ids = rng.integers(0, 4000, 1000)
        _train(ram, o_ram, ids, step)
        _train(ssd, o_ssd, ids, step)
    assert _log_stats(ssd)["segments_cleaned"] > 0
    everything = range(4000)
    saved = rows_of(ram, everything)
    ssd.save_snapshot("after-cleaning")
    for step in range(30, 40):  # the live table moves on (more cleaning) after the save
        _train(ssd, o_ssd, rng.integers(0, 4000, 1000), step)
    assert not np.array_equal(rows_of(ssd, everything), saved)
    ssd.load_snapshot("after-cleaning")
    np.testing.assert_array_equal(rows_of(ssd, everything), saved)
    # the snapshot holds every row's optimizer state: a further step agrees with the RAM store's (through new
    # optimizers: Adam's step count lives in the optimizer, which took more steps on the SSD side)
    opts = dict(lr=0.05, amsgrad=True)
    _train(ram, flow.optim.Adam(ram.parameters(), **opts), list(everything), 77)
    _train(ssd, flow.optim.Adam(ssd.parameters(), **opts), list(everything), 77)
    np.testing.assert_array_equal(rows_of(ssd, everything), rows_of(ram, everything))


CHILD = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    import numpy as np
    import oneflow as flow
    from helpers import make_emb
    from test_row_log import DIM, SIZE_FACTOR, _train
    emb = make_emb({path!r}, dim=DIM, size_factor=SIZE_FACTOR, kind="ssd", cache_mb=0.02)
    opt = flow.optim.Adam(emb.parameters(), lr=0.05, amsgrad=True)
    rng = np.random.default_rng(3)
    for step in range(8):
        _train(emb, opt, rng.integers(0, 4000, 1000), step)
    emb.save_snapshot("snap")
    print("saved", flush=True)
    step = 8
    while True:  # keeps evicting, appending and cleaning until killed
        _train(emb, opt, rng.integers(0, 4000, 1000), step)
        step += 1
""")


def test_kill_mid_training_leaves_the_saved_snapshot_intact(tmp_path):
    ref = make_emb(tmp_path / "ref", dim=DIM, size_factor=SIZE_FACTOR)
    ref_opt = flow.optim.Adam(ref.parameters(), lr=0.05, amsgrad=True)
    rng = np.random.default_rng(3)
    for step in range(8):
        _train(ref, ref_opt, rng.integers(0, 4000, 1000), step)
    n_rows = ref.num_rows()  # before reading every id (which inserts the ids not trained yet)
    want = rows_of(ref, range(4000))
    tests = os.path.dirname(os.path.abspath(__file__))
    for k, delay in enumerate((0.05, 0.3, 1.0)):
        path = tmp_path / f"emb{k}"
        proc = subprocess.Popen([sys.executable, "-c", CHILD.format(tests=tests, path=str(path))],
                                stdout=subprocess.PIPE, start_new_session=True)
        watchdog = threading.Timer(120, lambda p=proc: os.killpg(p.pid, signal.SIGKILL))
        watchdog.start()
        try:
            assert proc.stdout.readline().strip() == b"saved"
            time.sleep(delay)
            assert proc.poll() is None, "the child stopped before it was killed"
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        finally:
            watchdog.cancel()
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        emb = make_emb(path, dim=DIM, size_factor=SIZE_FACTOR, kind="ssd", cache_mb=0.02)
        emb.load_snapshot("snap")
        assert emb.num_rows() == n_rows
        np.testing.assert_array_equal(rows_of(emb, range(4000)), want)
