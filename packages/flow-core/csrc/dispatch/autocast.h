// Autocast (mixed precision): a layer of the dispatcher above autograd. While enabled on this thread, an op
// named in the policy table gets its floating inputs cast (through the dispatcher, so autograd records the
// casts and gradients reach float32 leaves in float32) before it runs:
//   lower    -> the autocast dtype (matmul/conv family)
//   fp32     -> float32 (reductions, losses, ... that lose too much in low precision)
//   promote  -> the widest floating type among the inputs (cat, stack, index_copy)
// float64 inputs, wrapped Python numbers and non-floating tensors are never cast (PyTorch's eligibility).
// The op itself then runs with autocast off, so its parts are not cast again (PyTorch excludes the key).
// The policy table is set from Python (oneflow.amp) by op name.
#pragma once
#include <string>
#include <unordered_map>

#include "../ops/registry.h"

namespace flow::autocast {

enum class Policy : int8_t {
  None,
  Lower,
  Fp32,
  Promote,
  Fp32If3d,    // pooling ops: float32 only for the 3-d forms (torch lists avg/max/adaptive pool3d)
  Fp32IfPad,   // pad: float32 for reflect (1-d/2-d) and replicate modes (torch's reflection/replication_pad)
};

// The hot check in dispatch::call: one thread-local bool.
extern thread_local bool t_enabled;
inline bool enabled() { return t_enabled; }
void set_enabled(bool on);
DType dtype();  // the lower-precision dtype (bfloat16 by default)
void set_dtype(DType d);
bool cache_enabled();
void set_cache_enabled(bool on);
int increment_nesting();
int decrement_nesting();
void clear_cache();

// Policy table, by op name. Names that no registered op has are ignored; returns them.
std::vector<std::string> set_policies(const std::unordered_map<std::string, Policy>& table);
Policy policy_of(const OpDef& op);
Policy parse_policy(const std::string& s);

// Applies `op`'s policy. Returns false (and leaves `out` empty) when the op has none or nothing needs a cast.
bool cast_inputs(const OpDef& op, const TensorList& in, const Attrs& attrs, TensorList& out);
// Casts every eligible tensor of `in` for policy `p` (for Python-level composites such as F.linear).
TensorList cast_tensors(Policy p, const TensorList& in);

// Turns autocast off for a scope (the listed op's own parts, backward passes).
struct DisableGuard {
  DisableGuard() : prev(t_enabled) { t_enabled = false; }
  ~DisableGuard() { t_enabled = prev; }
  DisableGuard(const DisableGuard&) = delete;
  DisableGuard& operator=(const DisableGuard&) = delete;
  bool prev;
};

}  // namespace flow::autocast
