// Branch-free float32 exp/tanh/sigmoid that the compiler vectorises (libm's expf/tanhf are opaque calls,
// one element at a time), plus a contiguous-loop driver using `omp simd`. Accuracy is within ~2 ulp, like
// the SLEEF routines PyTorch's vectorised CPU kernels use.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "unary_common.h"

namespace flow::vec {

FLOW_VEC_INLINE float pow2i(int32_t n) {  // 2^n for n in [-126, 127]
  int32_t bits = (n + 127) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Cephes expf's core: exp(x) = 2^n * exp(r), |r| <= ln2/2, with a degree-6 polynomial for exp(r).
// Returns exp(r) and sets n; the callers scale by 2^n in their own way.
FLOW_VEC_INLINE float exp_reduced(float xc, float& n) {
  const float shift = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  n = (xc * 1.44269504088896341f + shift) - shift;
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

FLOW_VEC_INLINE float exp_f32(float x) {
  float xc = x < -104.0f ? -104.0f : x;
  xc = xc > 88.8f ? 88.8f : xc;
  float n;
  float y = exp_reduced(xc, n);
  int32_t ni = static_cast<int32_t>(n);
  int32_t n1 = ni >> 1;  // two steps so that 2^n stays a normal float at both ends of the range
  y = y * pow2i(n1) * pow2i(ni - n1);
  return x != x ? x : y;
}

// exp(x) for x <= 0 (or NaN) where only the absolute error matters (gelu's erf and pdf, softmax's
// exp(x - max)): results below 2^-125 (x < -86.6) are flushed to 0, which spares exp_f32's clamping to
// the denormal range and its two-step scaling: 2^n goes straight into the exponent bits. Same polynomial,
// so results in the normal range are exp_f32's; exp(0) is exactly 1. A NaN stays NaN through the
// arithmetic (its n converts to INT_MIN, whose shifted bits are 0). Callers never pass x > 0.
FLOW_VEC_INLINE float exp_nonpos_f32(float x) {
  const float lo = -86.6f;  // round(lo * log2(e)) = -125: y * 2^n stays normal for y in [0.7, 1.42]
  float xc = x < lo ? lo : x;
  float n;
  float y = exp_reduced(xc, n);
  int32_t bits;
  std::memcpy(&bits, &y, 4);
  bits += static_cast<int32_t>(static_cast<uint32_t>(static_cast<int32_t>(n)) << 23);
  std::memcpy(&y, &bits, 4);
  return x < lo ? 0.0f : y;
}

// exp(x) - 1 for x <= 0 (or NaN), keeping float32's relative accuracy near 0 where exp(x) - 1 cancels (ELU
// at x = -1e-8 gave 0): on [-0.5, 0] the Taylor series to x^8 / 8! (truncation < 2e-8 relative), written as
// x * (1 + x * (...)) so that -0 stays -0; below, exp(x) - 1, whose result is at least 0.39 in magnitude.
FLOW_VEC_INLINE float expm1_nonpos_f32(float x) {
  float q = 1.0f / 40320.0f;
  q = q * x + 1.0f / 5040.0f;
  q = q * x + 1.0f / 720.0f;
  q = q * x + 1.0f / 120.0f;
  q = q * x + 1.0f / 24.0f;
  q = q * x + 1.0f / 6.0f;
  q = q * x + 0.5f;
  float small = x * (q * x + 1.0f);
  float big = exp_nonpos_f32(x) - 1.0f;
  return x > -0.5f ? small : big;
}

// Cephes tanhf: odd polynomial near 0 (keeps relative accuracy), 1 - 2/(exp(2|x|)+1) elsewhere.
FLOW_VEC_INLINE float tanh_f32(float x) {
  float ax = x < 0 ? -x : x;
  float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  float small = p * z * x + x;
  float e = exp_f32(2.0f * ax);
  float big = 1.0f - 2.0f / (e + 1.0f);
  big = x < 0 ? -big : big;
  return ax < 0.625f ? small : big;
}

// Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7), as PyTorch's vectorised erf; for gelu only,
// where the absolute error is what matters (the erf op itself keeps libm's relative accuracy).
// `exp_neg_x2` is exp(-x*x), passed in so that gelu's backward shares it with the normal pdf.
FLOW_VEC_INLINE float erf_abs_f32(float x, float exp_neg_x2) {
  // fabs/copysign rather than `x < 0 ? -x : x`: GCC if-converts that select by evaluating the division and
  // the polynomial once per branch
  float ax = std::fabs(x);
  float t = 1.0f / (1.0f + 0.3275911f * ax);
  float p = 1.061405429f;
  p = p * t - 1.453152027f;
  p = p * t + 1.421413741f;
  p = p * t - 0.284496736f;
  p = p * t + 0.254829592f;
  float r = 1.0f - p * t * exp_neg_x2;
  return std::copysign(r, x);
}

// erf as x P(x^2) / Q(x^2) on |x| < 3.925, +-1 beyond (where erf rounds to 1 in float32): a (5, 5) rational
// fit, absolute error < 4e-7 evaluated in float32, against 1.5e-7 for erf_abs_f32. With no exp it costs about
// half as much, which is what gelu's forward spends its time on; the backward needs exp(-x^2/2) for the
// pdf anyway, so it keeps erf_abs_f32 over that shared exp.
FLOW_VEC_INLINE float erf_rational_f32(float x) {
  float ax = std::fabs(x);
  float t = ax < 3.925f ? ax * ax : 3.925f * 3.925f;  // a select, not fminf: that one does not vectorise
  float p = 2.197968222e-06f;
  p = p * t + 2.860532534e-04f;
  p = p * t + 3.500918219e-03f;
  p = p * t + 5.195316540e-02f;
  p = p * t + 1.832802240e-01f;
  p = p * t + 1.128379148e+00f;
  float q = 3.968576395e-05f;
  q = q * t + 1.111687414e-03f;
  q = q * t + 1.443241253e-02f;
  q = q * t + 1.112973305e-01f;
  q = q * t + 4.957608909e-01f;
  q = q * t + 1.0f;
  float r = ax < 3.925f ? ax * p / q : 1.0f;
  r = r < 1.0f ? r : 1.0f;  // rounding takes the fit up to 4e-7 over 1 near the cut, and 1 + erf below 0
  return std::copysign(r, x);
}

// erf with float32's relative accuracy (within ~1 ulp), for the erf op; both branches are evaluated and one
// selected, so the loop vectorises (libm's erff does not: ~20x slower). Below |x| = 1 the odd Taylor series
// sum_n (-1)^n x^(2n+1) / (n! (2n+1)) * 2/sqrt(pi) to n = 11 (truncation < 1e-10). Above, 1 - erfc with
// erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 + z/2): the Chebyshev fit of Numerical Recipes' erfcc, relative
// error < 1.2e-7; erfc <= 0.16 there, so erf keeps float32's precision.
FLOW_VEC_INLINE float erf_f32(float x) {
  float ax = std::fabs(x);
  // Taylor: 2/sqrt(pi) x + x z Q(z), with 2/sqrt(pi) split in two floats (one float alone is off by half
  // an ulp) and the leading term added last, so that Q's rounding stays in the small correction; erf is odd,
  // so the sign is x's (this keeps erf(-0) = -0)
  float z = x * x, zs = z;
  float p = -1.2290555301717926e-09f;
  p = p * zs + 1.4807192815879218e-08f;
  p = p * zs - 1.6365844691234924e-07f;
  p = p * zs + 1.6462114365889246e-06f;
  p = p * zs - 1.492565035840625e-05f;
  p = p * zs + 0.00012055332981789664f;
  p = p * zs - 0.0008548327023450852f;
  p = p * zs + 0.005223977625442188f;
  p = p * zs - 0.026866170645131252f;
  p = p * zs + 0.11283791670955126f;
  p = p * zs - 0.37612638903183754f;
  float small = std::copysign(x * 1.128379225730896f + x * (zs * p - 5.863538343753305e-08f), x);
  float t = 1.0f / (1.0f + 0.5f * ax);
  float q = 0.17087277f;
  q = q * t - 0.82215223f;
  q = q * t + 1.48851587f;
  q = q * t - 1.13520398f;
  q = q * t + 0.27886807f;
  q = q * t - 0.18628806f;
  q = q * t + 0.09678418f;
  q = q * t + 0.37409196f;
  q = q * t + 1.00002368f;
  float arg = q * t - 1.26551223f - z;
  arg = arg > 0.0f ? 0.0f : arg;  // only near x = 0, whose branch is the other one; a NaN passes through
  float big = std::copysign(1.0f - t * exp_nonpos_f32(arg), x);
  return ax < 1.0f ? small : big;
}

// Cephes logf: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), log(m) = f - f^2/2 + f^3 P(f) for f = m - 1 (degree-8
// P), e * ln2 added in two parts. Within 1 ulp; selects instead of branches so the loop vectorises (libm's logf
// is called one element at a time). Subnormals are scaled into the normal range first; 0 -> -inf, x < 0 or
// NaN -> NaN, inf -> inf.
FLOW_VEC_INLINE float log_f32(float x) {
  const bool sub = x < 1.17549435e-38f;  // also true for 0 and negatives, handled at the end
  float xs = sub ? x * 8388608.0f : x;   // 2^23
  uint32_t b;
  std::memcpy(&b, &xs, 4);
  float e = static_cast<float>(static_cast<int32_t>((b >> 23) & 0xFFu) - 126) - (sub ? 23.0f : 0.0f);
  uint32_t mb = (b & 0x807FFFFFu) | 0x3F000000u;  // the mantissa as a value in [0.5, 1)
  float m;
  std::memcpy(&m, &mb, 4);
  const bool lo = m < 0.70710678118654752440f;
  e = lo ? e - 1.0f : e;
  const float f = lo ? (m + m) - 1.0f : m - 1.0f;
  const float z = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  float y = p * f * z;
  y = y + e * -2.12194440e-4f;
  y = y - 0.5f * z;
  float r = f + y;
  r = r + e * 0.693359375f;
  r = x == 0.0f ? -std::numeric_limits<float>::infinity() : r;
  r = x > 3.40282347e38f ? x : r;              // +inf
  return (x < 0.0f || x != x) ? std::numeric_limits<float>::quiet_NaN() : r;
}

FLOW_VEC_INLINE float sigmoid_f32(float x) { return 1.0f / (1.0f + exp_f32(-x)); }

// sin and cos of 2*pi*u for u in [0, 1) (an angle in turns, as Box-Muller draws it): the nearest quarter
// turn is taken off exactly in turns, leaving |r| <= pi/4 for Cephes' sinf/cosf polynomials (~1 ulp);
// the quadrant then rotates the pair.
FLOW_VEC_INLINE void sincos_turns_f32(float u, float& s, float& c) {
  const float shift = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  float q = (u * 4.0f + shift) - shift;
  float r = (u - q * 0.25f) * 6.28318530717958647692f;
  float z = r * r;
  float sr = ((-1.9515295891e-4f * z + 8.3321608736e-3f) * z - 1.6666654611e-1f) * z * r + r;
  float cr =
      ((2.443315711809948e-5f * z - 1.388731625493765e-3f) * z + 4.166664568298827e-2f) * z * z - 0.5f * z + 1.0f;
  int32_t k = static_cast<int32_t>(q) & 3;
  float s1 = k == 1 ? cr : k == 2 ? -sr : k == 3 ? -cr : sr;
  float c1 = k == 1 ? -sr : k == 2 ? -cr : k == 3 ? sr : cr;
  s = s1;
  c = c1;
}

}  // namespace flow::vec

namespace flow {
// exp/tanh/sigmoid picking the vectorisable float32 routine and libm for double.
template <typename A>
FLOW_VEC_INLINE A vexp(A x) {
  if constexpr (std::is_same_v<A, float>) return vec::exp_f32(x);
  else return std::exp(x);
}
// The maximum of x[0, n) in A, NaN when any element is NaN (a max reduction alone skips NaNs), -inf when
// n == 0: one omp-simd pass, the shift of softmax and logsumexp. (An int flag: GCC does not vectorise a
// bool `|` reduction.)
template <typename A, typename T>
FLOW_VEC_INLINE A vmax_nan(const T* x, int64_t n) {
  A m = -std::numeric_limits<A>::infinity();
  int nan = 0;
#pragma omp simd reduction(max : m) reduction(| : nan)
  for (int64_t i = 0; i < n; ++i) {
    A v = static_cast<A>(x[i]);
    m = std::max(m, v);
    nan |= static_cast<int>(v != v);
  }
  return nan ? std::numeric_limits<A>::quiet_NaN() : m;
}

// exp(x) for x <= 0 (or NaN), such as exp(x - max) in softmax and logsumexp: exactly 0 far below the float
// range (masked -inf entries), through the cheaper float routine that flushes below 2^-125.
template <typename A>
FLOW_VEC_INLINE A vexp_nonpos(A x) {
  if constexpr (std::is_same_v<A, float>) return vec::exp_nonpos_f32(x);
  else return std::exp(x);  // exp(-inf) = 0 already
}
template <typename A>
FLOW_VEC_INLINE A vexpm1_nonpos(A x) {
  if constexpr (std::is_same_v<A, float>) return vec::expm1_nonpos_f32(x);
  else return std::expm1(x);
}
template <typename A>
FLOW_VEC_INLINE A vtanh(A x) {
  if constexpr (std::is_same_v<A, float>) return vec::tanh_f32(x);
  else return std::tanh(x);
}
template <typename A>
FLOW_VEC_INLINE A vlog(A x) {
  if constexpr (std::is_same_v<A, float>) return vec::log_f32(x);
  else return std::log(x);
}
// log1p(v) through the vectorisable log: log(u) * v / (u - 1) with u = 1 + v cancels u's rounding
// (Goldberg's trick), within a few ulp, for the losses' log(1 + e) terms.
template <typename A>
FLOW_VEC_INLINE A vlog1p(A v) {
  if constexpr (std::is_same_v<A, float>) {
    // one nested select: GCC leaves the caller's loop scalar when these are separate assignments
    A u = A(1) + v;
    return u == A(1) ? v : (u > std::numeric_limits<A>::max() ? u : vec::log_f32(u) * (v / (u - A(1))));
  } else {
    return std::log1p(v);
  }
}
template <typename A>
FLOW_VEC_INLINE A verf(A x) {
  if constexpr (std::is_same_v<A, float>) return vec::erf_f32(x);
  else return std::erf(x);
}
// erf where only the absolute error matters (gelu's forward); NaN gives +-1, for gelu's x * ... to keep NaN
template <typename A>
FLOW_VEC_INLINE A verf_abs(A x) {
  if constexpr (std::is_same_v<A, float>) return vec::erf_rational_f32(x);
  else return std::erf(x);
}
template <typename A>
FLOW_VEC_INLINE A vsigmoid(A x) {
  return A(1) / (A(1) + vexp<A>(-x));
}
}  // namespace flow
