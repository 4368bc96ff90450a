#include "sgemm_packed.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "../../core/cpu_isa.h"
#include "../../core/error.h"
#include "gemm.h"
#include "parallel.h"

#if FLOW_KERNELS_AVX2
#define FLOW_PACKED_SGEMM 1
#include "sgemm_microkernel.h"
#endif

namespace flow {

bool packed_sgemm_available() { return FLOW_KERNELS_AVX2 && cpu_isa() >= CpuIsa::kAvx2; }

PackedB::PackedB(const float* B, int64_t ldb, bool tb, int64_t K, int64_t N)
    : K_(K), N_(N), kb_(K), data_(nullptr, [](float* p) { std::free(p); }) {
  if (packed_sgemm_available()) {
    pack_own(B, ldb, tb);
    return;
  }
  // Without the kernel, "packing" keeps a dense row-major copy of op(B) for the library GEMM.
  data_.reset(static_cast<float*>(std::malloc(sizeof(float) * K * N)));
  FLOW_CHECK(data_ != nullptr, Runtime, "matmul: out of memory for a packed operand");
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j) data_[k * N + j] = tb ? B[j * ldb + k] : B[k * ldb + j];
}

void PackedB::multiply(int64_t M, const float* A, int64_t lda, float beta, float* C, int64_t ldc) const {
  if (packed_sgemm_available()) return multiply_own(M, A, lda, beta, C, ldc);
  if (M > 0) sgemm_rowmajor(false, false, M, N_, K_, 1.f, A, lda, data_.get(), N_, beta, C, ldc);
}

#ifdef FLOW_PACKED_SGEMM
FLOW_AVX2_BEGIN

using namespace sgemm_detail;

namespace {

// Register block MR x NR: 12 ymm accumulators + 2 B vectors + 1 broadcast A fit AVX2's 16 registers.
// KC x NR of B (16 KiB) stays in L1 while the MC x KC block of A (144 KiB) streams from L2; the KC x NC block
// of B lives in L3. Zen 3 sizes (32 KiB L1d, 512 KiB L2 per core).
constexpr int64_t KC = 256, MC = 144, NC = 4080;

// The block loops over C's rows [i0, i1) and columns [j0, j1), on the calling thread.
// colsum, when given, receives the sums over k of A's rows [i0, i1): summed in float over one K block
// (as the packing sees it), the blocks in double, so long sums stay as accurate as a reduction's.
void sgemm_block(int64_t i0, int64_t i1, int64_t j0, int64_t j1, int64_t K, float alpha, const float* A, int64_t lda,
                 const float* B, int64_t ldb, float beta, float* C, int64_t ldc, float* colsum) {
  thread_local Scratch abuf, bbuf, sbuf;
  thread_local std::vector<double> block_sums;
  float* sums = colsum ? sbuf.get(static_cast<size_t>(i1 - i0 + 8)) : nullptr;
  if (sums) {
    std::fill(sums, sums + (i1 - i0 + 8), 0.f);
    block_sums.assign(static_cast<size_t>(i1 - i0), 0.0);
  }
  // Split K into near-equal blocks so no block is a short remainder.
  int64_t nk = (K + KC - 1) / KC, kb = (K + nk - 1) / nk;
  float* pa = abuf.get(static_cast<size_t>((MC + MR) * kb));
  float* pb = bbuf.get(static_cast<size_t>((std::min(NC, j1 - j0) + NR) * kb));
  alignas(32) float tile[MR * NR];
  for (int64_t jc = j0; jc < j1; jc += NC) {
    int64_t nc = std::min(NC, j1 - jc);
    for (int64_t pc = 0; pc < K; pc += kb) {
      int64_t kc = std::min(kb, K - pc);
      float bet = pc == 0 ? beta : 1.f;
      // Whole tiles go straight into C when no scaling is asked for: BLAS's usual alpha = 1, beta = 0 or 1.
      bool direct = alpha == 1.f && (bet == 0.f || bet == 1.f);
      pack_b(B, ldb, jc, nc, pc, kc, pb);
      for (int64_t ic = i0; ic < i1; ic += MC) {
        int64_t mc = std::min(MC, i1 - ic);
        pack_at(A, lda, ic, mc, pc, kc, pa, sums && jc == j0 ? sums + (ic - i0) : nullptr);
        for (int64_t jr = 0; jr < nc; jr += NR)
          for (int64_t ir = 0; ir < mc; ir += MR) {
            const float *a = pa + ir * kc, *b = pb + jr * kc;
            float* c = C + (ic + ir) * ldc + jc + jr;
            int64_t mr = std::min(MR, mc - ir), nr = std::min(NR, nc - jr);
            if (direct && mr == MR && nr == NR) {
              if (bet == 0.f) microkernel<false>(kc, a, 0, b, c, ldc);
              else microkernel<true>(kc, a, 0, b, c, ldc);
            } else {
              microkernel<false>(kc, a, 0, b, tile, NR);
              update_c(tile, c, ldc, mr, nr, alpha, bet);
            }
          }
      }
      if (sums && jc == j0)
        for (int64_t i = 0; i < i1 - i0; ++i) {
          block_sums[i] += sums[i];
          sums[i] = 0.f;
        }
    }
  }
  if (colsum)
    for (int64_t i = 0; i < i1 - i0; ++i) colsum[i0 + i] = static_cast<float>(block_sums[i]);
}

// Threads a product may split across: none inside a parallel region (a batch already split across them).
int64_t gemm_threads() {
#ifdef _OPENMP
  if (omp_in_parallel()) return 1;
#endif
  return get_num_threads();
}

// Row panels [p0, p1) of C = alpha * A @ op(B) + beta * C on the calling thread, A row-major and read in
// place: a 6-row panel of A over one K block (6 x 256 floats) stays in L1 while it meets every column tile
// of the packed B block, which streams from L2 (NCR x KC = 256 KiB). Packing A instead would copy the whole
// of it once per product; with only N / 16 tiles to share that copy, narrow products (N <= 256, e.g. a
// layer's input gradient dY @ W) lose 3-15% to it, which is where this beats oneDNN. The last, partial
// panel is taken as the last MR rows of A (M >= MR), overlapping the panel before: its extra rows are
// computed into a scratch tile and not stored.
constexpr int64_t NCR = 256;
void sgemm_rows_block(int64_t p0, int64_t p1, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                      bool tb, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  thread_local Scratch bbuf;
  int64_t nk = (K + KC - 1) / KC, kb = (K + nk - 1) / nk;
  float* pb = bbuf.get(static_cast<size_t>((NCR + NR) * kb));
  alignas(32) float tile[MR * NR];
  for (int64_t jc = 0; jc < N; jc += NCR) {
    int64_t nc = std::min(NCR, N - jc);
    for (int64_t pc = 0; pc < K; pc += kb) {
      int64_t kc = std::min(kb, K - pc);
      float bet = pc == 0 ? beta : 1.f;
      bool direct = alpha == 1.f && (bet == 0.f || bet == 1.f);
      if (tb) pack_bt(B + jc * ldb + pc, ldb, nc, kc, pb);
      else pack_b(B, ldb, jc, nc, pc, kc, pb);
      for (int64_t p = p0; p < p1; ++p) {
        int64_t r0 = std::min(p * MR, M - MR), skip = p * MR - r0;
        const float* a = A + r0 * lda + pc;
        for (int64_t jr = 0; jr < nc; jr += NR) {
          int64_t nr = std::min(NR, nc - jr);
          float* c = C + r0 * ldc + jc + jr;
          const float* b = pb + jr * kc;
          if (direct && skip == 0 && nr == NR) {
            if (bet == 0.f) microkernel<false, true>(kc, a, lda, b, c, ldc);
            else microkernel<true, true>(kc, a, lda, b, c, ldc);
          } else {
            microkernel<false, true>(kc, a, lda, b, tile, NR);
            update_c(tile + skip * NR, c + skip * ldc, ldc, MR - skip, nr, alpha, bet);
          }
        }
      }
    }
  }
}

// Column tiles [t0, t1) of C (M x N) = A @ B + beta * C from prepacked panels: per K block, each B panel
// (kc x NR, 16 KiB at kc = 256) stays in L1 while every 6-row panel of A, read in place, passes over it.
// Rows past the last whole panel are computed from a zero-padded copy into a scratch tile.
void sgemm_prepacked_tiles(int64_t t0, int64_t t1, int64_t M, int64_t N, int64_t K, int64_t kb, const float* panels,
                           const float* A, int64_t lda, float beta, float* C, int64_t ldc) {
  alignas(32) float tile[MR * NR];
  alignas(32) float tail[MR * KC];
  const int64_t full = M / MR * MR, ntile = (N + NR - 1) / NR;
  for (int64_t pc = 0; pc < K; pc += kb) {
    const int64_t kc = std::min(kb, K - pc);
    const float* block = panels + pc * ntile * NR;  // K blocks before this one hold pc rows of every panel
    const bool add = pc > 0 || beta != 0.f;
    if (full < M) {  // the ragged rows' A values, zero-padded to a whole panel (kc <= KC)
      std::fill(tail, tail + MR * kc, 0.f);
      for (int64_t r = full; r < M; ++r)
        for (int64_t k = 0; k < kc; ++k) tail[k * MR + (r - full)] = A[r * lda + pc + k];
    }
    for (int64_t t = t0; t < t1; ++t) {
      const float* b = block + t * kc * NR;
      const int64_t j = t * NR, nr = std::min(NR, N - j);
      for (int64_t r = 0; r < full; r += MR) {
        const float* a = A + r * lda + pc;
        float* c = C + r * ldc + j;
        if (nr == NR) {
          if (add) microkernel<true, true>(kc, a, lda, b, c, ldc);
          else microkernel<false, true>(kc, a, lda, b, c, ldc);
        } else {
          microkernel<false, true>(kc, a, lda, b, tile, NR);
          update_c(tile, c, ldc, MR, nr, 1.f, add ? 1.f : 0.f);
        }
      }
      if (full < M) {
        microkernel<false>(kc, tail, 0, b, tile, NR);
        update_c(tile, C + full * ldc + j, ldc, M - full, nr, 1.f, add ? 1.f : 0.f);
      }
    }
  }
}

}  // namespace

void PackedB::pack_own(const float* B, int64_t ldb, bool tb) {
  const int64_t K = K_, N = N_;
  FLOW_CHECK(K > 0 && N > 0, Runtime, "PackedB: empty operand (", K, " x ", N, ")");
  const int64_t nk = (K + KC - 1) / KC, ntile = (N + NR - 1) / NR;
  kb_ = (K + nk - 1) / nk;
  const size_t bytes = ((static_cast<size_t>(K * ntile * NR) * sizeof(float) + 63) / 64) * 64;
  data_.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
  FLOW_CHECK(data_ != nullptr, Runtime, "matmul: out of memory for a packed operand (", bytes, " bytes)");
  for (int64_t pc = 0; pc < K; pc += kb_) {
    const int64_t kc = std::min(kb_, K - pc);
    float* out = data_.get() + pc * ntile * NR;
    if (tb) pack_bt(B + pc, ldb, N, kc, out);
    else pack_b(B, ldb, 0, N, pc, kc, out);
  }
}

void PackedB::multiply_own(int64_t M, const float* A, int64_t lda, float beta, float* C, int64_t ldc) const {
  if (M <= 0) return;
  const int64_t ntile = (N_ + NR - 1) / NR;
  // Each thread takes whole column tiles, so it only ever reads its own panels; small products stay serial.
  const int64_t threads = M * N_ * K_ < (int64_t(1) << 18) ? 1 : gemm_threads();
  const int64_t parts = std::max<int64_t>(1, std::min(threads, ntile));
  parallel_for(parts, 1, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q)
      sgemm_prepacked_tiles(ntile * q / parts, ntile * (q + 1) / parts, M, N_, K_, kb_, data_.get(), A, lda, beta, C,
                            ldc);
  });
}

void sgemm_microkernel_6x16(int64_t kc, const float* a, const float* b, float* tile) {
  microkernel<false>(kc, a, 0, b, tile, NR);
}

void packed_sgemm_tn(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
                     int64_t ldb, float beta, float* C, int64_t ldc, float* colsum) {
  if (M <= 0) return;
  if (colsum && (N <= 0 || K <= 0 || alpha == 0.f)) {  // no packing pass to ride on
    std::vector<double> s(static_cast<size_t>(M), 0.0);
    for (int64_t k = 0; k < K; ++k)
      for (int64_t i = 0; i < M; ++i) s[i] += A[k * lda + i];
    std::copy(s.begin(), s.end(), colsum);
  }
  if (N <= 0) return;
  if (K <= 0 || alpha == 0.f) return scale_c(M, N, beta, C, ldc);
  const int64_t nt = gemm_threads();
  // Each thread packs all of the operand along the dimension it does not split, so split the larger one
  // (by whole NR-column tiles or MR-row panels) unless the other has too few units to go round.
  int64_t ntile = (N + NR - 1) / NR, mpanel = (M + MR - 1) / MR;
  bool by_cols = (N >= M && ntile >= 2 * nt) || mpanel < 2 * nt;
  int64_t units = by_cols ? ntile : mpanel, step = by_cols ? NR : MR, extent = by_cols ? N : M;
  int64_t parts = std::max<int64_t>(1, std::min(nt, units));
  parallel_for(parts, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      int64_t b = std::min(extent, units * p / parts * step), e = std::min(extent, units * (p + 1) / parts * step);
      if (b >= e) continue;
      if (by_cols)  // every part packs all of A: the first one sums it
        sgemm_block(0, M, b, e, K, alpha, A, lda, B, ldb, beta, C, ldc, p == 0 ? colsum : nullptr);
      else sgemm_block(b, e, 0, N, K, alpha, A, lda, B, ldb, beta, C, ldc, colsum);
    }
  });
}

void packed_sgemm_rows(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, bool tb,
                       const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == 0.f) return scale_c(M, N, beta, C, ldc);
  FLOW_CHECK(M >= MR, Runtime, "packed_sgemm_rows: needs at least ", MR, " rows, got ", M);
  const int64_t nt = gemm_threads();
  // Threads split the row panels; each packs its own copy of B (at most K x 256 floats per block).
  int64_t npanel = (M + MR - 1) / MR, parts = std::max<int64_t>(1, std::min(nt, npanel));
  parallel_for(parts, 1, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q)
      sgemm_rows_block(npanel * q / parts, npanel * (q + 1) / parts, M, N, K, alpha, A, lda, tb, B, ldb, beta, C, ldc);
  });
}

FLOW_AVX2_END
#else  // no AVX2/FMA in this build

void packed_sgemm_tn(int64_t, int64_t, int64_t, float, const float*, int64_t, const float*, int64_t, float, float*,
                     int64_t, float*) {}
void packed_sgemm_rows(int64_t, int64_t, int64_t, float, const float*, int64_t, bool, const float*, int64_t, float,
                       float*, int64_t) {}
void sgemm_microkernel_6x16(int64_t, const float*, const float*, float*) {}
void PackedB::pack_own(const float*, int64_t, bool) {}
void PackedB::multiply_own(int64_t, const float*, int64_t, float, float*, int64_t) const {}

#endif

}  // namespace flow
