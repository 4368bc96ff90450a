// Runs of float <-> 16-bit float conversions, eight lanes at a time. The element-wise constructors in half.h
// are exact but scalar (the compiler does not vectorise their NaN branch), 4-7x slower than PyTorch's casts.
// These give the same bits as the scalar forms: round to nearest even; a NaN keeps its sign and top payload
// bits, quieted, in float16 (F16C's rule, as in PyTorch's casts) and becomes 0x7FC0 in bfloat16.
#pragma once
#include <cstdint>

#include "half.h"

#include "cpu_isa.h"

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#define FLOW_HALF_VEC_DISPATCH 0
#elif defined(FLOW_CPU_DISPATCH) && FLOW_KERNELS_AVX2
// a portable build: the eight-lane loops are compiled for AVX2 + F16C in half_vec.cpp
#define FLOW_HALF_VEC_DISPATCH 1
#else
#define FLOW_HALF_VEC_DISPATCH 0
#endif

namespace flow {

#if FLOW_HALF_VEC_DISPATCH
namespace half_vec_detail {
// The vector part of the runs below (AVX2 + F16C; cpu_isa() >= kAvx2 only): returns how many leading
// elements it converted, the rest is left to the scalar loop.
int64_t float_to_half_avx2(const float* s, Half* d, int64_t n);
int64_t half_to_float_avx2(const Half* s, float* d, int64_t n);
int64_t float_to_bfloat16_avx2(const float* s, BFloat16* d, int64_t n);
}  // namespace half_vec_detail
#endif

inline void float_to_half_run(const float* s, Half* d, int64_t n) {
  int64_t i = 0;
#if defined(__AVX2__) && defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
#elif FLOW_HALF_VEC_DISPATCH
  if (cpu_isa() >= CpuIsa::kAvx2) i = half_vec_detail::float_to_half_avx2(s, d, n);
#endif
  for (; i < n; ++i) d[i] = Half(s[i]);
}

inline void half_to_float_run(const Half* s, float* d, int64_t n) {
  int64_t i = 0;
#if defined(__AVX2__) && defined(__F16C__)
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
#elif FLOW_HALF_VEC_DISPATCH
  if (cpu_isa() >= CpuIsa::kAvx2) i = half_vec_detail::half_to_float_avx2(s, d, n);
#endif
  for (; i < n; ++i) d[i] = static_cast<float>(s[i]);
}

inline void float_to_bfloat16_run(const float* s, BFloat16* d, int64_t n) {
  int64_t i = 0;
#if defined(__AVX2__)
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7FFF), qnan = _mm256_set1_epi32(0x7FC0);
  for (i = 0; i + 16 <= n; i += 16) {
    __m256i h[2];
    for (int k = 0; k < 2; ++k) {
      __m256 x = _mm256_loadu_ps(s + i + 8 * k);
      __m256i b = _mm256_castps_si256(x);
      __m256i r = _mm256_srli_epi32(
          _mm256_add_epi32(b, _mm256_add_epi32(bias, _mm256_and_si256(_mm256_srli_epi32(b, 16), one))), 16);
      h[k] = _mm256_blendv_epi8(r, qnan, _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q)));
    }
    // packus works within 128-bit lanes: reorder the quadwords to restore element order
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(h[0], h[1]), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), packed);
  }
#elif FLOW_HALF_VEC_DISPATCH
  if (cpu_isa() >= CpuIsa::kAvx2) i = half_vec_detail::float_to_bfloat16_avx2(s, d, n);
#endif
  for (; i < n; ++i) d[i] = BFloat16(s[i]);
}

}  // namespace flow
