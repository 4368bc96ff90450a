// Normalisation ops with fused forward and backward kernels: native_batch_norm (batch statistics and
// in-place running-stat updates in training, running statistics in eval), native_layer_norm and
// native_group_norm. Statistics accumulate in double (two passes: mean, then centred sum of squares),
// so float results match PyTorch to rounding.
#include <cmath>
#include <exception>

#include "../kernels/cpu/parallel.h"
#include "nnops_util.h"

namespace flow {
namespace {

using nn::contig_as;

DType stat_dtype(DType d) { return d == DType::Float64 ? DType::Float64 : DType::Float32; }

// Contiguous outputs allocated here are copied into the dispatcher's outputs at the end.
struct OutBuf {
  Tensor dst, buf;
  OutBuf(const Tensor& o) : dst(o), buf(o.is_contiguous() ? o : empty(o.sizes(), o.dtype(), o.device())) {}
  ~OutBuf() {
    try {
      if (!buf.is_same(dst) && std::uncaught_exceptions() == 0) ops::copy_into(dst, buf);
    } catch (...) {
    }
  }
};

[[noreturn]] void no_double_backward(const char* op) {
  fail(ErrorKind::NotImplemented, op, ": double backward (differentiating the gradient again) is not supported");
}

// ---- batch norm -----------------------------------------------------------------------------------------
struct BnGeom {
  int64_t N, C, S;
};
BnGeom bn_geom(const Tensor& x) {
  FLOW_RUNTIME_CHECK(x.dim() >= 2, "batch_norm: expected 2D or more input (N, C, ...), got ", x.dim(), "D");
  BnGeom g{x.size(0), x.size(1), 1};
  for (int64_t i = 2; i < x.dim(); ++i) g.S *= x.size(i);
  return g;
}
void check_channel_param(const Tensor& t, int64_t C, const char* op, const char* what) {
  if (t.defined())
    FLOW_RUNTIME_CHECK(t.numel() == C, op, ": expected ", what, " to have ", C, " elements (one per channel), got ",
                       shape_str(t.sizes()));
}

void batch_norm_fwd(const TensorList& in, const TensorList& out, const Attrs& a) {
  const char* op = "batch_norm";
  BnGeom g = bn_geom(in[0]);
  const Tensor &rm = in[3], &rv = in[4];
  bool training = a.b(0);
  double momentum = a.f(1), eps = a.f(2);
  for (int k = 1; k < 5; ++k) check_channel_param(in[k], g.C, op, k == 1 ? "weight" : k == 2 ? "bias" : k == 3 ? "running_mean" : "running_var");
  FLOW_RUNTIME_CHECK(training || (rm.defined() && rv.defined()), op,
                     ": running_mean and running_var must be defined in evaluation mode");
  DType d = out[0].dtype(), sd = out[1].dtype();
  Tensor x = contig_as(in[0], d);
  Tensor w = in[1].defined() ? contig_as(in[1], sd) : Tensor(), b = in[2].defined() ? contig_as(in[2], sd) : Tensor();
  Tensor rmc = rm.defined() ? contig_as(rm, DType::Float64) : Tensor();
  Tensor rvc = rv.defined() ? contig_as(rv, DType::Float64) : Tensor();
  OutBuf y(out[0]), mean_o(out[1]), inv_o(out[2]);
  const int64_t N = g.N, C = g.C, S = g.S, M = N * S;
  dispatch_floating(d, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using SA = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* xp = x.data<T>();
    T* yp = y.buf.data<T>();
    SA* mp = mean_o.buf.data<SA>();
    SA* ip = inv_o.buf.data<SA>();
    const SA* wp = w.defined() ? w.data<SA>() : nullptr;
    const SA* bp = b.defined() ? b.data<SA>() : nullptr;
    double* rmp = rmc.defined() ? rmc.data<double>() : nullptr;
    double* rvp = rvc.defined() ? rvc.data<double>() : nullptr;
    parallel_for(C, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(M, 1)), [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        double mean, invstd;
        if (training) {
          double s = 0;
          for (int64_t n = 0; n < N; ++n) {
            const T* row = xp + (n * C + c) * S;
            for (int64_t i = 0; i < S; ++i) s += static_cast<double>(row[i]);
          }
          mean = M > 0 ? s / M : std::nan("");
          double ss = 0;
          for (int64_t n = 0; n < N; ++n) {
            const T* row = xp + (n * C + c) * S;
            for (int64_t i = 0; i < S; ++i) {
              double dv = static_cast<double>(row[i]) - mean;
              ss += dv * dv;
            }
          }
          double var = M > 0 ? ss / M : std::nan("");
          invstd = 1.0 / std::sqrt(var + eps);
          if (rmp) rmp[c] = (1 - momentum) * rmp[c] + momentum * mean;
          if (rvp) rvp[c] = (1 - momentum) * rvp[c] + momentum * (M > 1 ? ss / (M - 1) : std::nan(""));
        } else {
          mean = rmp[c];
          invstd = 1.0 / std::sqrt(rvp[c] + eps);
        }
        mp[c] = static_cast<SA>(mean);
        ip[c] = static_cast<SA>(invstd);
        // y = x * scale + shift, folded per channel
        double wc = wp ? static_cast<double>(wp[c]) : 1.0, bc = bp ? static_cast<double>(bp[c]) : 0.0;
        acc_t<T> scale = static_cast<acc_t<T>>(invstd * wc), shift = static_cast<acc_t<T>>(bc - mean * invstd * wc);
        for (int64_t n = 0; n < N; ++n) {
          const T* row = xp + (n * C + c) * S;
          T* yr = yp + (n * C + c) * S;
          for (int64_t i = 0; i < S; ++i) yr[i] = static_cast<T>(static_cast<acc_t<T>>(row[i]) * scale + shift);
        }
      }
    });
  });
  if (training) {
    // running statistics are updated in place, like torch
    if (rm.defined()) ops::copy_into(rm, rmc), rm.bump_version();
    if (rv.defined()) ops::copy_into(rv, rvc), rv.bump_version();
  }
}

void batch_norm_bwd(const TensorList& in, const TensorList& out, const Attrs& a) {
  const char* op = "batch_norm_backward";
  BnGeom g = bn_geom(in[1]);
  bool training = a.b(0);
  DType d = out[0].dtype(), sd = stat_dtype(d);
  Tensor gr = contig_as(in[0], d), x = contig_as(in[1], d);
  Tensor w = in[2].defined() ? contig_as(in[2], sd) : Tensor();
  Tensor mean = contig_as(in[3], sd), inv = contig_as(in[4], sd);
  OutBuf gx(out[0]), gw(out[1]), gb(out[2]);
  const int64_t N = g.N, C = g.C, S = g.S, M = N * S;
  dispatch_floating(d, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using SA = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T *gp = gr.data<T>(), *xp = x.data<T>();
    const SA *wp = w.defined() ? w.data<SA>() : nullptr, *mp = mean.data<SA>(), *ip = inv.data<SA>();
    T* gxp = gx.buf.data<T>();
    T* gwp = gw.buf.data<T>();
    T* gbp = gb.buf.data<T>();
    parallel_for(C, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(M, 1)), [&](int64_t cb, int64_t ce) {
      for (int64_t c = cb; c < ce; ++c) {
        double mu = mp[c], is = ip[c];
        double sg = 0, sgx = 0;  // sum(g), sum(g * (x - mean))
        for (int64_t n = 0; n < N; ++n) {
          const T *gr_ = gp + (n * C + c) * S, *xr = xp + (n * C + c) * S;
          for (int64_t i = 0; i < S; ++i) {
            double gv = static_cast<double>(gr_[i]);
            sg += gv;
            sgx += gv * (static_cast<double>(xr[i]) - mu);
          }
        }
        gwp[c] = static_cast<T>(sgx * is);
        gbp[c] = static_cast<T>(sg);
        double wc = wp ? static_cast<double>(wp[c]) : 1.0;
        for (int64_t n = 0; n < N; ++n) {
          const T *gr_ = gp + (n * C + c) * S, *xr = xp + (n * C + c) * S;
          T* o = gxp + (n * C + c) * S;
          if (training) {
            // gx = w * invstd * (g - mean(g) - xhat * mean(g * xhat))
            double mg = sg / M, k = sgx * is * is / M;
            for (int64_t i = 0; i < S; ++i)
              o[i] = static_cast<T>(wc * is * (static_cast<double>(gr_[i]) - mg - (static_cast<double>(xr[i]) - mu) * k));
          } else {
            for (int64_t i = 0; i < S; ++i) o[i] = static_cast<T>(static_cast<double>(gr_[i]) * wc * is);
          }
        }
      }
    });
  });
}

// ---- layer norm / group norm: rows of L elements, affine index (r % G) * (L / hw) + k / hw --------------
struct RowGeom {
  int64_t M, L, G, hw;
};

template <typename T, typename SA>
void rows_fwd(const T* x, T* y, SA* mean, SA* rstd, const SA* w, const SA* b, const RowGeom& g, double eps) {
  const int64_t L = g.L;
  parallel_for(g.M, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(L, 1)), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const T* xr = x + r * L;
      T* yr = y + r * L;
      double s = 0;
      for (int64_t k = 0; k < L; ++k) s += static_cast<double>(xr[k]);
      double mu = L > 0 ? s / L : std::nan("");
      double ss = 0;
      for (int64_t k = 0; k < L; ++k) {
        double dv = static_cast<double>(xr[k]) - mu;
        ss += dv * dv;
      }
      double rs = 1.0 / std::sqrt((L > 0 ? ss / L : std::nan("")) + eps);
      mean[r] = static_cast<SA>(mu);
      rstd[r] = static_cast<SA>(rs);
      int64_t off = (r % g.G) * (L / g.hw);
      using A = acc_t<T>;
      A am = static_cast<A>(mu), ar = static_cast<A>(rs);
      if (!w && !b) {
        for (int64_t k = 0; k < L; ++k) yr[k] = static_cast<T>((static_cast<A>(xr[k]) - am) * ar);
      } else if (g.hw == 1) {
        for (int64_t k = 0; k < L; ++k) {
          A v = (static_cast<A>(xr[k]) - am) * ar;
          if (w) v = v * static_cast<A>(w[off + k]);
          if (b) v = v + static_cast<A>(b[off + k]);
          yr[k] = static_cast<T>(v);
        }
      } else {
        for (int64_t c = 0; c < L / g.hw; ++c) {
          A wc = w ? static_cast<A>(w[off + c]) : A(1), bc = b ? static_cast<A>(b[off + c]) : A(0);
          for (int64_t k = c * g.hw; k < (c + 1) * g.hw; ++k) yr[k] = static_cast<T>((static_cast<A>(xr[k]) - am) * ar * wc + bc);
        }
      }
    }
  });
}

// gx = rstd * (wg - mean(wg) - xhat * mean(wg * xhat)), wg = g * w; gw[idx] += g * xhat; gb[idx] += g.
template <typename T, typename SA>
void rows_bwd(const T* gr, const T* x, const SA* mean, const SA* rstd, const SA* w, T* gx, T* gw, T* gb,
              const RowGeom& g, int64_t P) {
  const int64_t L = g.L, M = g.M;
  auto aidx = [&](int64_t r, int64_t k) { return (r % g.G) * (L / g.hw) + k / g.hw; };
  parallel_for(M, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(L, 1)), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const T *gr_ = gr + r * L, *xr = x + r * L;
      double mu = mean[r], rs = rstd[r], s1 = 0, s2 = 0;
      for (int64_t k = 0; k < L; ++k) {
        double wg = static_cast<double>(gr_[k]) * (w ? static_cast<double>(w[aidx(r, k)]) : 1.0);
        s1 += wg;
        s2 += wg * (static_cast<double>(xr[k]) - mu) * rs;
      }
      s1 /= L, s2 /= L;
      T* o = gx + r * L;
      for (int64_t k = 0; k < L; ++k) {
        double wg = static_cast<double>(gr_[k]) * (w ? static_cast<double>(w[aidx(r, k)]) : 1.0);
        o[k] = static_cast<T>(rs * (wg - s1 - (static_cast<double>(xr[k]) - mu) * rs * s2));
      }
    }
  });
  // parameter grads: per-chunk partial sums over rows, merged serially (P parameters)
  int nt = std::max(1, std::min<int>(get_num_threads(), static_cast<int>(std::max<int64_t>(1, M * L / kParallelGrain))));
  std::vector<std::vector<double>> pw(nt, std::vector<double>(P, 0.0)), pb(nt, std::vector<double>(P, 0.0));
  parallel_for(nt, 1, [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; ++t) {
      int64_t r0 = M * t / nt, r1 = M * (t + 1) / nt;
      double *aw = pw[t].data(), *ab = pb[t].data();
      for (int64_t r = r0; r < r1; ++r) {
        const T *gr_ = gr + r * L, *xr = x + r * L;
        double mu = mean[r], rs = rstd[r];
        for (int64_t k = 0; k < L; ++k) {
          double gv = static_cast<double>(gr_[k]);
          int64_t i = aidx(r, k);
          aw[i] += gv * (static_cast<double>(xr[k]) - mu) * rs;
          ab[i] += gv;
        }
      }
    }
  });
  for (int64_t i = 0; i < P; ++i) {
    double sw = 0, sb = 0;
    for (int t = 0; t < nt; ++t) sw += pw[t][i], sb += pb[t][i];
    gw[i] = static_cast<T>(sw);
    gb[i] = static_cast<T>(sb);
  }
}

void rows_fwd_kernel(const TensorList& in, const TensorList& out, const RowGeom& g, double eps, const char* op) {
  DType d = out[0].dtype(), sd = out[1].dtype();
  Tensor x = contig_as(in[0], d);
  Tensor w = in[1].defined() ? contig_as(in[1], sd) : Tensor(), b = in[2].defined() ? contig_as(in[2], sd) : Tensor();
  OutBuf y(out[0]), mo(out[1]), ro(out[2]);
  dispatch_floating(d, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using SA = std::conditional_t<std::is_same_v<T, double>, double, float>;
    rows_fwd<T, SA>(x.data<T>(), y.buf.data<T>(), mo.buf.data<SA>(), ro.buf.data<SA>(),
                    w.defined() ? w.data<SA>() : nullptr, b.defined() ? b.data<SA>() : nullptr, g, eps);
  });
}

// inputs: grad, input, mean, rstd, weight?
void rows_bwd_kernel(const TensorList& in, const TensorList& out, const RowGeom& g, int64_t P, const char* op) {
  DType d = out[0].dtype(), sd = stat_dtype(d);
  Tensor gr = contig_as(in[0], d), x = contig_as(in[1], d);
  Tensor mean = contig_as(in[2], sd), rstd = contig_as(in[3], sd);
  Tensor w = in[4].defined() ? contig_as(in[4], sd) : Tensor();
  OutBuf gx(out[0]), gw(out[1]), gb(out[2]);
  dispatch_floating(d, op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using SA = std::conditional_t<std::is_same_v<T, double>, double, float>;
    rows_bwd<T, SA>(gr.data<T>(), x.data<T>(), mean.data<SA>(), rstd.data<SA>(), w.defined() ? w.data<SA>() : nullptr,
                    gx.buf.data<T>(), gw.buf.data<T>(), gb.buf.data<T>(), g, P);
  });
}

RowGeom layer_geom(const Tensor& x, const std::vector<int64_t>& ns, const Tensor& w, const Tensor& b) {
  int64_t k = static_cast<int64_t>(ns.size());
  bool ok = k >= 1 && x.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = x.size(x.dim() - k + i) == ns[i];
  if (!ok) {
    std::string s = "[*";
    for (int64_t v : ns) s += ", " + std::to_string(v);
    fail(ErrorKind::Runtime, "Given normalized_shape=", shape_str(ns), ", expected input with shape ", s,
         "], but got input of size", shape_str(x.sizes()));
  }
  for (const Tensor* p : {&w, &b})
    if (p->defined())
      FLOW_RUNTIME_CHECK(p->sizes() == Shape(ns.begin(), ns.end()), "layer_norm: expected ",
                         p == &w ? "weight" : "bias", " of shape ", shape_str(ns), ", got ", shape_str(p->sizes()));
  RowGeom g{1, 1, 1, 1};
  for (int64_t i = 0; i < x.dim(); ++i) (i < x.dim() - k ? g.M : g.L) *= x.size(i);
  return g;
}

RowGeom group_geom(const Tensor& x, int64_t G, const Tensor& w, const Tensor& b) {
  FLOW_RUNTIME_CHECK(x.dim() >= 2, "group_norm: expected input of at least 2 dims (N, C, *), got ", x.dim(), "D");
  int64_t N = x.size(0), C = x.size(1), hw = 1;
  FLOW_RUNTIME_CHECK(G > 0 && C % G == 0, "Expected number of channels in input to be divisible by num_groups, but got"
                     " input of shape ", shape_str(x.sizes()), " and num_groups=", G);
  for (int64_t i = 2; i < x.dim(); ++i) hw *= x.size(i);
  check_channel_param(w, C, "group_norm", "weight");
  check_channel_param(b, C, "group_norm", "bias");
  return RowGeom{N * G, (C / G) * hw, G, std::max<int64_t>(hw, 1)};
}

Shape layer_stat_shape(const Tensor& x, size_t k) {
  Shape s(x.sizes().begin(), x.sizes().end() - k);
  for (size_t i = 0; i < k; ++i) s.push_back(1);
  return s;
}

}  // namespace

FLOW_OP(native_batch_norm)
    .schema("native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)")
    .traits(kNormalization)
    .meta([](const TensorList& in, const Attrs&) {
      BnGeom g = bn_geom(in[0]);
      DType d = nn::float_dtype_of(in[0], "batch_norm"), sd = stat_dtype(d);
      return std::vector<TensorMeta>{{in[0].sizes(), d, in[0].device()}, {{g.C}, sd, in[0].device()},
                                     {{g.C}, sd, in[0].device()}};
    })
    .cpu_out(batch_norm_fwd)
    .save_inputs({0, 1})
    .save_outputs({1, 2})
    .nondiff_outputs({1, 2})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      TensorList r = ops::call("native_batch_norm_backward", {g[0], c.input(0), c.input(1), c.output(1), c.output(2)},
                               {c.attrs.b(0), c.attrs.f(2)});
      return {c.needs(0) ? r[0] : Tensor(), c.needs(1) ? r[1] : Tensor(), c.needs(2) ? r[2] : Tensor(), Tensor(),
              Tensor()};
    });

FLOW_OP(native_batch_norm_backward)
    .schema("native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor save_mean, Tensor save_invstd, bool train, float eps) -> (Tensor, Tensor, Tensor)")
    .traits(kNormalization | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs&) {
      BnGeom g = bn_geom(in[1]);
      DType d = in[1].dtype();
      return std::vector<TensorMeta>{{in[1].sizes(), d, in[1].device()}, {{g.C}, d, in[1].device()},
                                     {{g.C}, d, in[1].device()}};
    })
    .cpu_out(batch_norm_bwd)
    .backward([](BackwardCtx&, const TensorList&) -> TensorList { no_double_backward("batch_norm"); });

FLOW_OP(native_layer_norm)
    .schema("native_layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05) -> (Tensor, Tensor, Tensor)")
    .traits(kNormalization)
    .meta([](const TensorList& in, const Attrs& a) {
      layer_geom(in[0], a.ints(0), in[1], in[2]);
      DType d = nn::float_dtype_of(in[0], "layer_norm"), sd = stat_dtype(d);
      Shape ss = layer_stat_shape(in[0], a.ints(0).size());
      return std::vector<TensorMeta>{{in[0].sizes(), d, in[0].device()}, {ss, sd, in[0].device()},
                                     {ss, sd, in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      rows_fwd_kernel(in, out, layer_geom(in[0], a.ints(0), in[1], in[2]), a.f(1), "layer_norm");
    })
    .save_inputs({0, 1})
    .save_outputs({1, 2})
    .nondiff_outputs({1, 2})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      TensorList r = ops::call("native_layer_norm_backward", {g[0], c.input(0), c.output(1), c.output(2), c.input(1)},
                               {c.attrs.ints(0)});
      return {c.needs(0) ? r[0] : Tensor(), c.needs(1) ? r[1] : Tensor(), c.needs(2) ? r[2] : Tensor()};
    });

FLOW_OP(native_layer_norm_backward)
    .schema("native_layer_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, int[] normalized_shape) -> (Tensor, Tensor, Tensor)")
    .traits(kNormalization | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs& a) {
      Shape ps(a.ints(0).begin(), a.ints(0).end());
      DType d = in[1].dtype();
      return std::vector<TensorMeta>{{in[1].sizes(), d, in[1].device()}, {ps, d, in[1].device()},
                                     {ps, d, in[1].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      RowGeom g = layer_geom(in[1], a.ints(0), in[4], Tensor());
      rows_bwd_kernel(in, out, g, g.L, "layer_norm_backward");
    })
    .backward([](BackwardCtx&, const TensorList&) -> TensorList { no_double_backward("layer_norm"); });

FLOW_OP(native_group_norm)
    .schema("native_group_norm(Tensor input, Tensor? weight, Tensor? bias, int group, float eps) -> (Tensor, Tensor, Tensor)")
    .traits(kNormalization)
    .meta([](const TensorList& in, const Attrs& a) {
      group_geom(in[0], a.i(0), in[1], in[2]);
      DType d = nn::float_dtype_of(in[0], "group_norm"), sd = stat_dtype(d);
      Shape ss{in[0].size(0), a.i(0)};
      return std::vector<TensorMeta>{{in[0].sizes(), d, in[0].device()}, {ss, sd, in[0].device()},
                                     {ss, sd, in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      rows_fwd_kernel(in, out, group_geom(in[0], a.i(0), in[1], in[2]), a.f(1), "group_norm");
    })
    .save_inputs({0, 1})
    .save_outputs({1, 2})
    .nondiff_outputs({1, 2})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      TensorList r = ops::call("native_group_norm_backward", {g[0], c.input(0), c.output(1), c.output(2), c.input(1)},
                               {c.attrs.i(0)});
      return {c.needs(0) ? r[0] : Tensor(), c.needs(1) ? r[1] : Tensor(), c.needs(2) ? r[2] : Tensor()};
    });

FLOW_OP(native_group_norm_backward)
    .schema("native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, int group) -> (Tensor, Tensor, Tensor)")
    .traits(kNormalization | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs&) {
      DType d = in[1].dtype();
      return std::vector<TensorMeta>{{in[1].sizes(), d, in[1].device()}, {{in[1].size(1)}, d, in[1].device()},
                                     {{in[1].size(1)}, d, in[1].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      RowGeom g = group_geom(in[1], a.i(0), in[4], Tensor());
      rows_bwd_kernel(in, out, g, in[1].size(1), "group_norm_backward");
    })
    .backward([](BackwardCtx&, const TensorList&) -> TensorList { no_double_backward("group_norm"); });

}  // namespace flow
