#include "gemm.h"

#include <algorithm>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "../../ops/functions.h"
#include "parallel.h"
#include "sgemm_packed.h"

namespace flow {

namespace {

// oneDNN's AVX2 sgemm reads a transposed operand down its columns; when the leading dimension is a multiple
// of 512 floats (2 KiB) every row of a column block maps to the same few L1 sets and the kernel slows down:
// a transposed A runs at half speed (70 vs 145 GFLOP/s for M = K = 1024, N = 256: linear's weight gradient of
// a 1024-wide layer), a transposed B ~10% slower (linear's forward from 1024 features). Copying the operand
// into rows padded by one cache line costs one pass over it and restores full speed. Small-M products lose
// more to the copy than they gain, hence the shape bounds.
bool aliasing_ld(bool trans, int64_t ld, int64_t M, int64_t N, int64_t K) {
  return trans && ld % 512 == 0 && M >= 512 && N <= 512 && M * N * K >= (int64_t(1) << 24);
}

// `rows` rows of `cols` floats at `p` (stride `ld`) copied into `holder` with padded rows; repoints p/ld.
void pad_rows(const float*& p, int64_t& ld, int64_t rows, int64_t cols, Tensor& holder) {
  int64_t pld = cols + 16;
  holder = empty({rows, pld}, DType::Float32);
  float* dst = holder.data<float>();
  const float* src = p;
  int64_t sld = ld;
  parallel_for(rows, 64, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) std::memcpy(dst + r * pld, src + r * sld, sizeof(float) * cols);
  });
  p = dst;
  ld = pld;
}

}  // namespace

void sgemm_rowmajor(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                    const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  // Transposed-A products (weight gradients) go to the own packed kernel, which takes A^T in its natural
  // packing order; oneDNN runs them at 0.4-0.9x its untransposed speed. Tiny ones stay with oneDNN, whose
  // small-matrix path has less setup.
  if (ta && !tb && M * N * K >= (int64_t(1) << 18) && packed_sgemm_available()) {
    packed_sgemm_tn(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    return;
  }
  // Narrow products with a row-major A (a layer's input gradient dY @ W, or a linear forward into <= 256
  // features) go to the own kernel that reads A in place: oneDNN packs all of A, which only N / 16 column
  // tiles then share (3-15% faster on GPT's shapes in isolation).
  if (!ta && N <= 256 && M >= 512 && M * N * K >= (int64_t(1) << 22) && packed_sgemm_available()) {
    packed_sgemm_rows(M, N, K, alpha, A, lda, tb, B, ldb, beta, C, ldc);
    return;
  }
  Tensor pa, pb;
  if (aliasing_ld(ta, lda, M, N, K)) pad_rows(A, lda, K, M, pa);  // A^T is stored K x M
  if (aliasing_ld(tb, ldb, M, N, K)) pad_rows(B, ldb, N, K, pb);  // B^T is stored N x K
  dnnl_status_t st = dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  FLOW_RUNTIME_CHECK(st == dnnl_success, "matmul: oneDNN sgemm failed with status ", static_cast<int>(st));
}

namespace {

// Blocked GEMM for types oneDNN has no kernel for (float64, integers). B's block is packed contiguous so
// the inner loop is a unit-stride multiply-add over a C row that the compiler vectorises; four rows of A
// share each packed B row. Threads split the (row block, column block) tiles of C.
template <typename T>
void gemm_blocked(int64_t M, int64_t N, int64_t K, T alpha, const T* A, int64_t sam, int64_t sak, const T* B,
                  int64_t sbk, int64_t sbn, T beta, T* C, int64_t ldc, bool parallel) {
  // scale C by beta (beta == 0 overwrites, ignoring NaN in C like BLAS)
  for (int64_t i = 0; i < M; ++i) {
    T* c = C + i * ldc;
    if (beta == T(0)) std::fill(c, c + N, T(0));
    else if (beta != T(1))
      for (int64_t j = 0; j < N; ++j) c[j] *= beta;
  }
  if (K == 0 || alpha == T(0)) return;
  constexpr int64_t MB = 64, NB = 256, KB = 128;
  int64_t mt = (M + MB - 1) / MB, nt = (N + NB - 1) / NB;
  auto tile = [&](int64_t t0, int64_t t1) {
    std::vector<T> bp(static_cast<size_t>(KB * NB));
    for (int64_t t = t0; t < t1; ++t) {
      int64_t i0 = (t / nt) * MB, j0 = (t % nt) * NB;
      int64_t im = std::min(M, i0 + MB), jn = std::min(N, j0 + NB), nw = jn - j0;
      for (int64_t k0 = 0; k0 < K; k0 += KB) {
        int64_t kn = std::min(K, k0 + KB);
        for (int64_t k = k0; k < kn; ++k) {
          T* dst = bp.data() + (k - k0) * NB;
          const T* src = B + k * sbk + j0 * sbn;
          if (sbn == 1) std::memcpy(dst, src, sizeof(T) * nw);
          else
            for (int64_t j = 0; j < nw; ++j) dst[j] = src[j * sbn];
        }
        int64_t i = i0;
        for (; i + 4 <= im; i += 4) {
          T* c0 = C + i * ldc + j0;
          T* c1 = c0 + ldc;
          T* c2 = c1 + ldc;
          T* c3 = c2 + ldc;
          for (int64_t k = k0; k < kn; ++k) {
            const T* b = bp.data() + (k - k0) * NB;
            T a0 = alpha * A[i * sam + k * sak], a1 = alpha * A[(i + 1) * sam + k * sak];
            T a2 = alpha * A[(i + 2) * sam + k * sak], a3 = alpha * A[(i + 3) * sam + k * sak];
            for (int64_t j = 0; j < nw; ++j) {
              T bj = b[j];
              c0[j] += a0 * bj;
              c1[j] += a1 * bj;
              c2[j] += a2 * bj;
              c3[j] += a3 * bj;
            }
          }
        }
        for (; i < im; ++i) {
          T* c = C + i * ldc + j0;
          for (int64_t k = k0; k < kn; ++k) {
            const T* b = bp.data() + (k - k0) * NB;
            T a = alpha * A[i * sam + k * sak];
            for (int64_t j = 0; j < nw; ++j) c[j] += a * b[j];
          }
        }
      }
    }
  };
  // serial for small products, as the CPU's kernel variant either way: a product's rounding must not depend on
  // its size or on `parallel`
  parallel_for_if(parallel && M * N * K > (1 << 16), mt * nt, tile);
}

// Strides of a matrix operand as oneDNN's sgemm wants them: (transposed?, leading dimension), or false
// when the layout is neither row- nor column-major (then the caller copies).
bool blas_layout(int64_t rows, int64_t cols, int64_t srow, int64_t scol, bool& trans, int64_t& ld) {
  if (scol == 1 || cols == 1) {
    if (rows == 1) srow = std::max<int64_t>(cols, 1);
    if (srow >= std::max<int64_t>(cols, 1)) {
      trans = false;
      ld = srow;
      return true;
    }
  }
  if (srow == 1 || rows == 1) {
    if (cols == 1) scol = std::max<int64_t>(rows, 1);
    if (scol >= std::max<int64_t>(rows, 1)) {
      trans = true;
      ld = scol;
      return true;
    }
  }
  return false;
}

Tensor materialize(const Tensor& t, DType dt) {
  Tensor r = empty(t.sizes(), dt, t.device());
  ops::copy_into(r, t);
  return r;
}

// The same tensor with its last two dims swapped (a kernel-level view).
Tensor swap_last2(const Tensor& t) {
  Shape sz = t.sizes(), st = t.strides();
  size_t r = sz.size();
  std::swap(sz[r - 1], sz[r - 2]);
  std::swap(st[r - 1], st[r - 2]);
  return make_view(t, sz, st, t.offset());
}

// Element offsets (from each tensor's first element) of every matrix of A, B and C, walking C's batch dims (all but the
// last two) in row-major order; A and B share C's batch sizes (stride 0 where broadcast).
struct BatchOffsets {
  std::vector<int64_t> a, b, c;
};
BatchOffsets batch_offsets(const Tensor& A, const Tensor& B, const Tensor& C) {
  int64_t nb = C.dim() - 2, bs = 1;
  for (int64_t d = 0; d < nb; ++d) bs *= C.size(d);
  BatchOffsets o;
  o.a.resize(bs);
  o.b.resize(bs);
  o.c.resize(bs);
  std::vector<int64_t> idx(nb, 0);
  int64_t oa = 0, ob = 0, oc = 0;
  for (int64_t i = 0; i < bs; ++i) {
    o.a[i] = oa;
    o.b[i] = ob;
    o.c[i] = oc;
    for (int64_t d = nb - 1; d >= 0; --d) {  // odometer increment
      oa += A.stride(d);
      ob += B.stride(d);
      oc += C.stride(d);
      if (++idx[d] < C.size(d)) break;
      oa -= A.stride(d) * C.size(d);
      ob -= B.stride(d) * C.size(d);
      oc -= C.stride(d) * C.size(d);
      idx[d] = 0;
    }
  }
  return o;
}

// Whether the top-right or bottom-left element of the rows x cols matrix at p (transposed storage when
// trans) is zero.
bool zero_corner(const float* p, bool trans, int64_t ld, int64_t rows, int64_t cols) {
  auto at = [&](int64_t r, int64_t c) { return trans ? p[c * ld + r] : p[r * ld + c]; };
  return at(0, cols - 1) == 0.f || at(rows - 1, 0) == 0.f;
}

void batched_sgemm(const Tensor& A0, const Tensor& B0, const Tensor& C, float alpha, float beta) {
  int64_t M = C.size(-2), N = C.size(-1), K = A0.size(-1);
  Tensor A = A0, B = B0;
  bool ta, tb;
  int64_t lda, ldb;
  if (!blas_layout(M, K, A.stride(-2), A.stride(-1), ta, lda)) {
    A = materialize(A, DType::Float32);
    blas_layout(M, K, A.stride(-2), A.stride(-1), ta, lda);
  }
  if (!blas_layout(K, N, B.stride(-2), B.stride(-1), tb, ldb)) {
    B = materialize(B, DType::Float32);
    blas_layout(K, N, B.stride(-2), B.stride(-1), tb, ldb);
  }
  BatchOffsets off = batch_offsets(A, B, C);
  int64_t bs = static_cast<int64_t>(off.c.size()), ldc = M == 1 ? std::max<int64_t>(N, 1) : C.stride(-2);
  const float* a = A.data<float>();
  const float* b = B.data<float>();
  float* c = C.data<float>();
  // Split the batch across threads (each product then runs serial, with no synchronisation inside it) when
  // the products are small or the batch divides evenly; otherwise oneDNN threads each product in turn.
  int64_t nt = get_num_threads();
  if (bs == 1 || (M * N * K >= (1 << 20) && bs % nt != 0 && bs < 4 * nt)) {
    for (int64_t i = 0; i < bs; ++i)
      sgemm_rowmajor(ta, tb, M, N, K, alpha, a + off.a[i], lda, b + off.b[i], ldb, beta, c + off.c[i], ldc);
    return;
  }
  // Small products go to the own kernel when A is transposed (where it beats oneDNN) or when a corner of
  // either operand is zero, a cheap sign of the triangular operands whose zero parts it skips (causal
  // attention). Dense untransposed ones stay with oneDNN, whose small-matrix path is faster on them.
  const bool own = packed_sgemm_available() && K <= 512 && N <= 1024 && M * N * K <= (int64_t(1) << 22) &&
                   (ta || zero_corner(a, ta, lda, M, K) || zero_corner(b, tb, ldb, K, N));
  auto gemm = own ? packed_sgemm_small : sgemm_rowmajor;
  parallel_for(bs, std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, M * N * K)), [&](int64_t b0, int64_t b1) {
    for (int64_t i = b0; i < b1; ++i)
      gemm(ta, tb, M, N, K, alpha, a + off.a[i], lda, b + off.b[i], ldb, beta, c + off.c[i], ldc);
  });
}

// C = beta * C for an empty inner dimension (K == 0), visiting each row of a strided C.
template <typename T>
void scale_rows(const Tensor& C, const BatchOffsets& off, T beta) {
  int64_t M = C.size(-2), N = C.size(-1), sr = C.stride(-2), sc = C.stride(-1);
  T* base = C.data<T>();
  for (int64_t o : off.c)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        T& v = base[o + i * sr + j * sc];
        v = beta == T(0) ? T(0) : beta * v;
      }
}

}  // namespace

void dgemm_rowmajor(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
                    const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  gemm_blocked<double>(M, N, K, alpha, A, ta ? 1 : lda, ta ? lda : 1, B, tb ? 1 : ldb, tb ? ldb : 1, beta, C, ldc,
                       true);
}

void batched_gemm(const Tensor& A, const Tensor& B, const Tensor& C, double alpha, double beta) {
  int64_t M = C.size(-2), N = C.size(-1), K = A.size(-1);
  if (C.numel() == 0) return;
  FLOW_RUNTIME_CHECK(A.dim() == C.dim() && B.dim() == C.dim() && C.dim() >= 3, "matmul: batched operands of rank ",
                     A.dim(), ", ", B.dim(), " and ", C.dim(), " (expected equal ranks >= 3)");
  // A column-major C is computed as C^T = B^T A^T, so the kernels below only ever write row-major matrices.
  if (C.stride(-1) != 1 && N > 1) {
    if (C.stride(-2) == 1 || M == 1) {
      batched_gemm(swap_last2(B), swap_last2(A), swap_last2(C), alpha, beta);
    } else {  // neither layout: compute contiguous, then copy in
      Tensor tmp = beta == 0 ? empty(C.sizes(), C.dtype(), C.device()) : materialize(C, C.dtype());
      batched_gemm(A, B, tmp, alpha, beta);
      ops::copy_into(C, tmp);
    }
    return;
  }
  DType dt = C.dtype();
  if (dt == DType::Float32) {
    if (K == 0) {  // oneDNN's sgemm rejects K == 0 with some leading dims
      scale_rows<float>(C, batch_offsets(A, B, C), static_cast<float>(beta));
      return;
    }
    batched_sgemm(A, B, C, static_cast<float>(alpha), static_cast<float>(beta));
    return;
  }
  if (dt == DType::Float16 || dt == DType::BFloat16) {
    // no 16-bit GEMM in oneDNN on AVX2: compute in float32
    Tensor c32 = beta == 0 ? empty(C.sizes(), DType::Float32, C.device()) : materialize(C, DType::Float32);
    batched_gemm(materialize(A, DType::Float32), materialize(B, DType::Float32), c32, alpha, beta);
    ops::copy_into(C, c32);
    return;
  }
  FLOW_CHECK(dt != DType::Bool, NotImplemented, "\"addmm_impl_cpu_\" not implemented for 'Bool'");
  dispatch_numeric(dt, "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, double> || std::is_integral_v<T>) {
      BatchOffsets off = batch_offsets(A, B, C);
      int64_t bs = static_cast<int64_t>(off.c.size());
      const T* a = A.data<T>();
      const T* b = B.data<T>();
      T* c = C.data<T>();
      T al = static_cast<T>(alpha), be = static_cast<T>(beta);
      int64_t sam = A.stride(-2), sak = A.stride(-1), sbk = B.stride(-2), sbn = B.stride(-1), ldc = C.stride(-2);
      auto one = [&](int64_t i, bool par) {
        gemm_blocked<T>(M, N, K, al, a + off.a[i], sam, sak, b + off.b[i], sbk, sbn, be, c + off.c[i], ldc, par);
      };
      if (bs > 1 && M * N * K < (1 << 18)) {
        parallel_for(bs, 1, [&](int64_t b0, int64_t b1) {
          for (int64_t i = b0; i < b1; ++i) one(i, false);
        });
      } else {
        for (int64_t i = 0; i < bs; ++i) one(i, true);
      }
    }
  });
}

bool gemm_t_colsum_fused(const Tensor& G, const Tensor& X) {
  const int64_t T = G.size(0), O = G.size(1), I = X.size(1);
  return G.dtype() == DType::Float32 && X.dtype() == DType::Float32 && G.device().is_cpu() &&
         packed_sgemm_available() && O * I * T >= (int64_t(1) << 18) && (O == 1 || G.stride(1) == 1) &&
         (I == 1 || X.stride(1) == 1) && G.stride(0) >= O && X.stride(0) >= I;
}

void gemm_t_colsum(const Tensor& G, const Tensor& X, const Tensor& C, const Tensor& s) {
  FLOW_RUNTIME_CHECK(C.is_contiguous() && s.is_contiguous(), "gemm_t_colsum: outputs must be contiguous");
  if (gemm_t_colsum_fused(G, X)) {
    packed_sgemm_tn(G.size(1), X.size(1), G.size(0), 1.f, G.data<float>(), G.stride(0), X.data<float>(), X.stride(0),
                    0.f, C.data<float>(), X.size(1), s.data<float>());
    return;
  }
  auto m3 = [](const Tensor& t, int64_t r, int64_t c, int64_t sr, int64_t sc) {
    return make_view(t, {1, r, c}, {0, sr, sc}, t.offset());
  };
  batched_gemm(m3(G, G.size(1), G.size(0), G.stride(1), G.stride(0)),
               m3(X, X.size(0), X.size(1), X.stride(0), X.stride(1)),
               m3(C, C.size(0), C.size(1), C.stride(0), C.stride(1)), 1.0, 0.0);
  ops::copy_into(s, ops::sum(G, {0}));
}

}  // namespace flow
