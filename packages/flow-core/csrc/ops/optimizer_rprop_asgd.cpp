// Fused updates of Rprop and ASGD, PyTorch's single-tensor formulas in its operation order (see
// optimizer_common.h for the argument lists, the shared preamble and the threading).
#include <cmath>
#include <vector>

#include "optimizer_common.h"

namespace flow {
using namespace optim;

// Rprop: each element's step size grows by etaplus
// while its gradient keeps its sign and shrinks by etaminus when it flips (that step then skips the
// element and forgets its gradient); the parameter moves by the step size against the gradient's sign.
FLOW_OP(rprop_update_)
    .schema(
        "rprop_update_(Tensor[] params, Tensor[] grads, Tensor[] prevs, Tensor[] step_sizes, Tensor[] steps, "
        "*, float etaminus=0.5, float etaplus=1.2, float step_size_min=1e-6, float step_size_max=50, "
        "bool maximize=False) -> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .meta(optim::no_output_meta)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double em = a.f("etaminus"), ep = a.f("etaplus"), smin = a.f("step_size_min"), smax = a.f("step_size_max");
      const bool maximize = a.b("maximize");
      Update u = begin_update(in, a, {Role::Param, Role::Grad, Role::State, Role::State, Role::Step});
      const Group& g = u.g;
      run_chunks(g, "rprop_update_", [&](auto tag, int64_t p, int64_t b, int64_t e) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        T* __restrict w = g.ptr<T>(p, 0);
        const T* __restrict gr = g.ptr<T>(p, 1);
        T* __restrict prev = g.ptr<T>(p, 2);
        T* __restrict st = g.ptr<T>(p, 3);
        const A em_ = static_cast<A>(em), ep_ = static_cast<A>(ep), lo = static_cast<A>(smin),
                hi = static_cast<A>(smax), sign = maximize ? A(-1) : A(1);
#pragma omp simd
        for (int64_t i = b; i < e; ++i) {
          const A gv = sign * static_cast<A>(gr[i]);
          // sign(g * prev) mapped to the step factor; a NaN product has sign 0 in PyTorch (factor 1)
          const A s = gv * static_cast<A>(prev[i]);
          const A f = s > A(0) ? ep_ : (s < A(0) ? em_ : A(1));
          A sv = static_cast<A>(st[i]) * f;
          sv = sv != sv ? sv : std::min(std::max(sv, lo), hi);  // clamp, keeping NaN as torch.clamp does
          const A g2 = f == em_ ? A(0) : gv;
          const A sg = static_cast<A>((g2 > A(0)) - (g2 < A(0)));
          st[i] = static_cast<T>(sv);
          prev[i] = static_cast<T>(g2);
          w[i] = static_cast<T>(static_cast<A>(w[i]) - sg * sv);
        }
      });
      g.finish();
      return no_outputs();
    });

// ASGD: etas (the step sizes) and mus (the averaging weights) are one-element states in the scalar dtype, read
// and rounded as PyTorch's .item() / copy_ do.
FLOW_OP(asgd_update_)
    .schema(
        "asgd_update_(Tensor[] params, Tensor[] grads, Tensor[] axs, Tensor[] steps, Tensor[] etas, "
        "Tensor[] mus, Tensor lr, *, float lambd=1e-4, float alpha=0.75, float t0=1e6, float weight_decay=0, "
        "bool maximize=False) -> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .meta(optim::no_output_meta)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      const double lambd = a.f("lambd"), alpha = a.f("alpha"), t0 = a.f("t0"), wd = a.f("weight_decay");
      const bool maximize = a.b("maximize");
      Update u = begin_update(in, a, {Role::Param, Role::Grad, Role::State, Role::Step, Role::Scalar, Role::Scalar});
      const Group& g = u.g;
      const double lr = u.lr;
      const std::vector<double>& steps = u.steps;
      std::vector<double> eta(g.size()), mu(g.size());
      for (int64_t p = 0; p < g.size(); ++p) {
        eta[p] = read_scalar(g, p, 4);
        mu[p] = read_scalar(g, p, 5);
      }
      run_chunks(g, "asgd_update_", [&](auto tag, int64_t p, int64_t b, int64_t e) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        T* __restrict w = g.ptr<T>(p, 0);
        const T* __restrict gr = g.ptr<T>(p, 1);
        T* __restrict ax = g.ptr<T>(p, 2);
        const A decay = static_cast<A>(1 - lambd * eta[p]), neg_eta = static_cast<A>(-eta[p]),
                mu_ = static_cast<A>(mu[p]), sign = maximize ? A(-1) : A(1), l2 = static_cast<A>(wd);
        auto loop = [&](auto average) {
#pragma omp simd
          for (int64_t i = b; i < e; ++i) {
            const A w0 = static_cast<A>(w[i]);
            const A gv = decayed_grad(sign, gr[i], l2, w0);
            const A w1 = static_cast<A>(static_cast<T>(w0 * decay));
            const A w2 = static_cast<A>(static_cast<T>(w1 + neg_eta * gv));
            w[i] = static_cast<T>(w2);
            if constexpr (decltype(average)::value) {
              const A av = static_cast<A>(ax[i]);
              ax[i] = static_cast<T>(av + (w2 - av) * mu_);
            } else {
              ax[i] = static_cast<T>(w2);
            }
          }
        };
        with_flags(mu[p] != 1, loop);
      });
      for (int64_t p = 0; p < g.size(); ++p) {
        write_scalar(g, p, 4, lr / std::pow(1 + lambd * lr * steps[p], alpha));
        write_scalar(g, p, 5, 1 / std::max(1.0, steps[p] - t0));
      }
      g.finish();
      return no_outputs();
    });

}  // namespace flow
