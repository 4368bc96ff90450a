// Branch-free float32 exp/tanh/sigmoid that the compiler vectorises (libm's expf/tanhf are opaque calls,
// one element at a time), plus a contiguous-loop driver using `omp simd`. Accuracy is within ~2 ulp, like
// the SLEEF routines PyTorch's vectorised CPU kernels use.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#include "unary_common.h"

#define FLOW_VEC_INLINE inline __attribute__((always_inline))

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
FLOW_VEC_INLINE float erf_abs_f32(float x) { return erf_abs_f32(x, exp_nonpos_f32(-x * x)); }

FLOW_VEC_INLINE float sigmoid_f32(float x) { return 1.0f / (1.0f + exp_f32(-x)); }

}  // namespace flow::vec

namespace flow {
// exp/tanh/sigmoid picking the vectorisable float32 routine and libm for double.
template <typename A>
FLOW_VEC_INLINE A vexp(A x) {
  if constexpr (std::is_same_v<A, float>) return vec::exp_f32(x);
  else return std::exp(x);
}
template <typename A>
FLOW_VEC_INLINE A vtanh(A x) {
  if constexpr (std::is_same_v<A, float>) return vec::tanh_f32(x);
  else return std::tanh(x);
}
template <typename A>
FLOW_VEC_INLINE A verf_abs(A x) {
  if constexpr (std::is_same_v<A, float>) return vec::erf_abs_f32(x);
  else return std::erf(x);
}
template <typename A>
FLOW_VEC_INLINE A vsigmoid(A x) {
  return A(1) / (A(1) + vexp<A>(-x));
}
}  // namespace flow
