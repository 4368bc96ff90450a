// Fused updates of SGD, Adam/AdamW, Adagrad, Adadelta, RMSprop and LAMB (see optimizer_common.h for the
// argument lists, the shared preamble and the threading).
#include <algorithm>
#include <cmath>
#include <vector>

#include "optimizer_common.h"

namespace flow {
using namespace optim;

// SGD; momentum_buffers are used (and needed) only with momentum. `fresh` lists the parameters whose momentum
// buffer starts this step (PyTorch sets it to the gradient then).
FLOW_OP(sgd_update_)
    .schema(
        "sgd_update_(Tensor[] params, Tensor[] grads, Tensor[] momentum_buffers, Tensor lr, *, float momentum=0, "
        "float dampening=0, float weight_decay=0, bool nesterov=False, bool maximize=False, int[] fresh=[]) "
        "-> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .meta(optim::no_output_meta)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double mom = a.f("momentum"), damp = a.f("dampening"), wd = a.f("weight_decay");
      const bool nesterov = a.b("nesterov"), maximize = a.b("maximize");
      Update u = begin_update(in, a, {Role::Param, Role::Grad, {Role::State, mom != 0}});
      const Group& g = u.g;
      const double lr = u.lr;
      std::vector<char> fresh(g.size(), 0);
      for (int64_t f : a.ints("fresh")) {
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

// Adam / AdamW; max_exp_avg_sqs is used (and needed) only with amsgrad.
FLOW_OP(adam_update_)
    .schema(
        "adam_update_(Tensor[] params, Tensor[] grads, Tensor[] exp_avgs, Tensor[] exp_avg_sqs, "
        "Tensor[] steps, Tensor[] max_exp_avg_sqs, Tensor lr, *, float beta1=0.9, float beta2=0.999, "
        "float eps=1e-8, float weight_decay=0, bool amsgrad=False, bool maximize=False, "
        "bool decoupled_weight_decay=False) -> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .meta(optim::no_output_meta)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double b1 = a.f("beta1"), b2 = a.f("beta2"), eps = a.f("eps"), wd = a.f("weight_decay");
      const bool amsgrad = a.b("amsgrad"), maximize = a.b("maximize"), decoupled = a.b("decoupled_weight_decay");
      Update u =
          begin_update(in, a, {Role::Param, Role::Grad, Role::State, Role::State, Role::Step, {Role::State, amsgrad}});
      const Group& g = u.g;
      const double lr = u.lr;
      const std::vector<double>& steps = u.steps;
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
        const WeightDecay<A> wdc(lr, wd, decoupled);
        const A l2 = wdc.l2, decay = wdc.factor;
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

FLOW_OP(adagrad_update_)
    .schema(
        "adagrad_update_(Tensor[] params, Tensor[] grads, Tensor[] sums, Tensor[] steps, Tensor lr, *, "
        "float lr_decay=0, float weight_decay=0, float eps=1e-10, bool maximize=False) -> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .meta(optim::no_output_meta)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double lr_decay = a.f("lr_decay"), wd = a.f("weight_decay"), eps = a.f("eps");
      const bool maximize = a.b("maximize");
      Update u = begin_update(in, a, {Role::Param, Role::Grad, Role::State, Role::Step});
      const Group& g = u.g;
      const double lr = u.lr;
      const std::vector<double>& steps = u.steps;
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

FLOW_OP(adadelta_update_)
    .schema(
        "adadelta_update_(Tensor[] params, Tensor[] grads, Tensor[] square_avgs, Tensor[] acc_deltas, "
        "Tensor[] steps, Tensor lr, *, float rho=0.9, float eps=1e-6, float weight_decay=0, "
        "bool maximize=False) -> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .meta(optim::no_output_meta)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double rho = a.f("rho"), eps = a.f("eps"), wd = a.f("weight_decay");
      const bool maximize = a.b("maximize");
      Update u = begin_update(in, a, {Role::Param, Role::Grad, Role::State, Role::State, Role::Step});
      const Group& g = u.g;
      const double lr = u.lr;
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

// RMSprop; momentum_buffers is used (and needed) when momentum > 0, grad_avgs when centered.
FLOW_OP(rmsprop_update_)
    .schema(
        "rmsprop_update_(Tensor[] params, Tensor[] grads, Tensor[] square_avgs, Tensor[] steps, "
        "Tensor[] momentum_buffers, Tensor[] grad_avgs, Tensor lr, *, float alpha=0.99, float eps=1e-8, "
        "float weight_decay=0, float momentum=0, bool centered=False, bool maximize=False) -> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .meta(optim::no_output_meta)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double alpha = a.f("alpha"), eps = a.f("eps"), wd = a.f("weight_decay"), mom = a.f("momentum");
      const bool centered = a.b("centered"), maximize = a.b("maximize");
      const int mslot = mom > 0 ? 4 : -1, cslot = centered ? 5 : -1;
      Update u = begin_update(
          in, a, {Role::Param, Role::Grad, Role::State, Role::Step, {Role::State, mom > 0}, {Role::State, centered}});
      const Group& g = u.g;
      const double lr = u.lr;
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
// Adam's lists (max_exp_avg_sqs used only with amsgrad). Two passes: the first updates the moments, stores u
// and accumulates both norms per chunk; the second applies u.
FLOW_OP(lamb_update_)
    .schema(
        "lamb_update_(Tensor[] params, Tensor[] grads, Tensor[] exp_avgs, Tensor[] exp_avg_sqs, "
        "Tensor[] steps, Tensor[] max_exp_avg_sqs, Tensor lr, *, float beta1=0.9, float beta2=0.999, "
        "float eps=1e-8, float weight_decay=0, bool adam_w_mode=True, bool do_bias_correction=True, "
        "bool amsgrad=False) -> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .meta(optim::no_output_meta)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double b1 = a.f("beta1"), b2 = a.f("beta2"), eps = a.f("eps"), wd = a.f("weight_decay");
      const bool adam_w = a.b("adam_w_mode"), bias_corr = a.b("do_bias_correction"), amsgrad = a.b("amsgrad");
      Update u =
          begin_update(in, a, {Role::Param, Role::Grad, Role::State, Role::State, Role::Step, {Role::State, amsgrad}});
      const Group& g = u.g;
      const double lr = u.lr;
      const std::vector<double>& steps = u.steps;
      int64_t total;
      std::vector<Task> tasks = make_tasks(g, &total);
      // u is kept in double: norms and the final step then see exactly what was computed
      std::vector<int64_t> base(g.size() + 1, 0);
      for (int64_t p = 0; p < g.size(); ++p) base[p + 1] = base[p] + g.at(p, 0).numel();
      std::vector<double> upd(static_cast<size_t>(total));
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
            double* up = upd.data() + base[p];
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
      parallel_for_if(total >= kParallelGrain, static_cast<int64_t>(tasks.size()), pass1);
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
        const double* up = upd.data() + base[p];
        const double s = scale[p];
#pragma omp simd
        for (int64_t i = b; i < e; ++i)
          w[i] = static_cast<T>(static_cast<acc_t<T>>(static_cast<double>(static_cast<acc_t<T>>(w[i])) + s * up[i]));
      });
      g.finish();
      return no_outputs();
    });

}  // namespace flow
