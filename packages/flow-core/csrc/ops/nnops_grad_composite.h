// Differentiable (composite) first-order gradients of the norms and pointwise losses, used by their
// backwards when the gradient itself must be differentiated (grad mode on during backward).
#pragma once
#include <string>
#include <vector>

#include "nnops_util.h"

namespace flow::nn {

// -> {grad_input, grad_weight (per channel), grad_bias}
TensorList batch_norm_grad_composite(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& save_mean,
                                     const Tensor& save_invstd, bool training, double eps);
TensorList layer_norm_grad_composite(const Tensor& g, const Tensor& x, const Tensor& w,
                                     const std::vector<int64_t>& normalized_shape, double eps);
TensorList group_norm_grad_composite(const Tensor& g, const Tensor& x, const Tensor& w, int64_t group, double eps);

// -> {grad_self, grad_target} of the broadcast shape; `kind` as in nnops_loss.cpp.
TensorList pointwise_loss_grad_composite(const Tensor& grad, const Tensor& x, const Tensor& t, const Tensor& w,
                                         const Tensor& pw, const std::string& kind, bool mean_reduction, double param);

}  // namespace flow::nn
