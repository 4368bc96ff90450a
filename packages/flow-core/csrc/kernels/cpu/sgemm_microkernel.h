// The 6x16 AVX2 register block and the helpers shared by the packed GEMMs (sgemm_packed.cpp: large
// products; sgemm_small.cpp: batches of small products; sgemm_pack.cpp: the packing routines). Include only
// where FLOW_KERNELS_AVX2 is set (cpu_isa.h); what it defines is compiled for AVX2 + FMA.
#pragma once
#include <immintrin.h>

#include <cstdint>
#include <cstdlib>
#include <memory>

#include "../../core/cpu_isa.h"
#include "../../core/error.h"
#include "sgemm_packed.h"

FLOW_AVX2_BEGIN
namespace flow::sgemm_detail {

constexpr int64_t MR = kSgemmMR, NR = kSgemmNR;

// The register block over kc steps, written to dst (row stride ld): stored, or added to what dst holds
// (kAdd). A comes packed (kc groups of MR row values) or, with kRowsA, straight from a row-major matrix of
// row stride lda (MR whole rows, so no copy). Kept apart from alpha/beta scaling, with no float arguments:
// with alpha and beta live across the loop GCC runs out of the 16 ymm registers and re-reads half of B from
// memory for every FMA (~25% slower).
template <bool kAdd, bool kRowsA = false>
__attribute__((noinline)) void microkernel(int64_t kc, const float* __restrict a, int64_t lda,
                                           const float* __restrict b, float* __restrict dst, int64_t ld) {
  // dst's six rows are written at the end; fetching them now hides the miss behind the FMAs.
  for (int r = 0; r < MR; ++r) _mm_prefetch(reinterpret_cast<const char*>(dst + r * ld), _MM_HINT_T0);
  const int64_t ra = kRowsA ? lda : 1;  // distance between two rows' values of one k
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  for (int64_t k = 0; k < kc; ++k, a += kRowsA ? 1 : MR, b += NR) {
    __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8), av;
    av = _mm256_broadcast_ss(a);
    c00 = _mm256_fmadd_ps(av, b0, c00);
    c01 = _mm256_fmadd_ps(av, b1, c01);
    av = _mm256_broadcast_ss(a + ra);
    c10 = _mm256_fmadd_ps(av, b0, c10);
    c11 = _mm256_fmadd_ps(av, b1, c11);
    av = _mm256_broadcast_ss(a + 2 * ra);
    c20 = _mm256_fmadd_ps(av, b0, c20);
    c21 = _mm256_fmadd_ps(av, b1, c21);
    av = _mm256_broadcast_ss(a + 3 * ra);
    c30 = _mm256_fmadd_ps(av, b0, c30);
    c31 = _mm256_fmadd_ps(av, b1, c31);
    av = _mm256_broadcast_ss(a + 4 * ra);
    c40 = _mm256_fmadd_ps(av, b0, c40);
    c41 = _mm256_fmadd_ps(av, b1, c41);
    av = _mm256_broadcast_ss(a + 5 * ra);
    c50 = _mm256_fmadd_ps(av, b0, c50);
    c51 = _mm256_fmadd_ps(av, b1, c51);
  }
  auto put = [&](int r, __m256 x0, __m256 x1) {
    float* d = dst + r * ld;
    if (kAdd) {
      x0 = _mm256_add_ps(x0, _mm256_loadu_ps(d));
      x1 = _mm256_add_ps(x1, _mm256_loadu_ps(d + 8));
    }
    _mm256_storeu_ps(d, x0);
    _mm256_storeu_ps(d + 8, x1);
  };
  put(0, c00, c01);
  put(1, c10, c11);
  put(2, c20, c21);
  put(3, c30, c31);
  put(4, c40, c41);
  put(5, c50, c51);
}

// C tile (mr x nr <= MR x NR, stride ldc) = alpha * tile + beta * C tile; tile is MR x NR, 32-byte aligned.
inline void update_c(const float* tile, float* c, int64_t ldc, int64_t mr, int64_t nr, float alpha, float beta) {
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  for (int64_t r = 0; r < mr; ++r, tile += NR) {
    float* cr = c + r * ldc;
    if (nr == NR) {
      __m256 x0 = _mm256_mul_ps(va, _mm256_load_ps(tile)), x1 = _mm256_mul_ps(va, _mm256_load_ps(tile + 8));
      if (beta != 0.f) {  // beta == 0 must not read C (it may hold NaN)
        x0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr), x0);
        x1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr + 8), x1);
      }
      _mm256_storeu_ps(cr, x0);
      _mm256_storeu_ps(cr + 8, x1);
    } else {
      for (int64_t j = 0; j < nr; ++j) cr[j] = alpha * tile[j] + (beta != 0.f ? beta * cr[j] : 0.f);
    }
  }
}

// C (M x N, stride ldc) = beta * C, for the products with nothing to multiply (K == 0 or alpha == 0): as in
// BLAS, beta == 0 overwrites without reading C (it may hold NaN), and A and B are not read (0 * inf is NaN).
inline void scale_c(int64_t M, int64_t N, float beta, float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.f ? 0.f : beta * C[i * ldc + j];
}

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

// A growing 64-byte-aligned buffer kept by its (thread_local) owner, so a GEMM allocates nothing once warm.
struct Scratch {
  std::unique_ptr<float[], FreeDeleter> buf;
  size_t cap = 0;
  float* get(size_t n) {
    if (n > cap) {
      size_t bytes = ((n * sizeof(float) + 63) / 64) * 64;
      buf.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
      cap = buf ? n : 0;
      FLOW_CHECK(buf != nullptr, Runtime, "matmul: out of memory for the GEMM's packing buffer (", bytes, " bytes)");
    }
    return buf.get();
  }
};

// Rows [i0, i0 + mc) and columns [p0, p0 + kc) of A = At^T (At is K x M, stride lda) as ceil(mc / MR) panels
// of kc x MR (row index fastest), zero-padded to whole panels. sums, when given, accumulates each packed
// row's values: sums[r] += A(i0 + r, k) over the block's k.
void pack_at(const float* At, int64_t lda, int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out,
             float* sums = nullptr);

// B's rows [p0, p0 + kc) and columns [j0, j0 + nc) (B is K x N, stride ldb) as ceil(nc / NR) panels of
// kc x NR (column index fastest), zero-padded.
void pack_b(const float* B, int64_t ldb, int64_t j0, int64_t nc, int64_t p0, int64_t kc, float* out);

// All N columns of B = Bt^T over K steps (Bt is N x K, stride ldb) in pack_b's layout: ceil(N / NR) panels
// of K x NR, zero-padded. Eight rows of Bt at a time are read eight values wide and transposed in registers.
void pack_bt(const float* Bt, int64_t ldb, int64_t N, int64_t K, float* out);

}  // namespace flow::sgemm_detail
FLOW_AVX2_END
