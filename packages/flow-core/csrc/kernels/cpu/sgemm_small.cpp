#include <algorithm>
#include <vector>

#include "../../core/cpu_isa.h"
#include "sgemm_packed.h"

#if FLOW_KERNELS_AVX2
#define FLOW_SMALL_SGEMM 1
#include "sgemm_microkernel.h"
#endif

namespace flow {

#ifdef FLOW_SMALL_SGEMM
FLOW_AVX2_BEGIN

using namespace sgemm_detail;

namespace {

// Rows [i0, i0 + mr) (mr <= MR) of a row-major A (stride lda) as one zero-padded K x MR panel.
void pack_rows(const float* A, int64_t lda, int64_t i0, int64_t mr, int64_t K, float* out) {
  for (int64_t k = 0; k < K; ++k)
    for (int64_t r = 0; r < MR; ++r) out[k * MR + r] = r < mr ? A[(i0 + r) * lda + k] : 0.f;
}

// Index of the first value in p[0, n) that is not zero (NaN counts as not zero), or n.
int64_t first_nonzero(const float* p, int64_t n) {
  const __m256 z = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    int m = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p + i), z, _CMP_NEQ_UQ));
    if (m) return i + __builtin_ctz(static_cast<unsigned>(m));
  }
  for (; i < n; ++i)
    if (p[i] != 0.f) return i;
  return n;
}

// One past the index of the last value in p[0, n) that is not zero, or 0.
int64_t end_nonzero(const float* p, int64_t n) {
  const __m256 z = _mm256_setzero_ps();
  int64_t i = n;
  for (; i >= 8; i -= 8) {
    int m = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p + i - 8), z, _CMP_NEQ_UQ));
    if (m) return i - 8 + 32 - __builtin_clz(static_cast<unsigned>(m));
  }
  for (; i > 0; --i)
    if (p[i - 1] != 0.f) return i;
  return 0;
}

bool all_finite(const float* p, int64_t n) {
  const __m256 inf = _mm256_set1_ps(__builtin_inff()), abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 bad = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(_mm256_and_ps(_mm256_loadu_ps(p + i), abs), inf, _CMP_NLT_UQ));
  if (_mm256_movemask_ps(bad)) return false;
  for (; i < n; ++i)
    if (!(p[i] - p[i] == 0.f)) return false;
  return true;
}

// The k-range [lo, hi) outside which a panel of `n` groups of `w` values (group index = k) is all zero.
struct Range {
  int64_t lo, hi;
};
Range group_range(const float* p, int64_t groups, int64_t w) {
  int64_t f = first_nonzero(p, groups * w);
  if (f == groups * w) return {0, 0};
  return {f / w, (end_nonzero(p, groups * w) + w - 1) / w};
}

}  // namespace

void packed_sgemm_small(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                        const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == 0.f) return scale_c(M, N, beta, C, ldc);
  thread_local Scratch abuf, bbuf;
  thread_local std::vector<Range> arange, brange;
  const int64_t ntile = (N + NR - 1) / NR, npanel = (M + MR - 1) / MR;
  float* pb = bbuf.get(static_cast<size_t>(ntile * NR * K));
  if (tb) pack_bt(B, ldb, N, K, pb);
  else pack_b(B, ldb, 0, N, 0, K, pb);
  // A row-major A is read in place (its rows are already contiguous in k), a last partial panel as the
  // last MR rows, overlapping the panel before it; A^T, or an A of fewer than MR rows, is packed.
  const bool inplace = !ta && M >= MR;
  auto first_row = [&](int64_t p) { return std::min(p * MR, M - MR); };
  float* pa = nullptr;
  if (!inplace) {
    pa = abuf.get(static_cast<size_t>(npanel * MR * K + 8));
    if (ta) pack_at(A, lda, 0, M, 0, K, pa);
    else pack_rows(A, lda, 0, M, K, pa);
  }

  // Where a panel of A (or a tile of B) is zero over a run of k at either end, the product skips that run:
  // causal attention's probabilities, and their gradients, are triangular. Skipping is exact only where the
  // other operand is finite there (0 * inf is NaN), so each side's ranges are kept only if the other side
  // is all finite.
  arange.resize(static_cast<size_t>(npanel));
  brange.resize(static_cast<size_t>(ntile));
  bool askip = false, bskip = false;
  for (int64_t p = 0; p < npanel; ++p) {
    Range r{K, 0};
    if (inplace) {
      for (int64_t i = 0; i < MR; ++i) {  // only values outside the range so far can widen it
        const float* row = A + (first_row(p) + i) * lda;
        r.lo = std::min(r.lo, first_nonzero(row, r.lo));
        int64_t e = end_nonzero(row + r.hi, K - r.hi);
        if (e) r.hi += e;
      }
      if (r.lo >= r.hi) r = {0, 0};
    } else {
      r = group_range(pa + p * MR * K, K, MR);
    }
    arange[p] = r;
    askip |= r.lo > 0 || r.hi < K;
  }
  for (int64_t t = 0; t < ntile; ++t) {
    brange[t] = group_range(pb + t * NR * K, K, NR);
    bskip |= brange[t].lo > 0 || brange[t].hi < K;
  }
  if (askip && !all_finite(pb, ntile * NR * K))
    for (Range& r : arange) r = {0, K};
  if (bskip) {
    bool finite = true;
    if (!inplace) finite = all_finite(pa, npanel * MR * K);
    for (int64_t i = 0; finite && inplace && i < M; ++i) finite = all_finite(A + i * lda, K);
    if (!finite)
      for (Range& r : brange) r = {0, K};
  }

  // Whole tiles go straight into C when no scaling is asked for: BLAS's usual alpha = 1, beta = 0 or 1.
  const bool direct = alpha == 1.f && (beta == 0.f || beta == 1.f);
  alignas(32) float tile[MR * NR];
  for (int64_t t = 0; t < ntile; ++t) {
    const int64_t nr = std::min(NR, N - t * NR);
    for (int64_t p = 0; p < npanel; ++p) {
      const int64_t mr = std::min(MR, M - p * MR);
      const int64_t lo = std::max(arange[p].lo, brange[t].lo);
      const int64_t kc = std::max<int64_t>(0, std::min(arange[p].hi, brange[t].hi) - lo);
      const float* b = pb + t * NR * K + lo * NR;
      float* c = C + p * MR * ldc + t * NR;
      bool to_c = direct && mr == MR && nr == NR;
      float* dst = to_c ? c : tile;
      int64_t ld = to_c ? ldc : NR;
      if (inplace) {
        const float* a = A + first_row(p) * lda + lo;
        if (to_c && beta == 1.f) microkernel<true, true>(kc, a, lda, b, dst, ld);
        else microkernel<false, true>(kc, a, lda, b, dst, ld);
      } else {
        const float* a = pa + p * MR * K + lo * MR;
        if (to_c && beta == 1.f) microkernel<true>(kc, a, 0, b, dst, ld);
        else microkernel<false>(kc, a, 0, b, dst, ld);
      }
      // a last overlapped panel's first rows belong to the panel before
      if (!to_c) update_c(tile + (p * MR - (inplace ? first_row(p) : p * MR)) * NR, c, ldc, mr, nr, alpha, beta);
    }
  }
}

FLOW_AVX2_END
#else  // no AVX2/FMA in this build

void packed_sgemm_small(bool, bool, int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t,
                        float, float*, int64_t) {}

#endif

}  // namespace flow
