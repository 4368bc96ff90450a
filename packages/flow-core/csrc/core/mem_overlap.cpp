#include "mem_overlap.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "error.h"

namespace flow {

bool is_non_overlapping_and_dense(const Tensor& t) {
  if (t.is_contiguous()) return true;
  int64_t nd = t.dim();
  std::vector<int64_t> perm(nd);
  std::iota(perm.begin(), perm.end(), 0);
  std::sort(perm.begin(), perm.end(), [&](int64_t a, int64_t b) {
    return t.stride(a) != t.stride(b) ? t.stride(a) < t.stride(b) : t.size(a) < t.size(b);
  });
  int64_t expected = 1;
  for (int64_t d : perm) {
    if (t.size(d) == 1) continue;
    if (t.stride(d) != expected) return false;
    expected *= t.size(d);
  }
  return true;
}

bool has_internal_overlap(const Tensor& t) {
  if (is_non_overlapping_and_dense(t)) return false;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.size(d) > 1 && t.stride(d) == 0) return true;
  return false;
}

MemOverlap mem_overlap(const Tensor& a, const Tensor& b) {
  if (a.is_same(b)) return MemOverlap::Full;
  if (a.numel() == 0 || b.numel() == 0) return MemOverlap::No;
  if (!a.has_storage() || !b.has_storage() || a.impl()->storage != b.impl()->storage) return MemOverlap::No;
  if (!is_non_overlapping_and_dense(a) || !is_non_overlapping_and_dense(b)) return MemOverlap::TooHard;
  // dense layouts with non-negative strides occupy [offset, offset + numel) elements of the storage
  int64_t ab = a.offset() * a.itemsize(), ae = ab + a.numel() * a.itemsize();
  int64_t bb = b.offset() * b.itemsize(), be = bb + b.numel() * b.itemsize();
  if (ab == bb && ae == be) return a.strides() == b.strides() ? MemOverlap::Full : MemOverlap::Partial;
  return ab < be && bb < ae ? MemOverlap::Partial : MemOverlap::No;
}

void check_inplace_overlap(const Tensor& out, const TensorList& inputs, bool allow_internal_overlap) {
  if (!out.defined() || !out.has_storage()) return;
  FLOW_RUNTIME_CHECK(allow_internal_overlap || !has_internal_overlap(out),
                     "unsupported operation: more than one element of the written-to tensor refers to a single "
                     "memory location. Please clone() the tensor before performing the operation.");
  for (const Tensor& t : inputs)
    if (t.defined() && !t.is_same(out))
      FLOW_RUNTIME_CHECK(mem_overlap(out, t) != MemOverlap::Partial,
                         "unsupported operation: some elements of the input tensor and the written-to tensor refer "
                         "to a single memory location. Please clone() the tensor before performing the operation.");
}

void check_no_overlap(const Tensor& out, const TensorList& inputs, size_t first) {
  if (!out.defined() || !out.has_storage()) return;
  for (size_t i = first; i < inputs.size(); ++i)
    if (inputs[i].defined())
      FLOW_RUNTIME_CHECK(mem_overlap(out, inputs[i]) == MemOverlap::No,
                         "unsupported operation: some elements of the input tensor and the written-to tensor refer "
                         "to a single memory location. Please clone() the tensor before performing the operation.");
}

}  // namespace flow
