// Runs of float <-> 16-bit float conversions, eight lanes at a time. The element-wise constructors in half.h
// are exact but scalar (the compiler does not vectorise their NaN branch), 4-7x slower than PyTorch's casts.
// These give the same bits as the scalar forms: round to nearest even; a NaN keeps its sign and top payload
// bits, quieted, in float16 (F16C's rule, as in PyTorch's casts) and becomes 0x7FC0 in bfloat16.
#pragma once
#include <cstdint>

#include "half.h"

#include "cpu_isa.h"

#if defined(__AVX2__) && defined(__F16C__)
// a native build for a CPU with AVX2 + F16C: the eight-lane loops always run
#define FLOW_HALF_VEC_LOOPS 1
#define FLOW_HALF_VEC_ALWAYS 1
#elif defined(FLOW_CPU_DISPATCH) && FLOW_KERNELS_AVX2
// a portable build: the loops are compiled for AVX2 + F16C and run where the CPU has them
#define FLOW_HALF_VEC_LOOPS 1
#define FLOW_HALF_VEC_ALWAYS 0
#else
#define FLOW_HALF_VEC_LOOPS 0
#endif

namespace flow {

#if FLOW_HALF_VEC_LOOPS
namespace half_vec_detail {
// The vector part of the runs below (half_vec.cpp, AVX2 + F16C): returns how many leading elements it
// converted, the rest is left to the scalar loop.
int64_t float_to_half_avx2(const float* s, Half* d, int64_t n);
int64_t half_to_float_avx2(const Half* s, float* d, int64_t n);
int64_t float_to_bfloat16_avx2(const float* s, BFloat16* d, int64_t n);
inline bool enabled() { return FLOW_HALF_VEC_ALWAYS || cpu_isa() >= CpuIsa::kAvx2; }
}  // namespace half_vec_detail
#endif

inline void float_to_half_run(const float* s, Half* d, int64_t n) {
  int64_t i = 0;
#if FLOW_HALF_VEC_LOOPS
  if (half_vec_detail::enabled()) i = half_vec_detail::float_to_half_avx2(s, d, n);
#endif
  for (; i < n; ++i) d[i] = Half(s[i]);
}

inline void half_to_float_run(const Half* s, float* d, int64_t n) {
  int64_t i = 0;
#if FLOW_HALF_VEC_LOOPS
  if (half_vec_detail::enabled()) i = half_vec_detail::half_to_float_avx2(s, d, n);
#endif
  for (; i < n; ++i) d[i] = static_cast<float>(s[i]);
}

inline void float_to_bfloat16_run(const float* s, BFloat16* d, int64_t n) {
  int64_t i = 0;
#if FLOW_HALF_VEC_LOOPS
  if (half_vec_detail::enabled()) i = half_vec_detail::float_to_bfloat16_avx2(s, d, n);
#endif
  for (; i < n; ++i) d[i] = BFloat16(s[i]);
}

}  // namespace flow
