// A caching CPU allocator: freed blocks are kept by size and handed back to the next request of the same size (a
// large one may take a block a little larger), so steady-state training steps reuse warm pages instead of faulting
// fresh ones.
#pragma once
#include <cstddef>
#include <cstdint>

namespace flow {

void* cpu_alloc(size_t nbytes);
// Memory straight from the system, as the cache gets its blocks (64-byte aligned; from 2 MiB on, 2 MiB aligned and
// advised as huge pages); null when there is none; release it with std::free. For buffers kept outside the cache.
void* cpu_system_alloc(size_t nbytes);
void cpu_free(void* p, size_t nbytes);

struct AllocatorStats {
  int64_t allocated_bytes;  // live, handed to tensors
  int64_t cached_bytes;     // held in free lists
  int64_t peak_allocated_bytes;
  int64_t num_system_allocs;  // calls that reached the OS allocator
};
AllocatorStats cpu_allocator_stats();
void cpu_empty_cache();
void cpu_reset_peak_stats();

}  // namespace flow
