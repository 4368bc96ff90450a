// Shared machinery of the fused optimizer updates (optimizer.cpp, optimizer_adam_variants.cpp).
//
// Fused optimizer updates: one op call per parameter group updates every parameter and its state in place,
// in a single pass per element (PyTorch's single-tensor formulas, same operation order). The registry allows
// one tensor-list input, so a group arrives packed flat: [p0, g0, s0..., p1, g1, s1..., ...] with a fixed
// number of tensors per parameter (the op's "stride", derived from its options). Work is split into chunks
// across all parameters of the group, so small tensors share threads instead of each paying for a parallel
// region. These ops are not differentiable and mutate their inputs (bumping their versions). Element loops
// are `omp simd`: the -O2 build's cost model would leave them scalar.
#pragma once
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "../kernels/cpu/parallel.h"
#include "functions.h"

namespace flow::optim {

constexpr int64_t kChunk = 16384;

// A packed group made ready for the kernels: every tensor contiguous, of the parameter's dtype (the grad
// is cast; the state must already match), with the same numel as the parameter, except 0-dim step counters.
struct Group {
  int stride = 0;
  std::vector<Tensor> t;                         // working tensors, index p * stride + k
  std::vector<std::pair<Tensor, Tensor>> back;   // (original, contiguous copy) written back afterwards
  std::vector<Tensor> mutated;                   // originals whose version is bumped

  int64_t size() const { return static_cast<int64_t>(t.size()) / stride; }
  const Tensor& at(int64_t p, int k) const { return t[p * stride + k]; }
  template <typename T>
  T* ptr(int64_t p, int k) const { return t[p * stride + k].data<T>(); }

  void finish() {
    for (auto& [orig, work] : back) ops::copy_into(orig, work);
    for (const Tensor& m : mutated) m.bump_version();
  }
};

// `step_slot`: index of the 0-dim step counter within a parameter's tensors (-1: none); `scalar_slots`, of
// other one-element states (NAdam's momentum product, ASGD's eta and mu). Slot 1 is the
// gradient (read only); every other slot is written.
inline Group prepare(const TensorList& in, int stride, int step_slot, const char* op,
                     std::initializer_list<int> scalar_slots = {}) {
  FLOW_RUNTIME_CHECK(stride > 0 && in.size() % stride == 0, op, ": expected ", stride,
                     " tensors per parameter (parameter, gradient, state...), got a list of ", in.size());
  Group g;
  g.stride = stride;
  g.t.reserve(in.size());
  int64_t np = static_cast<int64_t>(in.size()) / stride;
  for (int64_t p = 0; p < np; ++p) {
    const Tensor& w = in[p * stride];
    FLOW_RUNTIME_CHECK(w.defined(), op, ": parameter ", p, " is None");
    FLOW_RUNTIME_CHECK(w.has_storage() && w.device().type == DeviceType::CPU, op, ": parameter ", p,
                       " must be a CPU tensor with storage");
    FLOW_TYPE_CHECK(is_floating(w.dtype()), op, ": parameter ", p, " must be floating point, got ",
                    dtype_name(w.dtype()));
    for (int64_t q = 0; q < p; ++q)  // an aliased parameter would be updated twice, racing with itself
      FLOW_RUNTIME_CHECK(!in[q * stride].is_same(w), op, ": parameter ", p, " appears twice in the list");
    for (int k = 0; k < stride; ++k) {
      const Tensor& x = in[p * stride + k];
      FLOW_RUNTIME_CHECK(x.defined(), op, ": tensor ", k, " of parameter ", p, " is None");
      FLOW_RUNTIME_CHECK(x.has_storage() && x.device() == w.device(), op, ": tensor ", k, " of parameter ", p,
                         " must be on the parameter's device");
      if (k == step_slot || std::find(scalar_slots.begin(), scalar_slots.end(), k) != scalar_slots.end()) {
        FLOW_RUNTIME_CHECK(x.numel() == 1 && is_floating(x.dtype()), op, ": ",
                           k == step_slot ? "the step counter" : "one-element state", " of parameter ", p,
                           " must be a one-element floating tensor");
        g.t.push_back(x);
        g.mutated.push_back(x);
        continue;
      }
      FLOW_RUNTIME_CHECK(x.sizes() == w.sizes(), op, ": tensor ", k, " of parameter ", p, " has shape ",
                         shape_str(x.sizes()), " but the parameter has shape ", shape_str(w.sizes()));
      if (k == 1) {  // the gradient: read only, cast and made contiguous as needed
        Tensor c = x.dtype() == w.dtype() ? x : ops::to_dtype(x, w.dtype());
        g.t.push_back(c.is_contiguous() ? c : ops::contiguous(c));
        continue;
      }
      FLOW_TYPE_CHECK(x.dtype() == w.dtype(), op, ": state tensor ", k, " of parameter ", p, " has dtype ",
                      dtype_name(x.dtype()), " but the parameter has dtype ", dtype_name(w.dtype()));
      if (x.is_contiguous()) {
        g.t.push_back(x);
      } else {
        Tensor c = ops::contiguous(x);
        g.back.emplace_back(x, c);
        g.t.push_back(c);
      }
      g.mutated.push_back(x);
    }
  }
  return g;
}

// A one-element floating state tensor, read in double.
inline double read_scalar_tensor(const Tensor& s) {
  return dispatch_floating(s.dtype(), "optimizer state", [&](auto tag) {
    using T = typename decltype(tag)::type;
    return static_cast<double>(static_cast<acc_t<T>>(*s.data<T>()));
  });
}

// Stores v rounded to the state's dtype; returns the stored value.
inline double write_scalar_tensor(const Tensor& s, double v) {
  return dispatch_floating(s.dtype(), "optimizer state", [&](auto tag) {
    using T = typename decltype(tag)::type;
    *s.data<T>() = static_cast<T>(static_cast<acc_t<T>>(v));
    return static_cast<double>(static_cast<acc_t<T>>(*s.data<T>()));
  });
}

// The one-element state at `slot` of parameter p, read in double.
inline double read_scalar(const Group& g, int64_t p, int slot) { return read_scalar_tensor(g.at(p, slot)); }

// Stores v rounded to the state's dtype; returns the stored value.
inline double write_scalar(const Group& g, int64_t p, int slot, double v) {
  return write_scalar_tensor(g.at(p, slot), v);
}

// Increments each parameter's step counter; returns the new step values.
inline std::vector<double> bump_steps(const Group& g, int slot) {
  std::vector<double> steps(g.size());
  for (int64_t p = 0; p < g.size(); ++p) steps[p] = write_scalar(g, p, slot, read_scalar(g, p, slot) + 1.0);
  return steps;
}

struct Task {
  int64_t p, begin, end;
};

inline std::vector<Task> make_tasks(const Group& g, int64_t* total) {
  std::vector<Task> tasks;
  *total = 0;
  for (int64_t p = 0; p < g.size(); ++p) {
    int64_t n = g.at(p, 0).numel();
    *total += n;
    for (int64_t b = 0; b < n; b += kChunk) tasks.push_back({p, b, std::min(n, b + kChunk)});
  }
  return tasks;
}

// k(tag, p, begin, end) over chunks of every parameter, in parallel when the group is large.
template <typename K>
void run_chunks(const Group& g, const std::vector<Task>& tasks, int64_t total, const char* op, const K& k) {
  auto body = [&](int64_t tb, int64_t te) {
    for (int64_t i = tb; i < te; ++i) {
      const Task& t = tasks[i];
      dispatch_floating(g.at(t.p, 0).dtype(), op, [&](auto tag) { k(tag, t.p, t.begin, t.end); });
    }
  };
  if (total < kParallelGrain) body(0, static_cast<int64_t>(tasks.size()));
  else parallel_for(static_cast<int64_t>(tasks.size()), 1, body);
}

template <typename K>
void run_chunks(const Group& g, const char* op, const K& k) {
  int64_t total;
  std::vector<Task> tasks = make_tasks(g, &total);
  run_chunks(g, tasks, total, op, k);
}

// Calls f with a std::bool_constant per runtime flag, so that every combination of options compiles to its
// own branch-free loop.
template <typename F>
void with_flags(bool x, F&& f) {
  if (x) f(std::true_type{});
  else f(std::false_type{});
}
template <typename F>
void with_flags(bool x, bool y, F&& f) {
  with_flags(x, [&](auto fx) { with_flags(y, [&](auto fy) { f(fx, fy); }); });
}

// The gradient as the update formulas see it: negated when maximizing, plus the L2 term (wd == 0 adds nothing).
template <typename A, typename T>
inline A decayed_grad(A sign, T g, A wd, A w) {
  return sign * static_cast<A>(g) + wd * w;
}

// Weight decay as Adam-family options give it: an L2 term added to the gradient (`l2`, for decayed_grad), or,
// decoupled (AdamW), the weight scaled by `factor` before the step. The unused one is neutral (0 / 1), so the
// element loops stay branch-free.
template <typename A>
struct WeightDecay {
  A l2, factor;
  WeightDecay(double lr, double wd, bool decoupled)
      : l2(wd != 0 && !decoupled ? static_cast<A>(wd) : A(0)),
        factor(wd != 0 && decoupled ? static_cast<A>(1 - lr * wd) : A(1)) {}
};

// PyTorch's lerp: exact at both ends, the form chosen by the weight's size.
template <typename A>
inline A lerp(A self, A end, A w) {
  return std::abs(w) < A(0.5) ? self + w * (end - self) : end - (end - self) * (A(1) - w);
}

inline TensorList no_outputs() { return {}; }
// The updates return nothing and change no metadata: on meta tensors (a traced step) they check nothing more.
inline std::vector<TensorMeta> no_output_meta(const TensorList&, const Attrs&) { return {}; }

}  // namespace flow::optim
