"""The cached SSD tier's replacement policy: rows read again and again stay cached through a one-off scan of
more ids than the cache holds (a segmented LRU; strict LRU would evict them), and values stay exact."""
import numpy as np
from helpers import make_emb, rows_of


def test_hot_rows_survive_a_scan_larger_than_the_cache(tmp_path):
    # dim 8 float32 rows (32 B): 0.01 MiB holds 327 rows; 100 hot ids, then a scan of 1000 cold ids
    ram = make_emb(tmp_path / "ram", dim=8)
    ssd = make_emb(tmp_path / "ssd", dim=8, kind="ssd", cache_mb=0.01)
    hot, cold = range(100), range(1000, 2000)
    for _ in range(2):  # the second read promotes the hot rows
        np.testing.assert_array_equal(rows_of(ssd, hot), rows_of(ram, hot))
    np.testing.assert_array_equal(rows_of(ssd, cold), rows_of(ram, cold))
    assert ssd.cache_stats()["evictions"] >= 1000 - 327
    ssd.reset_cache_stats()
    np.testing.assert_array_equal(rows_of(ssd, hot), rows_of(ram, hot))
    stats = ssd.cache_stats()
    assert stats["hits"] == 100 and stats["misses"] == 0, stats
    # the scanned rows were evicted and come back from the file with their values
    np.testing.assert_array_equal(rows_of(ssd, cold), rows_of(ram, cold))
    assert ssd.cache_stats()["misses"] > 0


def test_trained_rows_round_trip_through_both_cache_segments(tmp_path):
    from test_store import _train

    import oneflow as flow

    ram = make_emb(tmp_path / "ram", dim=8, size_factor=3)
    ssd = make_emb(tmp_path / "ssd", dim=8, size_factor=3, kind="ssd", cache_mb=0.01)
    o_ram, o_ssd = flow.optim.Adam(ram.parameters(), lr=0.05), flow.optim.Adam(ssd.parameters(), lr=0.05)
    rng = np.random.default_rng(3)
    for step in range(8):  # zipf-like ids: a few hot ids read every step (promoted), a long tail evicted
        ids = (rng.zipf(1.2, 400) - 1) % 3000
        rows_of(ssd, ids[:50])  # extra reads promote some rows while others stay in probation
        _train(ram, o_ram, ids, step)
        _train(ssd, o_ssd, ids, step)
    assert ssd.cache_stats()["evictions"] > 0
    everything = range(3000)
    np.testing.assert_array_equal(rows_of(ssd, everything), rows_of(ram, everything))


def test_hit_rate_counts_lookups_not_the_update_after_them(tmp_path):
    import oneflow as flow

    ssd = make_emb(tmp_path, dim=8, size_factor=3, kind="ssd", cache_mb=0.05)  # ~540 rows of 96 B
    opt = flow.optim.Adam(ssd.parameters(), lr=0.05)
    ids = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3])  # 7 distinct ids, 3 repeats
    for step in range(2):
        ssd.reset_cache_stats()
        out = ssd(flow.tensor(ids, dtype=flow.int64))
        out.sum().backward()
        opt.step()
        opt.zero_grad()
        stats = ssd.cache_stats()
        # new ids are inserted straight into the cache, so every lookup hits, repeats included; the update's
        # reads of the 7 rows it updates count as neither (they were counted as 7 more hits)
        assert (stats["hits"], stats["misses"]) == (10, 0), (step, stats)
    # rows read once (in probation), then evicted by a scan: a lookup of them misses once per distinct id
    once = [7000, 7001, 7002, 7000]
    rows_of(ssd, once)
    rows_of(ssd, range(100, 1100))
    ssd.reset_cache_stats()
    rows_of(ssd, once)
    stats = ssd.cache_stats()
    assert (stats["hits"], stats["misses"]) == (1, 3), stats


def test_rows_looked_up_once_do_not_push_out_frequent_ones(tmp_path):
    # ~546 lines of 96 B, a quarter of them probation. Rows looked up several times in one batch (still in
    # probation: promotion needs a later lookup) against rows that come back rarely: such a miss loses
    # admission to the row it would evict (TinyLFU's rule) and goes to probation's tail at the next lookup, so
    # the following misses evict it first. Plain LRU order would evict the frequent rows, loaded before the
    # rare ones, ahead of them.
    ram = make_emb(tmp_path / "ram", dim=8, size_factor=3)
    ssd = make_emb(tmp_path / "ssd", dim=8, size_factor=3, kind="ssd", cache_mb=0.05)
    rare, rarer = list(range(20_000, 20_200)), list(range(30_000, 30_400))
    rows_of(ssd, rare + rarer)  # written once (looked up once), then evicted by:
    rows_of(ssd, list(range(10_000, 10_600)) * 3)  # fillers, three lookups each
    rows_of(ssd, list(range(100)) * 5)  # the frequent rows: five each
    rows_of(ssd, rare)  # misses, looked up twice in all: fewer than the fillers they would evict
    rows_of(ssd, rarer)  # they take the rare rows' lines first, then fillers'
    ssd.reset_cache_stats()
    np.testing.assert_array_equal(rows_of(ssd, range(100)), rows_of(ram, range(100)))
    stats = ssd.cache_stats()
    assert (stats["hits"], stats["misses"]) == (100, 0), stats
    np.testing.assert_array_equal(rows_of(ssd, rare), rows_of(ram, rare))
