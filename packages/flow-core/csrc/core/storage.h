// A ref-counted buffer. Views share one Storage, and with it the version counter that autograd reads to
// detect in-place changes to saved tensors.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "device.h"

namespace flow {

struct Storage {
  using FreeFn = void (*)(void* data, void* ctx, size_t nbytes);

  void* data = nullptr;
  size_t nbytes = 0;
  Device device;
  FreeFn free_fn = nullptr;  // null: memory is not ours
  void* ctx = nullptr;       // for free_fn (e.g. the Python object that owns external memory)
  std::atomic<int64_t> version{0};

  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  ~Storage() {
    if (free_fn) free_fn(data, ctx, nbytes);
  }
};

}  // namespace flow
