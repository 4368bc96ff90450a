// Shared machinery of the fused optimizer updates (optimizer*.cpp).
//
// Fused optimizer updates: one op call per parameter group updates every parameter and its state in place,
// in a single pass per element (PyTorch's single-tensor formulas, same operation order). An op takes the
// group as separate tensor lists, as PyTorch's _fused_adam_ does: params, grads, then one list per state
// (steps among them), and the learning rate as a 0-dim tensor `lr` read by the kernel, so that a traced graph
// keeps the same op and attributes when a scheduler changes it. Work is split into chunks across all
// parameters of the group, so small tensors share threads instead of each paying for a parallel region.
// These ops are not differentiable and mutate their inputs (bumping their versions). Element loops are
// `omp simd`: the -O2 build's cost model would leave them scalar.
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

// What an update's tensor list holds, which decides how begin_update checks and prepares it.
enum class Role : uint8_t {
  Param,   // updated in place: floating, on the CPU, each once
  Grad,    // read only: cast to the parameter's dtype and made contiguous as needed
  State,   // the parameter's shape and dtype
  Step,    // the step counter (one-element floating), incremented by begin_update
  Scalar,  // another one-element floating state (NAdam's mu_product, ASGD's eta and mu)
  Shaped,  // the parameter's dtype, a shape of its own that the op checks (Adafactor's factors)
};
// A list's role; a list that the op's options leave unused (`needed` false) may be empty and is not read.
struct ListRole {
  Role role;
  bool needed = true;
  ListRole(Role r, bool n = true) : role(r), needed(n) {}
};

// A group made ready for the kernels: slot k of parameter p is the p-th tensor of the op's k-th list, every
// one contiguous (strided ones are copies written back by finish()). Unused lists hold undefined tensors.
struct Group {
  int stride = 0;
  std::vector<Tensor> t;                         // working tensors, index p * stride + k
  std::vector<std::pair<Tensor, Tensor>> back;   // (original, contiguous copy) written back afterwards
  std::vector<Tensor> mutated;                   // originals whose version is bumped

  int64_t size() const { return stride == 0 ? 0 : static_cast<int64_t>(t.size()) / stride; }
  const Tensor& at(int64_t p, int k) const { return t[p * stride + k]; }
  template <typename T>
  T* ptr(int64_t p, int k) const {
    return t[p * stride + k].data<T>();
  }

  void finish() const {
    for (auto& [orig, work] : back) ops::copy_into(orig, work);
    for (const Tensor& m : mutated) m.bump_version();
  }
};

// What every update reads before its element loops: the checked group, the learning rate and the new step
// counts (one per parameter; empty when the op keeps no step list).
struct Update {
  Group g;
  double lr = 0;
  std::vector<double> steps;
};

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

namespace detail {

// The tensor (a working copy where needed) that the kernels see for x in list `name` at parameter p.
inline void add_slot(Group& g, const Tensor& x, const Tensor& w, Role role, const char* op, const std::string& name,
                     int64_t p, const std::string& pname) {
  FLOW_RUNTIME_CHECK(x.defined(), op, ": ", name, "[", p, "] is None");
  FLOW_RUNTIME_CHECK(x.has_storage() && x.device() == w.device(), op, ": ", name, "[", p, "] must be on the device of ",
                     pname, "[", p, "]");
  if (role == Role::Step || role == Role::Scalar) {
    FLOW_RUNTIME_CHECK(x.numel() == 1 && is_floating(x.dtype()), op, ": ", name, "[", p, "] (",
                       role == Role::Step ? "the step counter" : "one-element state",
                       ") must be a one-element floating tensor, got shape ", shape_str(x.sizes()), " and dtype ",
                       dtype_name(x.dtype()));
    g.t.push_back(x);
    g.mutated.push_back(x);
    return;
  }
  if (role != Role::Shaped)
    FLOW_RUNTIME_CHECK(x.sizes() == w.sizes(), op, ": ", name, "[", p, "] has shape ", shape_str(x.sizes()), " but ",
                       pname, "[", p, "] has shape ", shape_str(w.sizes()));
  if (role == Role::Grad) {
    Tensor c = x.dtype() == w.dtype() ? x : ops::to_dtype(x, w.dtype());
    g.t.push_back(c.is_contiguous() ? c : ops::contiguous(c));
    return;
  }
  FLOW_TYPE_CHECK(x.dtype() == w.dtype(), op, ": ", name, "[", p, "] has dtype ", dtype_name(x.dtype()), " but ", pname,
                  "[", p, "] has dtype ", dtype_name(w.dtype()));
  if (x.is_contiguous()) {
    g.t.push_back(x);
  } else {
    Tensor c = ops::contiguous(x);
    g.back.emplace_back(x, c);
    g.t.push_back(c);
  }
  g.mutated.push_back(x);
}

// The 0-dim floating tensor `lr`, read in double.
inline double read_lr(const Tensor& lr, const char* op) {
  FLOW_RUNTIME_CHECK(lr.defined(), op, ": argument 'lr' is None");
  FLOW_TYPE_CHECK(lr.dim() == 0 && is_floating(lr.dtype()), op,
                  ": argument 'lr' must be a 0-dim floating-point tensor, got shape ", shape_str(lr.sizes()),
                  " and dtype ", dtype_name(lr.dtype()));
  FLOW_RUNTIME_CHECK(lr.has_storage() && lr.device().type == DeviceType::CPU, op,
                     ": argument 'lr' must be a CPU tensor with storage");
  return read_scalar_tensor(lr);
}

}  // namespace detail

// The shared preamble of the update kernels. `roles` gives one entry per tensor list of the op's schema (its
// first tensor parameters, params first); a tensor parameter named `lr` is the learning rate. Checks every
// list and tensor before anything is written, then increments the step counters.
inline Update begin_update(const TensorList& in, const Attrs& a, std::initializer_list<ListRole> roles) {
  const std::vector<InputSpan> spans = split_inputs(in, a);  // checks a.schema and the lengths
  const Schema& s = *a.schema;
  const char* op = s.name.c_str();
  const int nl = static_cast<int>(roles.size());
  FLOW_RUNTIME_CHECK(nl >= 2 && static_cast<int>(spans.size()) >= nl, op, ": the kernel expects ", nl,
                     " tensor lists, the schema has ", spans.size(), " tensor parameters");
  const std::vector<ListRole> role(roles);
  const int64_t n = static_cast<int64_t>(spans[0].size());
  for (int k = 1; k < nl; ++k) {
    const int64_t len = static_cast<int64_t>(spans[k].size());
    FLOW_RUNTIME_CHECK(len == n || (len == 0 && !role[k].needed), op, ": argument '", s.tensor_args[k].name, "' has ",
                       len, " tensors but '", s.tensor_args[0].name, "' has ", n,
                       role[k].needed ? "" : " (an unused list may also be empty)");
  }
  Update u;
  for (size_t k = nl; k < spans.size(); ++k)
    if (s.tensor_args[k].name == "lr") u.lr = detail::read_lr(spans[k][0], op);
  Group& g = u.g;
  g.stride = nl;
  g.t.reserve(static_cast<size_t>(n * nl));
  int step_list = -1;
  for (int k = 0; k < nl; ++k)
    if (role[k].role == Role::Step) step_list = k;
  const std::string pname = s.tensor_args[0].name;
  for (int64_t p = 0; p < n; ++p) {
    const Tensor& w = spans[0][p];
    FLOW_RUNTIME_CHECK(w.defined(), op, ": ", pname, "[", p, "] is None");
    FLOW_RUNTIME_CHECK(w.has_storage() && w.device().type == DeviceType::CPU, op, ": ", pname, "[", p,
                       "] must be a CPU tensor with storage");
    FLOW_TYPE_CHECK(is_floating(w.dtype()), op, ": ", pname, "[", p, "] must be floating point, got ",
                    dtype_name(w.dtype()));
    for (int64_t q = 0; q < p; ++q)  // an aliased parameter would be updated twice, racing with itself
      FLOW_RUNTIME_CHECK(!spans[0][q].is_same(w), op, ": ", pname, "[", p, "] appears twice in the list");
    for (int k = 0; k < nl; ++k) {
      if (!role[k].needed) {
        g.t.emplace_back();
        continue;
      }
      detail::add_slot(g, spans[k][p], w, role[k].role, op, s.tensor_args[k].name, p, pname);
    }
  }
  if (step_list >= 0) {
    u.steps.resize(static_cast<size_t>(n));
    for (int64_t p = 0; p < n; ++p) {
      const Tensor& c = g.at(p, step_list);
      u.steps[p] = write_scalar_tensor(c, read_scalar_tensor(c) + 1.0);
    }
  }
  return u;
}

// The one-element state at `slot` of parameter p, read in double.
inline double read_scalar(const Group& g, int64_t p, int slot) { return read_scalar_tensor(g.at(p, slot)); }

// Stores v rounded to the state's dtype; returns the stored value.
inline double write_scalar(const Group& g, int64_t p, int slot, double v) {
  return write_scalar_tensor(g.at(p, slot), v);
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
  // serial below the grain, as the CPU's kernel variant either way: a parameter's update is the same whether
  // its group is large or small
  parallel_for_if(total >= kParallelGrain, static_cast<int64_t>(tasks.size()), body);
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
