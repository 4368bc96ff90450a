// Dense matrix products on CPU. One entry point, `batched_gemm`, multiplies strided operands without
// copying them where the strides describe a row- or column-major matrix (a transposed view costs nothing):
//   C[b] = alpha * A[b] @ B[b] + beta * C[b]      (A: M x K, B: K x N, C: M x N)
// float32 goes to oneDNN's sgemm or, for the shapes where they are faster, the own AVX2 kernels
// (sgemm_packed.h, sgemm_small.cpp), float64 to an own blocked OpenMP kernel, 16-bit floats through float32,
// integers to simple loops.
#pragma once
#include <cstdint>

#include "../../core/tensor.h"

namespace flow {

// A (batch... x M x K), B (batch... x K x N), C (batch... x M x N): equal ranks >= 3 and batch sizes, any
// strides (0 = broadcast; the batch dims need not merge into one), C's matrices row- or column-major (other
// layouts go through a temporary). When beta == 0, C's previous contents are ignored (NaN included).
void batched_gemm(const Tensor& A, const Tensor& B, const Tensor& C, double alpha, double beta);

// Whether gemm_t_colsum computes both results in one pass for these operands (else it makes two).
bool gemm_t_colsum_fused(const Tensor& G, const Tensor& X);

// C = G^T @ X and s = column sums of G (G: T x O, X: T x I, C: O x I contiguous, s: O contiguous): a linear
// layer's weight and bias gradients. float32 row-major operands go to the packed kernel, which sums G while
// packing it; others take batched_gemm and a separate sum.
void gemm_t_colsum(const Tensor& G, const Tensor& X, const Tensor& C, const Tensor& s);

// Row-major single-precision GEMM entry (used by the convolution's im2col path as well).
void sgemm_rowmajor(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                    const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
void dgemm_rowmajor(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A, int64_t lda,
                    const double* B, int64_t ldb, double beta, double* C, int64_t ldc);

}  // namespace flow
