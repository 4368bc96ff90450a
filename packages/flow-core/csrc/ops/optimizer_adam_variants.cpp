// Fused updates of Adam's relatives: Adamax, NAdam and RAdam, PyTorch's single-tensor formulas in its
// operation order (see optimizer_common.h for the argument lists, the shared preamble and the threading).
#include <cmath>
#include <vector>

#include "optimizer_common.h"

namespace flow {
using namespace optim;

namespace {

// amax of two values as torch.amax sees them: a NaN on either side wins.
template <typename A>
inline A nan_max(A a, A b) {
  A m = a > b ? a : b;
  m = b != b ? b : m;
  return a != a ? a : m;
}

}  // namespace

// Adamax: exp_inf = max(beta2 * exp_inf, |g| + eps).
FLOW_OP(adamax_update_)
    .schema(
        "adamax_update_(Tensor[] params, Tensor[] grads, Tensor[] exp_avgs, Tensor[] exp_infs, Tensor[] steps, "
        "Tensor lr, *, float beta1=0.9, float beta2=0.999, float eps=1e-8, float weight_decay=0, "
        "bool maximize=False) -> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .meta(optim::no_output_meta)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double b1 = a.f("beta1"), b2 = a.f("beta2"), eps = a.f("eps"), wd = a.f("weight_decay");
      const bool maximize = a.b("maximize");
      Update u = begin_update(in, a, {Role::Param, Role::Grad, Role::State, Role::State, Role::Step});
      const Group& g = u.g;
      const double lr = u.lr;
      const std::vector<double>& steps = u.steps;
      run_chunks(g, "adamax_update_", [&](auto tag, int64_t p, int64_t b, int64_t e) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        T* __restrict w = g.ptr<T>(p, 0);
        const T* __restrict gr = g.ptr<T>(p, 1);
        T* __restrict m = g.ptr<T>(p, 2);
        T* __restrict u = g.ptr<T>(p, 3);
        const A neg_clr = static_cast<A>(-(lr / (1 - std::pow(b1, steps[p]))));
        const A w1 = static_cast<A>(1 - b1), b2_ = static_cast<A>(b2), eps_ = static_cast<A>(eps);
        const A sign = maximize ? A(-1) : A(1), l2 = static_cast<A>(wd);
#pragma omp simd
        for (int64_t i = b; i < e; ++i) {
          const A w0 = static_cast<A>(w[i]);
          const A gv = decayed_grad(sign, gr[i], l2, w0);
          const A mv = lerp(static_cast<A>(m[i]), gv, w1);
          const A uv = nan_max(static_cast<A>(u[i]) * b2_, std::abs(gv) + eps_);
          m[i] = static_cast<T>(mv);
          u[i] = static_cast<T>(uv);
          w[i] = static_cast<T>(w0 + neg_clr * (mv / uv));
        }
      });
      g.finish();
      return no_outputs();
    });

// NAdam: mu_products (one-element states in the scalar dtype, as PyTorch keeps them) accumulate the momentum
// schedule mu_t.
FLOW_OP(nadam_update_)
    .schema(
        "nadam_update_(Tensor[] params, Tensor[] grads, Tensor[] exp_avgs, Tensor[] exp_avg_sqs, "
        "Tensor[] steps, Tensor[] mu_products, Tensor lr, *, float beta1=0.9, float beta2=0.999, "
        "float eps=1e-8, float weight_decay=0, float momentum_decay=0.004, bool decoupled_weight_decay=False, "
        "bool maximize=False) -> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .meta(optim::no_output_meta)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double b1 = a.f("beta1"), b2 = a.f("beta2"), eps = a.f("eps"), wd = a.f("weight_decay"),
                   psi = a.f("momentum_decay");
      const bool decoupled = a.b("decoupled_weight_decay"), maximize = a.b("maximize");
      Update u = begin_update(in, a, {Role::Param, Role::Grad, Role::State, Role::State, Role::Step, Role::Scalar});
      const Group& g = u.g;
      const double lr = u.lr;
      const std::vector<double>& steps = u.steps;
      // per parameter: the two step sizes (on the gradient and on exp_avg) and bias_correction2
      std::vector<double> c_grad(g.size()), c_avg(g.size());
      for (int64_t p = 0; p < g.size(); ++p) {
        const double t = steps[p];
        const double mu = b1 * (1 - 0.5 * std::pow(0.96, t * psi));
        const double mu_next = b1 * (1 - 0.5 * std::pow(0.96, (t + 1) * psi));
        // PyTorch multiplies the state tensor in its own dtype (mu is cast to it first)
        double prod = read_scalar(g, p, 5);
        prod = g.at(p, 5).dtype() == DType::Float64
                   ? write_scalar(g, p, 5, prod * mu)
                   : write_scalar(g, p, 5, static_cast<float>(prod) * static_cast<float>(mu));
        c_grad[p] = -lr * (1 - mu) / (1 - prod);
        c_avg[p] = -lr * mu_next / (1 - prod * mu_next);
      }
      run_chunks(g, "nadam_update_", [&](auto tag, int64_t p, int64_t b, int64_t e) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        T* __restrict w = g.ptr<T>(p, 0);
        const T* __restrict gr = g.ptr<T>(p, 1);
        T* __restrict m = g.ptr<T>(p, 2);
        T* __restrict v = g.ptr<T>(p, 3);
        const A bc2 = static_cast<A>(1 - std::pow(b2, steps[p]));
        const A w1 = static_cast<A>(1 - b1), b2_ = static_cast<A>(b2), w2 = static_cast<A>(1 - b2),
                eps_ = static_cast<A>(eps), cg = static_cast<A>(c_grad[p]), ca = static_cast<A>(c_avg[p]);
        const A sign = maximize ? A(-1) : A(1);
        const WeightDecay<A> wdc(lr, wd, decoupled);
        const A l2 = wdc.l2, decay = wdc.factor;
#pragma omp simd
        for (int64_t i = b; i < e; ++i) {
          const A w0 = static_cast<A>(w[i]);
          const A gv = decayed_grad(sign, gr[i], l2, w0);
          const A mv = lerp(static_cast<A>(m[i]), gv, w1);
          const A vv = static_cast<A>(v[i]) * b2_ + w2 * gv * gv;
          m[i] = static_cast<T>(mv);
          v[i] = static_cast<T>(vv);
          const A denom = std::sqrt(vv / bc2) + eps_;
          // two addcdiv_ steps, each rounded to T as PyTorch's are
          const T w1v = static_cast<T>(w0 * decay);
          const T w2v = static_cast<T>(static_cast<A>(w1v) + cg * (gv / denom));
          w[i] = static_cast<T>(static_cast<A>(w2v) + ca * (mv / denom));
        }
      });
      g.finish();
      return no_outputs();
    });

// RAdam: while the variance's rectification term is undefined (rho_t <= 5, the first few steps) the update is
// bias-corrected momentum alone.
FLOW_OP(radam_update_)
    .schema(
        "radam_update_(Tensor[] params, Tensor[] grads, Tensor[] exp_avgs, Tensor[] exp_avg_sqs, "
        "Tensor[] steps, Tensor lr, *, float beta1=0.9, float beta2=0.999, float eps=1e-8, "
        "float weight_decay=0, bool decoupled_weight_decay=False, bool maximize=False) -> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .meta(optim::no_output_meta)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double b1 = a.f("beta1"), b2 = a.f("beta2"), eps = a.f("eps"), wd = a.f("weight_decay");
      const bool decoupled = a.b("decoupled_weight_decay"), maximize = a.b("maximize");
      Update u = begin_update(in, a, {Role::Param, Role::Grad, Role::State, Role::State, Role::Step});
      const Group& g = u.g;
      const double lr = u.lr;
      const std::vector<double>& steps = u.steps;
      run_chunks(g, "radam_update_", [&](auto tag, int64_t p, int64_t b, int64_t e) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        T* __restrict w = g.ptr<T>(p, 0);
        const T* __restrict gr = g.ptr<T>(p, 1);
        T* __restrict m = g.ptr<T>(p, 2);
        T* __restrict v = g.ptr<T>(p, 3);
        const double t = steps[p], bc1 = 1 - std::pow(b1, t), bc2 = 1 - std::pow(b2, t);
        const double rho_inf = 2 / (1 - b2) - 1, rho_t = rho_inf - 2 * t * std::pow(b2, t) / bc2;
        const bool rectify = rho_t > 5.0;
        const double rect =
            rectify ? std::sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) : 1.0;
        const A bc1_ = static_cast<A>(bc1), lr_ = static_cast<A>(lr), bc2s = static_cast<A>(std::sqrt(bc2)),
                rect_ = static_cast<A>(rect);
        const A w1 = static_cast<A>(1 - b1), b2_ = static_cast<A>(b2), w2 = static_cast<A>(1 - b2),
                eps_ = static_cast<A>(eps);
        const A sign = maximize ? A(-1) : A(1);
        const WeightDecay<A> wdc(lr, wd, decoupled);
        const A l2 = wdc.l2, decay = wdc.factor;
        auto loop = [&](auto rectified) {
#pragma omp simd
          for (int64_t i = b; i < e; ++i) {
            const A w0 = static_cast<A>(w[i]);
            const A gv = decayed_grad(sign, gr[i], l2, w0);
            const A mv = lerp(static_cast<A>(m[i]), gv, w1);
            const A vv = static_cast<A>(v[i]) * b2_ + w2 * gv * gv;
            m[i] = static_cast<T>(mv);
            v[i] = static_cast<T>(vv);
            A upd = mv / bc1_ * lr_;
            if constexpr (decltype(rectified)::value) upd = upd * (bc2s / (std::sqrt(vv) + eps_)) * rect_;
            w[i] = static_cast<T>(static_cast<A>(static_cast<T>(w0 * decay)) - upd);
          }
        };
        with_flags(rectify, loop);
      });
      g.finish();
      return no_outputs();
    });

}  // namespace flow
