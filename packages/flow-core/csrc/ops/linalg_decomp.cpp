// Dense factorizations for small and medium matrices: LU with partial pivoting (inv, det, slogdet, solve, and
// lu_factor / lu_unpack / lu_solve, which expose it) and Cholesky, over batches of matrices, each matrix on one
// thread, in double precision whatever the input dtype (results are rounded back). Gradients are the standard
// matrix-calculus forms (torch's, where the form matters) built from registry ops.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "../autograd/grad_mode.h"
#include "../kernels/cpu/parallel.h"
#include "linalg.h"
#include "nnops_util.h"

namespace flow {
namespace {

struct Batch {
  int64_t count = 1, n = 0;
  Shape batch;
};

Batch square_batch(const Tensor& a, const char* op) {
  FLOW_RUNTIME_CHECK(a.dim() >= 2, op, ": The input tensor A must have at least 2 dimensions.");
  FLOW_RUNTIME_CHECK(a.size(-1) == a.size(-2), op, ": A must be batches of square matrices, but they are ", a.size(-2),
                     " by ", a.size(-1), " matrices");
  FLOW_RUNTIME_CHECK(is_floating(a.dtype()), op, ": Expected a floating point tensor as input. Got ",
                     torch_type_name(a.dtype()));
  Batch b;
  b.n = a.size(-1);
  for (int64_t i = 0; i + 2 < a.dim(); ++i) b.batch.push_back(a.size(i)), b.count *= a.size(i);
  return b;
}

std::string batch_prefix(const Batch& b, int64_t i) {
  return b.batch.empty() ? std::string() : "(Batch element " + std::to_string(i) + "): ";
}

// In-place LU with partial pivoting of the row-major m x n matrix a, as LAPACK's getrf: L (unit, below the
// diagonal, m x min(m, n)) and U (min(m, n) x n) share a, and row k was swapped with row piv[k] (0-based).
// Returns 0, or k + 1 for the first zero pivot U[k][k]; `perm_sign` gets the permutation's parity.
int64_t lu_inplace(double* a, int64_t m, int64_t n, int64_t* piv, int& perm_sign) {
  int64_t info = 0;
  perm_sign = 1;
  for (int64_t k = 0, kmax = std::min(m, n); k < kmax; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < m; ++i)
      if (std::fabs(a[i * n + k]) > std::fabs(a[p * n + k])) p = i;
    piv[k] = p;
    if (a[p * n + k] == 0) {
      if (!info) info = k + 1;
      continue;
    }
    if (p != k) {
      for (int64_t j = 0; j < n; ++j) std::swap(a[k * n + j], a[p * n + j]);
      perm_sign = -perm_sign;
    }
    const double inv = 1.0 / a[k * n + k];
    for (int64_t i = k + 1; i < m; ++i) {
      double l = a[i * n + k] *= inv;
      if (l != 0)
        for (int64_t j = k + 1; j < n; ++j) a[i * n + j] -= l * a[k * n + j];
    }
  }
  return info;
}

// x (n x m, row-major) <- A^-1 x from A's LU.
void lu_solve(const double* lu, const int64_t* piv, int64_t n, double* x, int64_t m) {
  for (int64_t k = 0; k < n; ++k)
    if (piv[k] != k)
      for (int64_t j = 0; j < m; ++j) std::swap(x[k * m + j], x[piv[k] * m + j]);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < i; ++k) {
      const double l = lu[i * n + k];
      if (l != 0)
        for (int64_t j = 0; j < m; ++j) x[i * m + j] -= l * x[k * m + j];
    }
  for (int64_t i = n - 1; i >= 0; --i) {
    for (int64_t k = i + 1; k < n; ++k) {
      const double u = lu[i * n + k];
      if (u != 0)
        for (int64_t j = 0; j < m; ++j) x[i * m + j] -= u * x[k * m + j];
    }
    const double d = 1.0 / lu[i * n + i];
    for (int64_t j = 0; j < m; ++j) x[i * m + j] *= d;
  }
}

// x (n x m, row-major) <- A^-T x from A's LU: A^T = U^T L^T P^T, so U^T, then L^T, then the row swaps in
// reverse order.
void lu_solve_t(const double* lu, const int64_t* piv, int64_t n, double* x, int64_t m) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < i; ++k) {
      const double u = lu[k * n + i];
      if (u != 0)
        for (int64_t j = 0; j < m; ++j) x[i * m + j] -= u * x[k * m + j];
    }
    const double d = 1.0 / lu[i * n + i];
    for (int64_t j = 0; j < m; ++j) x[i * m + j] *= d;
  }
  for (int64_t i = n - 1; i >= 0; --i)
    for (int64_t k = i + 1; k < n; ++k) {
      const double l = lu[k * n + i];
      if (l != 0)
        for (int64_t j = 0; j < m; ++j) x[i * m + j] -= l * x[k * m + j];
    }
  for (int64_t k = n - 1; k >= 0; --k)
    if (piv[k] != k)
      for (int64_t j = 0; j < m; ++j) std::swap(x[k * m + j], x[piv[k] * m + j]);
}

// The LU factorization of one row-major n x n matrix (copied): info is 0, or k + 1 for the first zero pivot.
struct Lu {
  int64_t n;
  std::vector<double> a;
  std::vector<int64_t> piv;
  int sign = 1;
  int64_t info = 0;
  Lu(const double* m, int64_t n_) : n(n_), a(m, m + n_ * n_), piv(static_cast<size_t>(n_)) {
    info = lu_inplace(a.data(), n, n, piv.data(), sign);
  }
  void solve(double* x, int64_t k) const { lu_solve(a.data(), piv.data(), n, x, k); }
};

// A contiguous float64 copy of t.
Tensor as_double(const Tensor& t) { return nn::contig_as(t, DType::Float64); }

// Runs f(matrix index, its n*n doubles, error message sink) over the batch in parallel; the first error
// (lowest index) is raised after the region.
template <typename F>
void over_batch(const Batch& b, F f) {
  std::vector<std::string> errors(static_cast<size_t>(b.count));
  parallel_for(b.count, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) f(i, errors[static_cast<size_t>(i)]);
  });
  for (const std::string& e : errors)
    if (!e.empty()) fail(ErrorKind::Runtime, e);
}

// The result of solving A X = B (A square, B (..., n, k) of A's batch shape and dtype): B's meta.
std::vector<TensorMeta> rhs_meta(const TensorList& in, const char* op) {
  const Tensor &A = in[0], &B = in[1];
  Batch b = square_batch(A, op);
  FLOW_RUNTIME_CHECK(B.dim() == A.dim() && B.size(-2) == b.n, op,
                     ": Incompatible shapes of A and B for the "
                     "equation AX = B (",
                     shape_str(A.sizes()), " and ", shape_str(B.sizes()), ")");
  for (int64_t i = 0; i + 2 < B.dim(); ++i)
    FLOW_RUNTIME_CHECK(B.size(i) == A.size(i), op, ": A and B must have the same batch shape");
  FLOW_RUNTIME_CHECK(B.dtype() == A.dtype(), op, ": Expected A and B to have the same dtype, but found A of type ",
                     torch_type_name(A.dtype()), " and B of type ", torch_type_name(B.dtype()), " instead.");
  return {{B.sizes(), B.dtype(), A.device()}};
}

Tensor mT(const Tensor& t) { return ops::transpose(t, -2, -1); }

// inv(A)^T for the gradients of det and slogdet, with every singular matrix (det == 0) replaced by the
// identity so that the inverse exists; the callers then decide those matrices' gradient.
Tensor inv_t_nonsingular(const Tensor& A, const Tensor& singular) {
  Tensor eye = ops::call1("eye", {}, {A.size(-1), std::monostate{}, A.dtype()});
  Tensor mask = ops::unsqueeze(ops::unsqueeze(singular, -1), -1);
  return mT(ops::call1("linalg_inv", {ops::where(mask, eye, A)}));
}
Tensor expand_scalar_grad(const Tensor& g) { return ops::unsqueeze(ops::unsqueeze(g, -1), -1); }

// The lower Cholesky factor L of the row-major n x n matrix A (its lower triangle read) into L (zeroed).
// Returns 0, or j + 1 when the leading minor of order j + 1 is not positive-definite; L is then left as
// LAPACK's potrf leaves it (that pivot, and A's lower triangle from that column on).
int64_t cholesky_lower(const double* A, double* L, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double s = A[j * n + j];
    for (int64_t k = 0; k < j; ++k) s -= L[j * n + k] * L[j * n + k];
    if (!(s > 0)) {  // also NaN
      L[j * n + j] = s;
      for (int64_t c = j; c < n; ++c)
        for (int64_t r = std::max(c, j + 1); r < n; ++r) L[r * n + c] = A[r * n + c];
      return j + 1;
    }
    const double d = std::sqrt(s);
    L[j * n + j] = d;
    for (int64_t r = j + 1; r < n; ++r) {
      double v = A[r * n + j];
      for (int64_t k = 0; k < j; ++k) v -= L[r * n + k] * L[j * n + k];
      L[r * n + j] = v / d;
    }
  }
  return 0;
}

std::string cholesky_error(const char* op, const Batch& b, int64_t i, int64_t info) {
  return std::string(op) + ": " + batch_prefix(b, i) +
         "The factorization could not be completed because the input "
         "is not positive-definite (the leading minor of order " +
         std::to_string(info) + " is not positive-definite).";
}

// Murray (2016): with P = L^T gL and Phi(P) its lower triangle with the diagonal halved,
// gA = sym(L^-T Phi(P) L^-1)
Tensor cholesky_backward(const Tensor& factor, const Tensor& grad, bool upper) {
  Tensor L = upper ? mT(factor) : factor, gl = upper ? mT(grad) : grad;
  Tensor p = ops::matmul(mT(L), gl);
  Tensor phi =
      ops::mul(ops::add(ops::call1("tril", {p}, {int64_t(0)}), ops::call1("tril", {p}, {int64_t(-1)})), Scalar(0.5));
  Tensor linv = ops::call1("linalg_inv", {L});
  Tensor ga = ops::matmul(ops::matmul(mT(linv), phi), linv);
  return ops::mul(ops::add(ga, mT(ga)), Scalar(0.5));
}

}  // namespace

FLOW_OP(linalg_inv)
    .schema("linalg_inv(Tensor A) -> Tensor")
    .meta([](const TensorList& in, const Attrs&) {
      square_batch(in[0], "linalg.inv");
      return std::vector<TensorMeta>{{in[0].sizes(), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      Batch b = square_batch(in[0], "linalg.inv");
      const int64_t n = b.n;
      Tensor a = as_double(in[0]), r = empty(in[0].sizes(), DType::Float64);
      const double* ap = a.data<double>();
      double* rp = r.data<double>();
      over_batch(b, [&](int64_t i, std::string& err) {
        Lu lu(ap + i * n * n, n);
        if (lu.info) {
          err = "linalg.inv: " + batch_prefix(b, i) + "The diagonal element " + std::to_string(lu.info) +
                " is zero, the inversion could not be completed because the input matrix is singular.";
          return;
        }
        double* x = rp + i * n * n;
        for (int64_t p = 0; p < n * n; ++p) x[p] = 0;
        for (int64_t p = 0; p < n; ++p) x[p * n + p] = 1;
        lu.solve(x, n);
      });
      ops::copy_into(out[0], r);
    })
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      Tensor yt = mT(c.output(0));  // d(A^-1) = -A^-1 dA A^-1
      return {ops::neg(ops::matmul(ops::matmul(yt, g[0]), yt))};
    });

FLOW_OP(linalg_slogdet)
    .schema("linalg_slogdet(Tensor A) -> (Tensor sign, Tensor logabsdet)")
    .meta([](const TensorList& in, const Attrs&) {
      Batch b = square_batch(in[0], "linalg.slogdet");
      TensorMeta m{b.batch, in[0].dtype(), in[0].device()};
      return std::vector<TensorMeta>{m, m};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      Batch b = square_batch(in[0], "linalg.slogdet");
      const int64_t n = b.n;
      Tensor a = as_double(in[0]), s = empty(b.batch, DType::Float64), l = empty(b.batch, DType::Float64);
      const double* ap = a.data<double>();
      double *sp = s.data<double>(), *lp = l.data<double>();
      over_batch(b, [&](int64_t i, std::string&) {
        Lu lu(ap + i * n * n, n);
        if (lu.info) {  // singular
          sp[i] = 0, lp[i] = -std::numeric_limits<double>::infinity();
          return;
        }
        double logabs = 0, sg = lu.sign;
        for (int64_t k = 0; k < n; ++k) {
          const double d = lu.a[k * n + k];
          sg *= d < 0 ? -1 : 1;
          logabs += std::log(std::fabs(d));
        }
        sp[i] = sg, lp[i] = logabs;
      });
      ops::copy_into(out[0], s);
      ops::copy_into(out[1], l);
    })
    .save_inputs({0})
    .nondiff_outputs({0})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // d log|det A| = tr(A^-1 dA); undefined (NaN) for a singular matrix, whose log|det| is -inf
      Tensor singular = ops::call1("eq", {c.output(0), ops::scalar_tensor(Scalar(0.0), c.output(0).dtype())});
      Tensor grad = ops::mul(expand_scalar_grad(g[1]), inv_t_nonsingular(c.input(0), singular));
      Tensor nan = ops::scalar_tensor(Scalar(std::numeric_limits<double>::quiet_NaN()), grad.dtype());
      return {ops::where(expand_scalar_grad(singular), nan, grad)};
    });

FLOW_OP(linalg_det)
    .schema("linalg_det(Tensor A) -> Tensor")
    .meta([](const TensorList& in, const Attrs&) {
      Batch b = square_batch(in[0], "linalg.det");
      return std::vector<TensorMeta>{{b.batch, in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      Batch b = square_batch(in[0], "linalg.det");
      const int64_t n = b.n;
      Tensor a = as_double(in[0]), r = empty(b.batch, DType::Float64);
      const double* ap = a.data<double>();
      double* rp = r.data<double>();
      over_batch(b, [&](int64_t i, std::string&) {
        Lu lu(ap + i * n * n, n);
        if (lu.info) {
          rp[i] = 0;
          return;
        }
        double d = lu.sign;
        for (int64_t k = 0; k < n; ++k) d *= lu.a[k * n + k];
        rp[i] = d;
      });
      ops::copy_into(out[0], r);
    })
    .save_inputs({0})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // d det A = det A tr(A^-1 dA); a singular matrix gets 0, as PyTorch's LU-based gradient gives
      Tensor det = c.output(0);
      Tensor singular = ops::call1("eq", {det, ops::scalar_tensor(Scalar(0.0), det.dtype())});
      return {ops::mul(expand_scalar_grad(ops::mul(g[0], det)), inv_t_nonsingular(c.input(0), singular))};
    });

// X = A^-1 B for B (..., n, k) with A's batch shape (the Python layer broadcasts and handles vectors and
// left=False).
FLOW_OP(linalg_solve)
    .schema("linalg_solve(Tensor A, Tensor B) -> Tensor")
    .meta([](const TensorList& in, const Attrs&) { return rhs_meta(in, "linalg.solve"); })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs&) {
      Batch b = square_batch(in[0], "linalg.solve");
      const int64_t n = b.n, k = in[1].size(-1);
      Tensor a = as_double(in[0]), x = ops::clone(as_double(in[1]));  // solved in place
      const double* ap = a.data<double>();
      double* xp = x.data<double>();
      over_batch(b, [&](int64_t i, std::string& err) {
        Lu lu(ap + i * n * n, n);
        if (lu.info) {
          err = "linalg.solve: " + batch_prefix(b, i) + "The solver failed because the input matrix is singular.";
          return;
        }
        lu.solve(xp + i * n * k, k);
      });
      ops::copy_into(out[0], x);
    })
    .save_inputs({0})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // X = A^-1 B: dB = A^-T G, dA = -dB X^T
      Tensor gb = ops::call1("linalg_solve", {mT(c.input(0)), g[0]});
      Tensor ga = c.needs(0) ? ops::neg(ops::matmul(gb, mT(c.output(0)))) : Tensor();
      return {ga, c.needs(1) ? gb : Tensor()};
    });

// Lower L with A = L L^T (only A's lower triangle is read); upper=True returns L^T.
FLOW_OP(linalg_cholesky)
    .schema("linalg_cholesky(Tensor A, *, bool upper=False) -> Tensor")
    .meta([](const TensorList& in, const Attrs&) {
      square_batch(in[0], "linalg.cholesky");
      return std::vector<TensorMeta>{{in[0].sizes(), in[0].dtype(), in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& at) {
      Batch b = square_batch(in[0], "linalg.cholesky");
      const int64_t n = b.n;
      Tensor a = as_double(in[0]), r = ops::zeros(in[0].sizes(), DType::Float64);
      const double* ap = a.data<double>();
      double* rp = r.data<double>();
      over_batch(b, [&](int64_t i, std::string& err) {
        if (int64_t info = cholesky_lower(ap + i * n * n, rp + i * n * n, n))
          err = cholesky_error("linalg.cholesky", b, i, info);
      });
      ops::copy_into(out[0], at.b("upper") ? mT(r) : r);
    })
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {cholesky_backward(c.output(0), g[0], c.attrs.b("upper"))};
    });

// cholesky with the per-matrix info (0, or the order of the first leading minor that is not positive-definite)
// instead of an error, unless check_errors.
FLOW_OP(linalg_cholesky_ex)
    .schema("linalg_cholesky_ex(Tensor A, *, bool upper=False, bool check_errors=False) -> (Tensor L, Tensor info)")
    .meta([](const TensorList& in, const Attrs&) {
      Batch b = square_batch(in[0], "linalg.cholesky");
      return std::vector<TensorMeta>{{in[0].sizes(), in[0].dtype(), in[0].device()},
                                     {b.batch, DType::Int32, in[0].device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& at) {
      Batch b = square_batch(in[0], "linalg.cholesky");
      const int64_t n = b.n;
      Tensor a = as_double(in[0]), r = ops::zeros(in[0].sizes(), DType::Float64), info = empty(b.batch, DType::Int32);
      const double* ap = a.data<double>();
      double* rp = r.data<double>();
      int32_t* ip = info.data<int32_t>();
      const bool check = at.b("check_errors");
      over_batch(b, [&](int64_t i, std::string& err) {
        ip[i] = static_cast<int32_t>(cholesky_lower(ap + i * n * n, rp + i * n * n, n));
        if (check && ip[i]) err = cholesky_error("linalg.cholesky_ex", b, i, ip[i]);
      });
      ops::copy_into(out[0], at.b("upper") ? mT(r) : r);
      ops::copy_into(out[1], info);
    })
    .save_outputs({0})
    .nondiff_outputs({1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      return {cholesky_backward(c.output(0), g[0], c.attrs.b("upper"))};
    });

// X with A X = B for triangular A (..., n, n) (only its upper or lower triangle is read; unitriangular:
// its diagonal is taken as ones) and B (..., n, k) of A's batch shape.
FLOW_OP(linalg_solve_triangular)
    .schema("linalg_solve_triangular(Tensor A, Tensor B, *, bool upper, bool unitriangular=False) -> Tensor")
    .meta([](const TensorList& in, const Attrs&) { return rhs_meta(in, "linalg.solve_triangular"); })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& at) {
      Batch b = square_batch(in[0], "linalg.solve_triangular");
      const int64_t n = b.n, k = in[1].size(-1);
      const bool upper = at.b("upper"), unit = at.b("unitriangular");
      Tensor a = as_double(in[0]), x = ops::clone(as_double(in[1]));  // solved in place
      const double* ap = a.data<double>();
      double* xp = x.data<double>();
      over_batch(b, [&](int64_t i, std::string&) {
        const double* A = ap + i * n * n;
        double* X = xp + i * n * k;
        // substitution from the end the triangle starts at; a zero pivot gives inf/NaN, as LAPACK's trtrs
        for (int64_t s = 0; s < n; ++s) {
          const int64_t r = upper ? n - 1 - s : s;
          for (int64_t c = 0; c < n; ++c) {
            if (upper ? c <= r : c >= r) continue;
            const double v = A[r * n + c];
            if (v != 0)
              for (int64_t j = 0; j < k; ++j) X[r * k + j] -= v * X[c * k + j];
          }
          if (!unit) {
            const double d = 1.0 / A[r * n + r];
            for (int64_t j = 0; j < k; ++j) X[r * k + j] *= d;
          }
        }
      });
      ops::copy_into(out[0], x);
    })
    .save_inputs({0})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // X = A^-1 B: dB = A^-T G (a triangular solve the other way), dA = -dB X^T on A's triangle
      const bool upper = c.attrs.b("upper"), unit = c.attrs.b("unitriangular");
      Tensor gb = ops::call1("linalg_solve_triangular", {mT(c.input(0)), g[0]}, {!upper, unit});
      Tensor ga;
      if (c.needs(0)) {
        Tensor full = ops::neg(ops::matmul(gb, mT(c.output(0))));
        int64_t diag = unit ? (upper ? 1 : -1) : 0;
        ga = ops::call1(upper ? "triu" : "tril", {full}, {diag});
      }
      return {ga, c.needs(1) ? gb : Tensor()};
    });

// X = (F F^T)^-1 B for a lower factor F, or (F^T F)^-1 B for an upper one: two triangular solves that read only
// F's triangle. Batch dims broadcast. The gradient for F is that of the full product (torch's), not one restricted
// to F's triangle.
FLOW_OP(cholesky_solve)
    .schema("cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor")
    .meta_from_compute()
    .cpu([](const TensorList& in, const Attrs& at) -> TensorList {
      const Tensor &B = in[0], &F = in[1];
      FLOW_RUNTIME_CHECK(B.dim() >= 2, "b should have at least 2 dimensions, but has ", B.dim(), " dimensions instead");
      FLOW_RUNTIME_CHECK(F.dim() >= 2, "u should have at least 2 dimensions, but has ", F.dim(), " dimensions instead");
      FLOW_RUNTIME_CHECK(F.size(-1) == F.size(-2) && F.size(-1) == B.size(-2),
                         "Incompatible matrix sizes for "
                         "cholesky_solve: each A matrix is ",
                         F.size(-2), " by ", F.size(-1), " but each b matrix is ", B.size(-2), " by ", B.size(-1));
      FLOW_RUNTIME_CHECK(B.dtype() == F.dtype(),
                         "cholesky_solve: Expected b and A to have the same dtype, but found b "
                         "of type ",
                         torch_type_name(B.dtype()), " and A of type ", torch_type_name(F.dtype()), " instead.");
      if (!is_floating(B.dtype())) fail_not_implemented("cholesky_solve_cpu", B.dtype());
      autograd::AutoGradMode no_grad(false);  // the op is recorded as one node, with the backward below
      Shape batch = broadcast_shapes(Shape(B.sizes().begin(), B.sizes().end() - 2),
                                     Shape(F.sizes().begin(), F.sizes().end() - 2), "cholesky_solve");
      auto with_batch = [&](const Tensor& t) {
        Shape s = batch;
        s.insert(s.end(), t.sizes().end() - 2, t.sizes().end());
        return ops::expand(t, s);
      };
      Tensor b = with_batch(B), f = with_batch(F);
      const bool upper = at.b("upper");
      Tensor first = upper ? mT(f) : f, second = upper ? f : mT(f);  // A = first @ second, first lower
      Tensor y = ops::call1("linalg_solve_triangular", {first, b}, {false, false});
      return {ops::call1("linalg_solve_triangular", {second, y}, {true, false})};
    })
    .save_inputs({1})
    .save_outputs({0}, {{1}})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      const bool upper = c.attrs.b("upper");
      const Tensor& F = c.input(1);
      Tensor gb = ops::call1("cholesky_solve", {g[0], F}, {upper});  // A^-1 g
      Tensor gf;
      if (c.needs(1)) {
        Tensor both = ops::matmul(gb, mT(c.output(0)));
        both = ops::add(both, mT(both));
        gf = ops::neg(upper ? ops::matmul(F, both) : ops::matmul(both, F));
      }
      return {c.needs(0) ? gb : Tensor(), gf};
    });

// ---- LU: the factorization (LAPACK's getrf layout and 1-based int32 pivots), unpacking and solving ----------
namespace {

Shape batch_of(const Tensor& t, int64_t trailing) { return Shape(t.sizes().begin(), t.sizes().end() - trailing); }
int64_t numel_of(const Shape& s) {
  int64_t c = 1;
  for (int64_t d : s) c *= d;
  return c;
}
Shape with(Shape s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail);
  return s;
}

// The 0-based row swaps of one matrix from its 1-based pivots, checked: k pivots of a matrix of m rows, each in
// [i + 1, m] as getrf makes them (out of range is refused rather than read out of bounds).
void read_pivots(const int32_t* p, int64_t k, int64_t m, int64_t* piv, const char* op) {
  for (int64_t i = 0; i < k; ++i) {
    FLOW_RUNTIME_CHECK(p[i] >= 1 && p[i] <= m, op, ": pivots must be between 1 and ", m,
                       " (as linalg.lu_factor "
                       "returns them), but got ",
                       p[i]);
    piv[i] = p[i] - 1;
  }
}

Tensor triangular(const char* which, const Tensor& t, int64_t diag) { return ops::call1(which, {t}, {diag}); }

// X with op(A) X = B (left) or X op(A) = B, A triangular: linalg_solve_triangular takes only the left form.
Tensor solve_tri(const Tensor& A, const Tensor& B, bool upper, bool left, bool unit = false) {
  if (left) return ops::call1("linalg_solve_triangular", {A, B}, {upper, unit});
  return mT(ops::call1("linalg_solve_triangular", {mT(A), mT(B)}, {!upper, unit}));
}

// The gradient of A = P L U (L m x k, U k x n) from those of L and U (either may be undefined), as torch's
// linalg_lu_backward: square, wide (U = [U1 U2]) and tall (L = [L1; L2]) cases.
Tensor lu_backward(Tensor gL, Tensor gU, const Tensor& P, const Tensor& L, const Tensor& U) {
  const int64_t m = L.size(-2), n = U.size(-1), k = std::min(m, n);
  if (gL.defined()) gL = triangular("tril", gL, -1);
  if (gU.defined()) gU = triangular("triu", gU, 0);
  Tensor gA;
  if (m == n) {  // P L^-T [L^T gL o 1_L + gU U^T o 1_U] U^-T
    if (gL.defined()) gA = triangular("tril", ops::matmul(mT(L), gL), -1);
    if (gU.defined()) {
      Tensor t = triangular("triu", ops::matmul(gU, mT(U)), 0);
      gA = gA.defined() ? ops::add(gA, t) : t;
    }
    gA = solve_tri(mT(U), gA, false, false);
    gA = solve_tri(mT(L), gA, true, true, true);
  } else if (m < n) {
    Tensor U1 = ops::slice(U, -1, 0, k);
    if (gL.defined()) gA = ops::matmul(mT(L), gL);
    if (gU.defined()) {
      Tensor t = ops::matmul(gU, mT(U));
      gA = gA.defined() ? ops::sub(gA, t) : ops::neg(t);
    }
    gA = solve_tri(mT(U1), triangular("tril", gA, -1), false, false);
    if (gU.defined())
      gA = ops::call1("cat", {ops::add(gA, ops::slice(gU, -1, 0, k)), ops::slice(gU, -1, k, n)}, {int64_t(-1)});
    gA = solve_tri(mT(L), gA, true, true, true);
    if (!gU.defined())
      gA = ops::call1("pad", {gA}, {std::vector<int64_t>{0, n - k}, std::string("constant"), std::monostate{}});
  } else {
    Tensor L1 = ops::slice(L, -2, 0, k);
    if (gU.defined()) gA = ops::matmul(gU, mT(U));
    if (gL.defined()) {
      Tensor t = ops::matmul(mT(L), gL);
      gA = gA.defined() ? ops::sub(gA, t) : ops::neg(t);
    }
    gA = solve_tri(mT(L1), triangular("triu", gA, 0), true, true, true);
    if (gL.defined())
      gA = ops::call1("cat", {ops::add(gA, ops::slice(gL, -2, 0, k)), ops::slice(gL, -2, k, m)}, {int64_t(-2)});
    gA = solve_tri(mT(U), gA, false, false);
    if (!gL.defined())
      gA = ops::call1("pad", {gA}, {std::vector<int64_t>{0, 0, 0, m - k}, std::string("constant"), std::monostate{}});
  }
  return ops::matmul(P, gA);
}

}  // namespace

// LU (..., m, n) holds L below the diagonal and U on and above it; pivots (..., min(m, n)) are getrf's 1-based
// row swaps; info is 0, or k for the first zero pivot U[k-1][k-1] (the factorization is still returned).
FLOW_OP(linalg_lu_factor_ex)
    .schema(
        "linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> "
        "(Tensor LU, Tensor pivots, Tensor info)")
    .meta([](const TensorList& in, const Attrs& at) {
      const Tensor& a = in[0];
      FLOW_RUNTIME_CHECK(a.dim() >= 2,
                         "torch.lu_factor: Expected tensor with 2 or more dimensions. Got size: ", shape_str(a.sizes()),
                         " instead");
      FLOW_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64, NotImplemented,
                 "\"lu_cpu\" not implemented for '", torch_type_name(a.dtype()), "'");
      FLOW_RUNTIME_CHECK(at.b("pivot"), "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
      Shape batch = batch_of(a, 2);
      return std::vector<TensorMeta>{{a.sizes(), a.dtype(), a.device()},
                                     {with(batch, {std::min(a.size(-2), a.size(-1))}), DType::Int32, a.device()},
                                     {batch, DType::Int32, a.device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& at) {
      const Tensor& A = in[0];
      const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
      Shape batch = batch_of(A, 2);
      const int64_t count = numel_of(batch);
      Tensor a = ops::clone(as_double(A));  // factored in place
      Tensor piv = empty(out[1].sizes(), DType::Int32), info = empty(batch, DType::Int32);
      double* ap = a.data<double>();
      int32_t *pp = piv.data<int32_t>(), *ip = info.data<int32_t>();
      parallel_for(count, 1, [&](int64_t i0, int64_t i1) {
        std::vector<int64_t> p(static_cast<size_t>(k));
        for (int64_t i = i0; i < i1; ++i) {
          int sign;
          ip[i] = static_cast<int32_t>(lu_inplace(ap + i * m * n, m, n, p.data(), sign));
          for (int64_t j = 0; j < k; ++j) pp[i * k + j] = static_cast<int32_t>(p[j] + 1);
        }
      });
      if (at.b("check_errors"))
        for (int64_t i = 0; i < count; ++i)
          FLOW_RUNTIME_CHECK(ip[i] == 0, "torch.linalg.lu_factor_ex: ",
                             batch.empty() ? std::string() : "(Batch element " + std::to_string(i) + "): ", "U[", ip[i],
                             ",", ip[i],
                             "] is zero and using it on lu_solve would result in a division by "
                             "zero. If you still want to perform the factorization, consider calling "
                             "linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)");
      ops::copy_into(out[0], a);
      ops::copy_into(out[1], piv);
      ops::copy_into(out[2], info);
    })
    .save_outputs({0, 1})
    .nondiff_outputs({1, 2})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      if (!g[0].defined()) return {Tensor()};
      // LU packs L's strict lower part and U's upper part: their gradients are gLU's
      TensorList plu = ops::call("lu_unpack", {c.output(0), c.output(1)}, {true, true});
      const int64_t m = plu[1].size(-2), n = plu[2].size(-1), k = std::min(m, n);
      return {lu_backward(ops::slice(g[0], -1, 0, k), ops::slice(g[0], -2, 0, k), plu[0], plu[1], plu[2])};
    });

// A = P L U from lu_factor's LU and pivots: P (..., m, m), L (..., m, k) unit lower, U (..., k, n); the parts
// not asked for are empty, as in torch.
FLOW_OP(lu_unpack)
    .schema(
        "lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, bool unpack_pivots=True) -> "
        "(Tensor P, Tensor L, Tensor U)")
    .meta([](const TensorList& in, const Attrs& at) {
      const Tensor &lu = in[0], &piv = in[1];
      FLOW_RUNTIME_CHECK(lu.dim() >= 2, "torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: ",
                         shape_str(lu.sizes()), " instead");
      FLOW_RUNTIME_CHECK(piv.dtype() == DType::Int32,
                         "torch.lu_unpack: LU_pivots is expected to be a contiguous "
                         "tensor of torch.int32 dtype.\nNote: this function is intended to be used with the output "
                         "produced by torch.linalg.lu_factor");
      const int64_t m = lu.size(-2), n = lu.size(-1), k = std::min(m, n);
      Shape batch = batch_of(lu, 2);
      FLOW_RUNTIME_CHECK(piv.sizes() == with(batch, {k}), "torch.lu_unpack: Expected LU_pivots of shape ",
                         shape_str(with(batch, {k})), " for LU_data of shape ", shape_str(lu.sizes()), ", but got ",
                         shape_str(piv.sizes()));
      const Shape none{0};
      return std::vector<TensorMeta>{{at.b("unpack_pivots") ? with(batch, {m, m}) : none, lu.dtype(), lu.device()},
                                     {at.b("unpack_data") ? with(batch, {m, k}) : none, lu.dtype(), lu.device()},
                                     {at.b("unpack_data") ? with(batch, {k, n}) : none, lu.dtype(), lu.device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& at) {
      const Tensor& lu = in[0];
      const int64_t m = lu.size(-2), n = lu.size(-1), k = std::min(m, n);
      if (at.b("unpack_data")) {
        ops::copy_into(out[1], ops::add(triangular("tril", ops::slice(lu, -1, 0, k), -1),
                                        ops::call1("eye", {}, {m, k, lu.dtype()})));
        ops::copy_into(out[2], triangular("triu", ops::slice(lu, -2, 0, k), 0));
      }
      if (!at.b("unpack_pivots")) return;
      const int64_t count = numel_of(batch_of(lu, 2));
      Tensor piv = nn::contig(in[1]), P = ops::zeros({count, m, m}, DType::Float64);
      const int32_t* pp = piv.data<int32_t>();
      double* Pp = P.data<double>();
      std::vector<int64_t> swaps(static_cast<size_t>(k)), perm(static_cast<size_t>(m));
      for (int64_t b = 0; b < count; ++b) {
        read_pivots(pp + b * k, k, m, swaps.data(), "torch.lu_unpack");
        for (int64_t i = 0; i < m; ++i) perm[i] = i;
        for (int64_t i = 0; i < k; ++i) std::swap(perm[i], perm[swaps[i]]);
        for (int64_t i = 0; i < m; ++i) Pp[b * m * m + perm[i] * m + i] = 1;  // row i of L U is row perm[i] of A
      }
      ops::copy_into(out[0], ops::reshape(P, out[0].sizes()));
    })
    .nondiff_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // L's strict lower part and U's upper part, put back where LU holds them
      const Shape& lu = c.input_meta(0).sizes;
      const int64_t m = lu[lu.size() - 2], n = lu.back(), k = std::min(m, n);
      Tensor gLU;
      if (g[1].defined())
        gLU = ops::call1("pad", {triangular("tril", g[1], -1)},
                         {std::vector<int64_t>{0, n - k}, std::string("constant"), std::monostate{}});
      if (g[2].defined()) {
        Tensor t = ops::call1("pad", {triangular("triu", g[2], 0)},
                              {std::vector<int64_t>{0, 0, 0, m - k}, std::string("constant"), std::monostate{}});
        gLU = gLU.defined() ? ops::add(gLU, t) : t;
      }
      return {gLU, Tensor()};
    });

// X with op(A) X = B (left) or X op(A) = B, op(A) = A or A^T (adjoint), from A's lu_factor; LU, pivots and B
// share their batch shape (the Python layer broadcasts).
FLOW_OP(linalg_lu_solve)
    .schema("linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, bool adjoint=False) -> Tensor")
    .meta([](const TensorList& in, const Attrs& at) {
      const Tensor &lu = in[0], &piv = in[1], &B = in[2];
      FLOW_RUNTIME_CHECK(lu.dim() >= 2, "torch.linalg.lu_solve: The input tensor A must have at least 2 dimensions.");
      FLOW_RUNTIME_CHECK(lu.size(-1) == lu.size(-2),
                         "torch.linalg.lu_solve: A must be batches of square matrices, "
                         "but they are ",
                         lu.size(-2), " by ", lu.size(-1), " matrices");
      FLOW_RUNTIME_CHECK(B.dim() >= 2, "linalg.lu_solve: The input tensor B must have at least 2 dimensions.");
      FLOW_RUNTIME_CHECK(piv.dtype() == DType::Int32,
                         "linalg.lu_solve: pivots should be a Tensor of scalar type "
                         "torch.int32");
      FLOW_CHECK(lu.dtype() == DType::Float32 || lu.dtype() == DType::Float64, NotImplemented,
                 "\"linalg_lu_solve\" not implemented for '", torch_type_name(lu.dtype()), "'");
      FLOW_RUNTIME_CHECK(B.dtype() == lu.dtype(),
                         "linalg.lu_solve: Expected LU and B to have the same dtype, but "
                         "found LU of type ",
                         torch_type_name(lu.dtype()), " and B of type ", torch_type_name(B.dtype()), " instead");
      const bool left = at.b("left");
      const int64_t n = lu.size(-1);
      FLOW_RUNTIME_CHECK(B.size(left ? -2 : -1) == n,
                         "linalg.lu_solve: Incompatible shapes of A and B for the "
                         "equation ",
                         left ? "AX = B (" : "XA = B (", lu.size(-2), "x", n, " and ", B.size(-2), "x", B.size(-1),
                         ")");
      Shape batch = batch_of(lu, 2);
      FLOW_RUNTIME_CHECK(piv.dim() >= 1 && piv.size(-1) == n,
                         "linalg.lu_solve: Number of pivots per batch should be "
                         "same as the dimension of the matrix");
      FLOW_RUNTIME_CHECK(batch_of(piv, 1) == batch,
                         "linalg.lu_solve: Expected LU.shape[:-1] and pivots.shape to be "
                         "the same, but got pivots with shape ",
                         shape_str(piv.sizes()), " instead");
      FLOW_RUNTIME_CHECK(batch_of(B, 2) == batch, "linalg.lu_solve: LU and B must have the same batch shape");
      return std::vector<TensorMeta>{{B.sizes(), B.dtype(), lu.device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& at) {
      const bool left = at.b("left"), adjoint = at.b("adjoint");
      const int64_t n = in[0].size(-1);
      // X op(A) = B is op(A)^T X^T = B^T: solved for the columns of X^T
      Tensor rhs = left ? in[2] : mT(in[2]);
      const int64_t k = rhs.size(-1), count = numel_of(batch_of(in[0], 2));
      const bool transposed = left ? adjoint : !adjoint;
      Tensor a = as_double(in[0]), x = ops::clone(as_double(rhs)), piv = nn::contig(in[1]);
      const double* ap = a.data<double>();
      double* xp = x.data<double>();
      const int32_t* pp = piv.data<int32_t>();
      std::vector<int64_t> swaps(static_cast<size_t>(count * n));
      for (int64_t i = 0; i < count; ++i) read_pivots(pp + i * n, n, n, swaps.data() + i * n, "linalg.lu_solve");
      parallel_for(count, 1, [&](int64_t i0, int64_t i1) {
        // direct calls, not through a function pointer: the parallel body's kernel variant inlines them, as
        // linalg.solve's calls are (a pointer would run the baseline copy and round differently)
        for (int64_t i = i0; i < i1; ++i) {
          if (transposed) lu_solve_t(ap + i * n * n, swaps.data() + i * n, n, xp + i * n * k, k);
          else lu_solve(ap + i * n * n, swaps.data() + i * n, n, xp + i * n * k, k);
        }
      });
      ops::copy_into(out[0], left ? x : mT(x));
    })
    .save_inputs({0, 1})
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // left: X = op(A)^-1 B gives gB = op(A)^-T gX; right: X = B op(A)^-1 gives gB = gX op(A)^-T
      const bool left = c.attrs.b("left"), adjoint = c.attrs.b("adjoint");
      Tensor LU = c.input(0), piv = c.input(1), X = c.output(0);
      Tensor gB = ops::call1("linalg_lu_solve", {LU, piv, g[0]}, {left, !adjoint});
      if (!c.needs(0)) return {Tensor(), Tensor(), gB};
      // the gradient of op(A) is -gB X^T (left) or -X^T gB (right); then A = P L U's parts are read off it
      Tensor gop = left ? ops::matmul(gB, mT(X)) : ops::matmul(mT(X), gB);
      Tensor gA = ops::neg(adjoint ? mT(gop) : gop);
      TensorList plu = ops::call("lu_unpack", {LU, piv}, {true, true});
      Tensor ptg = ops::matmul(mT(plu[0]), gA);
      Tensor gLU = ops::add(triangular("tril", ops::matmul(ptg, mT(plu[2])), -1),
                            triangular("triu", ops::matmul(mT(plu[1]), ptg), 0));
      return {gLU, Tensor(), c.needs(2) ? gB : Tensor()};
    });

}  // namespace flow
