// Statistical reductions: var/std (+ _mean variants), linalg_vector_norm, logsumexp, and the pointwise
// helpers their backward formulas are written with (each closed under differentiation).
#include <cmath>

#include "reduce.h"
#include "unary_vec.h"

namespace flow {
namespace {

// Per group: chunk(x, n) -> partial P over n contiguous elements; merge(P, P) -> P; fin(P) -> output value.
// cols(x, R, ld, n, P* parts) gives the partials of n adjacent columns of R rows (row stride ld) at once.
// Rows are split into chunks (merged in order) when there are too few of them to keep the threads busy.
template <typename T, typename P, typename Chunk, typename Cols, typename Merge, typename Fin, typename O>
void reduce_partials(const ReducePlan& p, O* out, Chunk chunk, Cols cols, Merge merge, Fin fin) {
  const int64_t outer = p.outer, R = p.R;
  if (outer == 0) return;
  const T* x = R == 0 ? nullptr : p.src.template data<T>();
  const int nt = get_num_threads();
  if (!p.columns || R == 0) {
    if (nt > 1 && outer < 2 * nt && outer * R > kParallelGrain) {
      int64_t nc = std::max<int64_t>(1, std::min<int64_t>((2 * nt + outer - 1) / outer, R / (kParallelGrain / 4)));
      int64_t len = (R + nc - 1) / nc;
      nc = (R + len - 1) / len;
      std::vector<P> part(outer * nc);
      parallel_for(outer * nc, 1, [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c) {
          int64_t j = c / nc, s = (c % nc) * len;
          part[c] = chunk(x + j * R + s, std::min(R, s + len) - s);
        }
      });
      for (int64_t j = 0; j < outer; ++j) {
        P acc = part[j * nc];
        for (int64_t k = 1; k < nc; ++k) acc = merge(acc, part[j * nc + k]);
        out[j] = static_cast<O>(fin(acc));
      }
      return;
    }
    parallel_for(outer, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(R, 1)), [&](int64_t b, int64_t e) {
      for (int64_t j = b; j < e; ++j) out[j] = static_cast<O>(fin(chunk(x ? x + j * R : x, R)));
    });
    return;
  }
  const int64_t inner = p.inner;
  constexpr int64_t kTile = 512;
  const int64_t tiles = (inner + kTile - 1) / kTile;
  parallel_for(p.blocks * tiles, std::max<int64_t>(1, kParallelGrain / (R * std::min(inner, kTile))),
               [&](int64_t b, int64_t e) {
    std::vector<P> parts(std::min(inner, kTile));
    for (int64_t t = b; t < e; ++t) {
      int64_t blk = t / tiles, j0 = (t % tiles) * kTile, n = std::min(inner, j0 + kTile) - j0;
      cols(x + blk * R * inner + j0, R, inner, n, parts.data());
      for (int64_t j = 0; j < n; ++j) out[blk * inner + j0 + j] = static_cast<O>(fin(parts[j]));
    }
  });
}

// ---- var / std ----------------------------------------------------------------------------------------
template <typename A>
struct Moments {
  A n = 0, mean = 0, m2 = 0;
};

template <typename T, typename A>
Moments<A> moments(const T* x, int64_t n) {
  Moments<A> m;
  if (n == 0) return m;
  A s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += static_cast<A>(static_cast<acc_t<T>>(x[i]));
  m.n = static_cast<A>(n);
  m.mean = s / m.n;
  A q = 0, c = 0;
  const A mean = m.mean;
#pragma omp simd reduction(+ : q, c)
  for (int64_t i = 0; i < n; ++i) {
    A d = static_cast<A>(static_cast<acc_t<T>>(x[i])) - mean;
    q += d * d;
    c += d;
  }
  m.m2 = q - c * c / m.n;  // corrected two-pass
  return m;
}

// Moments of n adjacent columns (R rows, row stride ld), two passes down the rows.
template <typename T, typename A>
void moments_cols(const T* x, int64_t R, int64_t ld, int64_t n, Moments<A>* out) {
  std::vector<A> s(n, A(0)), q(n, A(0)), c(n, A(0));
  for (int64_t r = 0; r < R; ++r) {
    const T* row = x + r * ld;
    A* sp = s.data();
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) sp[j] += static_cast<A>(static_cast<acc_t<T>>(row[j]));
  }
  for (int64_t j = 0; j < n; ++j) s[j] /= static_cast<A>(R);
  for (int64_t r = 0; r < R; ++r) {
    const T* row = x + r * ld;
    A *sp = s.data(), *qp = q.data(), *cp = c.data();
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) {
      A d = static_cast<A>(static_cast<acc_t<T>>(row[j])) - sp[j];
      qp[j] += d * d;
      cp[j] += d;
    }
  }
  for (int64_t j = 0; j < n; ++j) out[j] = {static_cast<A>(R), s[j], q[j] - c[j] * c[j] / static_cast<A>(R)};
}

template <typename A>
Moments<A> merge_moments(const Moments<A>& a, const Moments<A>& b) {
  if (a.n == 0) return b;
  if (b.n == 0) return a;
  Moments<A> r;
  r.n = a.n + b.n;
  A delta = b.mean - a.mean;
  r.mean = a.mean + delta * b.n / r.n;
  r.m2 = a.m2 + b.m2 + delta * delta * a.n * b.n / r.n;
  return r;
}

double correction_of(const Attrs& a) { return a.none("correction") ? 1.0 : a.f("correction"); }

void check_var_dtype(const Tensor& t) {
  FLOW_RUNTIME_CHECK(is_floating(t.dtype()), "std and var only support floating point and complex dtypes");
}

// Writes var (or std) into out0 and, when given, the mean into out1.
void var_kernel(const Tensor& in, const Tensor& out0, const Tensor* out1, const Attrs& a, bool take_sqrt,
                const char* op) {
  check_var_dtype(in);
  ReducePlan p = plan_reduction(in, reduce_mask(in, dims_attr(a, "dim"), op));
  const double corr = correction_of(a);
  Tensor o0 = contiguous_copy(out0).is_same(out0) ? out0 : empty(out0.sizes(), out0.dtype(), out0.device());
  Tensor o1;
  if (out1) o1 = out1->is_contiguous() ? *out1 : empty(out1->sizes(), out1->dtype(), out1->device());
  dispatch_floating(in.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = double;  // accumulate in double
    using M = Moments<A>;
    std::vector<M> mom(p.outer);
    // lambdas, not function pointers: the column pass then runs as the CPU's kernel variant (cpu_isa.h)
    reduce_partials<T, M>(p, mom.data(), [](const T* x, int64_t n) { return moments<T, A>(x, n); },
                          [](const T* x, int64_t R, int64_t ld, int64_t n, M* out) {
      moments_cols<T, A>(x, R, ld, n, out);
    }, merge_moments<A>, [](const M& m) { return m; });
    T* y0 = o0.data<T>();
    T* y1 = out1 ? o1.data<T>() : nullptr;
    for (int64_t j = 0; j < p.outer; ++j) {
      A dof = std::max<A>(A(0), mom[j].n - static_cast<A>(corr));
      A v = mom[j].m2 / dof;
      y0[j] = static_cast<T>(take_sqrt ? std::sqrt(v) : v);
      if (y1) y1[j] = static_cast<T>(mom[j].n == 0 ? std::numeric_limits<A>::quiet_NaN() : mom[j].mean);
    }
  });
  if (!o0.is_same(out0)) ops::copy_into(out0, o0);
  if (out1 && !o1.is_same(*out1)) ops::copy_into(*out1, o1);
}

std::vector<TensorMeta> var_meta(const TensorList& in, const Attrs& a, int nout, const char* op) {
  check_var_dtype(in[0]);
  auto m = meta_reduce(in[0], dims_attr(a, "dim"), a.b("keepdim"), in[0].dtype(), op);
  if (nout == 2) m.push_back(m[0]);
  return m;
}

// d var / dx * gv, gv in keepdim form.
Tensor var_backward(const Tensor& gv, const Tensor& x, const std::vector<int64_t>& dims, double corr, int64_t n) {
  Tensor mean = ops::mean(x, dims, true);
  return ops::mul(ops::mul(gv, ops::sub(x, mean)), ops::wrapped_scalar(Scalar(2.0 / (static_cast<double>(n) - corr))));
}

Tensor safe_div(const Tensor& a, const Tensor& b) { return ops::call1("_reduce_safe_div", {a, b}); }
Tensor sign_of(const Tensor& x) { return ops::call1("_reduce_sign", {x}); }
Tensor abs_pow(const Tensor& x, double p) { return ops::call1("_reduce_abs_pow", {x}, {p}); }

// Gradient of var/std (and of the mean output of the _mean variants).
TensorList var_std_backward(BackwardCtx& c, const TensorList& g, bool is_std, bool has_mean, const char* op) {
  Tensor x = c.input(0);
  const Shape& s = x.sizes();
  auto dims = dims_attr(c.attrs, "dim");
  auto mask = mask_for_sizes(s, dims, op);
  bool keepdim = c.attrs.b("keepdim");
  int64_t n = reduced_count(s, mask);
  std::vector<int64_t> all_dims;
  for (size_t d = 0; d < mask.size(); ++d)
    if (mask[d]) all_dims.push_back(static_cast<int64_t>(d));
  Tensor grad;
  if (g[0].defined()) {
    Tensor gk = restore_reduced(g[0], s, mask, keepdim, false);
    if (is_std) {
      Tensor rk = restore_reduced(c.output(0), s, mask, keepdim, false);
      gk = safe_div(gk, ops::mul(rk, Scalar(2.0)));
    }
    grad = var_backward(gk, x, all_dims, correction_of(c.attrs), n);
  }
  if (has_mean && g.size() > 1 && g[1].defined()) {
    Tensor gm = ops::div(restore_reduced(g[1], s, mask, keepdim, true), ops::wrapped_scalar(Scalar(double(n))));
    grad = grad.defined() ? ops::add(grad, gm) : gm;
  }
  return {grad.defined() ? grad : ops::zeros_like(x)};
}

}  // namespace

#define FLOW_VAR_OP(NAME, SQRT, NOUT, RET)                                                                   \
  FLOW_OP(NAME)                                                                                              \
      .schema(#NAME "(Tensor self, int[]? dim=None, *, float? correction=None, bool keepdim=False) -> " RET) \
      .traits(kReduction)                                                                                    \
      .dims_attr("dim")                                                                                      \
      .meta([](const TensorList& in, const Attrs& a) { return var_meta(in, a, NOUT, #NAME); })               \
      .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {                             \
    var_kernel(in[0], out[0], NOUT == 2 ? &out[1] : nullptr, a, SQRT, #NAME);                                \
  })                                                                                                         \
      .save_inputs({0})                                                                                      \
      .save_outputs({0})                                                                                     \
      .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {                                      \
    return var_std_backward(c, g, SQRT, NOUT == 2, #NAME);                                                   \
  });

FLOW_VAR_OP(var, false, 1, "Tensor")
FLOW_VAR_OP(std, true, 1, "Tensor")
FLOW_VAR_OP(var_mean, false, 2, "(Tensor, Tensor)")
FLOW_VAR_OP(std_mean, true, 2, "(Tensor, Tensor)")

// ---- linalg_vector_norm -------------------------------------------------------------------------------
namespace {

DType norm_dtype(const Tensor& t, const Attrs& a) {
  FLOW_RUNTIME_CHECK(is_floating(t.dtype()),
                     "linalg.vector_norm: Expected a floating point or complex tensor as "
                     "input. Got ",
                     dtype_name(t.dtype()));
  if (a.none("dtype")) return t.dtype();
  DType d = a.dtype("dtype");
  FLOW_RUNTIME_CHECK(is_floating(d), "linalg.vector_norm: dtype should be floating point or complex. Got ",
                     dtype_name(d));
  return d;
}

void check_norm_empty(const Tensor& t, const std::vector<bool>& mask, double ord) {
  if (t.numel() != 0 || (ord >= 0 && !std::isinf(ord))) return;
  for (int64_t d = 0; d < t.dim(); ++d)
    FLOW_RUNTIME_CHECK(!(mask[d] && t.sizes()[d] == 0), "linalg.vector_norm cannot compute the ", ord,
                       " norm on an empty tensor because the operation does not have an identity");
}

template <typename A>
inline A amax_nan(A acc, A x) {
  return (x > acc || x != x) ? x : acc;
}  // NaN-propagating, branch-free
template <typename A>
inline A amin_nan(A acc, A x) {
  return (x < acc || x != x) ? x : acc;
}

}  // namespace

FLOW_OP(linalg_vector_norm)
    .schema(
        "linalg_vector_norm(Tensor self, float ord=2, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) "
        "-> Tensor")
    .traits(kReduction)
    .dims_attr("dim")
    .meta([](const TensorList& in, const Attrs& a) {
      DType dt = norm_dtype(in[0], a);
      auto m = reduce_mask(in[0], dims_attr(a, "dim"), "linalg.vector_norm");
      check_norm_empty(in[0], m, a.f("ord"));
      return std::vector<TensorMeta>{{reduced_sizes(in[0].sizes(), m, a.b("keepdim")), dt, in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      DType dt = norm_dtype(in[0], a);
      const double ord = a.f("ord");
      Tensor src = cast_for_kernel(in[0], dt);
      auto m = reduce_mask(src, dims_attr(a, "dim"), "linalg.vector_norm");
      check_norm_empty(src, m, ord);
      ReducePlan p = plan_reduction(src, m);
      Tensor o = out[0].is_contiguous() && out[0].dtype() == dt ? out[0] : empty(out[0].sizes(), dt, out[0].device());
      dispatch_floating(dt, "linalg.vector_norm", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        T* y = o.data<T>();
        auto add = [](A x, A y) { return x + y; };
        auto id = [](A v, int64_t) { return v; };
        if (ord == 2.0) {
          reduce_plan<T, A>(p, y, A(0), [](A acc, A x) { return acc + x * x; }, add,
                            [](A v, int64_t) { return std::sqrt(v); });
        } else if (ord == 1.0) {
          reduce_plan<T, A>(p, y, A(0), [](A acc, A x) { return acc + std::abs(x); }, add, id);
        } else if (ord == 0.0) {
          reduce_plan<T, A>(p, y, A(0), [](A acc, A x) { return acc + static_cast<A>(x != A(0)); }, add, id);
        } else if (std::isinf(ord) && ord > 0) {
          auto f = [](A acc, A x) { return amax_nan<A>(acc, std::abs(x)); };
          reduce_plan<T, A>(p, y, A(0), f, [](A x, A y) { return amax_nan<A>(x, y); }, id);
        } else if (std::isinf(ord)) {
          auto f = [](A acc, A x) { return amin_nan<A>(acc, std::abs(x)); };
          reduce_plan<T, A>(p, y, std::numeric_limits<A>::infinity(), f, [](A x, A y) { return amin_nan<A>(x, y); },
                            id);
        } else {
          const A pa = static_cast<A>(ord), inv = static_cast<A>(1.0 / ord);
          reduce_plan<T, A>(p, y, A(0), [pa](A acc, A x) { return acc + std::pow(std::abs(x), pa); }, add,
                            [inv](A v, int64_t) { return std::pow(v, inv); });
        }
      });
      if (!o.is_same(out[0])) ops::copy_into(out[0], o);
    })
    .save_inputs({0})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor x = c.input(0);
      const double p = c.attrs.f("ord");
      const Shape& s = x.sizes();
      auto mask = mask_for_sizes(s, dims_attr(c.attrs, "dim"), "linalg.vector_norm");
      bool keepdim = c.attrs.b("keepdim");
      Tensor gk = restore_reduced(g[0], s, mask, keepdim, false);
      Tensor rk = restore_reduced(c.output(0), s, mask, keepdim, false);
      if (p == 0.0) return {ops::zeros_like(x)};
      if (p == 1.0) return {ops::mul(sign_of(x), gk)};
      if (p == 2.0) return {ops::mul(x, safe_div(gk, rk))};
      if (std::isinf(p)) {
        // like amax(abs(x)): shared evenly among the elements attaining the norm (NaNs included)
        Tensor m = ops::call1("_reduce_eq_mask", {abs_pow(x, 1.0), rk}, {true});
        std::vector<int64_t> dims;
        for (size_t d = 0; d < mask.size(); ++d)
          if (mask[d]) dims.push_back(static_cast<int64_t>(d));
        Tensor count = dims.empty() ? m : ops::sum(m, dims, true);
        return {ops::mul(sign_of(x), ops::mul(ops::div(gk, count), m))};
      }
      Tensor scaled = ops::mul(sign_of(x), abs_pow(x, p - 1));
      if (p < 1.0) return {ops::mul(ops::mul(scaled, gk), abs_pow(rk, 1 - p))};
      return {ops::mul(scaled, safe_div(gk, abs_pow(rk, p - 1)))};
    });

// ---- logsumexp ----------------------------------------------------------------------------------------
namespace {

template <typename A>
struct MaxSum {
  A m = -std::numeric_limits<A>::infinity();
  A s = 0;
};

}  // namespace

FLOW_OP(logsumexp)
    .schema("logsumexp(Tensor self, int[] dim, bool keepdim=False) -> Tensor")
    .traits(kReduction)
    .dims_attr("dim")
    .meta([](const TensorList& in, const Attrs& a) {
      DType dt = is_floating(in[0].dtype()) ? in[0].dtype() : default_float_dtype();
      return meta_reduce(in[0], a.ints("dim"), a.b("keepdim"), dt, "logsumexp");
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      DType dt = out[0].dtype();
      Tensor src = cast_for_kernel(in[0], dt);
      ReducePlan p = plan_reduction(src, reduce_mask(src, a.ints("dim"), "logsumexp"));
      Tensor o = out[0].is_contiguous() ? out[0] : empty(out[0].sizes(), dt, out[0].device());
      dispatch_floating(dt, "logsumexp", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        using P = MaxSum<A>;
        // shift by the max for stability; an infinite max is not subtracted (inf - inf would be NaN)
        auto chunk = [](const T* x, int64_t n) {
          P r;
          const A m = vmax_nan<A>(x, n);
          r.m = m;
          if (m != m) return r;
          A s = 0;
          if (std::isinf(m)) {  // not shifted (inf - inf would be NaN); r.s is then the plain sum of exps
            for (int64_t i = 0; i < n; ++i) s += std::exp(static_cast<A>(x[i]));
            r.m = 0;
          } else {  // every x - m <= 0: the vectorised exp
#pragma omp simd reduction(+ : s)
            for (int64_t i = 0; i < n; ++i) s += vexp_nonpos<A>(static_cast<A>(x[i]) - m);
          }
          r.s = s;
          return r;
        };
        auto cols = [](const T* x, int64_t R, int64_t ld, int64_t n, P* parts) {
          std::vector<A> m(n, -std::numeric_limits<A>::infinity()), s(n, A(0));
          for (int64_t r = 0; r < R; ++r)
            for (int64_t j = 0; j < n; ++j) m[j] = amax_nan<A>(m[j], static_cast<A>(x[r * ld + j]));
          for (int64_t j = 0; j < n; ++j)
            if (std::isinf(m[j])) m[j] = 0;
          for (int64_t r = 0; r < R; ++r)  // a NaN max makes these NaN; an infinite one was replaced by 0
            for (int64_t j = 0; j < n; ++j) s[j] += std::exp(static_cast<A>(x[r * ld + j]) - m[j]);
          for (int64_t j = 0; j < n; ++j) parts[j] = P{m[j], s[j]};  // a NaN max makes s NaN too
        };
        auto merge = [](P a, P b) {
          if (a.m != a.m) return a;
          if (b.m != b.m) return b;
          if (a.s == 0) return b;
          if (b.s == 0) return a;
          P r;
          r.m = std::max(a.m, b.m);
          r.s = a.s * std::exp(a.m - r.m) + b.s * std::exp(b.m - r.m);
          return r;
        };
        reduce_partials<T, P>(p, o.data<T>(), chunk, cols, merge,
                              [](P r) { return r.m != r.m ? r.m : r.m + std::log(r.s); });
      });
      if (!o.is_same(out[0])) ops::copy_into(out[0], o);
    })
    .save_inputs({0})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor x = c.input(0);
      const Shape& s = x.sizes();
      auto mask = mask_for_sizes(s, c.attrs.ints("dim"), "logsumexp");
      Tensor gk = restore_reduced(g[0], s, mask, c.attrs.b("keepdim"), false);
      Tensor rk = restore_reduced(c.output(0), s, mask, c.attrs.b("keepdim"), false);
      return {ops::mul(gk, ops::call1("exp", {ops::sub(x, rk)}))};
    });

// ---- pointwise helpers for the formulas above ---------------------------------------------------------
// a / b, and 0 where b == 0 (PyTorch's masked_fill(b == 0, 0) in norm/std backward).
FLOW_OP(_reduce_safe_div)
    .schema("_reduce_safe_div(Tensor self, Tensor other) -> Tensor")
    .traits(kBackwardHelper | kElementwise | kBroadcastBinary)
    .meta(meta_binary)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      DType ct = out[0].dtype();
      with_compute_dtype(in, out[0], ct, ct, [&](const Tensor& o, const TensorList& c) {
        dispatch_floating(ct, "_reduce_safe_div", [&](auto tag) {
          using T = typename decltype(tag)::type;
          using A = acc_t<T>;
          binary_loop<T, T>(o, c[0], c[1], [](A x, A y) { return y == A(0) ? A(0) : x / y; });
        });
      });
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor a = c.input(0), b = c.input(1);
      return {c.needs(0) ? safe_div(g[0], b) : Tensor(),
              c.needs(1) ? ops::neg(safe_div(ops::mul(g[0], a), ops::mul(b, b))) : Tensor()};
    });

// sign(x) in x's dtype (its derivative is zero almost everywhere: no gradient).
FLOW_OP(_reduce_sign)
    .schema("_reduce_sign(Tensor self) -> Tensor")
    .traits(kBackwardHelper | kElementwise | kNonDifferentiable)
    .meta(meta_unary_same)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      dispatch_floating(in[0].dtype(), "_reduce_sign", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        unary_loop<T, T>(out[0], in[0], [](A x) { return static_cast<A>((x > A(0)) - (x < A(0))); });
      });
    });

// |x|^p, with 0 where x == 0 and p <= 0 (the formulas multiply those entries by sign(0) = 0 or mask them).
FLOW_OP(_reduce_abs_pow)
    .schema("_reduce_abs_pow(Tensor self, float p) -> Tensor")
    .traits(kBackwardHelper | kElementwise)
    .meta(meta_unary_same)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      const double p = a.f("p");
      dispatch_floating(in[0].dtype(), "_reduce_abs_pow", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        const A pa = static_cast<A>(p);
        if (p == 1.0) unary_loop<T, T>(out[0], in[0], [](A x) { return std::abs(x); });
        else
          unary_loop<T, T>(out[0], in[0],
                           [pa](A x) { return x == A(0) && pa <= A(0) ? A(0) : std::pow(std::abs(x), pa); });
      });
    })
    .save_inputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor x = c.input(0);
      const double p = c.attrs.f("p");
      if (p == 0.0) return {ops::zeros_like(x)};
      Tensor d = p == 1.0 ? sign_of(x) : ops::mul(ops::mul(sign_of(x), abs_pow(x, p - 1)), Scalar(p));
      return {ops::mul(g[0], d)};
    });

namespace ops {
Tensor logsumexp(const Tensor& t, const std::vector<int64_t>& dims, bool keepdim) {
  return call1("logsumexp", {t}, {dims, keepdim});
}
Tensor var(const Tensor& t, const std::vector<int64_t>& dims, double correction, bool keepdim) {
  return call1("var", {t}, {dims, correction, keepdim});
}
Tensor vector_norm(const Tensor& t, double ord, const std::vector<int64_t>& dims, bool keepdim) {
  return call1("linalg_vector_norm", {t}, {ord, dims, keepdim});
}
}  // namespace ops

}  // namespace flow
