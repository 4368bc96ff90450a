// Own packed single-precision GEMM for AVX2 + FMA (a 6x16 register-blocked microkernel over packed panels
// of A and B). oneDNN's AVX2 sgemm runs the transposed-A products of training (linear's weight gradient,
// C = dY^T X with K = tokens) at 80-135 GFLOP/s on a 2-core Zen 3, where this CPU's FMA peak is ~190; packing
// turns the transposed A into the kernel's natural layout, so those products run near the untransposed speed.
// A second entry takes tall, narrow products with a row-major A (read in place, never packed).
#pragma once
#include <cstdint>
#include <memory>

namespace flow {

// Whether the kernel runs here: this build has it (compiled for AVX2 and FMA) and the CPU has both.
bool packed_sgemm_available();

// Row-major C (M x N, ldc) = alpha * A^T @ B + beta * C, where A^T's storage A is K x M (stride lda) and B
// is K x N (stride ldb): sgemm's ('T', 'N') case. BLAS semantics: when beta == 0, C's previous contents, NaN
// included, are ignored.
// Threads split the larger of M and N through parallel_for; inside a parallel region it runs serial.
// Requires packed_sgemm_available().
// colsum, when given (M floats), receives the sums over k of A(i, k): the column sums of the stored A^T,
// i.e. a linear layer's bias gradient alongside its weight gradient, computed in the packing pass.
void packed_sgemm_tn(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, const float* B,
                     int64_t ldb, float beta, float* C, int64_t ldc, float* colsum = nullptr);

// Row-major C (M x N, ldc) = alpha * A @ op(B) + beta * C with A row-major (M x K, stride lda, M >= 6) read
// in place: op(B) is B (K x N, stride ldb), or B^T with tb (then B is stored N x K). For narrow products
// (N <= 256), where oneDNN's packing of A costs more than the kernel saves. BLAS semantics as above;
// threads split the rows. Requires packed_sgemm_available().
void packed_sgemm_rows(int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda, bool tb,
                       const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// Row-major C (M x N, ldc) = alpha * op(A) @ op(B) + beta * C on the calling thread, for the small products
// of a batch (one per thread): op(A) is A, or A^T with ta (then A is stored K x M), and likewise op(B).
// Where a row panel of op(A) or a column tile of op(B) is zero over a run of k at either end, and the other
// operand is finite there, that run is skipped: exact, and half the work of causal attention's products.
// BLAS semantics as above. Requires packed_sgemm_available().
void packed_sgemm_small(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                        const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

// op(B) (K x N: B itself, or B^T with tb, then B is stored N x K) packed once into the microkernel's panels,
// for the many products C = A @ op(B) that share it: a recurrence multiplies every step's small state by the
// same weight, and repacking it per step would cost as much as the step's product (RNN layers).
class PackedB {
 public:
  PackedB(const float* B, int64_t ldb, bool tb, int64_t K, int64_t N);
  int64_t rows() const { return K_; }
  int64_t cols() const { return N_; }
  // Row-major C (M x N, ldc) = A @ op(B) (beta == 0) or C + A @ op(B) (beta == 1), A row-major (M x K,
  // stride lda). Threads split the column tiles (inside a parallel region it runs serial). Requires
  // packed_sgemm_available().
  void multiply(int64_t M, const float* A, int64_t lda, float beta, float* C, int64_t ldc) const;

 private:
  // the kernel's panels, and the product over them (packed_sgemm_available() only)
  void pack_own(const float* B, int64_t ldb, bool tb);
  void multiply_own(int64_t M, const float* A, int64_t lda, float beta, float* C, int64_t ldc) const;
  int64_t K_, N_, kb_;
  std::unique_ptr<float[], void (*)(float*)> data_;
};

// The register block under both this GEMM and the Winograd convolution: tile (kSgemmMR x kSgemmNR,
// row-major, 32-byte aligned) = a_panel @ b_panel over kc steps, where a_panel holds kc groups of kSgemmMR
// rows' values (row index fastest) and b_panel kc groups of kSgemmNR columns' values (32-byte aligned).
// Requires packed_sgemm_available().
constexpr int64_t kSgemmMR = 6, kSgemmNR = 16;
void sgemm_microkernel_6x16(int64_t kc, const float* a, const float* b, float* tile);

}  // namespace flow
