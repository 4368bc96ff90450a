// Shape arithmetic shared by view ops and their callers.
#pragma once
#include <optional>

#include "../core/tensor.h"

namespace flow {

// Resolve a single -1 and check the element count (PyTorch's infer_size).
Shape infer_size(const std::vector<int64_t>& shape, int64_t numel, const char* op);
// Strides that let `new_sizes` view memory laid out as (sizes, strides), if any (PyTorch's computeStride).
std::optional<Shape> view_strides(const Shape& sizes, const Shape& strides, const Shape& new_sizes);

}  // namespace flow
