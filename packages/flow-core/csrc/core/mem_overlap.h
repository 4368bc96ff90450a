// Whether tensors share memory in ways that make an in-place write ill-defined (PyTorch's MemOverlap
// rules): an output some of whose elements alias each other (an expanded tensor), or an input that covers
// part, but not exactly all, of the output's memory. Only layouts that can be decided cheaply are judged
// (strides that pack the elements densely without overlap); the rest count as "too hard", as in PyTorch.
#pragma once
#include "tensor.h"

namespace flow {

enum class MemOverlap { No, Full, Partial, TooHard };

// Strides that are a permutation of a contiguous layout's (size-1 dims ignored).
bool is_non_overlapping_and_dense(const Tensor& t);
// True when some element of `t` is written through more than one index (a stride-0 dim of size > 1).
bool has_internal_overlap(const Tensor& t);
MemOverlap mem_overlap(const Tensor& a, const Tensor& b);

// Raise PyTorch's RuntimeErrors for an in-place write into `out` that reads `inputs`.
void check_inplace_overlap(const Tensor& out, const TensorList& inputs, bool allow_internal_overlap);
// For ops that read their inputs in another order than they write `out` (index_copy_, scatter_, gather's
// out=): any memory shared with inputs[first:], even all of it, would be read after being overwritten.
void check_no_overlap(const Tensor& out, const TensorList& inputs, size_t first);

}  // namespace flow
