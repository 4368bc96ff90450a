#include "gemm.h"

#include <algorithm>
#include <cstring>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "../../ops/functions.h"
#include "parallel.h"

namespace flow {

namespace {

// oneDNN's AVX2 sgemm reads a transposed A down its columns; when the leading dimension is a multiple of
// 512 floats (2 KiB) every row of a column block maps to the same few L1 sets and the kernel runs at half
// speed (measured 70 vs 145 GFLOP/s for M = K = 1024, N = 256, which is linear's weight gradient of a
// 1024-wide layer). Copying A into rows padded by one cache line costs one pass over A and restores full speed.
bool lda_aliases(bool ta, int64_t M, int64_t N, int64_t K, int64_t lda) {
  return ta && lda % 512 == 0 && M >= 512 && N <= 512 && M * N * K >= (int64_t(1) << 24);
}

}  // namespace

void sgemm_rowmajor(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                    const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  Tensor padded;
  if (lda_aliases(ta, M, N, K, lda)) {
    int64_t ld = M + 16;
    padded = empty({K, ld}, DType::Float32);
    float* dst = padded.data<float>();
    parallel_for(K, 64, [&](int64_t k0, int64_t k1) {
      for (int64_t k = k0; k < k1; ++k) std::memcpy(dst + k * ld, A + k * lda, sizeof(float) * M);
    });
    A = dst;
    lda = ld;
  }
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
  if (parallel && M * N * K > (1 << 16)) parallel_for(mt * nt, 1, tile);
  else tile(0, mt * nt);
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

void batched_sgemm(const Tensor& A0, const Tensor& B0, const Tensor& C, float alpha, float beta) {
  int64_t bs = C.size(0), M = C.size(1), N = C.size(2), K = A0.size(2);
  Tensor A = A0, B = B0;
  bool ta, tb;
  int64_t lda, ldb;
  if (!blas_layout(M, K, A.stride(1), A.stride(2), ta, lda)) {
    A = materialize(A, DType::Float32);
    blas_layout(M, K, A.stride(1), A.stride(2), ta, lda);
  }
  if (!blas_layout(K, N, B.stride(1), B.stride(2), tb, ldb)) {
    B = materialize(B, DType::Float32);
    blas_layout(K, N, B.stride(1), B.stride(2), tb, ldb);
  }
  const float* a = A.data<float>();
  const float* b = B.data<float>();
  float* c = C.data<float>();
  int64_t sa = A.stride(0), sb = B.stride(0), sc = M * N;
  // Many small products: one serial sgemm per thread over the batch; otherwise oneDNN threads each product.
  if (bs > 1 && M * N * K < (1 << 20)) {
    parallel_for(bs, std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, M * N * K)), [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i)
        sgemm_rowmajor(ta, tb, M, N, K, alpha, a + i * sa, lda, b + i * sb, ldb, beta, c + i * sc, N);
    });
  } else {
    for (int64_t i = 0; i < bs; ++i)
      sgemm_rowmajor(ta, tb, M, N, K, alpha, a + i * sa, lda, b + i * sb, ldb, beta, c + i * sc, N);
  }
}

}  // namespace

void dgemm_rowmajor(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
                    const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  gemm_blocked<double>(M, N, K, alpha, A, ta ? 1 : lda, ta ? lda : 1, B, tb ? 1 : ldb, tb ? ldb : 1, beta, C, ldc,
                       true);
}

void batched_gemm(const Tensor& A, const Tensor& B, const Tensor& C, double alpha, double beta) {
  int64_t bs = C.size(0), M = C.size(1), N = C.size(2), K = A.size(2);
  if (bs == 0 || M == 0 || N == 0) return;
  DType dt = C.dtype();
  if (dt == DType::Float32) {
    if (K == 0) {
      // oneDNN's sgemm rejects K == 0 with some leading dims; C = beta * C
      float* c = C.data<float>();
      for (int64_t i = 0; i < bs * M * N; ++i) c[i] = beta == 0 ? 0.f : static_cast<float>(beta) * c[i];
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
      const T* a = A.data<T>();
      const T* b = B.data<T>();
      T* c = C.data<T>();
      T al = static_cast<T>(alpha), be = static_cast<T>(beta);
      int64_t sa = A.stride(0), sb = B.stride(0);
      if (bs > 1 && M * N * K < (1 << 18)) {
        parallel_for(bs, 1, [&](int64_t b0, int64_t b1) {
          for (int64_t i = b0; i < b1; ++i)
            gemm_blocked<T>(M, N, K, al, a + i * sa, A.stride(1), A.stride(2), b + i * sb, B.stride(1), B.stride(2),
                            be, c + i * M * N, N, false);
        });
      } else {
        for (int64_t i = 0; i < bs; ++i)
          gemm_blocked<T>(M, N, K, al, a + i * sa, A.stride(1), A.stride(2), b + i * sb, B.stride(1), B.stride(2), be,
                          c + i * M * N, N, true);
      }
    }
  });
}

}  // namespace flow
