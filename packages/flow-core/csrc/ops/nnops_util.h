// Shared plumbing of the nnops family (softmax, norms, losses, dropout, embedding, pad, interpolate):
// kernel-level (autograd-free) casting/contiguity and the reduction-mode parsing every loss uses.
#pragma once
#include <string>

#include "elementwise.h"

namespace flow::nn {

// A contiguous tensor of dtype `dt` with `t`'s values (t itself when already so). No autograd.
inline Tensor contig_as(const Tensor& t, DType dt) {
  if (t.dtype() == dt && t.is_contiguous()) return t;
  Tensor r = empty(t.sizes(), dt, t.device());
  ops::copy_into(r, t);
  return r;
}
inline Tensor contig(const Tensor& t) { return contig_as(t, t.dtype()); }

enum class Reduction { None, Mean, Sum };
inline Reduction parse_reduction(const std::string& s, const char* op) {
  if (s == "none") return Reduction::None;
  if (s == "mean") return Reduction::Mean;
  if (s == "sum") return Reduction::Sum;
  fail(ErrorKind::Value, op, ": ", s, " is not a valid value for reduction");
}

// Floating compute dtype of `t` (errors naming `op` for integer inputs).
inline DType float_dtype_of(const Tensor& t, const char* op) {
  FLOW_RUNTIME_CHECK(is_floating(t.dtype()), op, ": expected a floating point input, got ", dtype_name(t.dtype()));
  return t.dtype();
}

inline Tensor undefined() { return Tensor(); }

}  // namespace flow::nn
