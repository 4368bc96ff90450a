// Dense factorizations for small and medium matrices: LU with partial pivoting (inv, det, slogdet, solve)
// and Cholesky, over batches (..., n, n), each matrix on one thread, in double precision whatever the input
// dtype (results are rounded back). Gradients are the standard matrix-calculus forms built from registry ops.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

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
  FLOW_RUNTIME_CHECK(a.size(-1) == a.size(-2), op, ": A must be batches of square matrices, but they are ",
                     a.size(-2), " by ", a.size(-1), " matrices");
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

// In-place LU with partial pivoting of the row-major n x n matrix a: L (unit, below the diagonal) and U.
// Returns 0, or k + 1 for the first zero pivot U[k][k]; `perm_sign` gets the permutation's parity.
int64_t lu_inplace(double* a, int64_t n, int64_t* piv, int& perm_sign) {
  int64_t info = 0;
  perm_sign = 1;
  for (int64_t k = 0; k < n; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < n; ++i)
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
    for (int64_t i = k + 1; i < n; ++i) {
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

// The LU factorization of one row-major n x n matrix (copied): info is 0, or k + 1 for the first zero pivot.
struct Lu {
  int64_t n;
  std::vector<double> a;
  std::vector<int64_t> piv;
  int sign = 1;
  int64_t info = 0;
  Lu(const double* m, int64_t n_) : n(n_), a(m, m + n_ * n_), piv(static_cast<size_t>(n_)) {
    info = lu_inplace(a.data(), n, piv.data(), sign);
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
  FLOW_RUNTIME_CHECK(B.dim() == A.dim() && B.size(-2) == b.n, op, ": Incompatible shapes of A and B for the "
                     "equation AX = B (", shape_str(A.sizes()), " and ", shape_str(B.sizes()), ")");
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
        const double* A = ap + i * n * n;
        double* L = rp + i * n * n;
        for (int64_t j = 0; j < n; ++j) {
          double s = A[j * n + j];
          for (int64_t k = 0; k < j; ++k) s -= L[j * n + k] * L[j * n + k];
          if (!(s > 0)) {  // also NaN
            err = "linalg.cholesky: " + batch_prefix(b, i) + "The factorization could not be completed because the "
                  "input is not positive-definite (the leading minor of order " + std::to_string(j + 1) +
                  " is not positive-definite).";
            return;
          }
          const double d = std::sqrt(s);
          L[j * n + j] = d;
          for (int64_t r2 = j + 1; r2 < n; ++r2) {
            double v = A[r2 * n + j];
            for (int64_t k = 0; k < j; ++k) v -= L[r2 * n + k] * L[j * n + k];
            L[r2 * n + j] = v / d;
          }
        }
      });
      ops::copy_into(out[0], at.b(0) ? mT(r) : r);
    })
    .save_outputs({0})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // Murray (2016): with P = L^T gL and Phi(P) its lower triangle with the diagonal halved,
      // gA = sym(L^-T Phi(P) L^-1)
      const bool upper = c.attrs.b(0);
      Tensor L = upper ? mT(c.output(0)) : c.output(0), gl = upper ? mT(g[0]) : g[0];
      Tensor p = ops::matmul(mT(L), gl);
      Tensor phi = ops::mul(ops::add(ops::call1("tril", {p}, {int64_t(0)}), ops::call1("tril", {p}, {int64_t(-1)})),
                            Scalar(0.5));
      Tensor linv = ops::call1("linalg_inv", {L});
      Tensor ga = ops::matmul(ops::matmul(mT(linv), phi), linv);
      return {ops::mul(ops::add(ga, mT(ga)), Scalar(0.5))};
    });

// X with A X = B for triangular A (..., n, n) (only its upper or lower triangle is read; unitriangular:
// its diagonal is taken as ones) and B (..., n, k) of A's batch shape.
FLOW_OP(linalg_solve_triangular)
    .schema("linalg_solve_triangular(Tensor A, Tensor B, *, bool upper, bool unitriangular=False) -> Tensor")
    .meta([](const TensorList& in, const Attrs&) { return rhs_meta(in, "linalg.solve_triangular"); })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& at) {
      Batch b = square_batch(in[0], "linalg.solve_triangular");
      const int64_t n = b.n, k = in[1].size(-1);
      const bool upper = at.b(0), unit = at.b(1);
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
      const bool upper = c.attrs.b(0), unit = c.attrs.b(1);
      Tensor gb = ops::call1("linalg_solve_triangular", {mT(c.input(0)), g[0]}, {!upper, unit});
      Tensor ga;
      if (c.needs(0)) {
        Tensor full = ops::neg(ops::matmul(gb, mT(c.output(0))));
        int64_t diag = unit ? (upper ? 1 : -1) : 0;
        ga = ops::call1(upper ? "triu" : "tril", {full}, {diag});
      }
      return {ga, c.needs(1) ? gb : Tensor()};
    });

}  // namespace flow
