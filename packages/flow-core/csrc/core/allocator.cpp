#include "allocator.h"

#include <sys/mman.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "error.h"

namespace flow {
namespace {

constexpr size_t kAlign = 64;
// Blocks above this are returned to the OS at once: they are rare and can be huge.
constexpr size_t kMaxCachedBlock = size_t(1) << 31;
constexpr size_t kMaxCachedTotal = size_t(8) << 30;

size_t round_size(size_t n) {
  if (n <= 512) return 512;
  if (n <= (size_t(1) << 20)) return (n + 511) & ~size_t(511);
  return (n + 65535) & ~size_t(65535);
}

// Blocks of 2 MiB and more start on a 2 MiB boundary and their whole 2 MiB pages are madvised as huge pages:
// GEMM packing and strided copies walk large tensors with far fewer TLB misses, and a first touch faults once
// per 2 MiB. The tail past the last whole huge page keeps small pages, so resident memory is not rounded up.
constexpr size_t kHuge = size_t(2) << 20;

}  // namespace

void* cpu_system_alloc(size_t sz) {
  if (sz < kHuge) return std::aligned_alloc(kAlign, sz);
  void* p = nullptr;
  if (posix_memalign(&p, kHuge, sz) != 0) return nullptr;
#ifdef MADV_HUGEPAGE
  madvise(p, sz & ~(kHuge - 1), MADV_HUGEPAGE);  // advisory: failure just leaves small pages
#endif
  return p;
}

namespace {

// A request of kLooseFit bytes or more without a cached block of its size takes the smallest cached block up to a
// quarter larger: a graph's steady-state plan then reuses the arena its first-step plan left (sizes differ by
// the optimizer state that step made), where exact sizes would keep both resident.
constexpr size_t kLooseFit = size_t(1) << 20;

struct Cache {
  std::mutex mu;
  std::map<size_t, std::vector<void*>> free_lists;  // by block size; no empty lists
  std::unordered_map<void*, size_t> loose;          // blocks handed out for a smaller request: their size
  int64_t allocated = 0, cached = 0, peak = 0, sys_allocs = 0;
};

// A cached block of `sz` bytes (or, for large requests, a little more) taken from the free lists; its size in
// `*got`. Null when none fits. Called with the lock held.
void* take_cached(Cache& c, size_t sz, size_t* got) {
  auto it = c.free_lists.find(sz);
  if (it == c.free_lists.end() && sz >= kLooseFit) {
    it = c.free_lists.lower_bound(sz);
    if (it != c.free_lists.end() && it->first > sz + sz / 4) it = c.free_lists.end();
  }
  if (it == c.free_lists.end()) return nullptr;
  void* p = it->second.back();
  *got = it->first;
  it->second.pop_back();
  if (it->second.empty()) c.free_lists.erase(it);
  if (*got != sz) c.loose.emplace(p, *got);
  return p;
}

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: tensors may outlive static destruction
  return *c;
}

}  // namespace

void* cpu_alloc(size_t nbytes) {
  size_t sz = round_size(nbytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> g(c.mu);
    size_t got = 0;
    if (void* p = take_cached(c, sz, &got)) {
      c.cached -= got;
      c.allocated += got;
      if (c.allocated > c.peak) c.peak = c.allocated;
      return p;
    }
  }
  void* p = cpu_system_alloc(sz);
  if (!p) {
    cpu_empty_cache();
    p = cpu_system_alloc(sz);
  }
  FLOW_RUNTIME_CHECK(p != nullptr, "CPU out of memory: tried to allocate ", nbytes, " bytes");
  std::lock_guard<std::mutex> g(c.mu);
  c.allocated += sz;
  c.sys_allocs += 1;
  if (c.allocated > c.peak) c.peak = c.allocated;
  return p;
}

void cpu_free(void* p, size_t nbytes) {
  if (!p) return;
  size_t sz = round_size(nbytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> g(c.mu);
    if (!c.loose.empty()) {
      auto it = c.loose.find(p);
      if (it != c.loose.end()) {
        sz = it->second;
        c.loose.erase(it);
      }
    }
    c.allocated -= sz;
    if (sz <= kMaxCachedBlock && c.cached + int64_t(sz) <= int64_t(kMaxCachedTotal)) {
      c.free_lists[sz].push_back(p);
      c.cached += sz;
      return;
    }
  }
  std::free(p);
}

AllocatorStats cpu_allocator_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  return {c.allocated, c.cached, c.peak, c.sys_allocs};
}

void cpu_empty_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  for (auto& kv : c.free_lists)
    for (void* p : kv.second) std::free(p);
  c.free_lists.clear();
  c.cached = 0;
}

void cpu_reset_peak_stats() {
  Cache& c = cache();
  std::lock_guard<std::mutex> g(c.mu);
  c.peak = c.allocated;
}

}  // namespace flow
