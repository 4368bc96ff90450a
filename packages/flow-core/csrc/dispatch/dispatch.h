// The call path of every op:
//   call()  ->  autograd layer (records a node if an input requires grad)
//           ->  interception (a Python handler, only when a mode is active or an input's class has one)
//           ->  kernel (meta inference, output allocation, device kernel)
// The fast path (local tensors, no mode) never leaves C++.
#pragma once
#include "../ops/registry.h"

namespace flow::dispatch {

// Full path. In-place variants (op.functional set) mutate and return input 0.
TensorList call(const OpDef& op, const TensorList& inputs, const Attrs& attrs);
Tensor call1(const OpDef& op, const TensorList& inputs, const Attrs& attrs);

// Raises PyTorch's RuntimeError when op's result (of dtype `result`) cannot be written into a tensor of dtype
// `out` (in-place ops, out=).
void check_castable(const std::string& op, DType result, DType out);

// Below autograd: interception, then kernel.
TensorList call_below_autograd(const OpDef& op, const TensorList& inputs, const Attrs& attrs);
// The bottom: meta + allocation + kernel on the inputs' device. `out` (optional) receives the results.
TensorList run_kernel(const OpDef& op, const TensorList& inputs, const Attrs& attrs, const TensorList* out = nullptr);
// out=: runs op's kernel straight into `outs` and returns true when that is safe (no autograd, autocast or
// interception to honour; outs contiguous, of the result's exact shape, dtype and device, sharing no storage
// with an input). Returns false, having done nothing, otherwise: the caller computes and copies.
bool try_call_into(const OpDef& op, const TensorList& inputs, const Attrs& attrs, const TensorList& outs);

// Interception. The Python module installs `hook`; the core asks it when `mode_active()` or when an input
// carries a handler class. The hook returns the op's outputs.
using InterceptHook = TensorList (*)(const OpDef& op, const TensorList& inputs, const Attrs& attrs);
void set_intercept_hook(InterceptHook hook);
// Number of Python dispatch modes on this thread's stack (maintained by the Python module).
int& mode_depth();
// Set while a handler runs so that its own op calls skip autograd (it is below autograd). With below = false
// it lifts the flag for a nested, self-contained computation that a handler wants recorded (forward-mode AD
// differentiates the intercepted op on fresh tensors).
struct BelowAutogradGuard {
  explicit BelowAutogradGuard(bool below = true);
  ~BelowAutogradGuard();
  bool prev;
};
bool below_autograd();

// Completes attrs from the schema's defaults (for C++ callers that pass fewer attributes).
void fill_defaults(const OpDef& op, Attrs& attrs);
AttrValue parse_default(const ArgDef& a);

}  // namespace flow::dispatch
