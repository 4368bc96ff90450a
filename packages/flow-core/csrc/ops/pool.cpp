// Pooling over the trailing 1-3 spatial dims (leading dims are independent planes, so batched and
// unbatched inputs share one op): max_pool (with indices), avg_pool, adaptive_avg_pool, adaptive_max_pool.
// Spatial dims are padded to 3 from the left; loops run OpenMP over planes. Gradients are helper ops whose
// own gradients close the loop (max: scatter <-> gather by indices; avg: pool <-> its adjoint).
#include <immintrin.h>
#include <cmath>
#include <cstring>

#include <limits>
#include <type_traits>

#include "../core/cpu_isa.h"
#include "../kernels/cpu/parallel.h"
#include "functions.h"

namespace flow {
namespace {

struct Win {  // one spatial dim's geometry
  int64_t in = 1, out = 1, k = 1, s = 1, p = 0, d = 1;
};
struct PoolPlan {
  int64_t planes = 1;
  Win w[3];
  int64_t in_plane() const { return w[0].in * w[1].in * w[2].in; }
  int64_t out_plane() const { return w[0].out * w[1].out * w[2].out; }
};

std::vector<int64_t> expand_list(const std::vector<int64_t>& v, size_t ns, const char* name, const char* op) {
  if (v.size() == ns) return v;
  FLOW_RUNTIME_CHECK(v.size() == 1, op, ": ", name, " must either be a single int, or a tuple of ", ns, " ints");
  return std::vector<int64_t>(ns, v[0]);
}

int64_t pool_out_size(int64_t in, int64_t k, int64_t p, int64_t s, int64_t d, bool ceil) {
  int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil ? s - 1 : 0);
  int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil && (o - 1) * s >= in + p) --o;
  return o;
}

std::string sizes_x(const std::vector<int64_t>& v) {
  std::string r;
  for (size_t i = 0; i < v.size(); ++i) r += (i ? "x" : "") + std::to_string(v[i]);
  return r;
}

// Plan for a windowed pool; `dil` empty for avg_pool (no dilation).
PoolPlan window_plan(const Tensor& x, const Attrs& a, bool has_dil, const char* op, Shape* out_sizes) {
  size_t ns = a.ints("kernel_size").size();
  FLOW_RUNTIME_CHECK(ns >= 1 && ns <= 3, op, ": kernel_size must have 1 to 3 elements");
  FLOW_RUNTIME_CHECK(x.dim() == static_cast<int64_t>(ns) + 1 || x.dim() == static_cast<int64_t>(ns) + 2, op,
                     ": Expected ", ns + 1, "D or ", ns + 2, "D input tensor, but got ", shape_str(x.sizes()));
  auto k = a.ints("kernel_size");
  auto s = a.ints("stride").empty() ? k : expand_list(a.ints("stride"), ns, "stride", op);
  auto p = expand_list(a.ints("padding"), ns, "padding", op);
  std::vector<int64_t> d(ns, 1);
  if (has_dil) d = expand_list(a.ints("dilation"), ns, "dilation", op);
  bool ceil = a.b("ceil_mode");
  PoolPlan pl;
  int64_t lead = x.dim() - static_cast<int64_t>(ns);
  for (int64_t i = 0; i < lead; ++i) pl.planes *= x.size(i);
  for (int64_t i = 1; i < lead; ++i)
    FLOW_RUNTIME_CHECK(x.size(i) > 0, op,
                       ": Expected input's non-batch dimensions to have positive length, but input has "
                       "a shape of ",
                       shape_str(x.sizes()));
  std::vector<int64_t> ins, outs;
  for (size_t i = 0; i < ns; ++i) {
    FLOW_RUNTIME_CHECK(k[i] > 0, op, ": kernel_size should be greater than zero, but got kernel_size=", k[i]);
    FLOW_RUNTIME_CHECK(s[i] > 0, op, ": stride should not be zero");
    FLOW_RUNTIME_CHECK(d[i] > 0, op, ": dilation should be greater than zero, but got dilation=", d[i]);
    FLOW_RUNTIME_CHECK(p[i] >= 0 && p[i] <= ((k[i] - 1) * d[i] + 1) / 2,
                       "pad should be at most half of effective kernel size, but got pad=", p[i],
                       ", kernel_size=", k[i], " and dilation=", d[i]);
    int64_t in = x.size(lead + i);
    Win& w = pl.w[3 - ns + i];
    w = {in, pool_out_size(in, k[i], p[i], s[i], d[i], ceil), k[i], s[i], p[i], d[i]};
    ins.push_back(in);
    outs.push_back(w.out);
  }
  bool ok = true;
  for (int64_t o : outs) ok = ok && o > 0;
  std::vector<int64_t> in_c(ins), out_c(outs);
  if (lead >= 1) {
    in_c.insert(in_c.begin(), x.size(lead - 1));
    out_c.insert(out_c.begin(), x.size(lead - 1));
  }
  FLOW_RUNTIME_CHECK(ok, "Given input size: (", sizes_x(in_c), "). Calculated output size: (", sizes_x(out_c),
                     "). Output size is too small");
  if (out_sizes) {
    *out_sizes = Shape(x.sizes().begin(), x.sizes().begin() + lead);
    out_sizes->insert(out_sizes->end(), outs.begin(), outs.end());
  }
  return pl;
}

PoolPlan adaptive_plan(const Tensor& x, const std::vector<int64_t>& osz, const char* op, Shape* out_sizes) {
  size_t ns = osz.size();
  FLOW_RUNTIME_CHECK(ns >= 1 && ns <= 3, op, ": output_size must have 1 to 3 elements");
  FLOW_RUNTIME_CHECK(x.dim() == static_cast<int64_t>(ns) + 1 || x.dim() == static_cast<int64_t>(ns) + 2, op,
                     ": Expected ", ns + 1, "D or ", ns + 2, "D tensor, but got ", shape_str(x.sizes()));
  PoolPlan pl;
  int64_t lead = x.dim() - static_cast<int64_t>(ns);
  for (int64_t i = 0; i < lead; ++i) pl.planes *= x.size(i);
  for (size_t i = 0; i < ns; ++i) {
    FLOW_RUNTIME_CHECK(osz[i] >= 0, op, ": elements of output_size must be greater than or equal to 0 but received {",
                       osz[i], "}");
    int64_t in = x.size(lead + i);
    FLOW_RUNTIME_CHECK(in > 0 || osz[i] == 0, op,
                       ": Expected input to have non-zero size for non-batch dimensions, but "
                       "input has sizes ",
                       shape_str(x.sizes()), " with dimension ", lead + i, " being empty");
    pl.w[3 - ns + i].in = in;
    pl.w[3 - ns + i].out = osz[i];
  }
  if (out_sizes) {
    *out_sizes = Shape(x.sizes().begin(), x.sizes().begin() + lead);
    out_sizes->insert(out_sizes->end(), osz.begin(), osz.end());
  }
  return pl;
}

inline int64_t astart(int64_t o, int64_t out, int64_t in) { return (o * in) / out; }
inline int64_t aend(int64_t o, int64_t out, int64_t in) { return ((o + 1) * in + out - 1) / out; }

Tensor contig_as(const Tensor& t, DType d) {
  if (t.is_contiguous() && t.dtype() == d) return t;
  Tensor r = empty(t.sizes(), d, t.device());
  ops::copy_into(r, t);
  return r;
}

// Which integer inputs a pool takes besides floats, as PyTorch's CPU kernels do: max pools over 2-D and 3-D
// windows take every integer type, average pools only int64 (the sum divided with C's truncation).
enum class IntInputs { None, NonBool, Int64 };

// PyTorch's kernel name for a pool over `ns` spatial dims, as its "not implemented for" errors print it.
std::string kernel_name(const char* op, size_t ns) {
  std::string o(op);
  if (o == "max_pool") return ns == 1 ? "max_pool1d_impl" : o + std::to_string(ns) + "d";
  if (o == "avg_pool" && ns == 3) return "avg_pool3d_out_frame";
  if (o == "avg_pool" || o == "adaptive_avg_pool" || o == "adaptive_max_pool") return o + (ns == 3 ? "3d" : "2d");
  return o;
}

// Runs body<T>(contiguous input, contiguous output of compute type) for float/double, 16-bit via float, and
// the integer types `ints` allows in their own type.
template <IntInputs ints, typename Body>
void pool_kernel(const char* op, size_t ns, const Tensor& x, const Tensor& out, Body&& body) {
  DType dt = x.dtype();
  bool int_ok = (ints == IntInputs::NonBool && is_integral(dt)) || (ints == IntInputs::Int64 && dt == DType::Int64);
  if (!is_floating(dt) && !int_ok) fail_not_implemented(kernel_name(op, ns).c_str(), dt);
  DType ct = int_ok || dt == DType::Float64 ? dt : DType::Float32;
  Tensor xc = contig_as(x, ct);
  Tensor o = out.dtype() == ct && out.is_contiguous() ? out : empty(out.sizes(), ct, out.device());
  switch (ct) {
    case DType::Float32: body(TypeTag<float>{}, xc, o); break;
    case DType::Float64: body(TypeTag<double>{}, xc, o); break;
    default:
      if constexpr (ints == IntInputs::NonBool) dispatch_integral(ct, op, [&](auto tag) { body(tag, xc, o); }, false);
      else if constexpr (ints == IntInputs::Int64) body(TypeTag<int64_t>{}, xc, o);
  }
  if (!o.is_same(out)) ops::copy_into(out, o);
}

// Gradients are floating only.
template <typename Body>
void float_kernel(const char* op, const Tensor& x, const Tensor& out, Body&& body) {
  pool_kernel<IntInputs::None>(op, 0, x, out, std::forward<Body>(body));
}

// Where a max window starts: below every value (integers have no -inf).
template <typename T>
constexpr T window_floor() {
  if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::lowest();
}

template <typename T>
inline bool is_nan_value(T v) {
  if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
  else return false;
}

// Running max of one window element into (best, bi): a greater value or any NaN takes over, so a window's
// last NaN is the one reported (PyTorch's kernels test `val > max || isnan(val)`). The selects go through
// bit masks so that the compiler cannot turn them into branches: on random data those mispredict on every
// other element (measured 10.8 ms vs 2.9 ms on sorted data for a 64x32x28x28 2x2 pool).
template <typename T>
inline void max_step(T v, int64_t li, T& best, int64_t& bi) {
  if constexpr (std::is_floating_point_v<T>) {
    using Bits = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
    Bits take = -static_cast<Bits>((v > best) | (v != v));
    Bits vb, bb;
    std::memcpy(&vb, &v, sizeof(T));
    std::memcpy(&bb, &best, sizeof(T));
    bb = (vb & take) | (bb & ~take);
    std::memcpy(&best, &bb, sizeof(T));
    int64_t m = static_cast<int64_t>(take);  // sign-extends: all ones or zero
    bi = (li & m) | (bi & ~m);
  } else {  // integers: a plain greater-than, which compiles to conditional moves
    bool take = v > best;
    best = take ? v : best;
    bi = take ? li : bi;
  }
}

#if FLOW_KERNELS_AVX2
FLOW_AVX2_BEGIN  // compiled for AVX2 (cpu_isa.h); called only where the CPU has it
// Eight outputs of one float 2x2 row at a time, with the scalar steps' order and NaN rule: the window's four
// values come deinterleaved from two rows, each step a compare-and-blend; the winner's position is kept as a
// code (0..3) and widened to int64 indices at the end. Returns how many outputs it wrote (a multiple of 8).
    inline int64_t max_pool_2x2_row_avx2(const float* r0, const float* r1, float* yr, int64_t* ir, int64_t rowbase,
                                         int64_t win, int64_t wout) {
  auto split = [](const float* p, __m256& even, __m256& odd) {
    __m256 lo = _mm256_loadu_ps(p), hi = _mm256_loadu_ps(p + 8);
    // in-lane shuffles leave the outputs in order 0 1 4 5 2 3 6 7; the 64-bit permute restores 0..7
    even = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xD8));
    odd = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0xDD)), 0xD8));
  };
  const __m256i c1 = _mm256_set1_epi32(1), c2 = _mm256_set1_epi32(2), c3 = _mm256_set1_epi32(3);
  const __m256i vwin = _mm256_set1_epi64x(win), zero = _mm256_setzero_si256();
  int64_t o2 = 0;
  for (; o2 + 8 <= wout; o2 += 8) {
    __m256 a0, a1, a2, a3;
    split(r0 + 2 * o2, a0, a1);
    split(r1 + 2 * o2, a2, a3);
    __m256 best = a0;
    __m256i code = _mm256_setzero_si256();
    auto step = [&](__m256 v, __m256i c) {
      __m256 take = _mm256_or_ps(_mm256_cmp_ps(v, best, _CMP_GT_OQ), _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      best = _mm256_blendv_ps(best, v, take);
      code = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(code), _mm256_castsi256_ps(c), take));
    };
    step(a1, c1);
    step(a2, c2);
    step(a3, c3);
    _mm256_storeu_ps(yr + o2, best);
    // index = rowbase + 2 * output + (code & 1) + (code >> 1 ? win : 0)
    const __m256i col32 = _mm256_and_si256(code, c1), row32 = _mm256_srli_epi32(code, 1);
    for (int h = 0; h < 2; ++h) {
      const __m128i cl = h ? _mm256_extracti128_si256(col32, 1) : _mm256_castsi256_si128(col32);
      const __m128i rw = h ? _mm256_extracti128_si256(row32, 1) : _mm256_castsi256_si128(row32);
      const int64_t base = rowbase + 2 * (o2 + 4 * h);
      __m256i ix = _mm256_add_epi64(_mm256_set_epi64x(base + 6, base + 4, base + 2, base), _mm256_cvtepi32_epi64(cl));
      ix = _mm256_add_epi64(ix, _mm256_and_si256(_mm256_sub_epi64(zero, _mm256_cvtepi32_epi64(rw)), vwin));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(ir + o2 + 4 * h), ix);
    }
  }
  return o2;
}
FLOW_AVX2_END
#endif

// The CNN pool: 2x2 windows, stride 2, no padding, every window inside the input: four branch-free steps per
// output with no window bookkeeping.
template <typename T>
void max_pool_2x2_loop(const PoolPlan& pl, const T* x, T* y, int64_t* idx) {
  const int64_t win = pl.w[2].in, wout = pl.w[2].out, hout = pl.w[1].out;
  const int64_t ip = pl.in_plane(), op = pl.out_plane();
  parallel_for(pl.planes * hout, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, wout * 4)),
               [=](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t pi = r / hout, o1 = r % hout;
      const T* r0 = x + pi * ip + 2 * o1 * win;
      const T* r1 = r0 + win;
      T* yr = y + pi * op + o1 * wout;
      int64_t* ir = idx + pi * op + o1 * wout;
      const int64_t rowbase = 2 * o1 * win;
      int64_t o2 = 0;
#if FLOW_KERNELS_AVX2
      if constexpr (std::is_same_v<T, float>)
        if (cpu_isa() >= CpuIsa::kAvx2) o2 = max_pool_2x2_row_avx2(r0, r1, yr, ir, rowbase, win, wout);
#endif
      for (; o2 < wout; ++o2) {
        const int64_t li = rowbase + 2 * o2;
        T best = r0[2 * o2];
        int64_t bi = li;
        max_step(r0[2 * o2 + 1], li + 1, best, bi);
        max_step(r1[2 * o2], li + win, best, bi);
        max_step(r1[2 * o2 + 1], li + win + 1, best, bi);
        yr[o2] = best;
        ir[o2] = bi;
      }
    }
  });
}

// 1-D/2-D windows without dilation (the common CNN pool): window bounds per output row and column are
// computed once, and each output scans its (clipped) window in row-major order with branch-free steps.
template <typename T>
void max_pool_2d_loop(const PoolPlan& pl, const T* x, T* y, int64_t* idx) {
  const Win &W1 = pl.w[1], &W2 = pl.w[2];
  int64_t ip = pl.in_plane(), op = pl.out_plane();
  auto clamp_bounds = [](const Win& w) {
    std::vector<int64_t> b(2 * w.out);
    for (int64_t o = 0; o < w.out; ++o) {
      int64_t st = o * w.s - w.p;
      b[2 * o + 1] = std::min(st + w.k, w.in);
      b[2 * o] = std::max<int64_t>(st, 0);
    }
    return b;
  };
  const std::vector<int64_t> rb = clamp_bounds(W1), cb = clamp_bounds(W2);
  const int64_t win = W2.in, wout = W2.out, hout = W1.out;
  const int64_t* rbp = rb.data();
  const int64_t* cbp = cb.data();
  parallel_for(pl.planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, op * 4)), [=](int64_t b, int64_t e) {
    for (int64_t pi = b; pi < e; ++pi) {
      const T* xp = x + pi * ip;
      T* yp = y + pi * op;
      int64_t* ix = idx + pi * op;
      for (int64_t o1 = 0; o1 < hout; ++o1) {
        const int64_t s1 = rbp[2 * o1], e1 = rbp[2 * o1 + 1];
        for (int64_t o2 = 0; o2 < wout; ++o2) {
          const int64_t st = cbp[2 * o2], en = cbp[2 * o2 + 1];
          T best = window_floor<T>();
          int64_t bi = s1 * win + st;
          for (int64_t i1 = s1; i1 < e1; ++i1)
            for (int64_t i2 = st; i2 < en; ++i2) max_step(xp[i1 * win + i2], i1 * win + i2, best, bi);
          yp[o1 * wout + o2] = best;
          ix[o1 * wout + o2] = bi;
        }
      }
    }
  });
}

// Max over windows; `adaptive` uses adaptive bounds instead of (k, s, p, d).
template <typename T>
void max_pool_loop(const PoolPlan& pl, const T* x, T* y, int64_t* idx, bool adaptive) {
  int64_t ip = pl.in_plane(), op = pl.out_plane();
  const Win &W0 = pl.w[0], &W1 = pl.w[1], &W2 = pl.w[2];
  if (!adaptive && W0.in == 1 && W0.out == 1 && W1.d == 1 && W2.d == 1) {
    bool two_by_two = W1.k == 2 && W2.k == 2 && W1.s == 2 && W2.s == 2 && W1.p == 0 && W2.p == 0 &&
                      2 * W1.out <= W1.in && 2 * W2.out <= W2.in;
    return two_by_two ? max_pool_2x2_loop(pl, x, y, idx) : max_pool_2d_loop(pl, x, y, idx);
  }
  parallel_for(pl.planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, op * 4)), [&](int64_t b, int64_t e) {
    for (int64_t pi = b; pi < e; ++pi) {
      const T* xp = x + pi * ip;
      T* yp = y + pi * op;
      int64_t* ix = idx + pi * op;
      for (int64_t o0 = 0; o0 < W0.out; ++o0)
        for (int64_t o1 = 0; o1 < W1.out; ++o1)
          for (int64_t o2 = 0; o2 < W2.out; ++o2) {
            int64_t s0, e0, d0, s1, e1, d1, s2, e2, d2;
            auto bounds = [&](const Win& w, int64_t o, int64_t& s, int64_t& en, int64_t& d) {
              if (adaptive) {
                s = astart(o, w.out, w.in);
                en = aend(o, w.out, w.in);
                d = 1;
              } else {
                s = o * w.s - w.p;
                en = std::min(s + (w.k - 1) * w.d + 1, w.in);
                d = w.d;
                while (s < 0) s += d;
              }
            };
            bounds(W0, o0, s0, e0, d0);
            bounds(W1, o1, s1, e1, d1);
            bounds(W2, o2, s2, e2, d2);
            T best = window_floor<T>();
            int64_t bi = (s0 * W1.in + s1) * W2.in + s2;
            for (int64_t i0 = s0; i0 < e0; i0 += d0)
              for (int64_t i1 = s1; i1 < e1; i1 += d1)
                for (int64_t i2 = s2; i2 < e2; i2 += d2) {
                  int64_t li = (i0 * W1.in + i1) * W2.in + i2;
                  T v = xp[li];
                  if (v > best || is_nan_value(v)) {
                    best = v;
                    bi = li;
                  }
                }
            int64_t oi = (o0 * W1.out + o1) * W2.out + o2;
            yp[oi] = best;
            ix[oi] = bi;
          }
    }
  });
}

// Into given outputs (a plan's arena places them): y of the meta's shape and dtype, idx int64.
void max_pool_into(const Tensor& x, const PoolPlan& pl, bool adaptive, const char* op, size_t ns, const Tensor& y,
                   const Tensor& idx_out) {
  if (y.numel() == 0) return;
  Tensor idx = idx_out.is_contiguous() ? idx_out : empty(idx_out.sizes(), DType::Int64, idx_out.device());
  auto body = [&](auto tag, const Tensor& xc, const Tensor& o) {
    using T = typename decltype(tag)::type;
    max_pool_loop<T>(pl, xc.data<T>(), o.data<T>(), idx.data<int64_t>(), adaptive);
  };
  if (!adaptive && ns >= 2) pool_kernel<IntInputs::NonBool>(op, ns, x, y, body);
  else pool_kernel<IntInputs::None>(op, ns, x, y, body);
  if (!idx.is_same(idx_out)) ops::copy_into(idx_out, idx);
}

TensorList max_pool_run(const Tensor& x, const PoolPlan& pl, const Shape& osz, bool adaptive, const char* op,
                        size_t ns) {
  Tensor y = empty(osz, x.dtype(), x.device());
  Tensor idx = empty(osz, DType::Int64, x.device());
  max_pool_into(x, pl, adaptive, op, ns, y, idx);
  return {y, idx};
}

// An integer window's mean: the sum (wrapping, as PyTorch's int64 sum does) over div, truncated toward zero.
// div == -1 negates in unsigned arithmetic, where INT64_MIN / -1 would trap.
template <typename T>
T int_window_mean(uint64_t sum, int64_t div) {
  if (div == -1) return static_cast<T>(static_cast<int64_t>(0 - sum));
  return static_cast<T>(static_cast<int64_t>(sum) / div);
}

// Average over windows (PyTorch's divisor rules) or adaptive bins. `adjoint` scatters g back instead.
template <typename T>
void avg_pool_loop(const PoolPlan& pl, T* x, T* y, bool adaptive, bool count_pad, int64_t divisor, bool adjoint) {
  int64_t ip = pl.in_plane(), op = pl.out_plane();
  const Win &W0 = pl.w[0], &W1 = pl.w[1], &W2 = pl.w[2];
  parallel_for(pl.planes, std::max<int64_t>(1, 4096 / std::max<int64_t>(1, op * 4)), [&](int64_t b, int64_t e) {
    for (int64_t pi = b; pi < e; ++pi) {
      T* xp = x + pi * ip;
      T* yp = y + pi * op;
      for (int64_t o0 = 0; o0 < W0.out; ++o0)
        for (int64_t o1 = 0; o1 < W1.out; ++o1)
          for (int64_t o2 = 0; o2 < W2.out; ++o2) {
            int64_t s[3], en[3], pool = 1;
            const int64_t oo[3] = {o0, o1, o2};
            for (int j = 0; j < 3; ++j) {
              const Win& w = pl.w[j];
              if (adaptive) {
                s[j] = astart(oo[j], w.out, w.in);
                en[j] = aend(oo[j], w.out, w.in);
              } else {
                s[j] = oo[j] * w.s - w.p;
                en[j] = std::min(s[j] + w.k, w.in + w.p);
                pool *= en[j] - s[j];
                s[j] = std::max<int64_t>(s[j], 0);
                en[j] = std::min(en[j], w.in);
              }
            }
            int64_t cnt = (en[0] - s[0]) * (en[1] - s[1]) * (en[2] - s[2]);
            int64_t idiv = adaptive ? cnt : divisor != 0 ? divisor : count_pad ? pool : cnt;
            T div = static_cast<T>(idiv);
            int64_t oi = (o0 * W1.out + o1) * W2.out + o2;
            if constexpr (std::is_integral_v<T>) {
              uint64_t acc = 0;
              for (int64_t i0 = s[0]; i0 < en[0]; ++i0)
                for (int64_t i1 = s[1]; i1 < en[1]; ++i1)
                  for (int64_t i2 = s[2]; i2 < en[2]; ++i2)
                    acc += static_cast<uint64_t>(xp[(i0 * W1.in + i1) * W2.in + i2]);
              yp[oi] = cnt == 0 ? T(0) : int_window_mean<T>(acc, idiv);
            } else if (!adjoint) {
              T acc = 0;
              for (int64_t i0 = s[0]; i0 < en[0]; ++i0)
                for (int64_t i1 = s[1]; i1 < en[1]; ++i1)
                  for (int64_t i2 = s[2]; i2 < en[2]; ++i2) acc += xp[(i0 * W1.in + i1) * W2.in + i2];
              yp[oi] = cnt == 0 ? T(0) : acc / div;
            } else {
              T g = yp[oi] / div;
              for (int64_t i0 = s[0]; i0 < en[0]; ++i0)
                for (int64_t i1 = s[1]; i1 < en[1]; ++i1)
                  for (int64_t i2 = s[2]; i2 < en[2]; ++i2) xp[(i0 * W1.in + i1) * W2.in + i2] += g;
            }
          }
    }
  });
}

// Forward (x -> y of osz) or adjoint (gy -> gx of in_sizes) of an average pool.
Tensor avg_run(const Tensor& src, const PoolPlan& pl, const Shape& dst_sizes, bool adaptive, bool count_pad,
               int64_t divisor, bool adjoint, const char* op, size_t ns) {
  Tensor dst = empty(dst_sizes, src.dtype(), src.device());
  if (dst.numel() == 0) return dst;
  if (src.numel() == 0) {
    ops::copy_into(dst, ops::zeros({}, dst.dtype()));
    return dst;
  }
  auto body = [&](auto tag, const Tensor& sc, const Tensor& o) {
    using T = typename decltype(tag)::type;
    if (!adjoint) {
      avg_pool_loop<T>(pl, const_cast<T*>(sc.data<T>()), o.data<T>(), adaptive, count_pad, divisor, false);
    } else {
      std::memset(o.data<T>(), 0, sizeof(T) * o.numel());
      avg_pool_loop<T>(pl, o.data<T>(), const_cast<T*>(sc.data<T>()), adaptive, count_pad, divisor, true);
    }
  };
  // Integer inputs only reach the window forward (its adjoint is a gradient, floating only).
  if (!adaptive && !adjoint) pool_kernel<IntInputs::Int64>(op, ns, src, dst, body);
  else pool_kernel<IntInputs::None>(op, ns, src, dst, body);
  return dst;
}

int64_t divisor_of(const Attrs& a, const char* name) {
  if (a.none(name)) return 0;
  int64_t d = a.i(name);
  FLOW_RUNTIME_CHECK(d != 0, "divisor must be not zero");
  return d;
}

std::vector<int64_t> vec(const Shape& s) { return std::vector<int64_t>(s.begin(), s.end()); }

// Scatter-add g (planes x out) into zeros (planes x in) at `indices` (flat within a plane), or gather
// (the adjoint: planes x in -> planes x out).
void index_pool_into(const Tensor& src, const Tensor& indices, const Tensor& dst, int64_t in_plane, bool scatter) {
  int64_t big = scatter ? dst.numel() : src.numel();
  if (dst.numel() == 0 || src.numel() == 0 || in_plane == 0) {
    if (dst.numel() > 0) ops::copy_into(dst, ops::zeros({}, dst.dtype()));
    return;
  }
  int64_t np = big / in_plane, op = indices.numel() / np;
  Tensor ic = contig_as(indices, DType::Int64);
  float_kernel("max_pool_backward", src, dst, [&](auto tag, const Tensor& sc, const Tensor& o) {
    using T = typename decltype(tag)::type;
    const T* s = sc.data<T>();
    T* d = o.data<T>();
    const int64_t* ix = ic.data<int64_t>();
    bool bad = false;
    parallel_for(np, 16, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; ++p) {
        // zeroed plane by plane, so the scatter finds its plane still in cache
        if (scatter) std::memset(d + p * in_plane, 0, sizeof(T) * in_plane);
        for (int64_t j = 0; j < op; ++j) {
          int64_t t = ix[p * op + j];
          if (t < 0 || t >= in_plane) {
            bad = true;
            continue;
          }
          if (scatter) d[p * in_plane + t] += s[p * op + j];
          else d[p * op + j] = s[p * in_plane + t];
        }
      }
    });
    FLOW_INDEX_CHECK(!bad, "max_pool_backward: an index is out of range for the input's spatial size ", in_plane);
  });
}

Tensor index_pool(const Tensor& src, const Tensor& indices, const Shape& dst_sizes, int64_t in_plane, bool scatter) {
  Tensor dst = empty(dst_sizes, src.dtype(), src.device());
  index_pool_into(src, indices, dst, in_plane, scatter);
  return dst;
}

int64_t trailing_numel(const Shape& s, size_t ns) {
  int64_t n = 1;
  for (size_t i = s.size() - ns; i < s.size(); ++i) n *= s[i];
  return n;
}

// The pooling gradients' meta: the input's sizes (attribute input_sizes) in the gradient's dtype.
std::vector<TensorMeta> sized_by_attr(const TensorList& in, const Attrs& a) {
  return {{Shape(a.ints("input_sizes").begin(), a.ints("input_sizes").end()), in[0].dtype(), in[0].device()}};
}

Tensor max_pool_grad(const Tensor& g, const Tensor& indices, const Shape& in_sizes, size_t ns) {
  return ops::call1("max_pool_backward", {g, indices}, {vec(in_sizes), static_cast<int64_t>(ns)});
}

}  // namespace

FLOW_OP(max_pool)
    .schema(
        "max_pool(Tensor self, int[] kernel_size, int[] stride=[], int[] padding=0, int[] dilation=1, "
        "bool ceil_mode=False) -> (Tensor, Tensor)")
    .traits(kPooling)
    .meta([](const TensorList& in, const Attrs& a) -> std::vector<TensorMeta> {
      Shape osz;
      window_plan(in[0], a, true, "max_pool", &osz);
      return {{osz, in[0].dtype(), in[0].device()}, {osz, DType::Int64, in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      Shape osz;
      PoolPlan pl = window_plan(in[0], a, true, "max_pool", &osz);
      max_pool_into(in[0], pl, false, "max_pool", a.ints("kernel_size").size(), out[0], out[1]);
    })
    .save_outputs({1})
    .nondiff_outputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {max_pool_grad(g[0], c.output(1), c.input_meta(0).sizes, c.attrs.ints("kernel_size").size())};
    });

FLOW_OP(adaptive_max_pool)
    .schema("adaptive_max_pool(Tensor self, int[] output_size) -> (Tensor, Tensor)")
    .traits(kPooling)
    .meta([](const TensorList& in, const Attrs& a) -> std::vector<TensorMeta> {
      Shape osz;
      adaptive_plan(in[0], a.ints("output_size"), "adaptive_max_pool", &osz);
      return {{osz, in[0].dtype(), in[0].device()}, {osz, DType::Int64, in[0].device()}};
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      Shape osz;
      PoolPlan pl = adaptive_plan(in[0], a.ints("output_size"), "adaptive_max_pool", &osz);
      return max_pool_run(in[0], pl, osz, true, "adaptive_max_pool", a.ints("output_size").size());
    })
    .save_outputs({1})
    .nondiff_outputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {max_pool_grad(g[0], c.output(1), c.input_meta(0).sizes, c.attrs.ints("output_size").size())};
    });

// grad (leading..., out spatial) scattered into zeros(input_sizes) at indices (flat within each plane).
FLOW_OP(max_pool_backward)
    .schema("max_pool_backward(Tensor grad, Tensor indices, int[] input_sizes, int spatial_dims) -> Tensor")
    .traits(kPooling | kBackwardHelper)
    .meta(sized_by_attr)
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& a) {
      FLOW_RUNTIME_CHECK(in[0].sizes() == in[1].sizes(), "max_pool_backward: grad and indices shapes differ");
      index_pool_into(in[0], in[1], out[0], trailing_numel(out[0].sizes(), a.i("spatial_dims")), true);
    })
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {c.needs(0) ? ops::call1("max_pool_gather", {g[0], c.input(1)}, {c.attrs.i("spatial_dims")}) : Tensor(),
              Tensor()};
    });

// out[p, j] = src[p, indices[p, j]]: the adjoint of max_pool_backward.
FLOW_OP(max_pool_gather)
    .schema("max_pool_gather(Tensor self, Tensor indices, int spatial_dims) -> Tensor")
    .traits(kPooling | kBackwardHelper)
    .meta([](const TensorList& in, const Attrs&) -> std::vector<TensorMeta> {
      return {{in[1].sizes(), in[0].dtype(), in[0].device()}};
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      return {index_pool(in[0], in[1], in[1].sizes(), trailing_numel(in[0].sizes(), a.i("spatial_dims")), false)};
    })
    .save_inputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {c.needs(0) ? max_pool_grad(g[0], c.input(1), c.input_meta(0).sizes, c.attrs.i("spatial_dims")) : Tensor(),
              Tensor()};
    });

FLOW_OP(avg_pool)
    .schema(
        "avg_pool(Tensor self, int[] kernel_size, int[] stride=[], int[] padding=0, bool ceil_mode=False, "
        "bool count_include_pad=True, int? divisor_override=None) -> Tensor")
    .traits(kPooling)
    .meta([](const TensorList& in, const Attrs& a) -> std::vector<TensorMeta> {
      Shape osz;
      window_plan(in[0], a, false, "avg_pool", &osz);
      return {{osz, in[0].dtype(), in[0].device()}};
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      Shape osz;
      PoolPlan pl = window_plan(in[0], a, false, "avg_pool", &osz);
      return {avg_run(in[0], pl, osz, false, a.b("count_include_pad"), divisor_of(a, "divisor_override"), false,
                      "avg_pool", a.ints("kernel_size").size())};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      const Attrs& a = c.attrs;
      std::vector<AttrValue> av{vec(c.input_meta(0).sizes), a.ints("kernel_size"), a.ints("stride"),
                                a.ints("padding"),          a.b("ceil_mode"),      a.b("count_include_pad"),
                                a.at("divisor_override")};
      return {ops::call1("avg_pool_backward", {g[0]}, av)};
    });

FLOW_OP(avg_pool_backward)
    .schema(
        "avg_pool_backward(Tensor grad, int[] input_sizes, int[] kernel_size, int[] stride, int[] padding, "
        "bool ceil_mode, bool count_include_pad, int? divisor_override) -> Tensor")
    .traits(kPooling | kBackwardHelper)
    .meta(sized_by_attr)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      Shape is(a.ints("input_sizes").begin(), a.ints("input_sizes").end());
      Shape osz;  // the forward's geometry: this op's attributes name it as avg_pool's do
      PoolPlan pl = window_plan(empty_meta(is, in[0].dtype(), in[0].device()), a, false, "avg_pool", &osz);
      FLOW_RUNTIME_CHECK(osz == in[0].sizes(), "avg_pool_backward: grad of shape ", shape_str(in[0].sizes()),
                         " does not match the pooled shape ", shape_str(osz));
      return {avg_run(in[0], pl, is, false, a.b("count_include_pad"), divisor_of(a, "divisor_override"), true,
                      "avg_pool_backward", a.ints("stride").size())};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      const Attrs& a = c.attrs;
      return {ops::call1("avg_pool", {g[0]},
                         {a.ints("kernel_size"), a.ints("stride"), a.ints("padding"), a.b("ceil_mode"),
                          a.b("count_include_pad"), a.at("divisor_override")})};
    });

FLOW_OP(adaptive_avg_pool)
    .schema("adaptive_avg_pool(Tensor self, int[] output_size) -> Tensor")
    .traits(kPooling)
    .meta([](const TensorList& in, const Attrs& a) -> std::vector<TensorMeta> {
      Shape osz;
      adaptive_plan(in[0], a.ints("output_size"), "adaptive_avg_pool", &osz);
      return {{osz, in[0].dtype(), in[0].device()}};
    })
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      Shape osz;
      PoolPlan pl = adaptive_plan(in[0], a.ints("output_size"), "adaptive_avg_pool", &osz);
      return {avg_run(in[0], pl, osz, true, false, 0, false, "adaptive_avg_pool", a.ints("output_size").size())};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {ops::call1("adaptive_avg_pool_backward", {g[0]},
                         {vec(c.input_meta(0).sizes), static_cast<int64_t>(c.attrs.ints("output_size").size())})};
    });

FLOW_OP(adaptive_avg_pool_backward)
    .schema("adaptive_avg_pool_backward(Tensor grad, int[] input_sizes, int spatial_dims) -> Tensor")
    .traits(kPooling | kBackwardHelper)
    .meta(sized_by_attr)
    .cpu([](const TensorList& in, const Attrs& a) -> TensorList {
      Shape is(a.ints("input_sizes").begin(), a.ints("input_sizes").end());
      size_t ns = static_cast<size_t>(a.i("spatial_dims"));
      FLOW_RUNTIME_CHECK(ns >= 1 && ns <= 3 && ns <= is.size() && ns <= static_cast<size_t>(in[0].dim()),
                         "adaptive_avg_pool_backward: bad spatial_dims");
      // the pooled sizes are the grad's trailing dims
      std::vector<int64_t> osz(in[0].sizes().end() - static_cast<int64_t>(ns), in[0].sizes().end());
      Shape check;
      PoolPlan pl = adaptive_plan(empty_meta(is, in[0].dtype(), in[0].device()), osz, "adaptive_avg_pool", &check);
      FLOW_RUNTIME_CHECK(check == in[0].sizes(), "adaptive_avg_pool_backward: grad shape mismatch");
      return {avg_run(in[0], pl, is, true, false, 0, true, "adaptive_avg_pool_backward", a.i("spatial_dims"))};
    })
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      const Shape& gs = c.input_meta(0).sizes;
      size_t ns = static_cast<size_t>(c.attrs.i("spatial_dims"));
      std::vector<int64_t> osz(gs.end() - static_cast<int64_t>(ns), gs.end());
      return {ops::call1("adaptive_avg_pool", {g[0]}, {osz})};
    });

}  // namespace flow
