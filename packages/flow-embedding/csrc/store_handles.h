// A process-wide table of live stores addressed by integer handles: registry ops name their store by a handle
// attribute (plain data a traced graph can hold and save), never by a pointer, so a stale or made-up handle is
// a clean error instead of a dangling access.
#pragma once

#include <cstdint>
#include <utility>

#include "kv_store.h"

namespace flow_embedding {

int64_t register_store(Store* s);    // a new handle for s (never reused in this process)
void unregister_store(int64_t handle);
Store* find_store(int64_t handle);   // nullptr when the handle names no live store

// The store the bindings create: registered for its whole life.
class HandledStore : public Store {
 public:
  // Store's arguments (the leading dim keeps this from standing in for a copy or move constructor)
  template <typename... Args>
  HandledStore(int64_t dim, Args&&... args) : Store(dim, std::forward<Args>(args)...), handle_(register_store(this)) {}
  ~HandledStore() { unregister_store(handle_); }
  HandledStore(const HandledStore&) = delete;
  HandledStore& operator=(const HandledStore&) = delete;
  int64_t handle() const { return handle_; }

 private:
  int64_t handle_;
};

}  // namespace flow_embedding
