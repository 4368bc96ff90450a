// softmax / log_softmax along one dim, and their fused backward helpers (each with its own backward, so
// double backward works). Data are viewed as [outer, D, inner]; rows (inner == 1) and strided columns
// are handled by separate loops, both accumulating in acc_t (float for 16-bit floats, double for double).
#include <cmath>
#include <limits>

#include "../kernels/cpu/parallel.h"
#include "nnops_util.h"
#include "softmax_rows.h"
#include "unary_vec.h"

namespace flow {
namespace {

using nn::contig_as;

struct Geometry {
  int64_t outer = 1, D = 1, inner = 1;
};
Geometry geometry(const Shape& s, int64_t dim) {
  Geometry g;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    if (i < dim) g.outer *= s[i];
    else if (i == dim) g.D = s[i];
    else g.inner *= s[i];
  }
  return g;
}

constexpr int64_t kColBlock = 64;  // inner elements handled together in the strided layout

template <typename T, bool Log>
void softmax_fwd(const T* x, T* y, const Geometry& g) {
  using A = acc_t<T>;
  const int64_t D = g.D, inner = g.inner;
  if (D == 0) return;
  if (inner == 1) {
    parallel_for(g.outer, std::max<int64_t>(1, kParallelGrain / D), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* xr = x + o * D;
        T* yr = y + o * D;
        if constexpr (Log) {
          A mx, ls;
          softmax::log_normaliser<A>(xr, D, 1, mx, ls);
#pragma omp simd
          for (int64_t i = 0; i < D; ++i) yr[i] = static_cast<T>((static_cast<A>(xr[i]) - mx) - ls);
        } else {
          // contiguous rows: `omp simd` reductions and the vectorisable exp (unary_vec.h) for float
          A mx = vmax_nan<A>(xr, D);
          if (std::isinf(mx) && mx < 0) mx = 0;  // all -inf: keep exp(x - mx) = 0, sum 0 -> nan like torch
          A sum = 0;
          if constexpr (std::is_same_v<T, A>) {
#pragma omp simd reduction(+ : sum)
            for (int64_t i = 0; i < D; ++i) {
              A v = vexp_nonpos<A>(static_cast<A>(xr[i]) - mx);
              yr[i] = v;
              sum += v;
            }
            A inv = A(1) / sum;
#pragma omp simd
            for (int64_t i = 0; i < D; ++i) yr[i] *= inv;
          } else {
            // 16-bit outputs: recompute exp in acc_t rather than rounding twice
#pragma omp simd reduction(+ : sum)
            for (int64_t i = 0; i < D; ++i) sum += vexp_nonpos<A>(static_cast<A>(xr[i]) - mx);
            for (int64_t i = 0; i < D; ++i) yr[i] = static_cast<T>(vexp_nonpos<A>(static_cast<A>(xr[i]) - mx) / sum);
          }
        }
      }
    });
    return;
  }
  const int64_t nblk = (inner + kColBlock - 1) / kColBlock;
  parallel_for(g.outer * nblk, std::max<int64_t>(1, kParallelGrain / (D * kColBlock)), [&](int64_t b, int64_t e) {
    A mx[kColBlock], sum[kColBlock];
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / nblk, c0 = (t % nblk) * kColBlock, n = std::min(kColBlock, inner - c0);
      const T* xb = x + o * D * inner + c0;
      T* yb = y + o * D * inner + c0;
      for (int64_t j = 0; j < n; ++j) mx[j] = -std::numeric_limits<A>::infinity(), sum[j] = 0;
      for (int64_t i = 0; i < D; ++i)
        for (int64_t j = 0; j < n; ++j) mx[j] = std::max(mx[j], static_cast<A>(xb[i * inner + j]));
      for (int64_t j = 0; j < n; ++j)
        if (std::isinf(mx[j]) && mx[j] < 0) mx[j] = 0;
      for (int64_t i = 0; i < D; ++i)
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) sum[j] += vexp_nonpos<A>(static_cast<A>(xb[i * inner + j]) - mx[j]);
      if constexpr (Log) {
        for (int64_t j = 0; j < n; ++j) sum[j] = std::log(sum[j]);
        for (int64_t i = 0; i < D; ++i)
          for (int64_t j = 0; j < n; ++j)
            yb[i * inner + j] = static_cast<T>((static_cast<A>(xb[i * inner + j]) - mx[j]) - sum[j]);
      } else {
        for (int64_t i = 0; i < D; ++i)
#pragma omp simd
          for (int64_t j = 0; j < n; ++j)
            yb[i * inner + j] = static_cast<T>(vexp_nonpos<A>(static_cast<A>(xb[i * inner + j]) - mx[j]) / sum[j]);
      }
    }
  });
}

// softmax: gi = y * (g - sum(g * y));  log_softmax: gi = g - exp(y) * sum(g)
template <typename T, bool Log>
void softmax_bwd(const T* gr, const T* y, T* gi, const Geometry& g) {
  using A = acc_t<T>;
  const int64_t D = g.D, inner = g.inner;
  if (D == 0) return;
  if (inner == 1) {  // contiguous rows
    parallel_for(g.outer, std::max<int64_t>(1, kParallelGrain / D), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T *gr_ = gr + o * D, *yr = y + o * D;
        T* out = gi + o * D;
        if constexpr (Log) {
          softmax::log_softmax_backward_row<A>(gr_, yr, out, D);
        } else {
          A s = 0;
#pragma omp simd reduction(+ : s)
          for (int64_t i = 0; i < D; ++i) s += static_cast<A>(gr_[i]) * static_cast<A>(yr[i]);
#pragma omp simd
          for (int64_t i = 0; i < D; ++i) out[i] = static_cast<T>(static_cast<A>(yr[i]) * (static_cast<A>(gr_[i]) - s));
        }
      }
    });
    return;
  }
  const int64_t nblk = (inner + kColBlock - 1) / kColBlock;
  parallel_for(g.outer * nblk, std::max<int64_t>(1, kParallelGrain / (D * std::min(inner, kColBlock))),
               [&](int64_t b, int64_t e) {
    A s[kColBlock];
    for (int64_t t = b; t < e; ++t) {
      int64_t o = t / nblk, c0 = (t % nblk) * kColBlock, n = std::min(kColBlock, inner - c0);
      int64_t base = o * D * inner + c0;
      for (int64_t j = 0; j < n; ++j) s[j] = 0;
      for (int64_t i = 0; i < D; ++i)
        for (int64_t j = 0; j < n; ++j) {
          int64_t k = base + i * inner + j;
          if constexpr (Log) s[j] += static_cast<A>(gr[k]);
          else s[j] += static_cast<A>(gr[k]) * static_cast<A>(y[k]);
        }
      for (int64_t i = 0; i < D; ++i)
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) {
          int64_t k = base + i * inner + j;
          if constexpr (Log)
            gi[k] = static_cast<T>(static_cast<A>(gr[k]) - vexp_nonpos<A>(static_cast<A>(y[k])) * s[j]);
          else gi[k] = static_cast<T>(static_cast<A>(y[k]) * (static_cast<A>(gr[k]) - s[j]));
        }
    }
  });
}

// The output dtype; a non-floating one is PyTorch's NotImplementedError, named after its kernel for the dim.
DType softmax_out_dtype(const Tensor& x, const Attrs& a, const char* op) {
  DType d = a.none("dtype") ? x.dtype() : a.dtype("dtype");
  if (!is_floating(d)) {
    bool last = x.dim() <= 1 || wrap_dim(a.i("dim"), x.dim(), op) == x.dim() - 1;
    fail_not_implemented((std::string(op) + (last ? "_lastdim_kernel_impl" : "_kernel_impl")).c_str(), d);
  }
  return d;
}

template <bool Log>
void softmax_kernel(const TensorList& in, const TensorList& out, const Attrs& a, const char* op) {
  DType d = out[0].dtype();
  int64_t dim = wrap_dim(a.i("dim"), std::max<int64_t>(in[0].dim(), 1), op);
  Tensor x = contig_as(in[0], d);
  Tensor y = out[0].is_contiguous() ? out[0] : empty(out[0].sizes(), d);
  Geometry g = geometry(x.sizes(), in[0].dim() == 0 ? -1 : dim);
  dispatch_floating(d, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_fwd<T, Log>(x.data<T>(), y.data<T>(), g);
  });
  if (!y.is_same(out[0])) ops::copy_into(out[0], y);
}

template <bool Log>
void softmax_bwd_kernel(const TensorList& in, const TensorList& out, const Attrs& a, const char* op) {
  DType d = out[0].dtype();
  int64_t dim = wrap_dim(a.i("dim"), std::max<int64_t>(in[1].dim(), 1), op);
  Tensor gr = contig_as(in[0], d), y = contig_as(in[1], d);
  Tensor gi = out[0].is_contiguous() ? out[0] : empty(out[0].sizes(), d);
  Geometry g = geometry(y.sizes(), in[1].dim() == 0 ? -1 : dim);
  dispatch_floating(d, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    softmax_bwd<T, Log>(gr.data<T>(), y.data<T>(), gi.data<T>(), g);
  });
  if (!gi.is_same(out[0])) ops::copy_into(out[0], gi);
}

std::vector<TensorMeta> meta_bwd(const TensorList& in, const Attrs&) {
  FLOW_RUNTIME_CHECK(in[0].sizes() == in[1].sizes(), "softmax backward: grad and output shapes differ");
  return {{in[1].sizes(), promote_types(in[0].dtype(), in[1].dtype()), in[1].device()}};
}

Tensor softmax_backward(const Tensor& g, const Tensor& y, int64_t dim) {
  return ops::call1("_softmax_backward_data", {g, y}, {dim});
}
Tensor log_softmax_backward(const Tensor& g, const Tensor& y, int64_t dim) {
  return ops::call1("_log_softmax_backward_data", {g, y}, {dim});
}
int64_t bdim(const BackwardCtx& c, int k, int64_t dim) {
  return wrap_dim(dim, std::max<int64_t>(static_cast<int64_t>(c.input_meta(k).sizes.size()), 1), "softmax");
}

}  // namespace

FLOW_OP(softmax)
    .schema("softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")
    .traits(kNormalization)
    .dims_attr("dim")
    .meta([](const TensorList& in, const Attrs& a) {
      wrap_dim(a.i("dim"), std::max<int64_t>(in[0].dim(), 1), "softmax");
      return std::vector<TensorMeta>{{in[0].sizes(), softmax_out_dtype(in[0], a, "softmax"), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      softmax_kernel<false>(in, out, a, "softmax");
    })
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {softmax_backward(g[0], c.output(0), c.attrs.i("dim"))};
    });

FLOW_OP(log_softmax)
    .schema("log_softmax(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")
    .traits(kNormalization)
    .dims_attr("dim")
    .meta([](const TensorList& in, const Attrs& a) {
      wrap_dim(a.i("dim"), std::max<int64_t>(in[0].dim(), 1), "log_softmax");
      return std::vector<TensorMeta>{{in[0].sizes(), softmax_out_dtype(in[0], a, "log_softmax"), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      softmax_kernel<true>(in, out, a, "log_softmax");
    })
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {log_softmax_backward(g[0], c.output(0), c.attrs.i("dim"))};
    });

// gi = y * (g - sum(g*y)). d/dg is the same map applied to the incoming h; d/dy = h*(g - s) - g*sum(h*y).
FLOW_OP(_softmax_backward_data)
    .schema("_softmax_backward_data(Tensor grad_output, Tensor output, int dim) -> Tensor")
    .traits(kBackwardHelper)
    .dims_attr("dim")  // acts along dim only: the other dims split through (head-split attention)
    .meta(meta_bwd)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      softmax_bwd_kernel<false>(in, out, a, "_softmax_backward_data");
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      const Tensor& h = g[0];
      Tensor gr = c.input(0), y = c.input(1);
      int64_t dim = bdim(c, 1, c.attrs.i("dim"));
      bool scalar = y.dim() == 0;
      auto rsum = [&](const Tensor& t) { return scalar ? t : ops::sum(t, {dim}, true); };
      Tensor dg = c.needs(0) ? softmax_backward(h, y, dim) : Tensor();
      Tensor dy;
      if (c.needs(1))
        dy = ops::sub(ops::mul(h, ops::sub(gr, rsum(ops::mul(gr, y)))), ops::mul(gr, rsum(ops::mul(h, y))));
      return {dg, dy};
    });

// gi = g - exp(y) * sum(g). d/dg = h - sum(h * exp(y)); d/dy = -h * exp(y) * sum(g).
FLOW_OP(_log_softmax_backward_data)
    .schema("_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim) -> Tensor")
    .traits(kBackwardHelper)
    .dims_attr("dim")  // acts along dim only: the other dims split through (head-split attention)
    .meta(meta_bwd)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      softmax_bwd_kernel<true>(in, out, a, "_log_softmax_backward_data");
    })
    .save_inputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      const Tensor& h = g[0];
      Tensor gr = c.input(0), y = c.input(1);
      int64_t dim = bdim(c, 1, c.attrs.i("dim"));
      bool scalar = y.dim() == 0;
      auto rsum = [&](const Tensor& t) { return scalar ? t : ops::sum(t, {dim}, true); };
      Tensor ey = ops::call1("exp", {y});
      Tensor dg = c.needs(0) ? ops::sub(h, rsum(ops::mul(h, ey))) : Tensor();
      Tensor dy = c.needs(1) ? ops::neg(ops::mul(ops::mul(h, ey), rsum(gr))) : Tensor();
      return {dg, dy};
    });

}  // namespace flow
