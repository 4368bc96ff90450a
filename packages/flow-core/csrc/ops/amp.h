// Kernels behind oneflow.amp.GradScaler.
#pragma once
#include "../core/tensor.h"

namespace flow::amp {

// PyTorch's _amp_foreach_non_finite_check_and_unscale_: multiplies every gradient by `inv_scale` in place
// and returns whether any of them held an inf or NaN (one pass over each gradient's memory).
bool non_finite_check_and_unscale(const TensorList& grads, double inv_scale);

}  // namespace flow::amp
