// Building blocks of the index family: restrided views and the two offset kernels every gather-like and
// scatter-like op reduces to (PyTorch's TensorIterator trick: the indexed dim gets stride 0 in a view of
// the source, and each element adds `index * stride` to its pointer).
#pragma once
#include <cstring>
#include <limits>

#include "elementwise.h"

namespace flow::idx {

// A view of `t`'s storage with the given geometry (starting at t's offset). No autograd.
inline Tensor restride(const Tensor& t, const Shape& sizes, const Shape& strides) {
  return make_view(t, sizes, strides, t.offset());
}

// `t` broadcast (by strides) to `sizes`, keeping only the dims listed in `keep` (0 stride elsewhere).
inline Tensor zero_strides_except(const Tensor& t, const Shape& sizes, int64_t keep_dim, int64_t keep_stride) {
  Shape st(sizes.size(), 0);
  st[keep_dim] = keep_stride;
  return restride(t, sizes, st);
}

// An int64 copy (or `t` itself) of an index tensor; int32 and int64 are accepted (checked by callers).
inline Tensor to_long(const Tensor& t) { return cast_for_kernel(t, DType::Int64); }

// Raises `kind` with PyTorch's wording if any value of the int64 tensor `ix` is outside [0, size) (or
// [-size, size) when negatives wrap, as in take). Returns true if negative values are present.
bool check_range(const Tensor& ix, int64_t size, int64_t dim, ErrorKind kind, const char* custom_msg = nullptr,
                 bool allow_negative = false, const char* prefix = "");
// A contiguous int64 copy of `ix` (negative values wrapped when allowed), after check_range.
Tensor wrapped_index(const Tensor& ix, int64_t size, int64_t dim, ErrorKind kind, const char* custom_msg = nullptr,
                     bool allow_negative = false, const char* prefix = "");

// dst[e] = *(src_r[e] + off_r[e] * stride) for every element e of dst (src_r, off_r restrided to dst's shape;
// off_r is int64). Copies raw bytes: dst and src have the same dtype. Offsets are checked against
// [0, bound) as they are read; out-of-range ones read offset 0 and make it return false (bound must then
// be >= 1; callers that checked beforehand leave it unbounded).
bool offset_gather(const Tensor& dst, const Tensor& src_r, const Tensor& off_r, int64_t stride,
                   int64_t bound = std::numeric_limits<int64_t>::max());

// How a scatter combines the old value with the new one.
enum class Reduce { Assign, Add, Mul, Max, Min, Mean };
// *(dst_r[e] + off_r[e] * stride) (op)= src_r[e] for every element e of the shape `sizes`. Assign runs in
// parallel (duplicate targets get one of the values, like PyTorch). The reductions run serially, or whole
// lines in parallel when `dest_disjoint` says the tensor dst_r views has no two elements in one place.
void offset_scatter(const Tensor& dst_r, const Tensor& src_r, const Tensor& off_r, int64_t stride, Reduce r,
                    const Shape& sizes, bool dest_disjoint = false);

// Index dtype check used by gather/scatter/index_select/...: int32 or int64.
inline void check_index_dtype(const Tensor& ix, const char* msg) {
  FLOW_RUNTIME_CHECK(ix.dtype() == DType::Int64 || ix.dtype() == DType::Int32, msg);
}

Reduce parse_reduce(const std::string& s, bool scatter_reduce);

}  // namespace flow::idx
