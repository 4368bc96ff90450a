// Differentiable gradients of prod/cumprod for inputs containing zeros, used when the gradient will be
// differentiated again (grad mode on during backward). The fused helpers (_prod_backward,
// _cumprod_backward) are exact but not differentiable; these build "x with element k replaced by 1"
// for every k of a line, an (n, n) tensor per line, and reduce it with prod/cumprod, whose own
// backward then runs the fused helpers. O(n^2) per line, only on the create_graph path.
#include "reduce.h"

namespace flow::ops {
namespace {

// (n, n) bool masks: diag (j == k) or upper (i >= k, rows k, columns i).
Tensor square_mask(int64_t n, bool upper) {
  Tensor m = empty({n, n}, DType::Bool);
  bool* p = m.data<bool>();
  for (int64_t k = 0; k < n; ++k)
    for (int64_t j = 0; j < n; ++j) p[k * n + j] = upper ? j >= k : j == k;
  return m;
}

// x moved so `dim` is last, then (..., n_k, n_j) with [k, j] = (j == k ? 1 : x_j).
Tensor others_matrix(const Tensor& x, int64_t dim) {
  Tensor xt = transpose(x, dim, x.dim() - 1);
  int64_t n = xt.size(xt.dim() - 1);
  Shape s = xt.sizes();
  s.insert(s.end() - 1, n);
  Tensor rows = expand(unsqueeze(xt, xt.dim() - 1), s);
  return where(square_mask(n, false), scalar_tensor(Scalar(1.0), x.dtype()), rows);
}

}  // namespace

// grad_k = g_k * prod_{j != k} x_j along dim (g already broadcast to x's shape).
Tensor prod_backward_differentiable(const Tensor& g, const Tensor& x, int64_t dim) {
  Tensor others = call1("prod", {others_matrix(x, dim)}, {int64_t(-1)});
  return mul(g, transpose(others, dim, x.dim() - 1));
}

// grad_k = sum_{i >= k} g_i prod_{j <= i, j != k} x_j along dim.
Tensor cumprod_backward_differentiable(const Tensor& g, const Tensor& x, int64_t dim) {
  Tensor p = call1("cumprod", {others_matrix(x, dim)}, {int64_t(-1)});  // [k, i]
  Tensor gt = transpose(g, dim, g.dim() - 1);
  Tensor terms = mul(unsqueeze(gt, gt.dim() - 1), p);
  int64_t n = gt.size(gt.dim() - 1);
  Tensor r = sum(where(square_mask(n, true), terms, zeros({}, terms.dtype())), {-1});
  return transpose(r, dim, x.dim() - 1);
}

}  // namespace flow::ops
