// The reduction family: C++ entry points for other families, and helpers shared by the reduce*.cpp files.
#pragma once
#include <optional>

#include "../kernels/cpu/reduce.h"
#include "elementwise.h"

namespace flow {

// An `int[]? dim` attribute as a list (None: empty, meaning all dims).
inline std::vector<int64_t> dims_attr(const Attrs& a, const char* name) {
  return a.none(name) ? std::vector<int64_t>{} : a.ints(name);
}

// Reduction mask from sizes only (backward formulas see input metadata, not the tensor).
std::vector<bool> mask_for_sizes(const Shape& sizes, const std::vector<int64_t>& dims, const char* op);
// A gradient of a reduction's output, reshaped to keepdim form and expanded to the input's sizes.
Tensor restore_reduced(const Tensor& g, const Shape& in_sizes, const std::vector<bool>& mask, bool keepdim,
                       bool expand = true);
// Number of elements each output of the reduction reduces.
int64_t reduced_count(const Shape& sizes, const std::vector<bool>& mask);

// Runs f(x, a, y, n) over every 1-D line along `dim`: x from `in`, a from `aux` (expanded to in's sizes; null
// when aux is undefined), y the same line of a result written into `out` (in's sizes, dtype T). For scans
// and per-line backward kernels.
template <typename T, typename F>
void for_each_line(const Tensor& in, const Tensor& aux, const Tensor& out, int64_t dim, F f) {
  const int64_t nd = in.dim();
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < nd; ++d)
    if (d != dim) perm.push_back(d);
  if (nd > 0) perm.push_back(dim);
  Tensor src = contiguous_copy(permute_view(in, perm));
  Tensor asrc;
  if (aux.defined()) {
    Tensor ex = empty(in.sizes(), in.dtype(), in.device());
    ops::copy_into(ex, aux);  // broadcasts
    asrc = contiguous_copy(permute_view(ex, perm));
  }
  const int64_t n = nd == 0 ? 1 : in.sizes()[dim];
  const int64_t lines = n == 0 ? 0 : in.numel() / n;
  Tensor dst = empty(src.sizes(), out.dtype(), out.device());
  const T* x = src.template data<T>();
  const T* a = asrc.defined() ? asrc.template data<T>() : nullptr;
  T* y = dst.template data<T>();
  parallel_for(lines, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    for (int64_t l = b; l < e; ++l) f(x + l * n, a ? a + l * n : nullptr, y + l * n, n);
  });
  if (in.numel() > 0) ops::copy_into(permute_view(out, perm), dst);
}

}  // namespace flow

namespace flow::ops {

Tensor mean(const Tensor& t, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor amax(const Tensor& t, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor amin(const Tensor& t, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor logsumexp(const Tensor& t, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor var(const Tensor& t, const std::vector<int64_t>& dims, double correction = 1.0, bool keepdim = false);
Tensor vector_norm(const Tensor& t, double ord, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor cumsum(const Tensor& t, int64_t dim);
// Zero-safe gradients built from registered ops (differentiable again; reduce_zero_grad.cpp).
Tensor prod_backward_differentiable(const Tensor& g, const Tensor& x, int64_t dim);
Tensor cumprod_backward_differentiable(const Tensor& g, const Tensor& x, int64_t dim);

}  // namespace flow::ops
