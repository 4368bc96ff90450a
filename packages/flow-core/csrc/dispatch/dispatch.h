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
// The device op's kernel runs on: its `device` attribute when the op has one and it is given, else the inputs'.
Device kernel_device(const OpDef& op, const TensorList& inputs, const Attrs& attrs);
// op's output metadata for these inputs (no data read, nothing allocated), on the kernel's device. Raises
// NotImplementedError for ops whose output shape depends on values.
std::vector<TensorMeta> infer_meta(const OpDef& op, const TensorList& inputs, const Attrs& attrs);
// out=: runs op's kernel straight into `outs` and returns true when that is safe (no autograd, autocast or
// interception to honour; outs contiguous, of the result's exact shape, dtype and device, sharing no storage
// with an input). Returns false, having done nothing, otherwise: the caller computes and copies.
bool try_call_into(const OpDef& op, const TensorList& inputs, const Attrs& attrs, const TensorList& outs);

// Interception. Handlers of three kinds are asked, in this order, when active:
//   1. Python dispatch modes (innermost first: graph tracing, profilers, user modes), through `hook`;
//   2. C++ tensor handlers, for ops with an input tagged with a handler's key (global tensors: no Python per
//      op), the highest priority first;
//   3. Python tensor subclasses defining __flow_dispatch__, through `hook`.
// A handler runs below autograd; the ops it issues go through the whole chain again (a mode is popped while it
// handles, so they reach the next kind). The Python module installs `hook`; it returns the op's outputs.
using InterceptHook = TensorList (*)(const OpDef& op, const TensorList& inputs, const Attrs& attrs);
void set_intercept_hook(InterceptHook hook);
using TensorHandlerFn = std::function<TensorList(const OpDef& op, const TensorList& inputs, const Attrs& attrs)>;
// Registers a C++ tensor handler (a plugin's global tensors, say) and returns its key (1..255), to be set on
// tensors with set_handler_key. Registering a name again replaces its function and keeps its key.
int register_tensor_handler(const std::string& name, int priority, TensorHandlerFn fn);
void set_handler_key(const Tensor& t, int key);
struct TensorHandlerInfo {
  std::string name;
  int priority;
  int key;
};
std::vector<TensorHandlerInfo> tensor_handlers();
// Whether an op on `inputs` is intercepted (a mode is active or an input carries a handler).
bool intercepted(const TensorList& inputs);
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
// Set while the core computes an op out of other ops on the caller's behalf: a composite's definition or a
// backward pass. Tensors those computations make themselves (dropout's mask, a backward's zeros) are local
// even when the op's inputs are global; handlers can tell them from a user's mixing of local and global
// tensors by this depth (0: the op was called by user code).
struct InternalGuard {
  InternalGuard();
  ~InternalGuard();
};
int internal_depth();
// Called when user code (internal depth 0) calls a composite op with an input whose class has a Python
// handler, before the composite's definition runs: a handler sees the composite's own inputs there (the ops
// inside are internal). The Python module installs it (`__flow_composite__` of the input's class).
using CompositeHook = void (*)(const OpDef& op, const TensorList& inputs, const Attrs& attrs);
void set_composite_hook(CompositeHook hook);

// Completes attrs from the schema's defaults (for C++ callers that pass fewer attributes).
void fill_defaults(const OpDef& op, Attrs& attrs);
// An attribute's schema default (None where it has none), parsed with the schema.
inline const AttrValue& parse_default(const ArgDef& a) { return a.default_value; }

}  // namespace flow::dispatch
