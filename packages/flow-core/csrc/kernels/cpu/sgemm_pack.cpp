// The packing routines of the own AVX2 GEMMs: operand blocks copied into the panel layouts the 6x16
// microkernel reads (see sgemm_microkernel.h for their contracts).
#include <algorithm>

#include "sgemm_packed.h"

#include "../../core/cpu_isa.h"
#if FLOW_KERNELS_AVX2
#include "sgemm_microkernel.h"

FLOW_AVX2_BEGIN

namespace flow::sgemm_detail {

namespace {

// r[i] <- column i of the 8 x 8 block whose rows r holds.
inline void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

// Lanes [0, n) set, for loads that must not read past a row's end.
inline __m256i lane_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

}  // namespace

// Rows of At are read front to back, eight at a time, so each panel receives 8 x MR values (three whole
// cache lines) in one burst: dealing out one row at a time wrote 24 bytes to each of 24 panels 6 KiB apart,
// whose lines share two L1 sets and were evicted between writes (2x slower).
void pack_at(const float* At, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out, float* sums) {
  int64_t full = mc / MR * MR;
  const __m256i m6 = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
  for (int64_t k0 = 0; k0 < kc; k0 += 8) {
    int64_t k1 = std::min(kc, k0 + 8);
    // A panel's MR values as one 8-wide load and store: the store's two extra lanes land where the next k
    // writes, so only the last k needs the masked (slower) store; rows past the block are never read.
    for (int64_t ir = 0; ir < full; ir += MR) {
      const float* src = At + p0 * lda + i0 + ir;
      float* o = out + ir * kc;
      bool wide = ir + 8 <= mc;
      __m256 sum = _mm256_setzero_ps();
      for (int64_t k = k0; k < k1; ++k) {
        __m256 v = wide ? _mm256_loadu_ps(src + k * lda) : _mm256_maskload_ps(src + k * lda, m6);
        sum = _mm256_add_ps(sum, v);
        if (k + 1 < kc) _mm256_storeu_ps(o + k * MR, v);
        else _mm256_maskstore_ps(o + k * MR, m6, v);
      }
      // lanes 6 and 7 belong to the next panel: add zero there
      if (sums)
        _mm256_storeu_ps(sums + ir,
                         _mm256_add_ps(_mm256_loadu_ps(sums + ir), _mm256_and_ps(sum, _mm256_castsi256_ps(m6))));
    }
    if (full < mc)
      for (int64_t k = k0; k < k1; ++k) {
        const float* src = At + (p0 + k) * lda + i0;
        float* d = out + full * kc + k * MR;
        for (int64_t r = 0; r < MR; ++r) d[r] = full + r < mc ? src[full + r] : 0.f;
        if (sums)
          for (int64_t r = full; r < mc; ++r) sums[r] += src[r];
      }
  }
}

void pack_b(const float* B, int64_t ldb, int64_t j0, int64_t nc, int64_t p0, int64_t kc, float* out) {
  for (int64_t jr = 0; jr < nc; jr += NR) {
    int64_t nr = std::min(NR, nc - jr);
    float* o = out + jr * kc;
    const float* src = B + p0 * ldb + j0 + jr;
    if (nr == NR) {
      for (int64_t k = 0; k < kc; ++k, o += NR, src += ldb) {
        _mm256_store_ps(o, _mm256_loadu_ps(src));
        _mm256_store_ps(o + 8, _mm256_loadu_ps(src + 8));
      }
    } else {
      for (int64_t k = 0; k < kc; ++k, o += NR, src += ldb) {
        int64_t c = 0;
        for (; c < nr; ++c) o[c] = src[c];
        for (; c < NR; ++c) o[c] = 0.f;
      }
    }
  }
}

void pack_bt(const float* Bt, int64_t ldb, int64_t N, int64_t K, float* out) {
  for (int64_t j0 = 0; j0 < N; j0 += NR) {
    float* o = out + j0 * K;
    for (int64_t h = 0; h < NR; h += 8) {
      int64_t rows = std::clamp<int64_t>(N - j0 - h, 0, 8);
      for (int64_t k0 = 0; k0 < K; k0 += 8) {
        int64_t kn = std::min<int64_t>(8, K - k0);
        __m256i m = lane_mask(kn);
        __m256 r[8];
        for (int64_t i = 0; i < 8; ++i) {
          const float* src = Bt + (j0 + h + i) * ldb + k0;
          r[i] = i >= rows ? _mm256_setzero_ps() : kn == 8 ? _mm256_loadu_ps(src) : _mm256_maskload_ps(src, m);
        }
        transpose8(r);
        for (int64_t k = 0; k < kn; ++k) _mm256_store_ps(o + (k0 + k) * NR + h, r[k]);
      }
    }
  }
}

}  // namespace flow::sgemm_detail

FLOW_AVX2_END
#endif
