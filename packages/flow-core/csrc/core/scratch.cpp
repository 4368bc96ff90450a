#include "scratch.h"

#include "allocator.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <vector>

namespace flow {
namespace {

constexpr size_t kAlign = 64;

struct Chunk {
  char* base = nullptr;
  size_t cap = 0, top = 0;
};

struct Entry {
  size_t chunk, offset, bytes;
  bool freed;
};

// A thread's stack: chunks filled in order (a new one when the last is full, since earlier pointers must stay
// valid), entries in allocation order. When nothing is held, several chunks become one of the high-water size.
struct Stack {
  std::vector<Chunk> chunks;
  std::vector<Entry> entries;
  size_t held = 0, high = 0;

  ~Stack() {
    for (Chunk& c : chunks) std::free(c.base);
  }

  static char* system(size_t bytes) {
    void* p = cpu_system_alloc(bytes);
    if (!p) throw std::bad_alloc();
    return static_cast<char*>(p);
  }

  // Called with nothing held. Without memory for the one chunk the stack keeps none (the next push tries again).
  void consolidate() noexcept {
    for (Chunk& c : chunks) std::free(c.base);
    chunks.clear();
    try {
      chunks.push_back({system(high), high, 0});
    } catch (...) {
      chunks.clear();
    }
  }

  size_t push(size_t bytes, void** out) {
    bytes = std::max<size_t>(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
    if (chunks.empty() || chunks.back().top + bytes > chunks.back().cap) {
      // the new chunk also takes what the stack has shown it needs, so growth settles within a step or two
      const size_t want = std::max(bytes, high > held ? high - held : size_t(0));
      chunks.push_back({system(want), want, 0});
    }
    Chunk& c = chunks.back();
    *out = c.base + c.top;
    entries.push_back({chunks.size() - 1, c.top, bytes, false});
    c.top += bytes;
    held += bytes;
    high = std::max(high, held);
    return entries.size() - 1;
  }

  void pop(size_t id) noexcept {
    entries[id].freed = true;
    // buffers are released in reverse order nearly always; one released early waits for those above it
    while (!entries.empty() && entries.back().freed) {
      const Entry& e = entries.back();
      chunks[e.chunk].top = e.offset;
      held -= e.bytes;
      entries.pop_back();
    }
    if (entries.empty() && chunks.size() > 1) consolidate();
  }
};

Stack& stack() {
  thread_local Stack s;
  return s;
}

}  // namespace

ScratchBuffer::ScratchBuffer(size_t bytes) { id_ = stack().push(bytes, &ptr_); }

ScratchBuffer::~ScratchBuffer() { stack().pop(id_); }

size_t scratch_reserved_bytes() {
  size_t n = 0;
  for (const Chunk& c : stack().chunks) n += c.cap;
  return n;
}

}  // namespace flow
