// Normalisation ops with fused forward and backward kernels: native_batch_norm (batch statistics and
// in-place running-stat updates in training, running statistics in eval), native_layer_norm and
// native_group_norm. Statistics accumulate in double (two passes: mean, then centred sum of squares),
// so float results match PyTorch to rounding.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>

#include "../autograd/grad_mode.h"
#include "../kernels/cpu/parallel.h"
#include "nnops_grad_composite.h"
#include "nnops_util.h"

namespace flow {
namespace {

using nn::contig_as;

DType stat_dtype(DType d) { return d == DType::Float64 ? DType::Float64 : DType::Float32; }

// Vectorised sums: `omp simd reduction` accumulates in acc_t lanes (float for float32) within blocks of
// kBlock elements, and blocks add up in double, so float sums stay accurate to ~1e-7 relative while
// the inner loops run at SIMD width (a plain double chain is latency bound and does not vectorise).
constexpr int64_t kBlock = 1024;

// Everything here is force-inlined: at -O2 the serial (one-thread) copies of the row loops otherwise
// keep out-of-line calls per element and do not vectorise.
#define FLOW_AI __attribute__((always_inline))
template <typename T, typename F>
inline FLOW_AI double block_sum(int64_t n, F&& term) {
  using A = acc_t<T>;
  double total = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    A s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = b; i < e; ++i) s += term(i);
    total += static_cast<double>(s);
  }
  return total;
}
// sum(wg) and sum(wg * (x - m)) with wg = g * w (w may be null: wg = g), in one pass: two independent
// accumulator chains, so the loop is not bound by one add's latency.
template <typename T, typename W>
inline FLOW_AI void wg_sums(const T* g, const W* w, const T* x, int64_t n, double mean, double& s1, double& s2) {
  using A = acc_t<T>;
  const A m = static_cast<A>(mean);
  s1 = s2 = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    A t1 = 0, t2 = 0;
    if (w) {
#pragma omp simd reduction(+ : t1, t2)
      for (int64_t i = b; i < e; ++i) {
        A wg = static_cast<A>(g[i]) * static_cast<A>(w[i]);
        t1 += wg;
        t2 += wg * (static_cast<A>(x[i]) - m);
      }
    } else {
#pragma omp simd reduction(+ : t1, t2)
      for (int64_t i = b; i < e; ++i) {
        A gv = static_cast<A>(g[i]);
        t1 += gv;
        t2 += gv * (static_cast<A>(x[i]) - m);
      }
    }
    s1 += static_cast<double>(t1);
    s2 += static_cast<double>(t2);
  }
}
template <typename T>
inline FLOW_AI double sum_of(const T* p, int64_t n) {
  return block_sum<T>(n, [p](int64_t i) FLOW_AI { return static_cast<acc_t<T>>(p[i]); });
}
// sum((p - m)^2)
template <typename T>
inline FLOW_AI double centred_sumsq(const T* p, int64_t n, double mean) {
  using A = acc_t<T>;
  const A m = static_cast<A>(mean);
  return block_sum<T>(n, [p, m](int64_t i) FLOW_AI {
    A d = static_cast<A>(p[i]) - m;
    return d * d;
  });
}
// sum(g * (x - m))
template <typename T>
inline FLOW_AI double centred_dot(const T* g, const T* x, int64_t n, double mean) {
  using A = acc_t<T>;
  const A m = static_cast<A>(mean);
  return block_sum<T>(n, [g, x, m](int64_t i) FLOW_AI { return static_cast<A>(g[i]) * (static_cast<A>(x[i]) - m); });
}
// float32 overloads of the sums above, with four accumulators of 8 lanes: `omp simd reduction` keeps one, whose
// add latency bounds the loop (a 256-wide layer-norm row takes 0.6x the time this way). Same blocking: float
// within kBlock elements, the blocks in double. GCC vector types, not intrinsics: one definition that the
// portable build's AVX2 variant (cpu_isa.h) compiles to 256-bit instructions and the baseline to pairs of
// 128-bit ones, and the native build to whatever its target has.
// (Vectors are only locals and references here, never passed or returned by value: no ABI question.)
enum class SumKind { kPlain, kCentredSq, kCentredDot };
// sum of p[i] (kPlain), (p[i] - m)^2 (kCentredSq) or q[i] * (p[i] - m) (kCentredDot)
template <SumKind K>
inline FLOW_AI double block_sum_f32(const float* p, const float* q, int64_t n, float m) {
  using F8 [[gnu::vector_size(32)]] = float;
  auto add8 = [p, q, m](int64_t i, F8& acc) FLOW_AI {
    F8 a;
    std::memcpy(&a, p + i, sizeof a);
    if constexpr (K == SumKind::kPlain) {
      acc += a;
    } else if constexpr (K == SumKind::kCentredSq) {
      a -= m;
      acc += a * a;
    } else {
      F8 b;
      std::memcpy(&b, q + i, sizeof b);
      acc += b * (a - m);
    }
  };
  auto term = [p, q, m](int64_t i) FLOW_AI -> float {
    if constexpr (K == SumKind::kPlain) return p[i];
    else if constexpr (K == SumKind::kCentredSq) return (p[i] - m) * (p[i] - m);
    else return q[i] * (p[i] - m);
  };
  double total = 0;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t e = std::min(n, b + kBlock);
    F8 a0 = {}, a1 = {}, a2 = {}, a3 = {};
    int64_t i = b;
    for (; i + 32 <= e; i += 32) {
      add8(i, a0);
      add8(i + 8, a1);
      add8(i + 16, a2);
      add8(i + 24, a3);
    }
    for (; i + 8 <= e; i += 8) add8(i, a0);
    const F8 a = (a0 + a1) + (a2 + a3);
    float s = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
    for (; i < e; ++i) s += term(i);
    total += static_cast<double>(s);
  }
  return total;
}
inline FLOW_AI double sum_of(const float* p, int64_t n) { return block_sum_f32<SumKind::kPlain>(p, nullptr, n, 0.f); }
inline FLOW_AI double centred_sumsq(const float* p, int64_t n, double mean) {
  return block_sum_f32<SumKind::kCentredSq>(p, nullptr, n, static_cast<float>(mean));
}
inline FLOW_AI double centred_dot(const float* g, const float* x, int64_t n, double mean) {
  return block_sum_f32<SumKind::kCentredDot>(x, g, n, static_cast<float>(mean));
}

// o = c0 * a + c1 * (b - m) + c2, elementwise (b centred first: no cancellation against a large mean)
template <typename T>
inline FLOW_AI void affine2(T* o, const T* a, const T* b, int64_t n, double c0, double c1, double m, double c2) {
  using A = acc_t<T>;
  const A k0 = static_cast<A>(c0), k1 = static_cast<A>(c1), km = static_cast<A>(m), k2 = static_cast<A>(c2);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    o[i] = static_cast<T>(k0 * static_cast<A>(a[i]) + k1 * (static_cast<A>(b[i]) - km) + k2);
}

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

// Grad mode on during backward means the gradient will be differentiated again (create_graph=True):
// then the forward ops' backwards build it from registered ops (nnops_grad_composite.cpp) instead of
// the fused helpers below, which therefore are never recorded in a graph.
bool composite_grad() { return autograd::GradMode::is_enabled(); }

[[noreturn]] void helper_not_differentiable(const char* op) {
  fail(ErrorKind::NotImplemented, op,
       ": the fused backward kernel is not differentiable; differentiate the "
       "forward op with create_graph=True instead");
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
  bool training = a.b("training");
  double momentum = a.f("momentum"), eps = a.f("eps");
  for (int k = 1; k < 5; ++k)
    check_channel_param(in[k], g.C, op, k == 1 ? "weight" : k == 2 ? "bias" : k == 3 ? "running_mean" : "running_var");
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
          for (int64_t n = 0; n < N; ++n) s += sum_of(xp + (n * C + c) * S, S);
          mean = M > 0 ? s / M : std::nan("");
          double ss = 0;
          for (int64_t n = 0; n < N; ++n) ss += centred_sumsq(xp + (n * C + c) * S, S, mean);
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
#pragma omp simd
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
  bool training = a.b("train");
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
          sg += sum_of(gr_, S);
          sgx += centred_dot(gr_, xr, S, mu);
        }
        gwp[c] = static_cast<T>(sgx * is);
        gbp[c] = static_cast<T>(sg);
        double wc = wp ? static_cast<double>(wp[c]) : 1.0;
        // training: gx = w * invstd * (g - mean(g) - (x - mean) * invstd^2 * mean(g * (x - mean)))
        //         = a * g + b * x + c0 with per-channel coefficients; eval: gx = g * w * invstd
        double a = wc * is, k = training && M > 0 ? sgx * is * is / M : 0.0, mg = training && M > 0 ? sg / M : 0.0;
        double b = -a * k, c0 = -a * mg;
        for (int64_t n = 0; n < N; ++n) {
          const T *gr_ = gp + (n * C + c) * S, *xr = xp + (n * C + c) * S;
          affine2(gxp + (n * C + c) * S, gr_, xr, S, a, b, mu, c0);
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
  using A = acc_t<T>;
  parallel_for(g.M, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(L, 1)), [&](int64_t rb, int64_t re) {
    for (int64_t r = rb; r < re; ++r) {
      const T* xr = x + r * L;
      T* yr = y + r * L;
      double mu = L > 0 ? sum_of(xr, L) / L : std::nan("");
      double rs = 1.0 / std::sqrt((L > 0 ? centred_sumsq(xr, L, mu) / L : std::nan("")) + eps);
      mean[r] = static_cast<SA>(mu);
      rstd[r] = static_cast<SA>(rs);
      const int64_t off = (r % g.G) * (L / g.hw);
      const A am = static_cast<A>(mu), ar = static_cast<A>(rs);
      if (g.hw == 1 && w && b) {
        const SA *wo = w + off, *bo = b + off;
#pragma omp simd
        for (int64_t k = 0; k < L; ++k)
          yr[k] = static_cast<T>((static_cast<A>(xr[k]) - am) * ar * static_cast<A>(wo[k]) + static_cast<A>(bo[k]));
      } else if (g.hw == 1 && (w || b)) {
        for (int64_t k = 0; k < L; ++k) {
          A v = (static_cast<A>(xr[k]) - am) * ar;
          if (w) v = v * static_cast<A>(w[off + k]);
          if (b) v = v + static_cast<A>(b[off + k]);
          yr[k] = static_cast<T>(v);
        }
      } else {  // per channel of hw elements (no affine: one channel of L)
        const int64_t hw = w || b ? g.hw : L;
        for (int64_t c = 0; c < L / hw; ++c) {
          A wc = w ? static_cast<A>(w[off + c]) : A(1), bc = b ? static_cast<A>(b[off + c]) : A(0);
          A sc = ar * wc, sh = bc - am * ar * wc;
          const T* xc = xr + c * hw;
          T* yc = yr + c * hw;
#pragma omp simd
          for (int64_t k = 0; k < hw; ++k) yc[k] = static_cast<T>(static_cast<A>(xc[k]) * sc + sh);
        }
      }
    }
  });
}

// gx = rstd * (wg - mean(wg) - xhat * mean(wg * xhat)), wg = g * w; gw[idx] += g * xhat; gb[idx] += g.
template <typename T, typename SA>
void rows_bwd(const T* gr, const T* x, const SA* mean, const SA* rstd, const SA* w, T* gx, T* gw, T* gb,
              const RowGeom& g, int64_t P) {
  const int64_t L = g.L, M = g.M, hw = g.hw, CL = L / hw;
  using A = acc_t<T>;
  // One pass over the rows does both: the input gradient of a row, then its share of the parameter grads
  // while the row is still in L1. Parameter grads are partial sums per thread chunk (double), merged
  // serially (P parameters).
  int nt =
      std::max(1, std::min<int>(get_num_threads(), static_cast<int>(std::max<int64_t>(1, M * L / kParallelGrain))));
  constexpr int kRowsPerFlush = 16;
  std::vector<std::vector<double>> pw(nt, std::vector<double>(P, 0.0)), pb(nt, std::vector<double>(P, 0.0));
  parallel_for(nt, 1, [&](int64_t tb, int64_t te) {
    for (int64_t t = tb; t < te; ++t) {
      double *aw = pw[t].data(), *ab = pb[t].data();
      std::vector<A> fw(hw == 1 ? P : 0, A(0)), fb(hw == 1 ? P : 0, A(0));
      int pending = 0;
      auto flush = [&] {
        A *pw_ = fw.data(), *pb_ = fb.data();
#pragma omp simd
        for (int64_t q = 0; q < P; ++q) {
          aw[q] += static_cast<double>(pw_[q]);
          ab[q] += static_cast<double>(pb_[q]);
        }
        std::fill(fw.begin(), fw.end(), A(0));
        std::fill(fb.begin(), fb.end(), A(0));
        pending = 0;
      };
      const int64_t r1 = M * (t + 1) / nt;
      for (int64_t r = M * t / nt; r < r1; ++r) {
        const T *gr_ = gr + r * L, *xr = x + r * L;
        const SA* wo = w ? w + (r % g.G) * CL : nullptr;
        double mu = mean[r], rs = rstd[r], s1 = 0, s2 = 0;  // sum(wg), sum(wg * (x - mu))
        if (!w || hw == 1) {
          wg_sums(gr_, wo, xr, L, mu, s1, s2);
        } else {
          for (int64_t c = 0; c < CL; ++c) {
            double wc = static_cast<double>(wo[c]);
            s1 += wc * sum_of(gr_ + c * hw, hw);
            s2 += wc * centred_dot(gr_ + c * hw, xr + c * hw, hw, mu);
          }
        }
        // gx = rs * wg - rs * s1 / L - (x - mu) * rs^3 * s2 / L
        const A a = static_cast<A>(rs), c0 = static_cast<A>(-rs * s1 / L), k = static_cast<A>(-rs * rs * rs * s2 / L);
        const A m = static_cast<A>(mu);
        T* o = gx + r * L;
        if (!w || hw > 1) {
          for (int64_t c = 0; c < (w ? CL : 1); ++c) {
            const int64_t n = w ? hw : L;
            const A ac = w ? a * static_cast<A>(wo[c]) : a;
            const T *gc = gr_ + c * n, *xc = xr + c * n;
            T* oc = o + c * n;
#pragma omp simd
            for (int64_t i = 0; i < n; ++i)
              oc[i] = static_cast<T>(ac * static_cast<A>(gc[i]) + k * (static_cast<A>(xc[i]) - m) + c0);
          }
        } else {
#pragma omp simd
          for (int64_t i = 0; i < L; ++i)
            o[i] = static_cast<T>(a * static_cast<A>(gr_[i]) * static_cast<A>(wo[i]) + k * (static_cast<A>(xr[i]) - m) +
                                  c0);
        }
        // parameter grads: gw[idx] += g * xhat; gb[idx] += g
        const int64_t off = (r % g.G) * CL;
        if (hw == 1) {
          // summed in acc_t over a few rows at a time, then into the double totals: a double per element
          // costs two conversions and half-width vectors, most of this kernel's time
          A *fwo = fw.data() + off, *fbo = fb.data() + off;
          const A ars = static_cast<A>(rs);
#pragma omp simd
          for (int64_t q = 0; q < L; ++q) {
            A gv = static_cast<A>(gr_[q]);
            fwo[q] += gv * (static_cast<A>(xr[q]) - m) * ars;
            fbo[q] += gv;
          }
          if (++pending == kRowsPerFlush || r + 1 == r1) flush();
        } else {
          for (int64_t c = 0; c < CL; ++c) {
            aw[off + c] += centred_dot(gr_ + c * hw, xr + c * hw, hw, mu) * rs;
            ab[off + c] += sum_of(gr_ + c * hw, hw);
          }
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
  // reachable as ops with any arguments: the kernel reads grad like the input and one mean/rstd per row
  FLOW_RUNTIME_CHECK(in[0].sizes() == in[1].sizes(), op, ": grad_out ", shape_str(in[0].sizes()),
                     " does not match input ", shape_str(in[1].sizes()));
  FLOW_RUNTIME_CHECK(in[2].numel() == g.M && in[3].numel() == g.M, op, ": expected ", g.M,
                     " mean and rstd values, got ", in[2].numel(), " and ", in[3].numel());
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
  FLOW_RUNTIME_CHECK(G > 0 && C % G == 0,
                     "Expected number of channels in input to be divisible by num_groups, but got"
                     " input of shape ",
                     shape_str(x.sizes()), " and num_groups=", G);
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
    .schema(
        "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, bool "
        "training, float momentum, float eps) -> (Tensor, Tensor, Tensor)")
    .traits(kNormalization)
    .meta([](const TensorList& in, const Attrs&) {
      BnGeom g = bn_geom(in[0]);
      DType d = nn::float_dtype_of(in[0], "batch_norm"), sd = stat_dtype(d);
      return std::vector<TensorMeta>{{in[0].sizes(), d, in[0].device()},
                                     {{g.C}, sd, in[0].device()},
                                     {{g.C}, sd, in[0].device()}};
    })
    .cpu_out(batch_norm_fwd)
    .save_inputs({0, 1})
    .save_outputs({1, 2})
    .nondiff_outputs({1, 2})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      TensorList r =
          composite_grad()
              ? nn::batch_norm_grad_composite(g[0], c.input(0), c.input(1), c.output(1), c.output(2),
                                              c.attrs.b("training"), c.attrs.f("eps"))
              : ops::call("native_batch_norm_backward", {g[0], c.input(0), c.input(1), c.output(1), c.output(2)},
                          {c.attrs.b("training"), c.attrs.f("eps")});
      return {c.needs(0) ? r[0] : Tensor(), c.needs(1) ? r[1] : Tensor(), c.needs(2) ? r[2] : Tensor(), Tensor(),
              Tensor()};
    });

FLOW_OP(native_batch_norm_backward)
    .schema(
        "native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, Tensor save_mean, Tensor "
        "save_invstd, bool train, float eps) -> (Tensor, Tensor, Tensor)")
    .traits(kNormalization | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs&) {
      BnGeom g = bn_geom(in[1]);
      DType d = in[1].dtype();
      return std::vector<TensorMeta>{{in[1].sizes(), d, in[1].device()},
                                     {{g.C}, d, in[1].device()},
                                     {{g.C}, d, in[1].device()}};
    })
    .cpu_out(batch_norm_bwd)
    .backward([](BackwardCtx&, const TensorList&) -> TensorList { helper_not_differentiable("batch_norm_backward"); });

FLOW_OP(native_layer_norm)
    .schema(
        "native_layer_norm(Tensor input, int[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float "
        "eps=1e-05) -> (Tensor, Tensor, Tensor)")
    .traits(kNormalization)
    .meta([](const TensorList& in, const Attrs& a) {
      layer_geom(in[0], a.ints("normalized_shape"), in[1], in[2]);
      DType d = nn::float_dtype_of(in[0], "layer_norm"), sd = stat_dtype(d);
      Shape ss = layer_stat_shape(in[0], a.ints("normalized_shape").size());
      return std::vector<TensorMeta>{{in[0].sizes(), d, in[0].device()},
                                     {ss, sd, in[0].device()},
                                     {ss, sd, in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      rows_fwd_kernel(in, out, layer_geom(in[0], a.ints("normalized_shape"), in[1], in[2]), a.f("eps"), "layer_norm");
    })
    .save_inputs({0, 1})
    .save_outputs({1, 2})
    .nondiff_outputs({1, 2})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      TensorList r =
          composite_grad()
              ? nn::layer_norm_grad_composite(g[0], c.input(0), c.input(1), c.attrs.ints("normalized_shape"),
                                              c.attrs.f("eps"))
              : ops::call("native_layer_norm_backward", {g[0], c.input(0), c.output(1), c.output(2), c.input(1)},
                          {c.attrs.ints("normalized_shape")});
      return {c.needs(0) ? r[0] : Tensor(), c.needs(1) ? r[1] : Tensor(), c.needs(2) ? r[2] : Tensor()};
    });

FLOW_OP(native_layer_norm_backward)
    .schema(
        "native_layer_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, int[] "
        "normalized_shape) -> (Tensor, Tensor, Tensor)")
    .traits(kNormalization | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs& a) {
      layer_geom(in[1], a.ints("normalized_shape"), in[4], Tensor());  // validates normalized_shape against the input
      Shape ps(a.ints("normalized_shape").begin(), a.ints("normalized_shape").end());
      DType d = in[1].dtype();
      return std::vector<TensorMeta>{{in[1].sizes(), d, in[1].device()},
                                     {ps, d, in[1].device()},
                                     {ps, d, in[1].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      RowGeom g = layer_geom(in[1], a.ints("normalized_shape"), in[4], Tensor());
      rows_bwd_kernel(in, out, g, g.L, "layer_norm_backward");
    })
    .backward([](BackwardCtx&, const TensorList&) -> TensorList { helper_not_differentiable("layer_norm_backward"); });

FLOW_OP(native_group_norm)
    .schema(
        "native_group_norm(Tensor input, Tensor? weight, Tensor? bias, int group, float eps) -> (Tensor, Tensor, "
        "Tensor)")
    .traits(kNormalization)
    .meta([](const TensorList& in, const Attrs& a) {
      group_geom(in[0], a.i("group"), in[1], in[2]);
      DType d = nn::float_dtype_of(in[0], "group_norm"), sd = stat_dtype(d);
      Shape ss{in[0].size(0), a.i("group")};
      return std::vector<TensorMeta>{{in[0].sizes(), d, in[0].device()},
                                     {ss, sd, in[0].device()},
                                     {ss, sd, in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      rows_fwd_kernel(in, out, group_geom(in[0], a.i("group"), in[1], in[2]), a.f("eps"), "group_norm");
    })
    .save_inputs({0, 1})
    .save_outputs({1, 2})
    .nondiff_outputs({1, 2})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      TensorList r =
          composite_grad()
              ? nn::group_norm_grad_composite(g[0], c.input(0), c.input(1), c.attrs.i("group"), c.attrs.f("eps"))
              : ops::call("native_group_norm_backward", {g[0], c.input(0), c.output(1), c.output(2), c.input(1)},
                          {c.attrs.i("group")});
      return {c.needs(0) ? r[0] : Tensor(), c.needs(1) ? r[1] : Tensor(), c.needs(2) ? r[2] : Tensor()};
    });

FLOW_OP(native_group_norm_backward)
    .schema(
        "native_group_norm_backward(Tensor grad_out, Tensor input, Tensor mean, Tensor rstd, Tensor? weight, int "
        "group) -> (Tensor, Tensor, Tensor)")
    .traits(kNormalization | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs& a) {
      group_geom(in[1], a.i("group"), in[4], Tensor());  // validates the input's rank and the group count
      DType d = in[1].dtype();
      return std::vector<TensorMeta>{{in[1].sizes(), d, in[1].device()},
                                     {{in[1].size(1)}, d, in[1].device()},
                                     {{in[1].size(1)}, d, in[1].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      RowGeom g = group_geom(in[1], a.i("group"), in[4], Tensor());
      rows_bwd_kernel(in, out, g, in[1].size(1), "group_norm_backward");
    })
    .backward([](BackwardCtx&, const TensorList&) -> TensorList { helper_not_differentiable("group_norm_backward"); });

// ---- CrossMapLRN2d: PyTorch's legacy local response normalisation across channels ----------------------------
namespace {

// (C, C) 0/1 matrices of the legacy kernel: fwd[c][j] whether channel j's square enters channel c's scale,
// bwd[c][j] whether channel j's ratio enters channel c's gradient. They replay the reference's running-window
// loops, which are not LocalResponseNorm's symmetric window (the forward never drops channel 0, the backward
// window is shifted), so that values and gradients match PyTorch's. The divisions truncate as the reference's.
Tensor cross_map_window(int64_t C, int64_t size, bool backward, DType dtype) {
  // allocated and written directly, not through ops: a tensor from an intercepting mode may have no data to write
  Tensor m = empty({C, C}, DType::Float64, Device{});
  double* p = m.data<double>();
  std::fill(p, p + C * C, 0.0);
  if (backward) {
    const int64_t inv_pre_pad = static_cast<int64_t>(size - (size - 1) / 2.0);
    for (int64_t c = 0; c < C; ++c)
      for (int64_t j = 0; j < C; ++j) p[c * C + j] = c <= inv_pre_pad + j && inv_pre_pad + j <= c + size - 1;
  } else if (C > 0) {
    const int64_t pre_pad = static_cast<int64_t>((size - 1) / 2.0 + 1);  // >= 1 for size >= 1
    for (int64_t j = 0; j < std::min(pre_pad, C); ++j) p[j] = 1;
    for (int64_t c = 1; c < C; ++c) {
      std::copy(p + (c - 1) * C, p + c * C, p + c * C);
      if (c + pre_pad - 1 < C) p[c * C + c + pre_pad - 1] += 1;
      if (c > pre_pad) p[c * C + c - pre_pad] -= 1;
    }
  }
  return ops::to_dtype(m, dtype);
}

void check_cross_map_lrn(const Tensor& x, int64_t size) {
  FLOW_VALUE_CHECK(x.dim() == 4, "CrossMapLRN2d: Expected input to be 4D, got ", x.dim(), "D instead.");
  FLOW_VALUE_CHECK(size >= 1, "CrossMapLRN2d: size must be positive, got ", size);
  FLOW_RUNTIME_CHECK(is_floating(x.dtype()), "CrossMapLRN2d: expected a floating point input, got ",
                     torch_type_name(x.dtype()));
}

// window (C, C) applied across the channels of v (N, C, H, W): out[n, c] = sum_j window[c, j] v[n, j]
Tensor across_channels(const Tensor& window, const Tensor& v) {
  Shape flat{v.size(0), v.size(1), v.size(2) * v.size(3)};
  return ops::reshape(ops::call1("matmul", {window, ops::reshape(v, flat)}), v.sizes());
}

// k + alpha / size * (the window's sum of squares)
Tensor cross_map_scale(const Tensor& x, const Attrs& a) {
  const int64_t size = a.i("size");
  Tensor sq = across_channels(cross_map_window(x.size(1), size, false, x.dtype()), ops::mul(x, x));
  return ops::add(ops::mul(sq, Scalar(a.f("alpha") / size)), Scalar(a.f("k")));
}

}  // namespace

FLOW_OP(_cross_map_lrn2d)
    .schema("_cross_map_lrn2d(Tensor input, int size, float alpha=0.0001, float beta=0.75, float k=1) -> Tensor")
    .traits(kNormalization)
    .meta([](const TensorList& in, const Attrs& a) -> std::vector<TensorMeta> {
      check_cross_map_lrn(in[0], a.i("size"));
      return {{in[0].sizes(), in[0].dtype(), in[0].device()}};
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      check_cross_map_lrn(in[0], a.i("size"));
      autograd::AutoGradMode no_grad(false);  // recorded as one node, with the backward below
      return {
          ops::mul(ops::call1("pow", {cross_map_scale(in[0], a), ops::wrapped_scalar(Scalar(-a.f("beta")))}), in[0])};
    })
    .save_inputs({0})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // the scale is recomputed (one product over channels) rather than kept as a second output
      const Tensor &x = c.input(0), &y = c.output(0);
      const int64_t size = c.attrs.i("size");
      const double beta = c.attrs.f("beta"), cache_ratio = 2 * c.attrs.f("alpha") * beta / size;
      Tensor scale = cross_map_scale(x, c.attrs);
      Tensor ratio =
          across_channels(cross_map_window(x.size(1), size, true, x.dtype()), ops::div(ops::mul(g[0], y), scale));
      Tensor direct = ops::mul(ops::call1("pow", {scale, ops::wrapped_scalar(Scalar(-beta))}), g[0]);
      return {ops::sub(direct, ops::mul(ops::mul(x, ratio), Scalar(cache_ratio)))};
    });

}  // namespace flow
