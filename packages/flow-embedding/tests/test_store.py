"""The cached SSD tier (eviction round trips, bounded memory), snapshots and their crash safety, the persistent
table reader/writer."""
import ctypes
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from helpers import make_emb, oe, rows_of

import oneflow as flow


def _train(emb, opt, ids, seed):
    g = np.random.default_rng(seed).standard_normal((len(ids), emb.embedding_dim)).astype(np.float32)
    (emb(flow.tensor(ids, dtype=flow.int64)) * flow.tensor(g)).sum().backward()
    opt.step()
    opt.zero_grad()


@pytest.mark.parametrize("background", [False, True], ids=["sync-write-back", "background-write-back"])
def test_cached_store_matches_ram_store_through_evictions(tmp_path, background):
    dim = 8
    # a 1 KiB-per-row Adam row (dim 8 x 4 floats x 4 bytes = 128 B): 0.01 MiB holds 81 rows of the 2000 used
    ram = make_emb(tmp_path / "ram", dim=dim, size_factor=4)
    ssd = make_emb(tmp_path / "ssd", dim=dim, size_factor=4, kind="ssd", cache_mb=0.01, background=background)
    opts = dict(lr=0.05, amsgrad=True)
    o_ram, o_ssd = flow.optim.Adam(ram.parameters(), **opts), flow.optim.Adam(ssd.parameters(), **opts)
    rng = np.random.default_rng(0)
    for step in range(6):
        ids = rng.integers(0, 2000, 500)
        _train(ram, o_ram, ids, step)
        _train(ssd, o_ssd, ids, step)
    stats = ssd.cache_stats()
    assert stats["evictions"] > 1000 and stats["writebacks"] > 0 and stats["misses"] > 0
    everything = range(2000)
    np.testing.assert_array_equal(rows_of(ssd, everything), rows_of(ram, everything))
    ssd._store.flush()  # every dirty row through the queue into the file, then read back after eviction
    rows_of(ssd, range(2000, 2200))
    np.testing.assert_array_equal(rows_of(ssd, everything), rows_of(ram, everything))
    # the optimizer state survived eviction too: a further step still agrees
    _train(ram, o_ram, list(everything), 99)
    _train(ssd, o_ssd, list(everything), 99)
    np.testing.assert_array_equal(rows_of(ssd, everything), rows_of(ram, everything))


def _rss_kib():
    # free memory malloc keeps for reuse (earlier tests' buffers), so that the growth measured is the store's
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_table_ten_times_the_cache_trains_with_bounded_rss(tmp_path):
    dim, rows = 32, 400_000  # 400k rows x 32 x 2 floats (SGD momentum) = 98 MiB of rows; the cache is 9.8 MiB
    table_mib = rows * dim * 2 * 4 / 2**20
    emb = make_emb(tmp_path, dim=dim, size_factor=2, kind="ssd", cache_mb=table_mib / 10)
    opt = flow.optim.SGD(emb.parameters(), lr=0.1, momentum=0.5)
    rng = np.random.default_rng(0)
    first = np.arange(0, 4096)
    before_first = rows_of(emb, first)
    _train(emb, opt, first, 0)
    start = _rss_kib()
    for step in range(1, 60):
        _train(emb, opt, rng.integers(0, rows, 8192), step)
    for lo in range(0, rows, 50_000):  # touch every row once
        rows_of(emb, range(lo, lo + 50_000))
    growth_mib = (_rss_kib() - start) / 1024
    assert emb.num_rows() == rows
    assert emb.cache_stats()["evictions"] > rows // 2
    # the index (about 40 B a row, 16 MiB) and malloc's retained buffers grow; the rows must not stay in memory
    assert growth_mib < table_mib / 2, (growth_mib, table_mib)
    # values written back and read again are right: an untouched-since row kept its first update
    after = rows_of(emb, first)
    assert not np.allclose(after, before_first)


def test_snapshot_save_load_round_trip(tmp_path):
    for kind, background in (("ram", False), ("ssd", False), ("ssd", True)):
        emb = make_emb(tmp_path / f"{kind}{background}", dim=4, size_factor=2, kind=kind, cache_mb=0.001,
                       background=background)
        # momentum state lives in the rows; the step count (Adam's) lives in the optimizer, as in OneFlow
        opt = flow.optim.SGD(emb.parameters(), lr=0.1, momentum=0.9)
        _train(emb, opt, list(range(40)), 0)
        saved = rows_of(emb, range(40))
        emb.save_snapshot("s")
        _train(emb, opt, list(range(60)), 1)
        assert emb.num_rows() == 60
        emb.load_snapshot("s")
        assert emb.num_rows() == 40
        np.testing.assert_array_equal(rows_of(emb, range(40)), saved)
        # the momentum came back too: the same step from the snapshot gives the same rows
        _train(emb, opt, list(range(40)), 2)
        first = rows_of(emb, range(40))
        emb.load_snapshot("s")
        _train(emb, opt, list(range(40)), 2)
        np.testing.assert_allclose(rows_of(emb, range(40)), first, rtol=1e-5, atol=1e-6)


def test_snapshot_errors_leave_the_table_intact(tmp_path):
    emb = make_emb(tmp_path, dim=4)
    rows_of(emb, range(10))
    emb.save_snapshot("good")
    rows_of(emb, range(10, 15))
    live = rows_of(emb, range(15))
    with pytest.raises(FileNotFoundError, match="no snapshot named 'missing'"):
        emb.load_snapshot("missing")
    data = os.path.join(emb.path, "snapshots", "good", "rows.bin")
    with open(data, "r+b") as f:  # flip a byte of the payload
        f.seek(-3, os.SEEK_END)
        b = f.read(1)
        f.seek(-3, os.SEEK_END)
        f.write(bytes([b[0] ^ 0xFF]))
    with pytest.raises(RuntimeError, match="checksum"):
        emb.load_snapshot("good")
    with open(data, "r+b") as f:
        f.truncate(100)
    with pytest.raises(RuntimeError, match="truncated"):
        emb.load_snapshot("good")
    assert emb.num_rows() == 15
    np.testing.assert_array_equal(rows_of(emb, range(15)), live)
    with pytest.raises(ValueError, match="snapshot name"):
        emb.save_snapshot("../x")


CHILD = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from helpers import make_emb, rows_of
    emb = make_emb({path!r}, dim=64, size_factor=1, capacity=400000)
    rows_of(emb, range(1000))
    emb.save_snapshot("snap")
    rows_of(emb, range(1000, 300000))
    print("saving", flush=True)
    while True:
        emb.save_snapshot("snap")
""")


def test_snapshot_survives_kill_during_save(tmp_path):
    code = CHILD.format(tests=os.path.dirname(os.path.abspath(__file__)), path=str(tmp_path / "emb"))
    ref = rows_of(make_emb(tmp_path / "ref", dim=64), range(1000))
    torn = 0
    for delay in (0.01, 0.05, 0.1, 0.2, 0.3):
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
        # the whole group dies after 60 s whatever happens, so a hung child cannot hang the suite
        watchdog = threading.Timer(60, lambda p=proc: os.killpg(p.pid, signal.SIGKILL))
        watchdog.start()
        try:
            assert proc.stdout.readline().strip() == b"saving"
            time.sleep(delay)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        finally:
            watchdog.cancel()
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        emb = make_emb(tmp_path / "emb", dim=64, size_factor=1, capacity=400000)
        folder = os.path.join(emb.path, "snapshots")
        torn += any(e.startswith(".tmp-") for e in os.listdir(folder))
        emb.load_snapshot("snap")  # the previous snapshot, or the complete new one
        assert emb.num_rows() in (1000, 300000)
        np.testing.assert_array_equal(rows_of(emb, range(1000)), ref)
        del emb
    assert torn > 0  # at least one kill landed inside a save


def test_persistent_table_reader_and_writer(tmp_path):
    emb = make_emb(tmp_path, dim=3, size_factor=2)
    opt = flow.optim.SGD(emb.parameters(), lr=0.1, momentum=0.9)
    _train(emb, opt, [1, 2, 3], 0)
    emb.save_snapshot("s")
    reader = oe.make_persistent_table_reader([emb.path], "s", flow.int64, flow.float32, 6)
    got = {}
    for tables, keys, values in reader.read_with_table_ids():
        for t, k, v in zip(tables, keys, values):
            got[(int(t), int(k))] = v
    assert sorted(got) == [(0, 1), (0, 2), (0, 3)]
    np.testing.assert_array_equal(np.stack([got[(0, k)][:3] for k in (1, 2, 3)]), rows_of(emb, [1, 2, 3]))
    assert np.any(np.stack([got[(0, k)][3:] for k in (1, 2, 3)]) != 0)  # momentum buffers are there
    keys, values = next(iter(oe.make_persistent_table_reader(emb.path, "s", flow.int32, flow.float32, 6)))
    assert keys.dtype == np.int32 and values.shape == (3, 6)

    # a writer's snapshot loads into an embedding
    w_emb = make_emb(tmp_path / "w", dim=3, num_tables=2, size_factor=2)
    vals = np.arange(12, dtype=np.float32).reshape(2, 6)
    with oe.make_persistent_table_writer(w_emb.path, "init", flow.int64, flow.float32, 6) as writer:
        writer.write(np.array([7, 7]), vals, table_ids=np.array([0, 1]))
    w_emb.load_snapshot("init")
    np.testing.assert_array_equal(rows_of(w_emb, [7], 0)[0], vals[0, :3])
    np.testing.assert_array_equal(rows_of(w_emb, [7], 1)[0], vals[1, :3])
    with pytest.raises(ValueError, match="storage_dim=6"):
        oe.make_persistent_table_writer(w_emb.path, "x", flow.int64, flow.float32, 6).write([1], np.zeros((1, 5)))
