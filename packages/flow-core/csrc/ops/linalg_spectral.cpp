// Spectral decompositions of each matrix of a batch, by Jacobi rotations in double precision, each matrix on
// one thread (accurate to working precision for the small and medium matrices they are meant for):
// - linalg_svd: A = U diag(S) Vh (..., m, n), one-sided (Hestenes) rotations, O(sweeps m n^2);
// - linalg_eigh: A = V diag(L) V^T for symmetric A (..., n, n), two-sided cyclic rotations, O(sweeps n^3).
// The gradients are the standard forms (Townsend 2016; Giles 2008) built from registry ops.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "../kernels/cpu/parallel.h"
#include "linalg.h"
#include "nnops_util.h"

namespace flow {
namespace {

// Completes the first `have` orthonormal columns of the row-major r x c matrix Q (columns [have, c) are
// overwritten) to an orthonormal set: with Householder reflectors H_1..H_h that take those columns to
// +-e_1..e_h, the columns j >= h of H_1 ... H_h are orthonormal and orthogonal to them. O(r c h), not the
// O(r c^2) of Gram-Schmidt on unit vectors.
void complete_orthonormal(double* Q, int64_t r, int64_t c, int64_t have) {
  if (have >= c) return;
  std::vector<double> W(static_cast<size_t>(r * have)), v(static_cast<size_t>(r * have), 0.0), beta(have, 0.0);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t k = 0; k < have; ++k) W[k * r + i] = Q[i * c + k];
  for (int64_t k = 0; k < have; ++k) {  // QR of W by reflectors, stored in v (column k: rows k..r)
    double* w = &W[k * r];
    double norm = 0;
    for (int64_t i = k; i < r; ++i) norm += w[i] * w[i];
    norm = std::sqrt(norm);
    double* vk = &v[k * r];
    for (int64_t i = k; i < r; ++i) vk[i] = w[i];
    vk[k] += w[k] >= 0 ? norm : -norm;
    double vv = 0;
    for (int64_t i = k; i < r; ++i) vv += vk[i] * vk[i];
    beta[k] = vv > 0 ? 2.0 / vv : 0.0;
    for (int64_t j = k + 1; j < have; ++j) {  // apply H_k to the remaining columns
      double* wj = &W[j * r];
      double d = 0;
      for (int64_t i = k; i < r; ++i) d += vk[i] * wj[i];
      d *= beta[k];
      for (int64_t i = k; i < r; ++i) wj[i] -= d * vk[i];
    }
  }
  std::vector<double> q(static_cast<size_t>(r));
  for (int64_t j = have; j < c; ++j) {  // column j of H_1 ... H_h: e_j through H_h first
    std::fill(q.begin(), q.end(), 0.0);
    q[static_cast<size_t>(j)] = 1.0;
    for (int64_t k = have - 1; k >= 0; --k) {
      const double* vk = &v[k * r];
      double d = 0;
      for (int64_t i = k; i < r; ++i) d += vk[i] * q[i];
      d *= beta[k];
      for (int64_t i = k; i < r; ++i) q[i] -= d * vk[i];
    }
    for (int64_t i = 0; i < r; ++i) Q[i * c + j] = q[i];
  }
}

// The plane rotation (x, y) <- (c x - s y, s x + c y) of two length-n vectors with element stride `stride`.
void rotate(double* x, double* y, int64_t n, int64_t stride, double c, double s) {
  for (int64_t i = 0; i < n * stride; i += stride) {
    const double a = x[i], b = y[i];
    x[i] = c * a - s * b;
    y[i] = s * a + c * b;
  }
}

// A power of two close to 1 / max|x| (1 when x is all zero): scaling by it is exact, and keeps the sums of
// squares in the rotations from overflowing (entries near 1e154 and up) or underflowing (near 1e-154).
double unit_scale(const double* x, int64_t n) {
  double mx = 0;
  for (int64_t i = 0; i < n; ++i) mx = std::max(mx, std::fabs(x[i]));
  if (!(mx > 0) || !std::isfinite(mx)) return 1.0;
  int e;
  std::frexp(mx, &e);
  return std::ldexp(1.0, -e);
}

// SVD of the row-major m x n matrix a (m >= n): U (m x ucols, ucols = n or m), S (n, descending), V (n x n,
// row-major, columns the right singular vectors).
void jacobi_svd(const double* a, int64_t m, int64_t n, int64_t ucols, double* U, double* S, double* V) {
  // W = A (scaled) column-major (columns contiguous), rotated until its columns are orthogonal
  std::vector<double> W(static_cast<size_t>(m * n)), Vc(static_cast<size_t>(n * n), 0.0);
  const double scale = unit_scale(a, m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) W[j * m + i] = a[i * n + j] * scale;
  for (int64_t j = 0; j < n; ++j) Vc[j * n + j] = 1.0;
  const double eps = std::numeric_limits<double>::epsilon();
  for (int sweep = 0; sweep < 80; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p + 1 < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        double* wp = &W[p * m];
        double* wq = &W[q * m];
        double alpha = 0, beta = 0, gamma = 0;
        for (int64_t i = 0; i < m; ++i) alpha += wp[i] * wp[i], beta += wq[i] * wq[i], gamma += wp[i] * wq[i];
        if (gamma == 0 || std::fabs(gamma) <= eps * std::sqrt(alpha) * std::sqrt(beta)) continue;
        rotated = true;
        double zeta = (beta - alpha) / (2 * gamma);
        double t = (zeta >= 0 ? 1.0 : -1.0) / (std::fabs(zeta) + std::sqrt(1 + zeta * zeta));
        double c = 1 / std::sqrt(1 + t * t), s = c * t;
        rotate(wp, wq, m, 1, c, s);
        rotate(&Vc[p * n], &Vc[q * n], n, 1, c, s);
      }
    if (!rotated) break;
  }
  std::vector<double> norms(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    double s2 = 0;
    for (int64_t i = 0; i < m; ++i) s2 += W[j * m + i] * W[j * m + i];
    norms[j] = std::sqrt(s2);
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return norms[x] > norms[y]; });
  const double tiny = norms.empty() ? 0.0 : norms[order[0]] * eps * std::max(m, n);
  int64_t have = 0;  // leading columns of U that came from non-negligible singular values
  for (int64_t k = 0; k < n; ++k) {
    const int64_t j = order[k];
    S[k] = norms[j] / scale;
    for (int64_t i = 0; i < n; ++i) V[i * n + k] = Vc[j * n + i];
    if (norms[j] > tiny && have == k) {
      for (int64_t i = 0; i < m; ++i) U[i * ucols + k] = W[j * m + i] / norms[j];
      ++have;
    }
  }
  complete_orthonormal(U, m, ucols, have);
}

// Eigen-decomposition of the symmetric row-major n x n matrix a (destroyed): L ascending, V (row-major,
// columns the eigenvectors).
void jacobi_eigh(double* a, int64_t n, double* L, double* V) {
  const double scale = unit_scale(a, n * n);
  for (int64_t i = 0; i < n * n; ++i) a[i] *= scale;
  std::vector<double> Vc(static_cast<size_t>(n * n), 0.0);  // column j of V at Vc[j * n]
  for (int64_t j = 0; j < n; ++j) Vc[j * n + j] = 1.0;
  const double eps = std::numeric_limits<double>::epsilon();
  for (int sweep = 0; sweep < 80; ++sweep) {
    double off = 0, diag = 0;
    for (int64_t i = 0; i < n; ++i) {
      diag += a[i * n + i] * a[i * n + i];
      for (int64_t j = i + 1; j < n; ++j) off += a[i * n + j] * a[i * n + j];
    }
    if (off <= eps * eps * diag || off == 0 || std::isnan(off + diag)) break;  // NaN: no convergence to wait for
    for (int64_t p = 0; p + 1 < n; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        const double apq = a[p * n + q];
        if (apq == 0) continue;
        double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        double t = (theta >= 0 ? 1.0 : -1.0) / (std::fabs(theta) + std::sqrt(theta * theta + 1));
        double c = 1 / std::sqrt(t * t + 1), s = t * c;
        rotate(&a[p], &a[q], n, n, c, s);          // columns p, q
        rotate(&a[p * n], &a[q * n], n, 1, c, s);  // rows p, q
        rotate(&Vc[p * n], &Vc[q * n], n, 1, c, s);
      }
  }
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return a[x * n + x] < a[y * n + y]; });
  for (int64_t k = 0; k < n; ++k) {
    L[k] = a[order[k] * n + order[k]] / scale;
    for (int64_t i = 0; i < n; ++i) V[i * n + k] = Vc[order[k] * n + i];
  }
}

Tensor mT(const Tensor& t) { return ops::transpose(t, -2, -1); }

std::vector<TensorMeta> svd_meta(const TensorList& in, bool full) {
  const Tensor& a = in[0];
  FLOW_RUNTIME_CHECK(a.dim() >= 2, "linalg.svd: The input tensor A must have at least 2 dimensions.");
  FLOW_RUNTIME_CHECK(is_floating(a.dtype()),
                     "linalg.svd: Expected a floating point or complex tensor as input. "
                     "Got ",
                     torch_type_name(a.dtype()));
  FLOW_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64, NotImplemented,
             "\"linalg_svd_cpu\" not implemented for '", torch_type_name(a.dtype()), "'");
  const int64_t m = a.size(-2), n = a.size(-1), k = std::min(m, n);
  Shape batch(a.sizes().begin(), a.sizes().end() - 2), u = batch, s = batch, vh = batch;
  u.push_back(m), u.push_back(full ? m : k);
  s.push_back(k);
  vh.push_back(full ? n : k), vh.push_back(n);
  return {{u, a.dtype(), a.device()}, {s, a.dtype(), a.device()}, {vh, a.dtype(), a.device()}};
}

}  // namespace

FLOW_OP(linalg_svd)
    .schema("linalg_svd(Tensor A, bool full_matrices=True) -> (Tensor, Tensor, Tensor)")
    .meta([](const TensorList& in, const Attrs& a) { return svd_meta(in, a.b("full_matrices")); })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& at) {
      const bool full = at.b("full_matrices");
      const Tensor& A = in[0];
      const int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n);
      const int64_t count = k == 0 ? 0 : A.numel() / (m * n);
      // a wide matrix is decomposed through its transpose: A^T = U' S V'^T gives U = V', Vh = U'^T
      const bool wide = m < n;
      const int64_t r = wide ? n : m;  // rows of the tall problem
      const int64_t ucols = full ? r : k;
      Tensor a = nn::contig_as(A, DType::Float64);
      {
        const double* p = a.data<double>();
        for (int64_t i = 0, e = a.numel(); i < e; ++i)
          FLOW_RUNTIME_CHECK(std::isfinite(p[i]),
                             "linalg.svd: The algorithm failed to converge because the input "
                             "matrix contained non-finite values.");
      }
      Tensor u = ops::zeros({std::max<int64_t>(count, 1), r, ucols}, DType::Float64);
      Tensor s = ops::zeros({std::max<int64_t>(count, 1), k}, DType::Float64);
      Tensor v = ops::zeros({std::max<int64_t>(count, 1), k, k}, DType::Float64);
      const double* ap = a.data<double>();
      double *up = u.data<double>(), *sp = s.data<double>(), *vp = v.data<double>();
      parallel_for(count, 1, [&](int64_t b0, int64_t b1) {
        std::vector<double> t(static_cast<size_t>(m * n));
        for (int64_t b = b0; b < b1; ++b) {
          const double* src = ap + b * m * n;
          if (wide)
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) t[j * m + i] = src[i * n + j];
          jacobi_svd(wide ? t.data() : src, r, k, ucols, up + b * r * ucols, sp + b * k, vp + b * k * k);
        }
      });
      // the tall problem's U (r x ucols) and V (k x k) back to A's U (m x ...) and Vh (... x n)
      Shape batch(A.sizes().begin(), A.sizes().end() - 2);
      auto shaped = [&](Tensor t, int64_t rows, int64_t cols) {
        Shape sz = batch;
        sz.push_back(rows), sz.push_back(cols);
        return ops::reshape(ops::slice(t, 0, 0, count), sz);
      };
      Shape ssz = batch;
      ssz.push_back(k);
      if (k == 0) {  // no singular values: U and Vh are identities (full) or empty
        if (full) {
          ops::copy_into(out[0], ops::call1("eye", {}, {m, std::monostate{}, A.dtype()}));
          ops::copy_into(out[2], ops::call1("eye", {}, {n, std::monostate{}, A.dtype()}));
        }
        return;
      }
      ops::copy_into(out[1], ops::reshape(ops::slice(s, 0, 0, count), ssz));
      if (!wide) {  // n == k
        ops::copy_into(out[0], shaped(u, m, ucols));
        ops::copy_into(out[2], mT(shaped(v, n, n)));
      } else {
        ops::copy_into(out[0], shaped(v, m, m));           // U = V' (m x m, k == m)
        ops::copy_into(out[2], mT(shaped(u, n, ucols)));   // Vh = U'^T
      }
    })
    .save_outputs({0, 1, 2})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // A = U S Vh with k = min(m, n); only the first k columns of U (rows of Vh) carry gradient, as in torch:
      // with full_matrices the others are an arbitrary basis of the complement.
      Tensor U = c.output(0), S = c.output(1), Vh = c.output(2);
      const int64_t k = S.size(-1), m = U.size(-2), n = Vh.size(-1);
      U = ops::slice(U, -1, 0, k);
      Vh = ops::slice(Vh, -2, 0, k);
      Tensor gU = g[0].defined() ? ops::slice(g[0], -1, 0, k) : Tensor();
      Tensor gVh = g[2].defined() ? ops::slice(g[2], -2, 0, k) : Tensor();
      Tensor eye = ops::call1("eye", {}, {k, std::monostate{}, S.dtype()});
      Tensor Scol = ops::unsqueeze(S, -1), Srow = ops::unsqueeze(S, -2);
      Tensor inner = g[1].defined() ? ops::mul(eye, ops::unsqueeze(g[1], -1)) : ops::mul(eye, Scalar(0.0));
      if (gU.defined() || gVh.defined()) {
        // E[i][j] = s_j^2 - s_i^2 off the diagonal, 1 on it (the skew parts below vanish there)
        Tensor S2 = ops::mul(S, S);
        Tensor E = ops::add(ops::sub(ops::unsqueeze(S2, -2), ops::unsqueeze(S2, -1)), eye);
        auto skew = [](const Tensor& x) { return ops::sub(x, mT(x)); };
        if (gU.defined()) inner = ops::add(inner, ops::mul(ops::div(skew(ops::matmul(mT(U), gU)), E), Srow));
        if (gVh.defined()) inner = ops::add(inner, ops::mul(Scol, ops::div(skew(ops::matmul(Vh, mT(gVh))), E)));
      }
      Tensor gA = ops::matmul(ops::matmul(U, inner), Vh);
      if (gU.defined() && m > k) {  // (I - U U^T) gU S^-1 Vh
        Tensor proj = ops::sub(gU, ops::matmul(U, ops::matmul(mT(U), gU)));
        gA = ops::add(gA, ops::matmul(ops::div(proj, Srow), Vh));
      }
      if (gVh.defined() && n > k) {  // U S^-1 gVh (I - V V^T)
        Tensor proj = ops::sub(gVh, ops::matmul(ops::matmul(gVh, mT(Vh)), Vh));
        gA = ops::add(gA, ops::matmul(U, ops::div(proj, Scol)));
      }
      return {gA};
    });

// Only the lower (UPLO 'L') or upper triangle of A is read, as in LAPACK.
FLOW_OP(linalg_eigh)
    .schema("linalg_eigh(Tensor A, str UPLO='L') -> (Tensor, Tensor)")
    .meta([](const TensorList& in, const Attrs& at) -> std::vector<TensorMeta> {
      const Tensor& a = in[0];
      FLOW_RUNTIME_CHECK(at.str("UPLO") == "L" || at.str("UPLO") == "U",
                         "Expected UPLO argument to be 'L' or 'U', but got ", at.str("UPLO"));
      FLOW_RUNTIME_CHECK(a.dim() >= 2, "linalg.eigh: The input tensor A must have at least 2 dimensions.");
      FLOW_RUNTIME_CHECK(a.size(-1) == a.size(-2), "linalg.eigh: A must be batches of square matrices, but they are ",
                         a.size(-2), " by ", a.size(-1), " matrices");
      FLOW_CHECK(a.dtype() == DType::Float32 || a.dtype() == DType::Float64, NotImplemented,
                 "\"linalg_eigh_cpu\" not implemented for '", torch_type_name(a.dtype()), "'");
      Shape l(a.sizes().begin(), a.sizes().end() - 1);
      return {{l, a.dtype(), a.device()}, {a.sizes(), a.dtype(), a.device()}};
    })
    .cpu_out([](const TensorList& in, const TensorList& out, const Attrs& at) {
      const Tensor& A = in[0];
      const int64_t n = A.size(-1), count = n == 0 ? 0 : A.numel() / (n * n);
      const bool upper = at.str("UPLO") == "U";
      Tensor a = nn::contig_as(A, DType::Float64);
      Tensor l = ops::zeros({std::max<int64_t>(count, 1), n}, DType::Float64);
      Tensor v = ops::zeros({std::max<int64_t>(count, 1), n, n}, DType::Float64);
      const double* ap = a.data<double>();
      double *lp = l.data<double>(), *vp = v.data<double>();
      parallel_for(count, 1, [&](int64_t b0, int64_t b1) {
        std::vector<double> w(static_cast<size_t>(n * n));
        for (int64_t b = b0; b < b1; ++b) {
          const double* src = ap + b * n * n;
          for (int64_t i = 0; i < n; ++i)  // the symmetric matrix of the triangle read
            for (int64_t j = 0; j < n; ++j) w[i * n + j] = (upper ? i <= j : i >= j) ? src[i * n + j] : src[j * n + i];
          jacobi_eigh(w.data(), n, lp + b * n, vp + b * n * n);
        }
      });
      if (count == 0) return;
      ops::copy_into(out[0], ops::reshape(ops::slice(l, 0, 0, count), out[0].sizes()));
      ops::copy_into(out[1], ops::reshape(ops::slice(v, 0, 0, count), out[1].sizes()));
    })
    .save_outputs({0, 1})
    .backward([](BackwardCtx& c, const TensorList& g) -> TensorList {
      // gA = V (diag(gL) + skew(V^T gV) / E) V^T, E[i][j] = l_j - l_i (1 on the diagonal, where skew is 0);
      // as in torch, the result is not symmetrised
      Tensor L = c.output(0), V = c.output(1);
      const int64_t n = L.size(-1);
      Tensor eye = ops::call1("eye", {}, {n, std::monostate{}, L.dtype()});
      Tensor inner = g[0].defined() ? ops::mul(eye, ops::unsqueeze(g[0], -1)) : ops::mul(eye, Scalar(0.0));
      if (g[1].defined()) {
        Tensor vg = ops::matmul(mT(V), g[1]);
        Tensor skew = ops::mul(ops::sub(vg, mT(vg)), Scalar(0.5));
        Tensor E = ops::add(ops::sub(ops::unsqueeze(L, -2), ops::unsqueeze(L, -1)), eye);
        inner = ops::add(inner, ops::div(skew, E));
      }
      return {ops::matmul(ops::matmul(V, inner), mT(V))};
    });

}  // namespace flow
