// Adafactor's fused update (PyTorch's torch.optim.Adafactor, single-tensor formulas and order): the second
// moment of a parameter with two or more dims is kept factored, as per-row and per-column means of g^2 over
// its last two dims; a vector keeps a full one. Unlike the other fused updates (optimizer_common.h), a step
// needs reductions over whole parameters (the parameter's RMS, the update's RMS, the factors' means), so
// each parameter is processed in passes over its (batch, row) lines, parallel within the parameter.
#include <cmath>
#include <limits>
#include <vector>

#include "../kernels/cpu/parallel.h"
#include "functions.h"
#include "optimizer_common.h"

namespace flow {
namespace {

// Sums f(line) over [0, lines) in parallel, in double.
template <typename F>
double parallel_sum(int64_t lines, F f) {
  const int64_t nt = std::max<int64_t>(1, std::min<int64_t>(get_num_threads(), lines));
  std::vector<double> part(static_cast<size_t>(nt), 0.0);
  parallel_for(nt, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t)
      for (int64_t l = lines * t / nt; l < lines * (t + 1) / nt; ++l) part[static_cast<size_t>(t)] += f(l);
  });
  double s = 0;
  for (double v : part) s += v;
  return s;
}

struct Options {
  double lr, beta2_decay, eps1, eps2, d, weight_decay;
  bool maximize, eps1_given;
};

// One parameter (any floating T): w and g have n = lines * C elements, viewed as (B, R, C) with lines = B * R;
// rv (B, R) and cv (B, C) are the factors (factored), or v (n) the full second moment.
template <typename T>
void adafactor_one(T* w, const T* gr, T* rv, T* cv, T* v, int64_t B, int64_t R, int64_t C, double step,
                   const Options& o) {
  using A = acc_t<T>;
  const int64_t n = B * R * C, lines = B * R;
  const bool factored = v == nullptr;
  const double eps1 = o.eps1_given ? o.eps1 : static_cast<double>(std::numeric_limits<T>::epsilon());
  const double sign = o.maximize ? -1.0 : 1.0;
  const double one_minus_beta2 = std::pow(step, o.beta2_decay);
  const double rho = std::min(o.lr, 1.0 / std::sqrt(step));
  // alpha from the parameter's RMS before weight decay
  const double sq = parallel_sum(lines, [&](int64_t l) {
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += double(A(w[l * C + c])) * double(A(w[l * C + c]));
    return s;
  });
  const double alpha = std::max(o.eps2, std::sqrt(sq) / std::sqrt(static_cast<double>(n))) * rho;
  if (o.weight_decay != 0) {
    const A keep = static_cast<A>(1 - o.lr * o.weight_decay);
    parallel_for(n, 16384, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) w[i] = static_cast<T>(A(w[i]) * keep);
    });
  }
  auto lerp = [one_minus_beta2](T& s, double target) {
    s = static_cast<T>(A(s) + A(one_minus_beta2 * (target - double(A(s)))));
  };
  // row_mean = mean over the last dim of g^2; col_mean = mean over the rows
  std::vector<double> row_scale(static_cast<size_t>(B), 1.0);  // 1 / max(mean of rv over rows, eps1)
  if (factored) {
    parallel_for(lines, 16, [&](int64_t l0, int64_t l1) {
      for (int64_t l = l0; l < l1; ++l) {
        double s = 0;
        for (int64_t c = 0; c < C; ++c) s += double(A(gr[l * C + c])) * double(A(gr[l * C + c]));
        lerp(rv[l], s / C);
      }
    });
    parallel_for(B * C, 64, [&](int64_t q0, int64_t q1) {
      for (int64_t q = q0; q < q1; ++q) {
        const int64_t b = q / C, c = q % C;
        double s = 0;
        for (int64_t r = 0; r < R; ++r) {
          const double x = double(A(gr[(b * R + r) * C + c]));
          s += x * x;
        }
        lerp(cv[q], s / R);
      }
    });
    for (int64_t b = 0; b < B; ++b) {
      double s = 0;
      for (int64_t r = 0; r < R; ++r) s += double(A(rv[b * R + r]));
      row_scale[static_cast<size_t>(b)] = 1.0 / std::max(s / R, eps1);
    }
  } else {
    parallel_for(n, 16384, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) lerp(v[i], double(A(gr[i])) * double(A(gr[i])));
    });
  }
  // update = g / sqrt(max(var_estimate, eps1^2)), clipped by its RMS relative to d
  const double eps1_sq = eps1 * eps1;
  auto update_at = [&](int64_t l, int64_t c) {
    const int64_t i = l * C + c;
    double var = factored ? double(A(rv[l])) * double(A(cv[(l / R) * C + c])) * row_scale[static_cast<size_t>(l / R)]
                          : double(A(v[i]));
    return sign * double(A(gr[i])) / std::sqrt(std::max(var, eps1_sq));
  };
  const double usq = parallel_sum(lines, [&](int64_t l) {
    double s = 0;
    for (int64_t c = 0; c < C; ++c) {
      const double u = update_at(l, c);
      s += u * u;
    }
    return s;
  });
  const double denom = std::max(1.0, std::sqrt(usq) / (std::sqrt(static_cast<double>(n)) * o.d));
  const double scale = -alpha / denom;
  parallel_for(lines, 16, [&](int64_t l0, int64_t l1) {
    for (int64_t l = l0; l < l1; ++l)
      for (int64_t c = 0; c < C; ++c) w[l * C + c] = static_cast<T>(A(w[l * C + c]) + A(scale * update_at(l, c)));
  });
}

}  // namespace

// Adafactor: row_vars holds a matrix parameter's per-row factor (or a vector's full variance), col_vars its
// per-column factor (an empty tensor for a vector).
FLOW_OP(adafactor_update_)
    .schema(
        "adafactor_update_(Tensor[] params, Tensor[] grads, Tensor[] row_vars, Tensor[] col_vars, "
        "Tensor[] steps, Tensor lr, *, float beta2_decay=-0.8, float? eps1=None, float eps2=0.001, "
        "float d=1.0, float weight_decay=0, bool maximize=False) -> Tensor[]")
    .traits(kOptimizer | kNonDifferentiable)
    .meta(optim::no_output_meta)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      using optim::Role;
      const char* op = "adafactor_update_";
      // the factors' sizes are checked below, before begin_update bumps any step counter
      const std::vector<InputSpan> lists = split_inputs(in, a);
      for (size_t p = 0; p < lists[0].size() && p < lists[2].size() && p < lists[3].size(); ++p) {
        const Tensor &w = lists[0][p], &s1 = lists[2][p], &s2 = lists[3][p];
        if (!w.defined() || !s1.defined() || !s2.defined()) continue;  // begin_update names the None
        if (w.dim() > 1) {
          const int64_t R = w.size(-2), C = w.size(-1), B = w.numel() / std::max<int64_t>(1, R * C);
          FLOW_RUNTIME_CHECK(s1.numel() == B * R && s2.numel() == B * C, op, ": row_vars[", p, "] / col_vars[", p,
                             "] do not match the shape ", shape_str(w.sizes()), " of params[", p, "]");
        } else {
          FLOW_RUNTIME_CHECK(s1.numel() == w.numel(), op, ": row_vars[", p,
                             "] (the variance) does not match the "
                             "shape ",
                             shape_str(w.sizes()), " of params[", p, "]");
        }
      }
      optim::Update u = optim::begin_update(in, a, {Role::Param, Role::Grad, Role::Shaped, Role::Shaped, Role::Step});
      const optim::Group& g = u.g;
      Options o{u.lr,
                a.f("beta2_decay"),
                a.none("eps1") ? 0.0 : a.f("eps1"),
                a.f("eps2"),
                a.f("d"),
                a.f("weight_decay"),
                a.b("maximize"),
                !a.none("eps1")};
      for (int64_t p = 0; p < g.size(); ++p) {
        const Tensor &w = g.at(p, 0), &gr = g.at(p, 1), &s1 = g.at(p, 2), &s2 = g.at(p, 3);
        if (w.numel() == 0) continue;
        const bool factored = w.dim() > 1;
        const int64_t C = factored ? w.size(-1) : w.numel(), R = factored ? w.size(-2) : 1;
        const int64_t B = factored ? w.numel() / (R * C) : 1;
        dispatch_floating(w.dtype(), op, [&](auto tag) {
          using T = typename decltype(tag)::type;
          adafactor_one<T>(w.data<T>(), gr.data<T>(), factored ? s1.data<T>() : nullptr,
                           factored ? s2.data<T>() : nullptr, factored ? nullptr : s1.data<T>(), B, R, C, u.steps[p],
                           o);
        });
      }
      g.finish();
      return optim::no_outputs();
    });

}  // namespace flow
