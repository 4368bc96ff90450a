// The eight-lane conversion loops of half_vec.h, compiled for AVX2 + F16C: always run by a native build for such
// a CPU, run by a portable build only where the CPU has them (half_vec.h asks cpu_isa() first).
#include "half_vec.h"

#if FLOW_HALF_VEC_LOOPS
#include <immintrin.h>

FLOW_AVX2_BEGIN
namespace flow::half_vec_detail {

int64_t float_to_half_avx2(const float* s, Half* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT));
  return i;
}

int64_t half_to_float_avx2(const Half* s, float* d, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(d + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i))));
  return i;
}

int64_t float_to_bfloat16_avx2(const float* s, BFloat16* d, int64_t n) {
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7FFF), qnan = _mm256_set1_epi32(0x7FC0);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
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
  return i;
}

}  // namespace flow::half_vec_detail
FLOW_AVX2_END
#endif
