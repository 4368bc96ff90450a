// C++ wrappers for the matrix-product family (linalg.cpp, einsum.cpp), for other families' kernels and
// backward formulas.
#pragma once
#include "functions.h"

namespace flow::ops {

Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mv(const Tensor& a, const Tensor& v);
Tensor outer(const Tensor& a, const Tensor& b);

}  // namespace flow::ops
