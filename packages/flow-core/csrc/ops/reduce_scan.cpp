// Scans along a dim: cumsum, cumprod, with their backward helpers.
#include "../autograd/grad_mode.h"
#include "reduce.h"

namespace flow {
namespace {

DType scan_dtype(const Tensor& t, const Attrs& a) {
  if (!a.none("dtype")) return a.dtype("dtype");
  return is_floating(t.dtype()) ? t.dtype() : DType::Int64;
}

int64_t scan_dim(const Tensor& t, const Attrs& a, const char* op) { return wrap_dim(a.i("dim"), t.dim(), op); }

template <bool Prod, bool Reverse>
void scan_kernel(const Tensor& in, const Tensor& out, int64_t dim, const char* op) {
  Tensor src = cast_for_kernel(in, out.dtype());
  dispatch_all(out.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = std::conditional_t<std::is_same_v<T, bool>, int64_t, acc_t<T>>;
    for_each_line<T>(src, Tensor(), out, dim, [](const T* x, const T*, T* y, int64_t n) {
      A acc = Prod ? A(1) : A(0);
      for (int64_t k = 0; k < n; ++k) {
        int64_t i = Reverse ? n - 1 - k : k;
        acc = Prod ? static_cast<A>(acc * static_cast<A>(x[i])) : static_cast<A>(acc + static_cast<A>(x[i]));
        y[i] = static_cast<T>(acc);
      }
    });
  });
}

std::vector<TensorMeta> scan_meta(const TensorList& in, const Attrs& a, const char* op) {
  scan_dim(in[0], a, op);
  return {{in[0].sizes(), scan_dtype(in[0], a), in[0].device()}};
}

Tensor reverse_cumsum(const Tensor& g, int64_t dim) { return ops::call1("_cumsum_reverse", {g}, {dim}); }

bool any_zero(const Tensor& t) {
  Tensor c = contiguous_copy(t);
  bool z = false;
  dispatch_all(c.dtype(), "cumprod", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* x = c.data<T>();
    for (int64_t i = 0; i < c.numel() && !z; ++i) z = static_cast<acc_t<T>>(x[i]) == acc_t<T>(0);
  });
  return z;
}

// log(sum(exp(x))) over a running prefix (or suffix): one logaddexp step per element, so no exp of a large
// value overflows and a tiny term far below the running maximum keeps its own value.
template <bool Reverse>
void logcumsumexp_kernel(const Tensor& in, const Tensor& out, int64_t dim) {
  Tensor src = cast_for_kernel(in, out.dtype());
  dispatch_floating(out.dtype(), "logcumsumexp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    for_each_line<T>(src, Tensor(), out, dim, [](const T* x, const T*, T* y, int64_t n) {
      A acc = -std::numeric_limits<A>::infinity();
      for (int64_t k = 0; k < n; ++k) {
        int64_t i = Reverse ? n - 1 - k : k;
        A v = static_cast<A>(x[i]);
        A hi = std::max(acc, v), lo = std::min(acc, v);
        constexpr A kInf = std::numeric_limits<A>::infinity();
        if (v != v || acc != acc) acc = std::numeric_limits<A>::quiet_NaN();
        else if (hi == -kInf || hi == kInf) acc = hi;  // all -inf so far, or an inf: lo - hi would be NaN
        else acc = hi + std::log1p(std::exp(lo - hi));
        y[i] = static_cast<T>(acc);
      }
    });
  });
}

std::vector<TensorMeta> logcumsumexp_meta(const TensorList& in, const Attrs& a) {
  if (!is_floating(in[0].dtype())) fail_not_implemented("logcumsumexp_out_cpu", in[0].dtype());
  wrap_dim(a.i("dim"), in[0].dim(), "logcumsumexp");
  return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
}

// Gradient of a forward (or, with `reverse`, backward) logcumsumexp: d out_i / d x_j = exp(x_j - out_i) for
// the j the scan at i covers, so g is summed by the opposite scan in log space, its positive and negative
// parts apart, without ever forming exp(x) or exp(-out) alone (TensorFlow's formulation, as in torch).
Tensor logcumsumexp_grad(const Tensor& x, const Tensor& out, const Tensor& g, int64_t dim, bool reverse) {
  const char* opposite = reverse ? "logcumsumexp" : "_logcumsumexp_reverse";
  // "no term" is the dtype's lowest finite value, not -inf: the scans' own gradients take differences of
  // these logs, and -inf - -inf would be NaN
  double lowest = g.dtype() == DType::Float64 ? std::numeric_limits<double>::lowest()
                                              : static_cast<double>(std::numeric_limits<float>::lowest());
  Tensor none = ops::scalar_tensor(Scalar(lowest), g.dtype());
  Tensor zero = ops::scalar_tensor(Scalar(0.0), g.dtype());
  auto part = [&](const Tensor& mask, const Tensor& mag) {
    Tensor lg = ops::where(mask, ops::call1("log", {mag}), none);
    return ops::call1("exp", {ops::add(ops::call1(opposite, {ops::sub(lg, out)}, {dim}), x)});
  };
  return ops::sub(part(ops::call1("gt", {g, zero}), g), part(ops::call1("lt", {g, zero}), ops::neg(g)));
}

}  // namespace

FLOW_OP(logcumsumexp)
    .schema("logcumsumexp(Tensor self, int dim) -> Tensor")
    .traits(kScan)
    .dims_attr("dim")
    .meta(logcumsumexp_meta)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      if (out[0].numel()) logcumsumexp_kernel<false>(in[0], out[0], wrap_dim(a.i("dim"), in[0].dim(), "logcumsumexp"));
    })
    .save_inputs({0})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {logcumsumexp_grad(c.input(0), c.output(0), g[0], c.attrs.i("dim"), false)};
    });

// logcumsumexp from the end of the dim backwards: the reverse scan its gradient needs (and whose gradient
// needs the forward scan, so double backward works through the pair).
FLOW_OP(_logcumsumexp_reverse)
    .schema("_logcumsumexp_reverse(Tensor self, int dim) -> Tensor")
    .traits(kBackwardHelper)
    .meta(logcumsumexp_meta)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      if (out[0].numel()) logcumsumexp_kernel<true>(in[0], out[0], wrap_dim(a.i("dim"), in[0].dim(), "logcumsumexp"));
    })
    .save_inputs({0})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {logcumsumexp_grad(c.input(0), c.output(0), g[0], c.attrs.i("dim"), true)};
    });

FLOW_OP(cumsum)
    .schema("cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor")
    .traits(kScan)
    .combiner(Combiner::Sum)
    .dims_attr("dim")
    .meta([](const TensorList& in, const Attrs& a) { return scan_meta(in, a, "cumsum"); })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      scan_kernel<false, false>(in[0], out[0], scan_dim(in[0], a, "cumsum"), "cumsum");
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {reverse_cumsum(g[0], c.attrs.i("dim"))};
    });

// Sums from the end of the dim backwards: cumsum's gradient (and cumsum is its gradient).
FLOW_OP(_cumsum_reverse)
    .schema("_cumsum_reverse(Tensor self, int dim) -> Tensor")
    .traits(kBackwardHelper)
    .meta([](const TensorList& in, const Attrs& a) {
      wrap_dim(a.i("dim"), in[0].dim(), "cumsum");
      return std::vector<TensorMeta>{{in[0].sizes(), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      scan_kernel<false, true>(in[0], out[0], wrap_dim(a.i("dim"), in[0].dim(), "cumsum"), "cumsum");
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("cumsum", {g[0]}, {c.attrs.i("dim")})};
    });

FLOW_OP(cumprod)
    .schema("cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor")
    .traits(kScan)
    .combiner(Combiner::Prod)
    .dims_attr("dim")
    .meta([](const TensorList& in, const Attrs& a) { return scan_meta(in, a, "cumprod"); })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      scan_kernel<true, false>(in[0], out[0], scan_dim(in[0], a, "cumprod"), "cumprod");
    })
    .save_inputs({0})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor x = c.input(0);
      int64_t dim = x.dim() == 0 ? 0 : wrap_dim(c.attrs.i("dim"), x.dim(), "cumprod");
      if (x.numel() == 0) return {ops::zeros_like(x)};
      Tensor xc = ops::to_dtype(x, g[0].dtype());
      if (!any_zero(x)) return {ops::div(reverse_cumsum(ops::mul(g[0], c.output(0)), dim), xc)};
      if (autograd::GradMode::is_enabled())  // create_graph: keep the gradient differentiable
        return {ops::cumprod_backward_differentiable(g[0], xc, dim)};
      return {ops::call1("_cumprod_backward", {g[0], xc}, {dim})};
    });

// cumprod's gradient, exact when lines contain zeros. Per line with first zero at z:
//   k < z: sum_{k<=i<z} g_i out_i / x_k;  k == z: sum_{i>=z} g_i prod_{j<=i, j!=z} x_j;  k > z: 0.
FLOW_OP(_cumprod_backward)
    .schema("_cumprod_backward(Tensor grad, Tensor self, int dim) -> Tensor")
    .traits(kBackwardHelper)
    .meta([](const TensorList& in, const Attrs&) {
      return std::vector<TensorMeta>{{in[1].sizes(), in[1].dtype(), in[1].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      const Tensor& x = in[1];
      int64_t dim = x.dim() == 0 ? 0 : wrap_dim(a.i("dim"), x.dim(), "cumprod");
      Tensor g = cast_for_kernel(in[0], x.dtype());
      dispatch_floating(x.dtype(), "cumprod backward", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        for_each_line<T>(x, g, out[0], dim, [](const T* xs, const T* gs, T* y, int64_t n) {
          int64_t z = 0;
          while (z < n && static_cast<A>(xs[z]) != A(0)) ++z;
          A prefix = 1;  // prod_{j<z} x_j
          for (int64_t i = 0; i < z; ++i) prefix *= static_cast<A>(xs[i]);
          // k < z: suffix sums of g_i * out_i over i < z
          A suffix = 0;
          std::vector<A> outv(z);
          A p = 1;
          for (int64_t i = 0; i < z; ++i) {
            p *= static_cast<A>(xs[i]);
            outv[i] = p;
          }
          for (int64_t k = z - 1; k >= 0; --k) {
            suffix += static_cast<A>(gs[k]) * outv[k];
            y[k] = static_cast<T>(suffix / static_cast<A>(xs[k]));
          }
          if (z < n) {
            A acc = 0, r = prefix;
            for (int64_t i = z; i < n; ++i) {
              if (i > z) r *= static_cast<A>(xs[i]);
              acc += static_cast<A>(gs[i]) * r;
            }
            y[z] = static_cast<T>(acc);
            for (int64_t k = z + 1; k < n; ++k) y[k] = T(0);
          }
        });
      });
    })
    .backward([](BackwardCtx&, const TensorList&) -> TensorList {
      // cumprod's backward uses this helper only with grad mode off (plain backward)
      fail(ErrorKind::NotImplemented,
           "_cumprod_backward: not differentiable; differentiate cumprod with create_graph=True");
    });

namespace ops {
Tensor cumsum(const Tensor& t, int64_t dim) { return call1("cumsum", {t}, {dim}); }
}  // namespace ops

}  // namespace flow
