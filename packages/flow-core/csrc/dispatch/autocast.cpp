#include "autocast.h"

#include <memory>

#include "../autograd/grad_mode.h"
#include "../ops/functions.h"

namespace flow::autocast {

thread_local bool t_enabled = false;

namespace {

struct ThreadState {
  DType dtype = DType::BFloat16;
  bool cache_enabled = true;
  int nesting = 0;
  // Casts of float32 leaf parameters, reused within the outermost autocast region (PyTorch's weight
  // cache): keyed by the source's impl, checked against its identity and version before reuse.
  struct Entry {
    std::weak_ptr<TensorImpl> src;
    int64_t version;
    Tensor cast;
  };
  std::unordered_map<const TensorImpl*, Entry> cache;
};

ThreadState& ts() {
  static thread_local ThreadState s;
  return s;
}

std::unordered_map<const OpDef*, Policy>& table() {
  static std::unordered_map<const OpDef*, Policy> t;
  return t;
}

bool eligible(const Tensor& t) {
  return t.defined() && is_floating(t.dtype()) && t.dtype() != DType::Float64 && !t.impl()->is_wrapped_number &&
         t.device().type == DeviceType::CPU;
}

Tensor cached_cast(const Tensor& t, DType to) {
  if (!eligible(t) || t.dtype() == to) return t;
  ThreadState& s = ts();
  bool can_cache = s.cache_enabled && to == s.dtype && t.dtype() == DType::Float32 && t.requires_grad() &&
                   t.is_leaf() && !t.impl()->base && autograd::GradMode::is_enabled();
  if (!can_cache) return ops::to_dtype(t, to);
  auto it = s.cache.find(t.impl());
  if (it != s.cache.end()) {
    if (it->second.src.lock() == t.impl_ptr() && it->second.version == t.version()) return it->second.cast;
    s.cache.erase(it);
  }
  Tensor c = ops::to_dtype(t, to);
  s.cache.emplace(t.impl(), ThreadState::Entry{t.impl_ptr(), t.version(), c});
  return c;
}

// PyTorch's promote rule: start from the autocast dtype; any float32 input makes it float32; float64
// inputs are ignored (and left alone); another low-precision type than the autocast dtype is an error.
DType promote_dtype(const OpDef* op, const TensorList& in) {
  DType lower = ts().dtype, cur = lower;
  for (const Tensor& t : in) {
    if (!eligible(t)) continue;
    DType next = t.dtype();
    if (cur == DType::Float32 || next == DType::Float32) cur = DType::Float32;
    else if (next != lower)
      fail(ErrorKind::Runtime, op ? op->name.c_str() : "autocast", ": unexpected floating dtype ", dtype_name(next),
           " under autocast to ", dtype_name(lower), " (promote)");
  }
  return cur;
}

// Pools over three spatial dims (their window is kernel_size, or output_size for the adaptive pools).
bool three_d(const Attrs& attrs) {
  const char* window = attrs.has("kernel_size") ? "kernel_size" : "output_size";
  return attrs.has(window) && attrs.ints(window).size() == 3;
}

bool pad_in_fp32(const Attrs& attrs) {
  if (!attrs.has("pad") || !attrs.has("mode")) return false;
  const std::string& mode = attrs.str("mode");
  if (mode == "replicate") return true;
  return mode == "reflect" && attrs.ints("pad").size() <= 4;
}

TensorList cast_all(const OpDef* op, Policy p, const TensorList& in, bool* changed) {
  DType to = p == Policy::Lower ? ts().dtype : p == Policy::Promote ? promote_dtype(op, in) : DType::Float32;
  TensorList out;
  out.reserve(in.size());
  bool any = false;
  for (const Tensor& t : in) {
    Tensor c = cached_cast(t, to);
    any |= !c.is_same(t);
    out.push_back(std::move(c));
  }
  if (changed) *changed = any;
  return out;
}

}  // namespace

void set_enabled(bool on) { t_enabled = on; }
DType dtype() { return ts().dtype; }
void set_dtype(DType d) { ts().dtype = d; }
bool cache_enabled() { return ts().cache_enabled; }
void set_cache_enabled(bool on) { ts().cache_enabled = on; }
int increment_nesting() { return ++ts().nesting; }
int decrement_nesting() {
  ThreadState& s = ts();
  if (s.nesting > 0) --s.nesting;
  return s.nesting;
}
void clear_cache() { ts().cache.clear(); }

Policy parse_policy(const std::string& s) {
  if (s == "lower") return Policy::Lower;
  if (s == "fp32") return Policy::Fp32;
  if (s == "promote") return Policy::Promote;
  if (s == "fp32_3d") return Policy::Fp32If3d;
  if (s == "fp32_pad") return Policy::Fp32IfPad;
  if (s == "none") return Policy::None;
  fail(ErrorKind::Value, "autocast: unknown policy '", s,
       "' (expected 'lower', 'fp32', 'promote', 'fp32_3d', 'fp32_pad' or 'none')");
}

std::vector<std::string> set_policies(const std::unordered_map<std::string, Policy>& names) {
  std::unordered_map<const OpDef*, Policy> t;
  std::vector<std::string> unknown;
  for (const auto& [name, p] : names) {
    const OpDef* op = find_op(name);
    if (!op) {
      unknown.push_back(name);
      continue;
    }
    if (p != Policy::None) t[op] = p;
  }
  table() = std::move(t);
  return unknown;
}

Policy policy_of(const OpDef& op) {
  const auto& t = table();
  auto it = t.find(&op);
  return it == t.end() ? Policy::None : it->second;
}

bool cast_inputs(const OpDef& op, const TensorList& in, const Attrs& attrs, TensorList& out) {
  Policy p = policy_of(op);
  if (p == Policy::Fp32If3d) p = three_d(attrs) ? Policy::Fp32 : Policy::None;
  else if (p == Policy::Fp32IfPad) p = pad_in_fp32(attrs) ? Policy::Fp32 : Policy::None;
  if (p == Policy::None) return false;
  out = cast_all(&op, p, in, nullptr);
  return true;
}

TensorList cast_tensors(Policy p, const TensorList& in) {
  if (p == Policy::Fp32If3d || p == Policy::Fp32IfPad) p = Policy::Fp32;
  if (p == Policy::None) return in;
  return cast_all(nullptr, p, in, nullptr);
}

}  // namespace flow::autocast
