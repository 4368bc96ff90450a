// Householder QR (linalg_qr, geqrf) and the matrix exponential (linalg_matrix_exp) of each matrix of a batch,
// each matrix on one thread, in double precision whatever the input dtype (results are rounded back). The
// reflectors follow LAPACK's dlarfg conventions (R's diagonal may be negative), so that Q and R match
// torch's up to rounding. Gradients are torch's formulas built from registry ops.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../kernels/cpu/parallel.h"
#include "linalg.h"
#include "nnops_util.h"

namespace flow {
namespace {

Tensor mT(const Tensor& t) { return ops::transpose(t, -2, -1); }
Shape batch_of(const Tensor& t) { return Shape(t.sizes().begin(), t.sizes().end() - 2); }
Shape with(Shape s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail);
  return s;
}
int64_t matrices(const Tensor& t) {
  int64_t c = 1;
  for (int64_t i = 0; i + 2 < t.dim(); ++i) c *= t.size(i);
  return c;
}

void check_float(const Tensor& a, const char* op, const char* kernel) {
  FLOW_RUNTIME_CHECK(a.dim() >= 2, op, ": The input tensor A must have at least 2 dimensions.");
  FLOW_RUNTIME_CHECK(is_floating(a.dtype()), op, ": Expected a floating point or complex tensor as input. Got ",
                     torch_type_name(a.dtype()));
  FLOW_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64, NotImplemented, "\"", kernel,
             "\" not implemented for '", torch_type_name(a.dtype()), "'");
}

// LAPACK's geqr2 on the row-major m x n matrix a: R on and above the diagonal, the reflectors v_j (with an
// implicit 1 at row j) below it, and H_j = I - tau_j v_j v_j^T with A = H_1 ... H_k R.
void householder_qr(double* a, int64_t m, int64_t n, double* tau) {
  for (int64_t j = 0, k = std::min(m, n); j < k; ++j) {
    double scale = 0;  // the norm below the diagonal, scaled against overflow (NaN stays NaN)
    for (int64_t i = j + 1; i < m; ++i) {
      const double v = std::fabs(a[i * n + j]);
      if (!(v <= scale)) scale = v;
    }
    double ssq = 0;
    if (scale > 0)
      for (int64_t i = j + 1; i < m; ++i) ssq += (a[i * n + j] / scale) * (a[i * n + j] / scale);
    const double xnorm = scale * std::sqrt(ssq), alpha = a[j * n + j];
    if (xnorm == 0) {  // already reduced: H_j = I, as dlarfg
      tau[j] = 0;
      continue;
    }
    const double beta = -std::copysign(std::hypot(alpha, xnorm), alpha);
    tau[j] = (beta - alpha) / beta;
    const double s = 1.0 / (alpha - beta);
    for (int64_t i = j + 1; i < m; ++i) a[i * n + j] *= s;
    a[j * n + j] = beta;
    for (int64_t c = j + 1; c < n; ++c) {  // H_j on the trailing columns
      double w = a[j * n + c];
      for (int64_t i = j + 1; i < m; ++i) w += a[i * n + j] * a[i * n + c];
      w *= tau[j];
      a[j * n + c] -= w;
      for (int64_t i = j + 1; i < m; ++i) a[i * n + c] -= w * a[i * n + j];
    }
  }
}

// The first `cols` columns of H_1 ... H_k (LAPACK's orgqr) from householder_qr's a (m x n) and tau, into the
// row-major m x cols matrix q: the reflectors applied right to left to the thin identity.
void form_q(const double* a, int64_t m, int64_t n, const double* tau, int64_t k, double* q, int64_t cols) {
  std::fill(q, q + m * cols, 0.0);
  for (int64_t i = 0; i < std::min(m, cols); ++i) q[i * cols + i] = 1;
  for (int64_t j = k - 1; j >= 0; --j) {
    if (tau[j] == 0) continue;
    for (int64_t c = j; c < cols; ++c) {  // columns before j are still e_c, which H_j leaves alone
      double w = q[j * cols + c];
      for (int64_t i = j + 1; i < m; ++i) w += a[i * n + j] * q[i * cols + c];
      w *= tau[j];
      q[j * cols + c] -= w;
      for (int64_t i = j + 1; i < m; ++i) q[i * cols + c] -= w * a[i * n + j];
    }
  }
}

// c (n x n) = a b, all row-major.
void matmul_sq(const double* a, const double* b, double* c, int64_t n) {
  std::fill(c, c + n * n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < n; ++k) {
      const double v = a[i * n + k];
      if (v != 0)
        for (int64_t j = 0; j < n; ++j) c[i * n + j] += v * b[k * n + j];
    }
}

// exp of the row-major n x n matrix a by scaling and squaring: a degree-18 Taylor polynomial (Horner) of
// a / 2^s with 1-norm <= 1/2, whose truncation error (< 0.5^19 / 19!) is far below double's eps, squared s
// times. Non-finite input gives NaN, as there is nothing to scale.
void expm(const double* a, int64_t n, double* e) {
  double norm = 0;
  for (int64_t j = 0; j < n; ++j) {
    double col = 0;
    for (int64_t i = 0; i < n; ++i) col += std::fabs(a[i * n + j]);
    norm = std::max(norm, col);
  }
  if (!std::isfinite(norm)) {
    std::fill(e, e + n * n, std::numeric_limits<double>::quiet_NaN());
    return;
  }
  int s = 0;
  if (norm > 0.5) s = static_cast<int>(std::ceil(std::log2(norm / 0.5)));
  const double scale = std::ldexp(1.0, -s);
  std::vector<double> x(a, a + n * n), t(static_cast<size_t>(n * n));
  for (double& v : x) v *= scale;
  for (int64_t i = 0; i < n * n; ++i) e[i] = x[i] / 18.0;
  for (int64_t i = 0; i < n; ++i) e[i * n + i] += 1;
  for (int j = 17; j >= 1; --j) {  // E <- I + X E / j
    matmul_sq(x.data(), e, t.data(), n);
    for (int64_t i = 0; i < n * n; ++i) e[i] = t[i] / j;
    for (int64_t i = 0; i < n; ++i) e[i * n + i] += 1;
  }
  for (int r = 0; r < s; ++r) {
    matmul_sq(e, e, t.data(), n);
    std::copy(t.begin(), t.end(), e);
  }
}

// The gradient of A = Q R (m >= n, Q m x n, R n x n) as torch's linalg_qr_backward:
// gA = (gQ + Q syminvadj(triu(gR R^T - Q^T gQ))) R^-T, syminvadj(X) = X + X^T with the diagonal halved.
Tensor qr_backward_tall(const Tensor& gQ, const Tensor& gR, const Tensor& Q, const Tensor& R) {
  Tensor M;
  if (gR.defined()) M = ops::matmul(gR, mT(R));
  if (gQ.defined()) M = M.defined() ? ops::sub(M, ops::matmul(mT(Q), gQ)) : ops::neg(ops::matmul(mT(Q), gQ));
  Tensor sym = ops::add(ops::call1("triu", {M}, {int64_t(0)}), mT(ops::call1("triu", {M}, {int64_t(1)})));
  Tensor gA = ops::matmul(Q, sym);
  if (gQ.defined()) gA = ops::add(gA, gQ);
  return mT(ops::call1("linalg_solve_triangular", {R, mT(gA)}, {true, false}));  // gA R^-T
}

}  // namespace

// mode 'reduced': Q (..., m, k), R (..., k, n); 'complete': Q (..., m, m), R (..., m, n); 'r': R only (Q is
// empty), k = min(m, n).
FLOW_OP(linalg_qr)
    .schema("linalg_qr(Tensor A, str mode='reduced') -> (Tensor Q, Tensor R)")
    .meta([](const TensorList& in, const Attrs& at) {
      const std::string& mode = at.str("mode");
      FLOW_RUNTIME_CHECK(mode == "reduced" || mode == "complete" || mode == "r", "qr received unrecognized mode '",
                         mode, "' but expected one of 'reduced' (default), 'r', or 'complete'");
      const Tensor& a = in[0];
      check_float(a, "linalg.qr", "geqrf_cpu");
      const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
      const int64_t qcols = mode == "complete" ? m : k, rrows = mode == "complete" ? m : k;
      Shape batch = batch_of(a);
      return std::vector<TensorMeta>{{mode == "r" ? Shape{0} : with(batch, {m, qcols}), a.dtype(), a.device()},
                                     {with(batch, {rrows, n}), a.dtype(), a.device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& at) {
      const std::string& mode = at.str("mode");
      const Tensor& A = in[0];
      const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), count = matrices(A);
      const int64_t qcols = mode == "complete" ? m : k, rrows = mode == "complete" ? m : k;
      const bool want_q = mode != "r";
      Tensor a = ops::clone(nn::contig_as(A, DType::Float64));  // factored in place
      Tensor q = ops::zeros({count, want_q ? m : 0, qcols}, DType::Float64);
      Tensor r = ops::zeros({count, rrows, n}, DType::Float64);
      double *ap = a.data<double>(), *qp = q.data<double>(), *rp = r.data<double>();
      parallel_for(count, 1, [&](int64_t b0, int64_t b1) {
        std::vector<double> tau(static_cast<size_t>(k));
        for (int64_t b = b0; b < b1; ++b) {
          double* w = ap + b * m * n;
          householder_qr(w, m, n, tau.data());
          double* R = rp + b * rrows * n;
          for (int64_t i = 0; i < std::min(rrows, m); ++i)
            for (int64_t j = i; j < n; ++j) R[i * n + j] = w[i * n + j];
          if (want_q) form_q(w, m, n, tau.data(), k, qp + b * m * qcols, qcols);
        }
      });
      if (want_q) ops::copy_into(out[0], ops::reshape(q, out[0].sizes()));
      ops::copy_into(out[1], ops::reshape(r, out[1].sizes()));
    })
    .save_outputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      const std::string& mode = c.attrs.str("mode");
      FLOW_RUNTIME_CHECK(mode != "r",
                         "The derivative of linalg.qr depends on Q, which is not computed when "
                         "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate "
                         "through linalg.qr.");
      Tensor Q = c.output(0), R = c.output(1);
      const int64_t m = Q.size(-2), n = R.size(-1);
      FLOW_RUNTIME_CHECK(mode == "reduced" || m <= n,
                         "The QR decomposition is not differentiable when "
                         "mode='complete' and nrows > ncols.");
      if (!g[0].defined() && !g[1].defined()) return {Tensor()};
      if (m >= n) return {qr_backward_tall(g[0], g[1], Q, R)};
      // wide: A = [X | Y] with X = Q R1 square and R2 = Q^T Y, so Y = Q R2 feeds Q's gradient too
      Tensor R1 = ops::slice(R, -1, 0, m), R2 = ops::slice(R, -1, m, n);
      Tensor gR1 = g[1].defined() ? ops::slice(g[1], -1, 0, m) : Tensor();
      Tensor gQ = g[0], gY;
      if (g[1].defined()) {
        Tensor gR2 = ops::slice(g[1], -1, m, n);
        Tensor t = ops::matmul(ops::matmul(Q, R2), mT(gR2));
        gQ = gQ.defined() ? ops::add(gQ, t) : t;
        gY = ops::matmul(Q, gR2);
      } else {
        gY = ops::zeros(with(batch_of(R), {m, n - m}), R.dtype(), R.device());
      }
      return {ops::call1("cat", {qr_backward_tall(gQ, gR1, Q, R1), gY}, {int64_t(-1)})};
    });

// LAPACK's geqrf: R on and above the diagonal of `a`, the Householder vectors below it, and their scalars tau
// (..., min(m, n)). Not differentiable, as in torch.
FLOW_OP(geqrf)
    .schema("geqrf(Tensor self) -> (Tensor a, Tensor tau)")
    .meta([](const TensorList& in, const Attrs&) {
      const Tensor& a = in[0];
      check_float(a, "geqrf", "geqrf_cpu");
      return std::vector<TensorMeta>{{a.sizes(), a.dtype(), a.device()},
                                     {with(batch_of(a), {std::min(a.size(-2), a.size(-1))}), a.dtype(), a.device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      const Tensor& A = in[0];
      const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), count = matrices(A);
      Tensor a = ops::clone(nn::contig_as(A, DType::Float64)), tau = ops::zeros({count, k}, DType::Float64);
      double *ap = a.data<double>(), *tp = tau.data<double>();
      parallel_for(count, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) householder_qr(ap + b * m * n, m, n, tp + b * k);
      });
      ops::copy_into(out[0], a);
      ops::copy_into(out[1], ops::reshape(tau, out[1].sizes()));
    })
    .backward([](BackwardCtx&, const TensorList&) -> TensorList {
      fail(ErrorKind::NotImplemented, "the derivative for 'geqrf' is not implemented.");
      return {};
    });

FLOW_OP(linalg_matrix_exp)
    .schema("linalg_matrix_exp(Tensor A) -> Tensor")
    .meta([](const TensorList& in, const Attrs&) {
      const Tensor& a = in[0];
      FLOW_RUNTIME_CHECK(a.dim() >= 2, "linalg.matrix_exp: The input tensor A must have at least 2 dimensions.");
      FLOW_RUNTIME_CHECK(is_floating(a.dtype()),
                         "linalg.matrix_exp: Expected a floating point or complex tensor as "
                         "input. Got ",
                         torch_type_name(a.dtype()));
      FLOW_RUNTIME_CHECK(a.size(-1) == a.size(-2),
                         "linalg.matrix_exp: A must be batches of square matrices, but they "
                         "are ",
                         a.size(-2), " by ", a.size(-1), " matrices");
      return std::vector<TensorMeta>{{a.sizes(), a.dtype(), a.device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      const Tensor& A = in[0];
      const int64_t n = A.size(-1), count = matrices(A);
      Tensor a = nn::contig_as(A, DType::Float64), e = empty(A.sizes(), DType::Float64);
      const double* ap = a.data<double>();
      double* ep = e.data<double>();
      parallel_for(count, 1, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) expm(ap + b * n * n, n, ep + b * n * n);
      });
      ops::copy_into(out[0], e);
    })
    .save_inputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // the Frechet derivative's adjoint at G is the top-right block of exp([[A^T, G], [0, A^T]]) (as torch)
      Tensor At = mT(c.input(0));
      const int64_t n = At.size(-1);
      Tensor top = ops::call1("cat", {At, g[0]}, {int64_t(-1)});
      Tensor bottom = ops::call1("cat", {ops::zeros_like(At), At}, {int64_t(-1)});
      Tensor e = ops::call1("linalg_matrix_exp", {ops::call1("cat", {top, bottom}, {int64_t(-2)})});
      return {ops::slice(ops::slice(e, -2, 0, n), -1, n, 2 * n)};
    });

}  // namespace flow
