// Kernel scratch: uninitialised memory that lives for one kernel call (im2col columns, transformed Winograd
// operands, padded copies). It comes from a per-thread stack that grows to the most the thread held at once and
// is kept, so a training step's scratch costs one buffer the size of its largest call rather than one cached
// block per distinct size (the caching allocator keeps freed blocks by exact size: ResNet-18's convolutions
// left 21 of them, 62 MiB, none reusable by another layer's request).
#pragma once
#include <cstddef>
#include <cstdint>

namespace flow {

class ScratchBuffer {
 public:
  explicit ScratchBuffer(size_t bytes);
  ~ScratchBuffer();
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;

  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_;
  size_t id_;
};

// Bytes the calling thread's scratch stack holds now (reserved, whether in use or not); for tests and stats.
size_t scratch_reserved_bytes();

}  // namespace flow
