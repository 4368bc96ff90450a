// Fused optimizer updates: one op call per parameter group updates every parameter and its state in place,
// in a single pass per element (PyTorch's single-tensor formulas, same operation order). The registry allows
// one tensor-list input, so a group arrives packed flat: [p0, g0, s0..., p1, g1, s1..., ...] with a fixed
// number of tensors per parameter (the op's "stride", derived from its options). Work is split into chunks
// across all parameters of the group, so small tensors share threads instead of each paying for a parallel
// region. These ops are not differentiable and mutate their inputs (bumping their versions). Element loops
// are `omp simd`: the -O2 build's cost model would leave them scalar.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "../kernels/cpu/parallel.h"
#include "functions.h"

namespace flow {
namespace {

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

// `step_slot`: index of the 0-dim step counter within a parameter's tensors (-1: none). Slot 1 is the
// gradient (read only); every other slot is written.
Group prepare(const TensorList& in, int stride, int step_slot, const char* op) {
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
      if (k == step_slot) {
        FLOW_RUNTIME_CHECK(x.numel() == 1 && is_floating(x.dtype()), op, ": the step counter of parameter ", p,
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

// Increments each parameter's step counter; returns the new step values.
std::vector<double> bump_steps(const Group& g, int slot) {
  std::vector<double> steps(g.size());
  for (int64_t p = 0; p < g.size(); ++p) {
    const Tensor& s = g.at(p, slot);
    steps[p] = dispatch_floating(s.dtype(), "optimizer step", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* v = s.data<T>();
      double n = static_cast<double>(static_cast<acc_t<T>>(*v)) + 1.0;
      *v = static_cast<T>(static_cast<acc_t<T>>(n));
      return static_cast<double>(static_cast<acc_t<T>>(*v));
    });
  }
  return steps;
}

struct Task {
  int64_t p, begin, end;
};

std::vector<Task> make_tasks(const Group& g, int64_t* total) {
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

// PyTorch's lerp: exact at both ends, the form chosen by the weight's size.
template <typename A>
inline A lerp(A self, A end, A w) {
  return std::abs(w) < A(0.5) ? self + w * (end - self) : end - (end - self) * (A(1) - w);
}

TensorList no_outputs() { return {}; }

}  // namespace

// SGD: per parameter [param, grad] or, with momentum, [param, grad, momentum_buffer]. `fresh` lists the
// parameters whose momentum buffer starts this step (PyTorch sets it to the gradient then).
FLOW_OP(sgd_update_)
    .schema("sgd_update_(Tensor[] tensors, *, float lr, float momentum=0, float dampening=0, float weight_decay=0, "
            "bool nesterov=False, bool maximize=False, int[] fresh=[]) -> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double lr = a.f(0), mom = a.f(1), damp = a.f(2), wd = a.f(3);
      const bool nesterov = a.b(4), maximize = a.b(5);
      Group g = prepare(in, mom != 0 ? 3 : 2, -1, "sgd_update_");
      std::vector<char> fresh(g.size(), 0);
      for (int64_t f : a.ints(6)) {
        FLOW_INDEX_CHECK(f >= 0 && f < g.size(), "sgd_update_: fresh index ", f, " out of range");
        fresh[f] = 1;
      }
      run_chunks(g, "sgd_update_", [&](auto tag, int64_t p, int64_t b, int64_t e) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        const A sign = maximize ? A(-1) : A(1);
        T* __restrict w = g.ptr<T>(p, 0);
        const T* __restrict gr = g.ptr<T>(p, 1);
        const A lr_ = static_cast<A>(-lr), wd_ = static_cast<A>(wd), m_ = static_cast<A>(mom),
                d_ = static_cast<A>(1 - damp);
        if (mom == 0) {
          #pragma omp simd
          for (int64_t i = b; i < e; ++i) {
            A wv = static_cast<A>(w[i]);
            w[i] = static_cast<T>(wv + lr_ * decayed_grad(sign, gr[i], wd_, wv));
          }
          return;
        }
        T* __restrict buf = g.ptr<T>(p, 2);
        auto loop = [&](auto fr, auto nest) {
          #pragma omp simd
          for (int64_t i = b; i < e; ++i) {
            A wv = static_cast<A>(w[i]);
            A gv = decayed_grad(sign, gr[i], wd_, wv);
            A bv;
            if constexpr (decltype(fr)::value) bv = gv;  // a new buffer starts as the gradient
            else bv = static_cast<A>(buf[i]) * m_ + d_ * gv;
            buf[i] = static_cast<T>(bv);
            if constexpr (decltype(nest)::value) gv = gv + m_ * bv;
            else gv = bv;
            w[i] = static_cast<T>(wv + lr_ * gv);
          }
        };
        with_flags(fresh[p] != 0, nesterov, loop);
      });
      g.finish();
      return no_outputs();
    });

// Adam / AdamW: per parameter [param, grad, exp_avg, exp_avg_sq, step] (+ max_exp_avg_sq with amsgrad).
FLOW_OP(adam_update_)
    .schema("adam_update_(Tensor[] tensors, *, float lr, float beta1=0.9, float beta2=0.999, float eps=1e-8, "
            "float weight_decay=0, bool amsgrad=False, bool maximize=False, bool decoupled_weight_decay=False) "
            "-> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double lr = a.f(0), b1 = a.f(1), b2 = a.f(2), eps = a.f(3), wd = a.f(4);
      const bool amsgrad = a.b(5), maximize = a.b(6), decoupled = a.b(7);
      Group g = prepare(in, amsgrad ? 6 : 5, 4, "adam_update_");
      std::vector<double> steps = bump_steps(g, 4);
      run_chunks(g, "adam_update_", [&](auto tag, int64_t p, int64_t b, int64_t e) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        T* __restrict w = g.ptr<T>(p, 0);
        const T* __restrict gr = g.ptr<T>(p, 1);
        T* __restrict m = g.ptr<T>(p, 2);
        T* __restrict v = g.ptr<T>(p, 3);
        T* __restrict vmax = amsgrad ? g.ptr<T>(p, 5) : nullptr;
        const double bc1 = 1 - std::pow(b1, steps[p]), bc2 = 1 - std::pow(b2, steps[p]);
        const A neg_step = static_cast<A>(-(lr / bc1)), bc2s = static_cast<A>(std::sqrt(bc2));
        const A w1 = static_cast<A>(1 - b1), b2_ = static_cast<A>(b2), w2 = static_cast<A>(1 - b2),
                eps_ = static_cast<A>(eps);
        // Options folded into constants so the loop has no branches and vectorises: maximize is a sign,
        // the unused one of (L2 term, decoupled decay) is 0 / 1.
        const A sign = maximize ? A(-1) : A(1);
        const A l2 = (wd != 0 && !decoupled) ? static_cast<A>(wd) : A(0);
        const A decay = (wd != 0 && decoupled) ? static_cast<A>(1 - lr * wd) : A(1);
        auto loop = [&](auto ams) {
          #pragma omp simd
          for (int64_t i = b; i < e; ++i) {
            const A w0 = static_cast<A>(w[i]);
            const A gv = decayed_grad(sign, gr[i], l2, w0);
            const A wv = w0 * decay;
            const A mv = lerp(static_cast<A>(m[i]), gv, w1);
            const A vv = static_cast<A>(v[i]) * b2_ + w2 * gv * gv;
            m[i] = static_cast<T>(mv);
            v[i] = static_cast<T>(vv);
            A vd = vv;
            if constexpr (decltype(ams)::value) {
              vd = std::max(static_cast<A>(vmax[i]), vv);
              vmax[i] = static_cast<T>(vd);
            }
            w[i] = static_cast<T>(wv + neg_step * mv / (std::sqrt(vd) / bc2s + eps_));
          }
        };
        with_flags(amsgrad, loop);
      });
      g.finish();
      return no_outputs();
    });

// Adagrad: per parameter [param, grad, sum, step].
FLOW_OP(adagrad_update_)
    .schema("adagrad_update_(Tensor[] tensors, *, float lr, float lr_decay=0, float weight_decay=0, "
            "float eps=1e-10, bool maximize=False) -> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double lr = a.f(0), lr_decay = a.f(1), wd = a.f(2), eps = a.f(3);
      const bool maximize = a.b(4);
      Group g = prepare(in, 4, 3, "adagrad_update_");
      std::vector<double> steps = bump_steps(g, 3);
      run_chunks(g, "adagrad_update_", [&](auto tag, int64_t p, int64_t b, int64_t e) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        const A sign = maximize ? A(-1) : A(1);
        T* __restrict w = g.ptr<T>(p, 0);
        const T* __restrict gr = g.ptr<T>(p, 1);
        T* __restrict s = g.ptr<T>(p, 2);
        const A nclr = static_cast<A>(-(lr / (1 + (steps[p] - 1) * lr_decay)));
        const A wd_ = static_cast<A>(wd), eps_ = static_cast<A>(eps);
        #pragma omp simd
        for (int64_t i = b; i < e; ++i) {
          A wv = static_cast<A>(w[i]);
          A gv = decayed_grad(sign, gr[i], wd_, wv);
          A sv = static_cast<A>(s[i]) + gv * gv;
          s[i] = static_cast<T>(sv);
          w[i] = static_cast<T>(wv + nclr * gv / (std::sqrt(sv) + eps_));
        }
      });
      g.finish();
      return no_outputs();
    });

// Adadelta: per parameter [param, grad, square_avg, acc_delta, step].
FLOW_OP(adadelta_update_)
    .schema("adadelta_update_(Tensor[] tensors, *, float lr=1.0, float rho=0.9, float eps=1e-6, "
            "float weight_decay=0, bool maximize=False) -> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double lr = a.f(0), rho = a.f(1), eps = a.f(2), wd = a.f(3);
      const bool maximize = a.b(4);
      Group g = prepare(in, 5, 4, "adadelta_update_");
      bump_steps(g, 4);
      run_chunks(g, "adadelta_update_", [&](auto tag, int64_t p, int64_t b, int64_t e) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        const A sign = maximize ? A(-1) : A(1);
        T* __restrict w = g.ptr<T>(p, 0);
        const T* __restrict gr = g.ptr<T>(p, 1);
        T* __restrict sq = g.ptr<T>(p, 2);
        T* __restrict acc = g.ptr<T>(p, 3);
        const A rho_ = static_cast<A>(rho), r1 = static_cast<A>(1 - rho), eps_ = static_cast<A>(eps),
                wd_ = static_cast<A>(wd), nlr = static_cast<A>(-lr);
        #pragma omp simd
        for (int64_t i = b; i < e; ++i) {
          A wv = static_cast<A>(w[i]);
          A gv = decayed_grad(sign, gr[i], wd_, wv);
          A sv = static_cast<A>(sq[i]) * rho_ + r1 * gv * gv;
          sq[i] = static_cast<T>(sv);
          A delta = std::sqrt(static_cast<A>(acc[i]) + eps_) / std::sqrt(sv + eps_) * gv;
          acc[i] = static_cast<T>(static_cast<A>(acc[i]) * rho_ + r1 * delta * delta);
          w[i] = static_cast<T>(wv + nlr * delta);
        }
      });
      g.finish();
      return no_outputs();
    });

// RMSprop: per parameter [param, grad, square_avg, step] (+ momentum_buffer when momentum > 0)
// (+ grad_avg when centered).
FLOW_OP(rmsprop_update_)
    .schema("rmsprop_update_(Tensor[] tensors, *, float lr=0.01, float alpha=0.99, float eps=1e-8, "
            "float weight_decay=0, float momentum=0, bool centered=False, bool maximize=False) -> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double lr = a.f(0), alpha = a.f(1), eps = a.f(2), wd = a.f(3), mom = a.f(4);
      const bool centered = a.b(5), maximize = a.b(6);
      const int mslot = mom > 0 ? 4 : -1, cslot = centered ? (mom > 0 ? 5 : 4) : -1;
      Group g = prepare(in, 4 + (mom > 0) + centered, 3, "rmsprop_update_");
      bump_steps(g, 3);
      run_chunks(g, "rmsprop_update_", [&](auto tag, int64_t p, int64_t b, int64_t e) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        const A sign = maximize ? A(-1) : A(1);
        T* __restrict w = g.ptr<T>(p, 0);
        const T* __restrict gr = g.ptr<T>(p, 1);
        T* __restrict sq = g.ptr<T>(p, 2);
        T* __restrict buf = mslot >= 0 ? g.ptr<T>(p, mslot) : nullptr;
        T* __restrict ga = cslot >= 0 ? g.ptr<T>(p, cslot) : nullptr;
        const A al = static_cast<A>(alpha), a1 = static_cast<A>(1 - alpha), eps_ = static_cast<A>(eps),
                wd_ = static_cast<A>(wd), m_ = static_cast<A>(mom), nlr = static_cast<A>(-lr);
        auto loop = [&](auto cen, auto hm) {
          #pragma omp simd
          for (int64_t i = b; i < e; ++i) {
            A wv = static_cast<A>(w[i]);
            A gv = decayed_grad(sign, gr[i], wd_, wv);
            A sv = static_cast<A>(sq[i]) * al + a1 * gv * gv;
            sq[i] = static_cast<T>(sv);
            A avg;
            if constexpr (decltype(cen)::value) {
              A gav = lerp(static_cast<A>(ga[i]), gv, a1);
              ga[i] = static_cast<T>(gav);
              avg = std::sqrt(sv - gav * gav) + eps_;
            } else {
              avg = std::sqrt(sv) + eps_;
            }
            if constexpr (decltype(hm)::value) {
              A bv = static_cast<A>(buf[i]) * m_ + gv / avg;
              buf[i] = static_cast<T>(bv);
              w[i] = static_cast<T>(wv + nlr * bv);
            } else {
              w[i] = static_cast<T>(wv + nlr * gv / avg);
            }
          }
        };
        with_flags(centered, mom > 0, loop);
      });
      g.finish();
      return no_outputs();
    });

// LAMB (OneFlow / apex semantics): Adam moments with optional bias correction, the update
// u = m_hat / (sqrt(v_hat) + eps) (+ weight_decay * w in adam_w_mode; otherwise weight decay is L2 added to
// the gradient first), then w -= lr * trust * u with trust = ||w|| / ||u|| (1 when either norm is 0).
// Per parameter [param, grad, exp_avg, exp_avg_sq, step] (+ max_exp_avg_sq with amsgrad). Two passes: the
// first updates the moments, stores u and accumulates both norms per chunk; the second applies u.
FLOW_OP(lamb_update_)
    .schema("lamb_update_(Tensor[] tensors, *, float lr, float beta1=0.9, float beta2=0.999, float eps=1e-8, "
            "float weight_decay=0, bool adam_w_mode=True, bool do_bias_correction=True, bool amsgrad=False) "
            "-> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double lr = a.f(0), b1 = a.f(1), b2 = a.f(2), eps = a.f(3), wd = a.f(4);
      const bool adam_w = a.b(5), bias_corr = a.b(6), amsgrad = a.b(7);
      Group g = prepare(in, amsgrad ? 6 : 5, 4, "lamb_update_");
      std::vector<double> steps = bump_steps(g, 4);
      int64_t total;
      std::vector<Task> tasks = make_tasks(g, &total);
      // u is kept in double: norms and the final step then see exactly what was computed
      std::vector<int64_t> base(g.size() + 1, 0);
      for (int64_t p = 0; p < g.size(); ++p) base[p + 1] = base[p] + g.at(p, 0).numel();
      std::vector<double> u(static_cast<size_t>(total));
      std::vector<double> wsq(tasks.size()), usq(tasks.size());
      // pass 1 (tasks indexed so partial sums land in their own slot)
      auto pass1 = [&](int64_t tb, int64_t te) {
        for (int64_t ti = tb; ti < te; ++ti) {
          const Task& t = tasks[ti];
          dispatch_floating(g.at(t.p, 0).dtype(), "lamb_update_", [&](auto tag) {
            using T = typename decltype(tag)::type;
            using A = acc_t<T>;
            const int64_t p = t.p;
            T* w = g.ptr<T>(p, 0);
            const T* gr = g.ptr<T>(p, 1);
            T* m = g.ptr<T>(p, 2);
            T* v = g.ptr<T>(p, 3);
            T* vmax = amsgrad ? g.ptr<T>(p, 5) : nullptr;
            const double bc1 = bias_corr ? 1 - std::pow(b1, steps[p]) : 1.0;
            const double bc2 = bias_corr ? 1 - std::pow(b2, steps[p]) : 1.0;
            const A b1_ = static_cast<A>(b1), b2_ = static_cast<A>(b2), w1 = static_cast<A>(1 - b1),
                    w2 = static_cast<A>(1 - b2), eps_ = static_cast<A>(eps), wd_ = static_cast<A>(wd),
                    bc1_ = static_cast<A>(bc1), bc2s = static_cast<A>(std::sqrt(bc2));
            double* up = u.data() + base[p];
            double sw = 0, su = 0;
            #pragma omp simd reduction(+ : sw, su)
            for (int64_t i = t.begin; i < t.end; ++i) {
              A wv = static_cast<A>(w[i]);
              A gv = static_cast<A>(gr[i]);
              if (!adam_w && wd != 0) gv = gv + wd_ * wv;
              A mv = b1_ * static_cast<A>(m[i]) + w1 * gv;
              A vv = b2_ * static_cast<A>(v[i]) + w2 * gv * gv;
              m[i] = static_cast<T>(mv);
              v[i] = static_cast<T>(vv);
              if (amsgrad) {
                vv = std::max(static_cast<A>(vmax[i]), vv);
                vmax[i] = static_cast<T>(vv);
              }
              A uv = (mv / bc1_) / (std::sqrt(vv) / bc2s + eps_);
              if (adam_w && wd != 0) uv = uv + wd_ * wv;
              up[i] = static_cast<double>(uv);
              sw += static_cast<double>(wv) * static_cast<double>(wv);
              su += static_cast<double>(uv) * static_cast<double>(uv);
            }
            wsq[ti] = sw;
            usq[ti] = su;
          });
        }
      };
      if (total < kParallelGrain) pass1(0, static_cast<int64_t>(tasks.size()));
      else parallel_for(static_cast<int64_t>(tasks.size()), 1, pass1);
      // per-parameter trust ratios, summing chunk partials in a fixed order (deterministic)
      std::vector<double> wn(g.size(), 0), un(g.size(), 0), scale(g.size());
      for (size_t i = 0; i < tasks.size(); ++i) wn[tasks[i].p] += wsq[i], un[tasks[i].p] += usq[i];
      for (int64_t p = 0; p < g.size(); ++p) {
        double a_ = std::sqrt(wn[p]), b_ = std::sqrt(un[p]);
        scale[p] = -lr * ((a_ > 0 && b_ > 0) ? a_ / b_ : 1.0);
      }
      run_chunks(g, tasks, total, "lamb_update_", [&](auto tag, int64_t p, int64_t b, int64_t e) {
        using T = typename decltype(tag)::type;
        T* w = g.ptr<T>(p, 0);
        const double* up = u.data() + base[p];
        const double s = scale[p];
        #pragma omp simd
        for (int64_t i = b; i < e; ++i)
          w[i] = static_cast<T>(static_cast<acc_t<T>>(static_cast<double>(static_cast<acc_t<T>>(w[i])) + s * up[i]));
      });
      g.finish();
      return no_outputs();
    });

}  // namespace flow
