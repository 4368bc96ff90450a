// C++ entry points to registered ops, for backward formulas and composite kernels. Each goes through the
// full dispatcher (autograd, interception), so a formula written with them is itself differentiable.
// Families add their own wrappers in their headers; these are the ones every family leans on.
#pragma once
#include <optional>

#include "../autograd/node.h"
#include "registry.h"

// Cached lookup of a registered op by name.
#define FLOW_OPDEF(name)                                  \
  ([]() -> const ::flow::OpDef& {                         \
    static const ::flow::OpDef& d = ::flow::get_op(name); \
    return d;                                             \
  }())

namespace flow::ops {

// Call any op by name with positional attributes (missing trailing ones take schema defaults).
TensorList call(const char* name, const TensorList& in, std::vector<AttrValue> attrs = {});
Tensor call1(const char* name, const TensorList& in, std::vector<AttrValue> attrs = {});
// Call an op whose schema has several tensor lists: one entry per tensor parameter (a Tensor: a list of one);
// the list lengths are recorded for the kernel (registry.h, `_list_lengths`).
TensorList call_lists(const char* name, const std::vector<TensorList>& args, std::vector<AttrValue> attrs = {});

// -- data movement (copy.cpp)
Tensor clone(const Tensor& t);
Tensor contiguous(const Tensor& t);
Tensor to_dtype(const Tensor& t, DType dtype);  // returns t itself when already of that dtype
// Kernel-level copy with broadcasting and casting; no autograd, no version bump. For kernels.
void copy_into(const Tensor& dst, const Tensor& src);
// Kernel-level fill of a CPU tensor with v (cast to its dtype); no autograd, no version bump. For kernels.
void fill_cpu(const Tensor& dst, Scalar v);
Tensor copy_(const Tensor& self, const Tensor& src);  // the differentiable in-place op
Tensor fill_(const Tensor& self, Scalar v);

// -- creation (creation.cpp)
Tensor full(const Shape& sizes, Scalar v, DType dtype, Device device = {});
Tensor zeros(const Shape& sizes, DType dtype, Device device = {});
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, Scalar v);
// A 0-dim tensor for a Python number, marked as a wrapped number (weakest in type promotion).
Tensor wrapped_scalar(Scalar v);
Tensor scalar_tensor(Scalar v, DType dtype, Device device = {});

// -- views (view.cpp)
Tensor view(const Tensor& t, const Shape& sizes);
Tensor reshape(const Tensor& t, const Shape& sizes);
Tensor expand(const Tensor& t, const Shape& sizes);
Tensor permute(const Tensor& t, const std::vector<int64_t>& dims);
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1);
Tensor unsqueeze(const Tensor& t, int64_t dim);
Tensor squeeze(const Tensor& t, int64_t dim);
Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor select(const Tensor& t, int64_t dim, int64_t index);
Tensor as_strided(const Tensor& t, const Shape& sizes, const Shape& strides, int64_t offset);

// -- arithmetic (binary.cpp, unary.cpp)
Tensor add(const Tensor& a, const Tensor& b, Scalar alpha = Scalar(int64_t(1)));
Tensor sub(const Tensor& a, const Tensor& b, Scalar alpha = Scalar(int64_t(1)));
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, Scalar b);
Tensor add(const Tensor& a, Scalar b);
Tensor neg(const Tensor& a);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);

// -- reductions (reduce.cpp)
Tensor sum(const Tensor& t, const std::vector<int64_t>& dims, bool keepdim = false,
           std::optional<DType> dtype = std::nullopt);
// Sum `t` down to `shape` (the reverse of broadcasting).
Tensor sum_to(const Tensor& t, const Shape& shape);

}  // namespace flow::ops
