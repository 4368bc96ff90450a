"""The caching CPU allocator (core/allocator.cpp): freed blocks are reused by requests of their size, and a large
request takes a cached block up to a quarter larger instead of holding both; sizes and counters stay exact."""
import oneflow as flow

MiB = 1 << 20


def stats():
    return flow._C._allocator_stats()


def floats(nbytes):
    return flow.empty(nbytes // 4, dtype=flow.float32)


def test_a_large_request_takes_a_slightly_larger_cached_block_and_gives_it_back_whole():
    flow._C._empty_cache()
    t = floats(8 * MiB)
    float(t[:4].sum())  # the small blocks a sum makes are cached before the counts are taken
    del t
    base = stats()
    assert base["cached_bytes"] >= 8 * MiB
    u = floats(7 * MiB)  # within a quarter: the 8 MiB block serves it, no new memory from the system
    s = stats()
    assert s["num_system_allocs"] == base["num_system_allocs"]
    assert s["cached_bytes"] == base["cached_bytes"] - 8 * MiB
    assert s["allocated_bytes"] == base["allocated_bytes"] + 8 * MiB  # the block it holds, as the RSS sees it
    u.fill_(1.0)
    assert float(u.sum()) == 7 * MiB // 4
    del u
    assert stats()["cached_bytes"] == base["cached_bytes"] and stats()["allocated_bytes"] == base["allocated_bytes"]


def test_requests_much_smaller_than_a_cached_block_or_small_ones_take_their_own():
    flow._C._empty_cache()
    t = floats(8 * MiB)
    del t
    base = stats()
    u = floats(4 * MiB)  # half the block: it would waste too much
    assert stats()["num_system_allocs"] == base["num_system_allocs"] + 1
    del u
    small = floats(64 * 1024)
    del small
    before = stats()
    v = floats(60 * 1024)  # below 1 MiB sizes match exactly
    assert stats()["num_system_allocs"] == before["num_system_allocs"] + 1
    del v
    flow._C._empty_cache()
    assert stats()["cached_bytes"] == 0
